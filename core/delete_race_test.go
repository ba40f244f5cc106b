package core

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// TestDeleteWinsOverAnEarlierSubmittedLowerOrdinalWrite: a write at ordinal 5 submitted
// before a delete at ordinal 7 of the same key must end tombstoned however the two execute
// (last writer wins by ordinal; the serialized reference runs the write first). A delete that
// ran before the write would find no row to tombstone, so deletes wait for earlier-submitted
// lower-ordinal mutations (regression test for the race issue 7 found).
func TestDeleteWinsOverAnEarlierSubmittedLowerOrdinalWrite(t *testing.T) {
	s := NewStage("delete-race", Config{Workers: 1})
	t.Cleanup(s.Destroy)
	d := s.Dictionary()
	query := func(p string) uint64 {
		list, err := d.CreateListFromStrings([]string{p})
		require.NoError(t, err)
		q, err := s.QueryFromPathList(list)
		require.NoError(t, err)
		_, _ = d.Release(list)
		return q
	}
	wait := func(op uint64) {
		res, err := s.WaitOp(op, TimeoutInfinite)
		require.NoError(t, err)
		require.Empty(t, res.ErrorOpIDs, s.LastOpError(op))
	}
	one := []float32{1}
	survived := 0
	const rounds = 100
	for i := 0; i < rounds; i++ {
		base := uint64(10 * i)
		qP, qQ := query(fmt.Sprintf("/race/P%d", i)), query(fmt.Sprintf("/race/Q%d", i))
		// Hold the only worker; queue X (ordinal base+5), W after X (same ordinal), then D.
		gate, entered := make(chan struct{}), make(chan struct{})
		s.pool.Go(sched.NewOp(0, nil, nil), func() error { close(entered); <-gate; return nil }, nil)
		<-entered
		x, err := s.WriteAttribute(WriteRequest{Query: qQ, AttrName: "a", Ordinal: base + 5, Tensors: []tensor.Tensor{f32Tensor(one)}})
		require.NoError(t, err)
		w, err := s.WriteAttribute(WriteRequest{Query: qP, AttrName: "a", Ordinal: base + 5, Tensors: []tensor.Tensor{f32Tensor(one)}})
		require.NoError(t, err)
		del, err := s.DeleteAttributes(DeleteRequest{Query: qP, Names: []string{"a"}, Tokens: []uint64{0}, Ordinal: base + 7})
		require.NoError(t, err)
		close(gate)
		for _, op := range []uint64{x, w, del} {
			wait(op)
		}
		adv, err := s.AdvanceWriteFloor(base+7, ScopeAll, nil)
		require.NoError(t, err)
		wait(adv)
		tok, _ := d.InternToken("a")
		h, rop, err := s.ReadAttributes(qP, []uint64{tok}, OrdinalRange{End: base + 7})
		require.NoError(t, err)
		wait(rop)
		g, err := s.FetchReadNext(h, TimeoutInfinite)
		if err == nil {
			survived++
			require.NoError(t, s.ReleaseGroup(g.ID))
		} else {
			require.Equal(t, status.EndOfIteration, status.CodeOf(err))
		}
	}
	require.Zero(t, survived, "the write's value survived a later-submitted, higher-ordinal delete in %d of %d rounds", survived, rounds)
}
