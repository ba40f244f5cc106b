// Package sched runs asynchronous ops: each op waits for its dependencies, then runs on a
// bounded worker pool. Ops with no dependency between them run in parallel. An op's failure
// propagates to ops that consume its output (its "inputs"), not to ops merely ordered after it.
//
// Dependencies are tracked by completion: an op counts its unfinished dependencies and each
// dependency, when it finishes, decrements the count of the ops waiting on it; the op that
// reaches zero becomes ready. Ready ops run on at most Workers goroutines at once (a worker
// keeps taking ready ops, lowest id first, until none is left), or inline on the submitting
// goroutine when that is allowed and a slot is free. So a pool never has more goroutines than
// workers, however many ops are pending, and with one worker ready ops run one at a time in
// id (submission) order.
package sched

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovstage-go/ovstage/core/status"
)

// Task is the work of an op.
type Task interface {
	// Run does the op's work, on a worker or inline on the submitter.
	Run(op *Op) error
	// Cleanup runs after Run, or instead of it when an input failed or admission failed,
	// before the op is marked done.
	Cleanup(op *Op)
}

// Admitter is implemented by tasks submitted with the Admit mode: once the op is ready, Admit
// runs on a goroutine of its own, before the op takes a worker slot, and may block (test
// gates). An error fails the op without running it.
type Admitter interface {
	Admit(op *Op) error
}

// Mode says how a submitted op may run.
type Mode uint8

const (
	// MayInline lets an op that is ready at submission run on the submitting goroutine when
	// a worker slot is free: waking another thread costs more than most ops.
	MayInline Mode = 1 << iota
	// Admit calls the task's Admit (see Admitter) before the op runs; the op never runs inline.
	Admit
)

const (
	opPending uint32 = iota
	opDone
)

// Bits of Op.life: whether the op's owner let go of it and whether it finished. Whichever of
// Detach and finish comes second sees the other's bit, so exactly one of them forgets the op.
const (
	lifeDetached uint32 = 1 << iota
	lifeFinished
)

// Op is one enqueued unit of work. The zero value is ready for Init; an Op may be embedded in
// a larger struct (so an enqueue allocates once) and must not be copied after Init.
type Op struct {
	ID uint64

	state   atomic.Uint32
	waiting atomic.Int32 // unfinished dependencies (+1 while Submit registers them)
	life    atomic.Uint32

	mu         sync.Mutex
	deps       []*Op // ordering dependencies still pending at Init (includes inputs)
	inputs     []*Op // producers whose failure makes this op fail
	dependents []*Op // ops waiting for this one
	done       chan struct{}
	err        error
	failed     []uint64 // failed op ids in this op's chain, root cause first

	pool *Pool
	task Task
	mode Mode

	depsBuf       [2]*Op
	inputsBuf     [1]*Op
	dependentsBuf [1]*Op
}

// NewOp creates an op ordered after deps; a failure of any op in inputs fails it too.
// Finished deps are dropped so completed chains can be garbage-collected.
func NewOp(id uint64, deps, inputs []*Op) *Op {
	op := &Op{}
	op.Init(id, deps, inputs)
	return op
}

// Init prepares an op (see NewOp) in place.
func (op *Op) Init(id uint64, deps, inputs []*Op) {
	op.ID = id
	op.deps = op.depsBuf[:0]
	op.inputs = op.inputsBuf[:0]
	op.dependents = op.dependentsBuf[:0]
	for _, d := range deps {
		op.After(d)
	}
	for _, in := range inputs {
		if in != nil {
			op.inputs = append(op.inputs, in)
			op.After(in)
		}
	}
}

// After adds an ordering dependency (nil and finished ops are ignored). Call it before Submit.
func (op *Op) After(d *Op) {
	if d != nil && !d.Done() {
		op.deps = append(op.deps, d)
	}
}

// Done reports whether the op has finished (successfully or not).
func (op *Op) Done() bool { return op.state.Load() == opDone }

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

// doneChan returns a channel closed when the op finishes (nil if it already has). The channel
// is made on first use, so ops nobody waits for never allocate one.
func (op *Op) doneChan() chan struct{} {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.state.Load() == opDone {
		return nil
	}
	if op.done == nil {
		op.done = make(chan struct{})
	}
	return op.done
}

// Wait blocks until the op finishes or timeout passes; a negative timeout waits forever.
func (op *Op) Wait(timeout time.Duration) bool {
	if op.Done() {
		return true
	}
	if timeout == 0 {
		return false
	}
	ch := op.doneChan()
	if ch == nil {
		return true
	}
	if timeout < 0 {
		<-ch
		return true
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// Detach records that nobody will wait for the op any more. It reports whether the op had
// already finished: then the caller forgets it at once; otherwise the pool's OnDetachedDone
// is told when it finishes.
func (op *Op) Detach() (finished bool) { return op.life.Or(lifeDetached)&lifeFinished != 0 }

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
		stack = o.appendDeps(stack)
	}
	return lowest
}

func (op *Op) appendDeps(stack []*Op) []*Op {
	op.mu.Lock()
	defer op.mu.Unlock()
	return append(stack, op.deps...)
}

// addDependent registers d to be notified when op finishes; false when op already finished.
func (op *Op) addDependent(d *Op) bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.state.Load() == opDone {
		return false
	}
	op.dependents = append(op.dependents, d)
	return true
}

// finish records the outcome, wakes waiters and readies dependents whose last dependency
// this was. A detached op is reported first, so whoever sees the op's completion (a waiter,
// a dependent) also sees its owner's table without it.
func (op *Op) finish(err error) {
	if op.life.Or(lifeFinished)&lifeDetached != 0 && op.pool != nil && op.pool.OnDetachedDone != nil {
		op.pool.OnDetachedDone(op)
	}
	dependents := op.settle(err)
	for i, d := range dependents {
		dependents[i] = nil
		if d.waiting.Add(-1) == 0 {
			d.pool.ready(d, false)
		}
	}
	if op.pool != nil {
		op.pool.wg.Done()
	}
}

// settle records the outcome and wakes waiters; it returns the dependents to notify.
func (op *Op) settle(err error) []*Op {
	op.mu.Lock()
	defer op.mu.Unlock()
	for _, in := range op.inputs {
		op.failed = append(op.failed, in.failed...)
	}
	if err != nil {
		op.failed = append(op.failed, op.ID)
	}
	op.err = err
	dependents := op.dependents
	op.deps, op.inputs, op.dependents, op.task = nil, nil, nil, nil
	op.depsBuf, op.inputsBuf = [2]*Op{}, [1]*Op{}
	op.state.Store(opDone)
	if op.done != nil {
		close(op.done)
	}
	return dependents
}

// String describes the op for logs.
func (op *Op) String() string { return fmt.Sprintf("op %d", op.ID) }

// Pool bounds how many ops run at once.
type Pool struct {
	workers int
	wg      sync.WaitGroup // submitted ops not finished yet
	// OnFailure, when set before the first Submit, is told of every op that fails.
	OnFailure func(id uint64, err error)
	// OnDetachedDone, when set before the first Submit, is told of every detached op (see
	// Op.Detach) as it finishes, before its waiters and dependents are woken. It must not
	// block on other ops.
	OnDetachedDone func(op *Op)

	mu      sync.Mutex
	running int     // slots in use (workers and inline runs)
	queue   opQueue // ready ops waiting for a slot, lowest id first
}

// NewPool makes a pool of workers (<= 0 means GOMAXPROCS).
func NewPool(workers int) *Pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &Pool{workers: workers}
}

// Workers is the pool's size.
func (p *Pool) Workers() int { return p.workers }

// Submit starts op with a function task (see SubmitTask): it may run inline.
func (p *Pool) Submit(op *Op, run func() error, cleanup func()) {
	p.SubmitTask(op, &funcTask{run: run, cleanup: cleanup}, MayInline)
}

// Go is Submit without the inline fast path: the op always runs on a worker goroutine.
func (p *Pool) Go(op *Op, run func() error, cleanup func()) {
	p.SubmitTask(op, &funcTask{run: run, cleanup: cleanup}, 0)
}

// SubmitTask starts op: once its dependencies finish, it runs task on a worker unless one of
// its inputs failed, in which case it fails without running. With MayInline an op that is
// ready now and finds a free slot runs before SubmitTask returns; callers must then not hold
// locks that the task takes.
func (p *Pool) SubmitTask(op *Op, task Task, mode Mode) {
	op.pool, op.task, op.mode = p, task, mode
	p.wg.Add(1)
	op.waiting.Store(1)
	for _, d := range op.deps {
		op.waiting.Add(1)
		if !d.addDependent(op) {
			op.waiting.Add(-1)
		}
	}
	if op.waiting.Add(-1) == 0 {
		p.ready(op, mode&MayInline != 0)
	}
}

// ready runs admission for Admit ops, then dispatches the op.
func (p *Pool) ready(op *Op, inline bool) {
	if op.mode&Admit == 0 {
		p.dispatch(op, inline)
		return
	}
	go func() {
		adm, _ := op.task.(Admitter)
		var err error
		if adm != nil {
			err = SafeRun(func() error { return adm.Admit(op) })
		}
		if err != nil {
			p.complete(op, err)
			return
		}
		p.dispatch(op, false)
	}()
}

// dispatch runs op on a free slot (inline or on a new worker) or queues it.
func (p *Pool) dispatch(op *Op, inline bool) {
	if !p.takeSlotOrQueue(op) {
		return
	}
	if !inline {
		go p.worker(op)
		return
	}
	p.execute(op)
	if next := p.nextOrRelease(); next != nil {
		go p.worker(next)
	}
}

// takeSlotOrQueue takes a free slot for op (true), or queues op when every slot is in use.
func (p *Pool) takeSlotOrQueue(op *Op) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running >= p.workers {
		p.queue.push(op)
		return false
	}
	p.running++
	return true
}

// worker runs op, then queued ops, until the queue is empty.
func (p *Pool) worker(op *Op) {
	for op != nil {
		p.execute(op)
		op = p.nextOrRelease()
	}
}

// nextOrRelease hands the caller's slot to the next queued op, or frees it.
func (p *Pool) nextOrRelease() *Op {
	p.mu.Lock()
	defer p.mu.Unlock()
	if next := p.queue.pop(); next != nil {
		return next
	}
	p.running--
	return nil
}

// TryAcquire takes up to n free slots without waiting (for work that splits itself across
// helpers, such as a large copy) and returns how many it got; give them back with Release.
func (p *Pool) TryAcquire(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := max(0, min(n, p.workers-p.running))
	p.running += got
	return got
}

// Release gives back n slots taken with TryAcquire (queued ops get them first).
func (p *Pool) Release(n int) {
	for ; n > 0; n-- {
		if next := p.nextOrRelease(); next != nil {
			go p.worker(next)
		}
	}
}

// execute runs op (its slot is held by the caller) and marks it done.
func (p *Pool) execute(op *Op) {
	var err error
	for _, in := range op.inputs {
		if in.err != nil {
			err = status.Errorf(status.OpFailed, "input produced by op %d failed: %s",
				in.ID, status.Describe(in.err))
			break
		}
	}
	if err == nil {
		err = safeRunTask(op)
	}
	p.complete(op, err)
}

// complete runs the task's cleanup and marks op done with err.
func (p *Pool) complete(op *Op, err error) {
	if cerr := safeCleanup(op); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil && p.OnFailure != nil {
		// A panicking failure hook must not take the worker down (nor keep the op pending).
		_ = SafeRun(func() error { p.OnFailure(op.ID, err); return nil })
	}
	op.finish(err)
}

func safeRunTask(op *Op) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "internal panic: %v\n%s", r, debug.Stack())
		}
	}()
	return op.task.Run(op)
}

func safeCleanup(op *Op) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(status.Internal, "internal panic: %v\n%s", r, debug.Stack())
		}
	}()
	op.task.Cleanup(op)
	return nil
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
	op := &Op{ID: id}
	op.finish(err)
	return op
}

// funcTask adapts a pair of functions to Task.
type funcTask struct {
	run     func() error
	cleanup func()
}

func (t *funcTask) Run(*Op) error { return t.run() }

func (t *funcTask) Cleanup(*Op) {
	if t.cleanup != nil {
		t.cleanup()
	}
}

// opQueue is a min-heap of ready ops by id: the oldest ready op runs first.
type opQueue []*Op

func (q *opQueue) push(op *Op) {
	h := append(*q, op)
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].ID <= h[i].ID {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
	*q = h
}

func (q *opQueue) pop() *Op {
	h := *q
	if len(h) == 0 {
		return nil
	}
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = nil
	h = h[:last]
	i := 0
	for {
		l, r, small := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].ID < h[small].ID {
			small = l
		}
		if r < len(h) && h[r].ID < h[small].ID {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	*q = h
	return top
}
