package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// A write that re-creates a prim after a whole-prim delete (through the prim's existing column
// row) makes it exist again: INSERT onto it is refused.
func TestUpsertAfterWholePrimDeleteRecreatesThePrim(t *testing.T) {
	f := newFixture(t, "/again/P")
	one := []float32{1}
	write := func(ordinal uint64, attr string, mode int32) (uint64, error) {
		return f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: attr, Ordinal: ordinal,
			Tensors: []tensor.Tensor{f32Tensor(one)}, PrimMode: mode})
	}
	op, err := write(1, "a", PrimModeUpsert)
	require.NoError(t, err)
	f.wait(op)
	op, err = f.s.DeleteAttributes(DeleteRequest{Query: f.query, Ordinal: 2})
	require.NoError(t, err)
	f.wait(op)
	op, err = write(3, "b", PrimModeInsert) // the prim is gone: INSERT may create it
	require.NoError(t, err)
	f.wait(op)

	op, err = f.s.DeleteAttributes(DeleteRequest{Query: f.query, Ordinal: 4})
	require.NoError(t, err)
	f.wait(op)
	op, err = write(5, "a", PrimModeUpsert) // re-creates the prim through its existing row
	require.NoError(t, err)
	f.wait(op)
	_, err = write(6, "c", PrimModeInsert)
	require.Equal(t, status.PrimNotFound, status.CodeOf(err), "the prim exists again")
}
