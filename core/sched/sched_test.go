package sched

import (
	"errors"
	"runtime"
	"sync"
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

// recorder collects op ids in execution order.
type recorder struct {
	mu    sync.Mutex
	order []uint64
}

func (r *recorder) add(id uint64) {
	r.mu.Lock()
	r.order = append(r.order, id)
	r.mu.Unlock()
}

func (r *recorder) get() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.order...)
}

func TestOneWorkerRunsReadyOpsInSubmissionOrder(t *testing.T) {
	p := NewPool(1)
	gate := make(chan struct{})
	var rec recorder
	first := NewOp(1, nil, nil)
	p.Go(first, func() error { <-gate; rec.add(1); return nil }, nil)
	// 2 depends on 1; 3..6 are independent and ready at once. With one worker, ready ops run
	// lowest id first, so 2 (ready when 1 finishes) still runs before 3.
	ops := []*Op{first}
	for id := uint64(2); id <= 6; id++ {
		var deps []*Op
		if id == 2 {
			deps = []*Op{first}
		}
		op := NewOp(id, deps, nil)
		p.Submit(op, func() error { rec.add(id); return nil }, nil)
		ops = append(ops, op)
	}
	close(gate)
	p.Drain()
	assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, rec.get())
}

func TestPendingOpsUseNoGoroutinesUntilReady(t *testing.T) {
	p := NewPool(2)
	gate := make(chan struct{})
	root := NewOp(1, nil, nil)
	p.Go(root, func() error { <-gate; return nil }, nil)
	before := runtime.NumGoroutine()
	var ran atomic.Int32
	for i := 0; i < 1000; i++ {
		op := NewOp(uint64(i+2), []*Op{root}, nil)
		p.Submit(op, func() error { ran.Add(1); return nil }, nil)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before+2, "pending ops must not park goroutines")
	close(gate)
	p.Drain()
	assert.Equal(t, int32(1000), ran.Load())
}

type admitTask struct {
	admit   chan struct{}
	err     error
	ran     atomic.Bool
	cleaned atomic.Bool
}

func (a *admitTask) Run(*Op) error   { a.ran.Store(true); return nil }
func (a *admitTask) Cleanup(*Op)     { a.cleaned.Store(true) }
func (a *admitTask) Admit(*Op) error { <-a.admit; return a.err }

func TestAdmitBlocksWithoutHoldingASlot(t *testing.T) {
	p := NewPool(1)
	blocked := &admitTask{admit: make(chan struct{})}
	a := NewOp(1, nil, nil)
	p.SubmitTask(a, blocked, Admit|MayInline)
	assert.False(t, a.Done(), "an Admit op never runs inline")

	// The only worker slot is free while a waits for admission: b runs inline.
	b := NewOp(2, nil, nil)
	p.Submit(b, func() error { return nil }, nil)
	assert.True(t, b.Done())

	close(blocked.admit)
	require.True(t, a.Wait(time.Second))
	assert.True(t, blocked.ran.Load())
	assert.NoError(t, a.Err())
}

func TestAdmitFailureFailsWithoutRunning(t *testing.T) {
	p := NewPool(2)
	task := &admitTask{admit: make(chan struct{}), err: status.Errorf(status.OpFailed, "gate says no")}
	close(task.admit)
	op := NewOp(4, nil, nil)
	p.SubmitTask(op, task, Admit)
	require.True(t, op.Wait(time.Second))
	assert.False(t, task.ran.Load())
	assert.True(t, task.cleaned.Load(), "cleanup runs even when admission fails")
	assert.Equal(t, status.OpFailed, status.CodeOf(op.Err()))
	assert.Equal(t, []uint64{4}, op.FailedChain())
}

func TestTryAcquireTakesOnlyFreeSlots(t *testing.T) {
	p := NewPool(3)
	gate := make(chan struct{})
	a := NewOp(1, nil, nil)
	p.Go(a, func() error { <-gate; return nil }, nil)
	require.Eventually(t, func() bool { return p.TryAcquire(0) == 0 && p.busy() == 1 }, time.Second, time.Millisecond)
	got := p.TryAcquire(5)
	assert.Equal(t, 2, got)
	assert.Equal(t, 0, p.TryAcquire(1))
	// With every slot taken, a new ready op queues until a slot comes back.
	b := NewOp(2, nil, nil)
	p.Submit(b, func() error { return nil }, nil)
	assert.False(t, b.Done())
	p.Release(got)
	require.True(t, b.Wait(time.Second))
	close(gate)
	p.Drain()
	assert.Equal(t, 0, p.busy())
}

func TestWaitOnFinishedOpAllocatesNothing(t *testing.T) {
	p := NewPool(1)
	op := NewOp(1, nil, nil)
	p.Submit(op, func() error { return nil }, nil)
	allocs := testing.AllocsPerRun(100, func() { op.Wait(-1); op.Wait(time.Second) })
	assert.Zero(t, allocs)
}

func TestQueuePopsLowestID(t *testing.T) {
	var q opQueue
	for _, id := range []uint64{5, 3, 9, 1, 7, 2} {
		q.push(&Op{ID: id})
	}
	var got []uint64
	for op := q.pop(); op != nil; op = q.pop() {
		got = append(got, op.ID)
	}
	assert.Equal(t, []uint64{1, 2, 3, 5, 7, 9}, got)
}

// busy is the number of slots in use (tests).
func (p *Pool) busy() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// TestDetachIsReportedExactlyOnce races Detach against completion: each op is forgotten by
// exactly one side (Detach reporting it finished, or the OnDetachedDone hook), never both.
func TestDetachIsReportedExactlyOnce(t *testing.T) {
	p := NewPool(4)
	var hooked atomic.Int64
	p.OnDetachedDone = func(*Op) { hooked.Add(1) }
	const n = 5000
	ops := make([]*Op, n)
	for i := range ops {
		ops[i] = NewOp(uint64(i+1), nil, nil)
	}
	var detachedDone, submitted atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, op := range ops {
			for submitted.Load() <= int64(i) {
				runtime.Gosched() // detach only submitted ops, racing their completion
			}
			if op.Detach() {
				detachedDone.Add(1)
			}
		}
	}()
	for _, op := range ops {
		p.Go(op, func() error { return nil }, nil)
		submitted.Add(1)
	}
	wg.Wait()
	p.Drain()
	assert.Equal(t, int64(n), hooked.Load()+detachedDone.Load())
	assert.True(t, ops[0].Detach(), "detaching again reports the op finished")
}

func TestImmediateOpsAreFinishedForDetach(t *testing.T) {
	assert.True(t, Immediate(1, nil).Detach())
}

func TestDetachedOpIsReportedBeforeWaitersWake(t *testing.T) {
	p := NewPool(2)
	var hooked atomic.Int64
	p.OnDetachedDone = func(*Op) { hooked.Add(1) }
	gate := make(chan struct{})
	op := NewOp(1, nil, nil)
	p.Go(op, func() error { <-gate; return nil }, nil)
	after := NewOp(2, []*Op{op}, nil)
	var seenByDependent atomic.Int64
	p.Submit(after, func() error { seenByDependent.Store(hooked.Load()); return nil }, nil)
	assert.False(t, op.Detach(), "the op is pending")
	close(gate)
	require.True(t, op.Wait(5*time.Second))
	assert.Equal(t, int64(1), hooked.Load(), "a waiter sees the op already reported")
	require.True(t, after.Wait(5*time.Second))
	assert.Equal(t, int64(1), seenByDependent.Load(), "so does a dependent")
	p.Drain()
}
