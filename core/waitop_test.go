package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// TestWaitOpTimeoutAlwaysNamesAPendingOp polls ops while they finish on a worker: a TIMEOUT
// must always come with a pending op of the chain. (The op may finish between the wait and
// the walk over its chain; it then counts as complete, never "TIMEOUT, lowest pending 0".)
func TestWaitOpTimeoutAlwaysNamesAPendingOp(t *testing.T) {
	s := NewStage("waitop", Config{Workers: 1})
	t.Cleanup(s.Destroy)
	list, err := s.Dictionary().CreateListFromStrings([]string{"/waitop/A", "/waitop/B"})
	require.NoError(t, err)
	q, err := s.QueryFromPathList(list)
	require.NoError(t, err)
	_, err = s.Dictionary().Release(list)
	require.NoError(t, err)
	vals := []float32{1, 2}
	timeouts := 0
	for i := 0; i < 300; i++ {
		// Hold the only worker slot so the write queues, then let it run while polling.
		gate, entered := make(chan struct{}), make(chan struct{})
		s.pool.Go(sched.NewOp(0, nil, nil), func() error { close(entered); <-gate; return nil }, nil)
		<-entered
		op, err := s.WriteAttribute(WriteRequest{Query: q, AttrName: "waitop", Ordinal: uint64(i + 1),
			Tensors: []tensor.Tensor{f32Tensor(vals)}})
		require.NoError(t, err)
		close(gate)
		for {
			res, err := s.WaitOp(op, 0)
			require.NoError(t, err)
			if res.Status == status.OK {
				break
			}
			timeouts++
			require.NotZero(t, res.LowestPending, "a TIMEOUT must name a pending op of the chain")
			require.LessOrEqual(t, res.LowestPending, op)
		}
		require.NoError(t, s.ReleaseOp(op))
	}
	require.NotZero(t, timeouts, "the polls raced the worker")
}
