package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// A key whose pending write and tombstone seal together leaves latest reads, even when a read
// through the same query selected it before (then failing: no sealed version yet). A cached
// selection once survived such a seal and served the deleted row.
func TestSealedTombstoneLeavesCachedSelection(t *testing.T) {
	f := newFixture(t, "/tomb/P")
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 3,
		Tensors: []tensor.Tensor{f32Tensor([]float32{7})}})
	require.NoError(t, err)
	f.wait(op)
	_, err = f.readAll()
	require.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "nothing is sealed yet")
	op, err = f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 4})
	require.NoError(t, err)
	f.wait(op)
	f.seal(4)
	got, err := f.readAll()
	require.NoError(t, err)
	require.Empty(t, got, "the key's sealed version is a tombstone")
}

// Under FLOOR_ONLY a delete ordered before the cell's only value (submitted after a write at a
// higher ordinal) records no tombstone: in ordinal order the cell does not exist yet at the
// delete, and the value comes later. (The tombstone it used to record at 1 depended on
// whether the write happened to have run.)
func TestDeleteBeforeTheOnlyValueRecordsNothing(t *testing.T) {
	f := newPolicyFixture(t, AdmissionFloorOnly, "/tomb/Q")
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 4,
		Tensors: []tensor.Tensor{f32Tensor([]float32{7})}})
	require.NoError(t, err)
	f.wait(op)
	op, err = f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 1})
	require.NoError(t, err)
	f.wait(op)
	_, err = f.readAll()
	require.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "nothing is sealed yet")
	f.seal(2)
	groups, err := f.fetchAll([]uint64{f.attr}, OrdinalRange{Start: 0, End: 2, HasStart: true})
	require.NoError(t, err)
	require.Empty(t, groups, "no change of the cell at or below 2")
	f.seal(4)
	got, err := f.readAll()
	require.NoError(t, err)
	require.Equal(t, [][]float32{{7}}, got)
}
