package core

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// fetchAll drains a read into groups (released by t.Cleanup).
func (f *fixture) fetchAll(attrs []uint64, rng OrdinalRange) ([]*Group, error) {
	f.t.Helper()
	h, op, err := f.s.ReadAttributes(f.query, attrs, rng)
	if err != nil {
		return nil, err
	}
	f.wait(op)
	var out []*Group
	for {
		g, err := f.s.FetchReadNext(h, TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, g)
		id := g.ID
		f.t.Cleanup(func() { _ = f.s.ReleaseGroup(id) })
	}
	_, err = f.s.ReleaseRead(h)
	require.NoError(f.t, err)
	return out, nil
}

func tensorF32(tv TensorView) []float32 {
	return append([]float32(nil), unsafe.Slice((*float32)(unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)), int(tv.Rows))...)
}

func (f *fixture) token(name string) uint64 {
	tok, err := f.s.Dictionary().InternToken(name)
	require.NoError(f.t, err)
	return tok
}

func TestRaggedPerRowAndPackedRows(t *testing.T) {
	f := newFixture(t)
	pts := f.token("pts")
	rows := [][]float32{{1, 2}, {3, 4, 5}, {6}}
	var tensors []tensor.Tensor
	for _, r := range rows {
		tensors = append(tensors, f32Tensor(r))
	}
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: pts, Ordinal: 1, Tensors: tensors, IsArray: true})
	require.NoError(t, err)
	f.wait(op)
	packed := f.token("packed")
	op, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: packed, Ordinal: 1, IsArray: true,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3, 4, 5, 6})}})
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)

	groups, err := f.fetchAll([]uint64{pts, packed}, OrdinalRange{End: 1})
	require.NoError(t, err)
	require.Len(t, groups, 2)
	require.Len(t, groups[0].Tensors, 3)
	for i, r := range rows {
		assert.Equal(t, r, tensorF32(groups[0].Tensors[i]))
	}
	assert.True(t, groups[0].IsArray)
	assert.Equal(t, [][]float32{{1, 2}, {3, 4}, {5, 6}},
		[][]float32{tensorF32(groups[1].Tensors[0]), tensorF32(groups[1].Tensors[1]), tensorF32(groups[1].Tensors[2])})

	// Packed bytes that do not split evenly, and per-row count mismatch.
	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: packed, Ordinal: 2, IsArray: true,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3, 4})}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: pts, Ordinal: 2, IsArray: true,
		Tensors: tensors[:2]})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	// Fixed onto an array prim/name is a schema change.
	_, err = f.write(2, []float32{1, 2, 3})
	require.NoError(t, err, "temperature is a different attribute")
	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: pts, Ordinal: 2,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
}

// A batch is validated whole; writing one cell twice is refused (batch_force_test.go has
// the rules for one attribute in several entries).
func TestBatchIsValidatedWholeAndNeedsDistinctCells(t *testing.T) {
	f := newFixture(t)
	a, b := f.token("a"), f.token("b")
	good := WriteRequest{AttrToken: a, Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}}
	bad := WriteRequest{AttrToken: b, Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2})}}
	_, err := f.s.WriteAttributes(f.query, 1, PrimModeUpsert, []WriteRequest{good, bad})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, err.Error(), "writes[1]")
	_, err = f.s.WriteAttributes(f.query, 1, PrimModeUpsert, []WriteRequest{good, good})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	f.seal(0) // nothing was written
	groups, err := f.fetchAll([]uint64{a, b}, OrdinalRange{End: 1})
	require.NoError(t, err)
	assert.Empty(t, groups)

	good2 := WriteRequest{AttrToken: b, Tensors: []tensor.Tensor{f32Tensor([]float32{4, 5, 6})}}
	op, err := f.s.WriteAttributes(f.query, 1, PrimModeUpsert, []WriteRequest{good, good2})
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)
	groups, err = f.fetchAll([]uint64{a, b}, OrdinalRange{End: 1})
	require.NoError(t, err)
	require.Len(t, groups, 2)
	assert.Equal(t, []float32{4, 5, 6}, tensorF32(groups[1].Tensors[0]))
}

func TestDeleteTombstonesInRangeReadsAndHidesFromLatest(t *testing.T) {
	f := newFixture(t)
	op, _ := f.write(1, []float32{1, 2, 3})
	f.wait(op)
	f.seal(1)
	del, err := f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 2})
	require.NoError(t, err)
	f.wait(del)
	got, err := f.readAt(1)
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got, "unsealed delete: the sealed values at 1 remain")
	f.seal(2)
	got, err = f.readAll()
	require.NoError(t, err)
	assert.Empty(t, got)

	groups, err := f.fetchAll([]uint64{f.attr}, OrdinalRange{Start: 2, End: 2, HasStart: true})
	require.NoError(t, err)
	require.Len(t, groups, 1)
	assert.True(t, groups[0].IsDelete)
	assert.Empty(t, groups[0].Tensors)
	assert.Equal(t, uint32(3), groups[0].PrimCount)

	_, err = f.s.DeleteAttributes(DeleteRequest{Query: f.query, Names: []string{"usd-path"}, Tokens: []uint64{0}, Ordinal: 3})
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
	_, err = f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 2})
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err))
}

func TestWholePrimDeleteRemovesPrims(t *testing.T) {
	f := newFixture(t)
	op, _ := f.write(1, []float32{1, 2, 3})
	f.wait(op)
	f.seal(1)
	del, err := f.s.DeleteAttributes(DeleteRequest{Query: f.query, Ordinal: 2})
	require.NoError(t, err)
	f.wait(del)
	f.seal(2)
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Empty(t, got)
	paths, err := f.fetchAll([]uint64{f.token(BuiltinPath)}, OrdinalRange{End: 2})
	require.NoError(t, err)
	assert.Empty(t, paths, "deleted prims are not held any more")
	op, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 3, PrimMode: PrimModeInsert,
		Tensors: []tensor.Tensor{f32Tensor([]float32{7, 8, 9})}})
	require.NoError(t, err, "INSERT works again on deleted prims")
	f.wait(op)
}

func TestRangeReadOutOfRangeAndFloorViolation(t *testing.T) {
	f := newFixture(t)
	op, _ := f.write(1, []float32{1, 2, 3})
	f.wait(op)
	op, _ = f.write(3, []float32{4, 5, 6})
	f.wait(op)
	f.seal(2)
	groups, err := f.fetchAll([]uint64{f.attr}, OrdinalRange{Start: 1, End: 1, HasStart: true})
	require.NoError(t, err, "the change at 3 is not sealed: the sealed state is the state at 1")
	require.Len(t, groups, 1)
	assert.Equal(t, []float32{1, 2, 3}, tensorF32(groups[0].Tensors[0]))
	assert.Equal(t, uint64(1), groups[0].Ordinal)
	_, err = f.fetchAll([]uint64{f.attr}, OrdinalRange{Start: 2, End: 3, HasStart: true})
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err))
	groups, err = f.fetchAll([]uint64{f.attr}, OrdinalRange{Start: 4, End: 9, HasStart: true})
	require.NoError(t, err)
	assert.Empty(t, groups)
	f.seal(3)
	groups, err = f.fetchAll([]uint64{f.attr}, OrdinalRange{Start: 1, End: 1, HasStart: true})
	require.NoError(t, err, "changed again at 3, now sealed: the state at 1 is in the history window")
	require.Len(t, groups, 1)
	assert.Equal(t, []float32{1, 2, 3}, tensorF32(groups[0].Tensors[0]))
	assert.Equal(t, uint64(1), groups[0].Ordinal)
	groups, err = f.fetchAll([]uint64{f.attr}, OrdinalRange{Start: 2, End: 3, HasStart: true})
	require.NoError(t, err)
	require.Len(t, groups, 1)
	assert.Equal(t, []float32{4, 5, 6}, tensorF32(groups[0].Tensors[0]))
	_, _, err = f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{Start: 5, End: 4, HasStart: true})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
}

func TestScopedFloorsAndOrdinalQueries(t *testing.T) {
	f := newFixture(t)
	a, b := f.token("a"), f.token("b")
	for _, tok := range []uint64{a, b} {
		op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: tok, Ordinal: 1,
			Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
		require.NoError(t, err)
		f.wait(op)
	}
	fetch := func(h, op uint64, err error) uint64 {
		require.NoError(t, err)
		v, err := f.s.FetchOrdinal(h, TimeoutInfinite)
		require.NoError(t, err)
		rel, err := f.s.ReleaseOrdinalQuery(h)
		require.NoError(t, err)
		f.wait(rel)
		_, err = f.s.FetchOrdinal(h, 0)
		assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
		return v
	}
	adv, err := f.s.AdvanceWriteFloor(4, ScopeInclude, []uint64{a})
	require.NoError(t, err)
	f.wait(adv)
	assert.Equal(t, uint64(4), fetch(f.s.GetAttributeWriteFloor(a)))
	assert.Equal(t, uint64(0), fetch(f.s.GetAttributeWriteFloor(b)))
	assert.Equal(t, uint64(0), fetch(f.s.GetAttributeWriteFloor(0)), "global = min over known")

	adv, _ = f.s.AdvanceWriteFloor(2, ScopeExclude, []uint64{a})
	f.wait(adv)
	assert.Equal(t, uint64(2), fetch(f.s.GetAttributeWriteFloor(b)))
	assert.Equal(t, uint64(4), fetch(f.s.GetAttributeWriteFloor(a)), "never lowered")
	assert.Equal(t, uint64(2), fetch(f.s.GetAttributeWriteFloor(0)))

	adv, _ = f.s.AdvanceWriteFloor(6, ScopeExclude, nil)
	f.wait(adv)
	assert.Equal(t, uint64(6), fetch(f.s.GetAttributeWriteFloor(0)), "EXCLUDE{} is ALL")
	assert.Equal(t, uint64(0), fetch(f.s.GetOldestPreservedOrdinal()))

	_, err = f.s.AdvanceWriteFloor(7, Scope(9), nil)
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: b, Ordinal: 6,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err))
}

func TestDerivedBuiltins(t *testing.T) {
	f := newFixture(t, "/World", "/World/A", "/World/B")
	op, _ := f.write(1, []float32{1, 2, 3})
	f.wait(op)
	groups, err := f.fetchAll([]uint64{f.token(BuiltinPath), f.token(BuiltinParent), f.token(BuiltinChildren)}, OrdinalRange{End: 9})
	require.NoError(t, err, "derived built-ins are not floor-gated")
	require.Len(t, groups, 3)
	d := f.s.Dictionary()
	world, _ := d.InternPath("/World")
	a, _ := d.InternPath("/World/A")
	b, _ := d.InternPath("/World/B")
	ids := func(tv TensorView) []uint64 {
		return append([]uint64(nil), unsafe.Slice((*uint64)(unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)), int(tv.Rows))...)
	}
	assert.Equal(t, []uint64{world, a, b}, ids(groups[0].Tensors[0]))
	assert.Equal(t, uint64(9), groups[0].Ordinal)
	assert.Equal(t, []uint32{1, 2}, groups[1].PrimIndexMap, "/World is top-level: no parent row")
	assert.Equal(t, []uint64{world, world}, ids(groups[1].Tensors[0]))
	assert.True(t, groups[2].IsArray)
	assert.Equal(t, []uint32{0}, groups[2].PrimIndexMap, "leaves have no children row")
	assert.Equal(t, []uint64{a, b}, ids(groups[2].Tensors[0]))

	ranged, err := f.fetchAll([]uint64{f.token(BuiltinPath)}, OrdinalRange{Start: 0, End: 9, HasStart: true})
	require.NoError(t, err)
	assert.Empty(t, ranged)
	_, _, err = f.s.ReadAttributes(f.query, []uint64{f.token(BuiltinActive)}, OrdinalRange{End: 1})
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
}

func TestSchemaPerPrimAfterDelete(t *testing.T) {
	f := newFixture(t, "/A", "/B")
	op, _ := f.write(1, []float32{1, 2})
	f.wait(op)
	f.seal(1)
	ints := []int32{7, 8}
	intTensor := tensor.Tensor{Data: unsafe.Pointer(&ints[0]), DeviceType: tensor.DeviceCPU,
		DType: tensor.DType{Code: tensor.CodeInt, Bits: 32, Lanes: 1}, Shape: []int64{2}}
	_, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 2, Tensors: []tensor.Tensor{intTensor}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err), "schema change on prims that carry it")
	del, _ := f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 2})
	f.wait(del)
	op, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 3, Tensors: []tensor.Tensor{intTensor}})
	require.NoError(t, err, "accepted once deleted")
	f.wait(op)
	f.seal(3)
	groups, err := f.fetchAll([]uint64{f.attr}, OrdinalRange{End: 3})
	require.NoError(t, err)
	require.Len(t, groups, 1)
	assert.Equal(t, tensor.CodeInt, groups[0].Tensors[0].DType.Code)
}

func TestBuiltinLayoutsAndSemantics(t *testing.T) {
	f := newFixture(t)
	_, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: BuiltinPrimType, Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: "tok", Ordinal: 1, Semantic: SemanticTokenID,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1, Semantic: 5,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	require.NoError(t, err)
	f.wait(op)
	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 2, Semantic: 8,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err), "roles are immutable")
	op, err = f.write(2, []float32{1, 2, 3})
	require.NoError(t, err, "NONE does not change the role")
	f.wait(op)
	f.seal(2)
	groups, err := f.fetchAll([]uint64{f.attr}, OrdinalRange{End: 2})
	require.NoError(t, err)
	assert.Equal(t, int32(5), groups[0].Semantic)
}
