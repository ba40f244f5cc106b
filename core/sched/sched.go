// Package sched runs asynchronous ops: each op waits for its dependencies, then runs on a
// bounded worker pool. Ops with no dependency between them run in parallel. An op's failure
// propagates to ops that consume its output (its "inputs"), not to ops merely ordered after it.
package sched

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ovstage-go/ovstage/core/status"
)

// Op is one enqueued unit of work.
type Op struct {
	ID uint64

	mu     sync.Mutex
	deps   []*Op // ordering dependencies (includes inputs); cleared when the op finishes
	inputs []*Op // producers whose failure makes this op fail
	done   chan struct{}
	err    error
	failed []uint64 // failed op ids in this op's chain, root cause first
}

// NewOp creates an op ordered after deps; a failure of any op in inputs fails it too.
// Finished deps are dropped so completed chains can be garbage-collected.
func NewOp(id uint64, deps, inputs []*Op) *Op {
	op := &Op{ID: id, done: make(chan struct{})}
	for _, d := range deps {
		if d != nil && !d.Done() {
			op.deps = append(op.deps, d)
		}
	}
	for _, in := range inputs {
		if in != nil {
			op.inputs = append(op.inputs, in)
			if !in.Done() {
				op.deps = append(op.deps, in)
			}
		}
	}
	return op
}

// Done reports whether the op has finished (successfully or not).
func (op *Op) Done() bool {
	select {
	case <-op.done:
		return true
	default:
		return false
	}
}

// DoneChan is closed when the op finishes.
func (op *Op) DoneChan() <-chan struct{} { return op.done }

// Err is the op's own failure (nil while pending or on success).
func (op *Op) Err() error {
	if !op.Done() {
		return nil
	}
	return op.err
}

// FailedChain lists failed op ids in this op's chain (root cause first); empty while pending.
func (op *Op) FailedChain() []uint64 {
	if !op.Done() {
		return nil
	}
	return op.failed
}

// Wait blocks until the op finishes or timeout passes; a negative timeout waits forever.
func (op *Op) Wait(timeout time.Duration) bool {
	if timeout == 0 {
		return op.Done()
	}
	if timeout < 0 {
		<-op.done
		return true
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-op.done:
		return true
	case <-t.C:
		return false
	}
}

// LowestPending returns the lowest id among pending ops in this op's dependency chain
// (the op itself included), or 0 when everything finished.
func (op *Op) LowestPending() uint64 {
	lowest := uint64(0)
	seen := map[*Op]bool{}
	stack := []*Op{op}
	for len(stack) > 0 {
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[o] || o.Done() {
			continue
		}
		seen[o] = true
		if lowest == 0 || o.ID < lowest {
			lowest = o.ID
		}
		o.mu.Lock()
		stack = append(stack, o.deps...)
		o.mu.Unlock()
	}
	return lowest
}

func (op *Op) finish(err error) {
	op.mu.Lock()
	for _, in := range op.inputs {
		op.failed = append(op.failed, in.failed...)
	}
	if err != nil {
		op.failed = append(op.failed, op.ID)
	}
	op.err = err
	op.deps, op.inputs = nil, nil
	op.mu.Unlock()
	close(op.done)
}

// Pool bounds how many ops run at once.
type Pool struct {
	sem chan struct{}
	wg  sync.WaitGroup
	// OnFailure, when set before the first Submit, is told of every op that fails.
	OnFailure func(id uint64, err error)
}

// NewPool makes a pool of workers (<= 0 means GOMAXPROCS).
func NewPool(workers int) *Pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &Pool{sem: make(chan struct{}, workers)}
}

// Submit starts op: once its dependencies finish it runs run on a worker, unless one of its
// inputs failed, in which case it fails without running. cleanup (may be nil) runs after run,
// before the op is marked done, whether or not run was called. An op that is ready at
// submission and finds a free worker slot runs on the caller's goroutine: waking another
// thread costs more than most ops. Callers must not hold locks that run or cleanup take.
func (p *Pool) Submit(op *Op, run func() error, cleanup func()) {
	op.mu.Lock()
	deps, inputs := op.deps, op.inputs
	op.mu.Unlock()
	ready := true
	for _, d := range deps {
		if !d.Done() {
			ready = false
			break
		}
	}
	if ready {
		select {
		case p.sem <- struct{}{}:
			p.execute(op, inputs, run, cleanup, true)
			return
		default:
		}
	}
	p.Go(op, run, cleanup)
}

// Go is Submit without the inline fast path: the op always runs on another goroutine (for
// work that may block, such as a test gate holding it).
func (p *Pool) Go(op *Op, run func() error, cleanup func()) {
	op.mu.Lock()
	deps, inputs := op.deps, op.inputs
	op.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for _, d := range deps {
			<-d.done
		}
		p.execute(op, inputs, run, cleanup, false)
	}()
}

// execute runs op (holding a worker slot when slotHeld) and marks it done.
func (p *Pool) execute(op *Op, inputs []*Op, run func() error, cleanup func(), slotHeld bool) {
	var err error
	for _, in := range inputs {
		if in.err != nil {
			err = status.Errorf(status.OpFailed, "input produced by op %d failed: %s",
				in.ID, status.Describe(in.err))
			break
		}
	}
	if err == nil {
		if !slotHeld {
			p.sem <- struct{}{}
			slotHeld = true
		}
		err = SafeRun(run)
	}
	if slotHeld {
		<-p.sem
	}
	if cleanup != nil {
		if cerr := SafeRun(func() error { cleanup(); return nil }); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil && p.OnFailure != nil {
		p.OnFailure(op.ID, err)
	}
	op.finish(err)
}

// Drain waits until every submitted op has finished.
func (p *Pool) Drain() { p.wg.Wait() }

// SafeRun calls fn, turning a panic into an Internal error so no goroutine can take the
// process (and the Python interpreter) down.
func SafeRun(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "internal panic: %v\n%s", r, debug.Stack())
		}
	}()
	return fn()
}

// Immediate returns a finished op (for work done synchronously at enqueue).
func Immediate(id uint64, err error) *Op {
	op := &Op{ID: id, done: make(chan struct{})}
	op.finish(err)
	return op
}

// String describes the op for logs.
func (op *Op) String() string { return fmt.Sprintf("op %d", op.ID) }
