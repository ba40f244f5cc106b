package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Versions move with their column: a change placed on another device moves the column and
// its images, so snapshots behind the floor are still served (from the column's placement now),
// and the oldest preserved ordinal does not move.
func TestWindowVersionsMoveWithTheColumn(t *testing.T) {
	forEachDriver(t, nil, testWindowVersionsMoveWithTheColumn)
}

func testWindowVersionsMoveWithTheColumn(t *testing.T, g *gpuFixture) {
	src := g.sealedDeviceWrite([]float32{1, 2, 3})
	defer src.Release()
	// A host write of /A at 2 moves the column to the host, a write of /B at 3 placed on the
	// device moves it back.
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 2, Tensors: []tensor.Tensor{f32Tensor([]float32{4})}, Count: 1}))
	g.seal(2)
	assert.Equal(t, []float32{4, 2, 3}, g.valuesAt(2))
	assert.Equal(t, []float32{1, 2, 3}, g.valuesAt(1), "the state at 1 moved to the host")
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 3, Tensors: []tensor.Tensor{f32Tensor([]float32{0, 5, 0})}, Count: 3,
		Mask: []uint64{0b010}, HasMask: true, Device: column.CUDA(0)}))
	g.seal(3)
	assert.Equal(t, column.CUDA(0), g.s.columns[g.attr][0].Placement())
	for n, want := range map[uint64][]float32{1: {1, 2, 3}, 2: {4, 2, 3}, 3: {4, 5, 3}} {
		assert.Equal(t, want, g.valuesAt(n), "latest(%d) after the column moved back", n)
	}
	assert.Zero(t, g.oldestPreserved(), "no version was dropped")
}

// valuesAt reads every prim's value at latest(n) (wherever the group's buffer lives).
func (g *gpuFixture) valuesAt(n uint64) []float32 {
	g.t.Helper()
	h, op, err := g.s.ReadAttributes(g.query, []uint64{g.attr}, latestAt(n))
	require.NoError(g.t, err)
	g.wait(op)
	grp, err := g.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(g.t, err)
	defer func() {
		require.NoError(g.t, g.s.ReleaseGroup(grp.ID))
		_, err := g.s.ReleaseRead(h)
		require.NoError(g.t, err)
	}()
	require.Nil(g.t, grp.DataIndexMap, "a dense group")
	return download(g.t, grp.Tensors[0].Buffer, int(grp.PrimCount))
}
