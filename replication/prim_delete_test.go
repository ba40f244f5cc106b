package replication

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
)

// heldPaths lists which of paths s holds at ordinal, from the derived usd-path.
func heldPaths(t *testing.T, s *core.Stage, paths []string, ordinal uint64) []string {
	t.Helper()
	q := queryOf(t, s, paths)
	tok, err := s.Dictionary().InternToken(core.BuiltinPath)
	require.NoError(t, err)
	h, op, err := s.ReadAttributes(q, []uint64{tok}, core.OrdinalRange{End: ordinal})
	must(t, s, op, err)
	var held []string
	for {
		g, err := s.FetchReadNext(h, core.TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		require.NoError(t, err)
		if !g.IsDelete {
			for k := range g.PrimCount {
				at := g.PrimOffset + k
				if g.PrimIndexMap != nil {
					at = g.PrimOffset + g.PrimIndexMap[k]
				}
				held = append(held, paths[at])
			}
		}
		require.NoError(t, s.ReleaseGroup(g.ID))
	}
	_, err = s.ReleaseRead(h)
	require.NoError(t, err)
	return held
}

// TestWholePrimDeletesReplicate: a prim deleted whole stops existing on the replica too; one
// deleted and written again within one advance keeps existing.
func TestWholePrimDeletesReplicate(t *testing.T) {
	s, pub := limitedPrimary(t, "ended", 0, 0)
	mirror, _, rep := newMirror(t, pub.URL(), "ended")

	all := []string{"/A", "/B", "/C"}
	op, err := s.WriteAttribute(core.WriteRequest{Query: queryOf(t, s, all), AttrName: "x", Ordinal: 1, Tensors: hostF32([]float32{1, 2, 3})})
	must(t, s, op, err)
	seal := func(o uint64) {
		op, err := s.AdvanceWriteFloor(o, core.ScopeAll, nil)
		must(t, s, op, err)
	}
	deleteWhole := func(path string, o uint64) {
		op, err := s.DeleteAttributes(core.DeleteRequest{Query: queryOf(t, s, []string{path}), Ordinal: o})
		must(t, s, op, err)
	}
	seal(1)
	deleteWhole("/B", 2)
	seal(2)
	deleteWhole("/A", 3)
	writeAndSeal(t, s, queryOf(t, s, []string{"/A"}), 4, 5) // /A again, in the same advance
	waitFor(t, "the replica", func() bool { st := rep.Status(); return st.Ordinal == 4 || st.Failed })
	require.False(t, rep.Status().Failed, rep.Status().LastError)
	for _, o := range []uint64{1, 2, 4} {
		require.Equal(t, heldPaths(t, s, all, o), heldPaths(t, mirror, all, o), "prims held at %d", o)
	}
	require.Equal(t, []string{"/A", "/C"}, heldPaths(t, mirror, all, 4))
}

// TestSnapshotCarriesPrimDeletes: a late replica that starts from a snapshot does not hold
// the prims the primary deleted whole before it, and holds those whose every attribute was
// deleted one by one.
func TestSnapshotCarriesPrimDeletes(t *testing.T) {
	s, pub := limitedPrimary(t, "endsnap", 4, 0)
	all := []string{"/A", "/B", "/C"}
	q := queryOf(t, s, all)
	op, err := s.WriteAttribute(core.WriteRequest{Query: q, AttrName: "x", Ordinal: 1, Tensors: hostF32([]float32{1, 2, 3})})
	must(t, s, op, err)
	op, err = s.DeleteAttributes(core.DeleteRequest{Query: queryOf(t, s, []string{"/B"}), Ordinal: 2})
	must(t, s, op, err)
	tok, err := s.Dictionary().InternToken("x")
	require.NoError(t, err)
	op, err = s.DeleteAttributes(core.DeleteRequest{Query: queryOf(t, s, []string{"/A"}), Tokens: []uint64{tok}, Ordinal: 2})
	must(t, s, op, err) // /A stays, with no value
	for o := uint64(2); o <= 8; o++ {
		writeAndSeal(t, s, queryOf(t, s, []string{"/C"}), o, float32(o))
	}
	waitFor(t, "the advances to be published", func() bool { return pub.Status().Ordinal == 8 })
	require.NoError(t, pub.Snapshot(10*time.Second))
	requireDropped(t, pub)
	mirror, _, rep := newMirror(t, pub.URL(), "endsnap")
	require.Equal(t, uint64(8), rep.Status().SnapshotOrdinal)
	require.Equal(t, []string{"/A", "/C"}, heldPaths(t, s, all, 8))
	require.Equal(t, heldPaths(t, s, all, 8), heldPaths(t, mirror, all, 8))
}
