package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// A key whose first sealed version is a tombstone leaves latest reads, even when a read
// through the same query selected it before (then failing: no sealed version yet). The cached
// selection used to survive the seal and serve the never-written row as zeros.
func TestSealedTombstoneLeavesCachedSelection(t *testing.T) {
	f := newFixture(t, "/tomb/P")
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 4,
		Tensors: []tensor.Tensor{f32Tensor([]float32{7})}})
	require.NoError(t, err)
	f.wait(op)
	op, err = f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 1})
	require.NoError(t, err)
	f.wait(op)
	_, err = f.readAll()
	require.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "nothing is sealed yet")
	f.seal(2) // seals the tombstone at 1; the write at 4 stays above the floor
	got, err := f.readAt(2)
	require.NoError(t, err)
	require.Empty(t, got, "the key's sealed version is a tombstone")
}
