package sched

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
)

func TestOpRunsAfterDependencies(t *testing.T) {
	p := NewPool(4)
	gate := make(chan struct{})
	var order []uint64
	var mu = make(chan struct{}, 1)
	record := func(id uint64) { mu <- struct{}{}; order = append(order, id); <-mu }

	a := NewOp(1, nil, nil)
	p.Go(a, func() error { <-gate; record(1); return nil }, nil)
	b := NewOp(2, []*Op{a}, nil)
	p.Submit(b, func() error { record(2); return nil }, nil)

	assert.False(t, b.Wait(0), "b must wait for a")
	assert.Equal(t, uint64(1), b.LowestPending(), "lowest pending in b's chain is a")
	close(gate)
	require.True(t, b.Wait(time.Second))
	assert.Equal(t, []uint64{1, 2}, order)
	assert.Equal(t, uint64(0), b.LowestPending())
}

func TestTimeoutWaitsThenReturnsFalse(t *testing.T) {
	p := NewPool(1)
	gate := make(chan struct{})
	a := NewOp(1, nil, nil)
	p.Go(a, func() error { <-gate; return nil }, nil)
	start := time.Now()
	assert.False(t, a.Wait(30*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 25*time.Millisecond)
	close(gate)
	assert.True(t, a.Wait(-1))
	p.Drain()
}

func TestInputFailurePropagatesButOrderingDoesNot(t *testing.T) {
	p := NewPool(2)
	producer := NewOp(1, nil, nil)
	p.Submit(producer, func() error { return status.Errorf(status.InvalidArgument, "bad") }, nil)
	consumer := NewOp(2, nil, []*Op{producer})
	ran := atomic.Bool{}
	p.Submit(consumer, func() error { ran.Store(true); return nil }, nil)
	ordered := NewOp(3, []*Op{producer}, nil)
	p.Submit(ordered, func() error { return nil }, nil)
	p.Drain()

	assert.False(t, ran.Load(), "consumer of a failed producer must not run")
	assert.Equal(t, status.OpFailed, status.CodeOf(consumer.Err()))
	assert.Equal(t, []uint64{1, 2}, consumer.FailedChain(), "root cause first")
	assert.NoError(t, ordered.Err())
	assert.Empty(t, ordered.FailedChain())
}

func TestPanicBecomesInternalError(t *testing.T) {
	p := NewPool(1)
	op := NewOp(7, nil, nil)
	p.Submit(op, func() error { panic("boom") }, nil)
	require.True(t, op.Wait(time.Second))
	assert.Equal(t, status.Internal, status.CodeOf(op.Err()))
	assert.Contains(t, op.Err().Error(), "boom")
	assert.Equal(t, []uint64{7}, op.FailedChain())
}

func TestPoolBoundsParallelism(t *testing.T) {
	p := NewPool(2)
	var running, peak atomic.Int32
	for i := 0; i < 8; i++ {
		op := NewOp(uint64(i+1), nil, nil)
		p.Go(op, func() error {
			n := running.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			running.Add(-1)
			return nil
		}, nil)
	}
	p.Drain()
	assert.Equal(t, int32(2), peak.Load())
}

func TestImmediate(t *testing.T) {
	op := Immediate(3, errors.New("x"))
	assert.True(t, op.Done())
	assert.Equal(t, []uint64{3}, op.FailedChain())
}

func TestReadyOpRunsInlineAndPendingOpWaits(t *testing.T) {
	p := NewPool(2)
	a := NewOp(1, nil, nil)
	p.Submit(a, func() error { return nil }, nil)
	assert.True(t, a.Done(), "a ready op with a free worker runs during Submit")

	gate := make(chan struct{})
	b := NewOp(2, nil, nil)
	p.Go(b, func() error { <-gate; return nil }, nil)
	c := NewOp(3, []*Op{b}, nil)
	p.Submit(c, func() error { return nil }, nil)
	assert.False(t, c.Done(), "an op with a pending dependency is not run inline")
	close(gate)
	require.True(t, c.Wait(time.Second))
}
