package core

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/tensor"
)

// A packed ragged payload's rows are computed, not materialized: an empty payload whose index
// map names row 2^32-1 (4 Gi empty rows) used to allocate 64 GiB of row offsets and abort the
// process with "fatal error: runtime: out of memory".
func TestPackedArrayRowsAreNotMaterialized(t *testing.T) {
	f := newFixture(t, "/packed/A", "/packed/B")
	var none [1]byte
	empty := tensor.Tensor{Data: unsafe.Pointer(&none[0]), DeviceType: tensor.DeviceCPU,
		DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}, Shape: []int64{0}}
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: "packed", Ordinal: 1, IsArray: true,
		Tensors: []tensor.Tensor{empty}, Count: 2, IndexMap: []uint32{1<<32 - 1, 0}, HasIndexMap: true})
	require.NoError(t, err)
	f.wait(op)
	// Two uniform rows of 3 elements, gathered in reverse.
	vals := []float32{1, 2, 3, 4, 5, 6}
	op, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: "packed", Ordinal: 2, IsArray: true,
		Tensors: []tensor.Tensor{f32Tensor(vals)}, Count: 2, IndexMap: []uint32{1, 0}, HasIndexMap: true})
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)
	tok, err := f.s.Dictionary().InternToken("packed")
	require.NoError(t, err)
	require.Equal(t, [][]float32{{}, {}}, readArrays(t, f, tok, 1), "two empty rows")
	f.seal(2)
	require.Equal(t, [][]float32{{4, 5, 6}, {1, 2, 3}}, readArrays(t, f, tok, 2))
}

// readArrays returns each prim's float32 array (in query order) from the snapshot at end.
func readArrays(t *testing.T, f *fixture, attr, end uint64) [][]float32 {
	t.Helper()
	h, op, err := f.s.ReadAttributes(f.query, []uint64{attr}, OrdinalRange{End: end})
	require.NoError(t, err)
	f.wait(op)
	g, err := f.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(t, err)
	out := make([][]float32, g.PrimCount)
	for k := range out {
		tv := g.Tensors[k]
		out[k] = []float32{}
		if tv.Rows > 0 {
			out[k] = append(out[k], unsafe.Slice((*float32)(unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)), tv.Rows)...)
		}
	}
	require.NoError(t, f.s.ReleaseGroup(g.ID))
	rel, err := f.s.ReleaseRead(h)
	require.NoError(t, err)
	f.wait(rel)
	return out
}
