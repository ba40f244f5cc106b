package core

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
)

// PrimsHolding lists the prims whose committed column of an attribute has a semantic.
func TestPrimsHolding(t *testing.T) {
	c := newCStage(t)
	const semanticString = 13
	c.ok(c.write([]string{"/A", "/B"}, "label", 1, true, semanticString, rowsTensors(dtU8, []byte("a"), []byte("bc"))...))
	c.ok(c.write([]string{"/C"}, "label", 1, false, 0, fixedTensor(dtU64, u64s(7))))
	held := func(attr string, semantic int32) []string {
		prims, err := c.s.PrimsHolding(c.tok(attr), semantic)
		require.NoError(t, err)
		out := []string{}
		for _, p := range prims {
			out = append(out, c.s.pathName(p))
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"/A", "/B"}, held("label", semanticString))
	require.Equal(t, []string{"/C"}, held("label", 0))
	require.Empty(t, held("other", semanticString))
	// a deleted value is no longer held
	c.ok(c.s.DeleteAttributes(DeleteRequest{Query: c.query("/B"), Tokens: []uint64{c.tok("label")}, Ordinal: 2}))
	require.Equal(t, []string{"/A"}, held("label", semanticString))
	_, err := c.s.PrimsHolding(0, semanticString)
	require.Equal(t, status.InvalidArgument, status.CodeOf(err))
}
