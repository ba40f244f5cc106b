package core

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/tensor"
)

// TestAdvanceFeedReportsSealedChanges: each advance reports the prims changed since the
// previous floor with the ordinal of their newest change, values and tombstones; a second
// observer is refused; after the observer detaches nothing is reported.
func TestAdvanceFeedReportsSealedChanges(t *testing.T) {
	f := newFixture(t)
	var got []SealedAdvance
	detach, err := f.s.ObserveAdvances(func(a SealedAdvance) { got = append(got, a) })
	require.NoError(t, err)
	_, err = f.s.ObserveAdvances(func(SealedAdvance) {})
	require.ErrorContains(t, err, "already has an advance observer")

	f.wait(must(f.write(1, []float32{1, 2, 3})))
	f.wait(must(f.write(2, []float32{4, 5, 6})))
	f.seal(2)
	op, err := f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 3})
	f.wait(must(op, err))
	f.seal(3)
	f.seal(4) // nothing changed: no column

	require.Len(t, got, 3)
	c := got[0].Columns[0]
	require.True(t, got[0].Global)
	require.Equal(t, "temperature", c.Attribute)
	require.True(t, c.Exact)
	require.Equal(t, []string{"/World/A", "/World/B", "/World/C"}, c.Paths)
	require.Equal(t, []uint64{2, 2, 2}, c.Ordinals)
	require.Equal(t, []bool{false, false, false}, c.Deleted)
	require.Equal(t, f32s(4, 5, 6), c.Values)
	require.Equal(t, []bool{true, true, true}, got[1].Columns[0].Deleted)
	require.Empty(t, got[1].Columns[0].Values)
	require.Empty(t, got[2].Columns)

	detach()
	f.wait(must(f.write(5, []float32{7, 8, 9})))
	f.seal(5)
	require.Len(t, got, 3)
}

// TestAdvanceFeedCopiesRunsOfRows: in a dense change set a tombstone or an unchanged row
// between written rows splits the copy of their values; each written row's value arrives.
func TestAdvanceFeedCopiesRunsOfRows(t *testing.T) {
	f := newFixtureConfig(t, Config{}, "/World/A", "/World/B", "/World/C", "/World/D")
	var got []SealedAdvance
	_, err := f.s.ObserveAdvances(func(a SealedAdvance) { got = append(got, a) })
	require.NoError(t, err)
	f.wait(must(f.write(1, []float32{1, 2, 3, 4})))
	f.seal(1)
	ad := f.queryOf("/World/A", "/World/D")
	f.wait(must(f.writeF32(ad, "temperature", 2, 5, 8)))
	op, err := f.s.DeleteAttributes(DeleteRequest{Query: f.queryOf("/World/B"), Tokens: []uint64{f.attr}, Ordinal: 2})
	f.wait(must(op, err))
	f.seal(2)
	require.Len(t, got, 2)
	c := got[0].Columns[0]
	require.Equal(t, f32s(1, 2, 3, 4), c.Values)
	c = got[1].Columns[0]
	require.True(t, c.Exact)
	require.Equal(t, []string{"/World/A", "/World/B", "/World/D"}, c.Paths)
	require.Equal(t, []bool{false, true, false}, c.Deleted)
	require.Equal(t, []uint64{2, 2, 2}, c.Ordinals)
	require.Equal(t, f32s(5, 8), c.Values)
}

// TestAdvanceFeedFallsBackToTheWholeColumn: when an advance seals more changes than the
// column retains, membership is inexact and every sealed row is reported at the floor.
func TestAdvanceFeedFallsBackToTheWholeColumn(t *testing.T) {
	f := newFixture(t)
	var got []SealedAdvance
	_, err := f.s.ObserveAdvances(func(a SealedAdvance) { got = append(got, a) })
	require.NoError(t, err)
	const n = 1100 // above column.DefaultRetention
	for o := uint64(1); o <= n; o++ {
		f.wait(must(f.write(o, []float32{float32(o), 0, 0})))
	}
	f.seal(n)
	require.Len(t, got, 1)
	c := got[0].Columns[0]
	require.False(t, c.Exact)
	require.Equal(t, []uint64{n, n, n}, c.Ordinals)
	require.Equal(t, f32s(n, 0, 0), c.Values)
}

// TestAdvanceFeedNamesTokenBuiltins: prim types are token ids of this stage's dictionary, so
// the feed reports each id's string with them.
func TestAdvanceFeedNamesTokenBuiltins(t *testing.T) {
	f := newFixture(t)
	var got []SealedAdvance
	_, err := f.s.ObserveAdvances(func(a SealedAdvance) { got = append(got, a) })
	require.NoError(t, err)
	tok, err := f.s.Dictionary().InternToken("Mesh")
	require.NoError(t, err)
	ids := []uint64{tok, tok, tok}
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: BuiltinPrimType, Ordinal: 1,
		Tensors: []tensor.Tensor{{Data: unsafe.Pointer(&ids[0]), DeviceType: tensor.DeviceCPU,
			DType: tensor.DType{Code: tensor.CodeUInt, Bits: 64, Lanes: 1}, Shape: []int64{3}}}})
	f.wait(must(op, err))
	f.wait(must(f.write(1, []float32{1, 2, 3})))
	f.seal(1)
	require.Len(t, got, 1)
	require.Len(t, got[0].Columns, 2)
	for _, c := range got[0].Columns {
		if c.Attribute == BuiltinPrimType {
			require.Equal(t, []string{"Mesh", "Mesh", "Mesh"}, c.Tokens)
		} else {
			require.Equal(t, "temperature", c.Attribute)
			require.Nil(t, c.Tokens)
		}
	}
}

// TestAdvanceFeedSealedState: after RequestSealedState the next advance (only) carries every
// sealed row, also the ones it did not change, and the floors; without an observer the
// request is refused.
func TestAdvanceFeedSealedState(t *testing.T) {
	f := newFixture(t)
	require.ErrorContains(t, f.s.RequestSealedState(), "no advance observer")
	var got []SealedAdvance
	_, err := f.s.ObserveAdvances(func(a SealedAdvance) { got = append(got, a) })
	require.NoError(t, err)
	f.wait(must(f.write(1, []float32{1, 2, 3})))
	f.seal(1)
	require.NoError(t, f.s.RequestSealedState())
	f.seal(2) // changes nothing
	f.seal(3)
	require.Len(t, got, 3)
	require.Nil(t, got[0].State)
	require.Nil(t, got[2].State)
	st := got[1].State
	require.NotNil(t, st)
	require.Empty(t, got[1].Columns)
	require.Equal(t, uint64(2), st.GlobalFloor)
	require.Len(t, st.Columns, 1)
	require.Equal(t, []string{"/World/A", "/World/B", "/World/C"}, st.Columns[0].Paths)
	require.Equal(t, []uint64{1, 1, 1}, st.Columns[0].Ordinals)
}

// TestAdvanceFeedPrimDeletes: a whole-prim delete is reported once its ordinal is sealed (at
// its newest delete), and not for a prim written again within the same advance.
func TestAdvanceFeedPrimDeletes(t *testing.T) {
	f := newFixture(t)
	var got []SealedAdvance
	_, err := f.s.ObserveAdvances(func(a SealedAdvance) { got = append(got, a) })
	require.NoError(t, err)
	f.wait(must(f.write(1, []float32{1, 2, 3})))
	f.seal(1)
	f.wait(must(f.s.DeleteAttributes(DeleteRequest{Query: f.queryOf("/World/A", "/World/B"), Ordinal: 2})))
	f.wait(must(f.s.DeleteAttributes(DeleteRequest{Query: f.queryOf("/World/B"), Ordinal: 3})))
	f.wait(must(f.s.WriteAttribute(WriteRequest{Query: f.queryOf("/World/A"), AttrToken: f.attr, Ordinal: 4,
		Tensors: []tensor.Tensor{f32Tensor([]float32{7})}})))
	f.seal(4)
	require.Len(t, got, 2)
	require.Empty(t, got[0].PrimDeletes)
	require.Equal(t, []PrimDelete{{Path: "/World/B", Ordinal: 3}}, got[1].PrimDeletes)
}
