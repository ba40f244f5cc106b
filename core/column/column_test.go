package column

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/dlpack"
)

var f32 = Schema{DType: dlpack.DType{Code: dlpack.CodeFloat, Bits: 32, Lanes: 1}}

func payload(t *testing.T, vals ...float32) buffer.Buffer {
	b, err := buffer.New(4 * len(vals))
	require.NoError(t, err)
	copy(unsafe.Slice((*float32)(b.Data()), len(vals)), vals)
	return b
}

func values(s Snapshot, sel *Selection) []float32 {
	all := unsafe.Slice((*float32)(s.Buffer.Data()), int(s.Rows))
	out := make([]float32, sel.Count)
	for k, r := range sel.Rows {
		out[k] = all[r]
	}
	return out
}

func describe(p uint64) string { return "prim" }

func TestUnsealedKeyHasNoSnapshotUntilSealed(t *testing.T) {
	c, err := New(1, f32)
	require.NoError(t, err)
	defer c.Close()
	prims := []uint64{10, 11, 12}
	c.Stage(1, 1, prims, nil, payload(t, 1, 2, 3))
	sel := c.Select(prims, nil)
	_, err = c.Snapshot(sel, describe)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err))

	require.NoError(t, c.Seal(1))
	s, err := c.Snapshot(sel, describe)
	require.NoError(t, err)
	defer s.Buffer.Release()
	assert.Equal(t, []float32{1, 2, 3}, values(s, sel))
	assert.Equal(t, uint64(1), s.Ordinal)
	assert.True(t, sel.IdentityRows)
	assert.Nil(t, sel.QueryIdx)
}

func TestSealedVersionVisibleWhileNewerChangeIsPending(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{10, 11}
	c.Stage(1, 1, prims, nil, payload(t, 1, 2))
	require.NoError(t, c.Seal(1))
	c.Stage(2, 2, prims, nil, payload(t, 5, 6))
	sel := c.Select(prims, nil)
	s, err := c.Snapshot(sel, describe)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2}, values(s, sel))
	s.Buffer.Release()
	require.NoError(t, c.Seal(2))
	s, err = c.Snapshot(sel, describe)
	require.NoError(t, err)
	assert.Equal(t, []float32{5, 6}, values(s, sel))
	s.Buffer.Release()
}

func TestFoldAppliesOrdinalOrderNotArrivalOrder(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{10}
	c.Stage(5, 9, prims, nil, payload(t, 50))
	c.Stage(3, 10, prims, nil, payload(t, 30)) // arrives later, lower ordinal
	c.Stage(5, 8, prims, nil, payload(t, 49))  // same ordinal, submitted earlier
	require.NoError(t, c.Seal(10))
	sel := c.Select(prims, nil)
	s, err := c.Snapshot(sel, describe)
	require.NoError(t, err)
	defer s.Buffer.Release()
	assert.Equal(t, []float32{50}, values(s, sel))
	assert.Equal(t, uint64(5), s.Ordinal)
}

func TestCopyOnWriteKeepsReaderSnapshot(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{10, 11}
	c.Stage(1, 1, prims, nil, payload(t, 1, 2))
	require.NoError(t, c.Seal(1))
	sel := c.Select(prims, nil)
	old, err := c.Snapshot(sel, describe)
	require.NoError(t, err)
	// Partial write (not whole-column) must not touch the buffer the reader holds.
	c.Stage(2, 2, []uint64{11}, nil, payload(t, 9))
	require.NoError(t, c.Seal(2))
	assert.Equal(t, []float32{1, 2}, values(old, sel))
	cur, err := c.Snapshot(sel, describe)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 9}, values(cur, sel))
	assert.NotEqual(t, old.Buffer.Data(), cur.Buffer.Data())
	old.Buffer.Release()
	cur.Buffer.Release()
}

func TestWholeColumnDeltaIsSwappedIn(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{10, 11}
	p := payload(t, 7, 8)
	addr := p.Data()
	c.Stage(1, 1, prims, nil, p)
	require.NoError(t, c.Seal(1))
	sel := c.Select(prims, nil)
	s, err := c.Snapshot(sel, describe)
	require.NoError(t, err)
	defer s.Buffer.Release()
	assert.Equal(t, addr, s.Buffer.Data(), "whole-column delta becomes the sealed buffer")
}

func TestSelectionSparseAndReordered(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	c.Stage(1, 1, []uint64{10, 11}, nil, payload(t, 1, 2))
	require.NoError(t, c.Seal(1))
	sel := c.Select([]uint64{99, 11, 10}, nil)
	assert.Equal(t, []uint32{1, 2}, sel.QueryIdx)
	assert.Equal(t, []int32{1, 0}, sel.Rows)
	assert.False(t, sel.IdentityRows)
	again := c.Select([]uint64{99, 11, 10}, sel)
	assert.Same(t, sel, again, "unchanged layout reuses the selection")
	c.Stage(2, 2, []uint64{99}, nil, payload(t, 3))
	assert.NotSame(t, sel, c.Select([]uint64{99, 11, 10}, sel), "new row invalidates it")
}

func TestSrcIndexGather(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{1, 2, 3}
	c.Stage(1, 1, prims, []int32{1, 2, 0}, payload(t, 111, 222, 333))
	require.NoError(t, c.Seal(1))
	sel := c.Select(prims, nil)
	s, err := c.Snapshot(sel, describe)
	require.NoError(t, err)
	defer s.Buffer.Release()
	assert.Equal(t, []float32{222, 333, 111}, values(s, sel))
}
