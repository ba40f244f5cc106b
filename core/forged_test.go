package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// forged is a float32 tensor over vals whose shape claims 2^40 rows (4 TiB): no copy may read
// it in full (the allocation alone fails, and the rows past vals are not memory we own).
func forged(vals []float32) tensor.Tensor {
	t := f32Tensor(vals)
	t.Shape = []int64{1 << 40}
	return t
}

const forgedShape = "shape [1099511627776]"

// pendingQuery returns a filter query over the fixture's prims that stays unresolved (held by
// the query gate) until release.
func (f *fixture) pendingQuery(t *testing.T) (q uint64, release func()) {
	t.Helper()
	gate := scopedGate(t, QueryGate)
	q, _, err := f.s.Query([]Predicate{{Attr: f.attr, Op: OpHas}}, nil)
	require.NoError(t, err)
	return q, gate.Release
}

func TestForgedRowCountIsRejectedBeforeAnyCopy(t *testing.T) {
	vals := []float32{10, 20, 30, 40}
	t.Run("resolved query", func(t *testing.T) {
		f := newFixture(t)
		_, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1,
			Tensors: []tensor.Tensor{forged(vals)}})
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
		assert.ErrorContains(t, err, "tensors[0]: "+forgedShape)
		assert.ErrorContains(t, err, "do not match the 3 prims written")
	})
	t.Run("non-zero count, query not resolved yet", func(t *testing.T) {
		f := newFixture(t)
		op, err := f.write(1, []float32{1, 2, 3})
		require.NoError(t, err)
		f.wait(op)
		q, release := f.pendingQuery(t)
		defer release()
		_, err = f.s.WriteAttribute(WriteRequest{Query: q, AttrToken: f.attr, Ordinal: 2, Count: 2,
			Tensors: []tensor.Tensor{forged(vals)}})
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err), "rejected at enqueue: rows != count")
		assert.ErrorContains(t, err, forgedShape)
	})
	t.Run("query resolved after the enqueue", func(t *testing.T) {
		f := newFixture(t)
		op, err := f.write(1, []float32{1, 2, 3})
		require.NoError(t, err)
		f.wait(op)
		q, release := f.pendingQuery(t)
		live := buffer.LiveBytes()
		op, err = f.s.WriteAttribute(WriteRequest{Query: q, AttrToken: f.attr, Ordinal: 2,
			Tensors: []tensor.Tensor{forged(vals)}})
		require.NoError(t, err, "the prim count is unknown at enqueue")
		assert.Less(t, buffer.LiveBytes()-live, int64(1<<20), "nothing was copied at enqueue")
		release()
		res, err := f.s.WaitOp(op, TimeoutInfinite)
		require.NoError(t, err)
		require.Contains(t, res.ErrorOpIDs, op)
		msg := f.s.LastOpError(op)
		assert.Contains(t, msg, "INVALID_ARGUMENT", "the rows are checked before the deferred copy")
		assert.Contains(t, msg, forgedShape)
	})
	t.Run("index map reads only real rows", func(t *testing.T) {
		f := newFixture(t)
		op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1,
			Count: 3, HasIndexMap: true, IndexMap: []uint32{3, 0, 3}, Tensors: []tensor.Tensor{forged(vals)}})
		require.NoError(t, err)
		f.wait(op)
		f.seal(1)
		got, err := f.readAll()
		require.NoError(t, err)
		assert.Equal(t, [][]float32{{40, 10, 40}}, got, "only rows up to the highest index were copied")
	})
	t.Run("batch entry", func(t *testing.T) {
		f := newFixture(t)
		_, err := f.s.WriteAttributes(f.query, 1, PrimModeUpsert, []WriteRequest{
			{AttrName: "ok", Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}},
			{AttrName: "bad", Tensors: []tensor.Tensor{forged(vals)}},
		})
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
		assert.ErrorContains(t, err, "writes[1]: tensors[0]: "+forgedShape)
	})
	t.Run("unreferenced per-row tensor", func(t *testing.T) {
		f := newFixture(t)
		huge := forged(vals)
		rows := []tensor.Tensor{f32Tensor([]float32{1, 2}), f32Tensor([]float32{3}), huge}
		op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: "pts", Ordinal: 1, IsArray: true,
			Count: 3, HasIndexMap: true, IndexMap: []uint32{1, 0, 1}, Tensors: rows})
		require.NoError(t, err)
		f.wait(op)
		f.seal(1)
		groups, err := f.fetchAll([]uint64{f.token("pts")}, OrdinalRange{End: 10})
		require.NoError(t, err)
		require.Len(t, groups, 1)
		var got [][]float32
		for _, tv := range groups[0].Tensors {
			got = append(got, tensorF32(tv))
		}
		assert.Equal(t, [][]float32{{3}, {1, 2}, {3}}, got, "the forged row no index names was never read")
	})
}
