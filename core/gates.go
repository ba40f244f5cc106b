package core

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovstage-go/ovstage/core/status"
)

// Gate is a process-wide test hook that holds ops of one kind pending deterministically
// (ovstage.gates in Python). While a gate is enabled, every matching op of every stage blocks
// when it becomes ready (before taking a worker slot) until the gate is released; fail_next
// makes the next matching op fail with OP_FAILED. Ops enqueued while a gate is armed never run
// inline, so the enqueuing thread never blocks. The reference has these hooks only in
// test-instrumented builds; ours are always compiled in and cost one atomic load per enqueue
// when unused.
//
// WriteGate matches ordinal-keyed mutations (writes, write batches, deletes, clones, map
// sessions and their commits). QueryGate matches queries (filter queries) and reads
// (read_attributes): the reference's query gate is about queries; holding reads too lets tests
// keep a read pending deterministically.
type Gate struct {
	name  string
	armed atomic.Bool // enabled or a failure is pending (fast check at enqueue)

	mu       sync.Mutex
	enabled  bool
	failNext int
	entered  int
	open     chan struct{} // closed by Release/Reset: lets blocked ops through
	changed  chan struct{} // closed and replaced whenever entered changes
}

// The process-wide gates.
var (
	QueryGate = newGate("query")
	WriteGate = newGate("write")
)

func newGate(name string) *Gate {
	return &Gate{name: name, open: make(chan struct{}), changed: make(chan struct{})}
}

// GateByName returns QueryGate ("query") or WriteGate ("write"), nil otherwise.
func GateByName(name string) *Gate {
	switch name {
	case "query":
		return QueryGate
	case "write":
		return WriteGate
	}
	return nil
}

// Name is "query" or "write".
func (g *Gate) Name() string { return g.name }

func (g *Gate) rearmLocked() { g.armed.Store(g.enabled || g.failNext > 0) }

// Enable makes matching ops block until Release (or Reset).
func (g *Gate) Enable() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.enabled {
		g.enabled = true
		g.open = make(chan struct{})
	}
	g.rearmLocked()
}

// Release disables the gate and lets every blocked op continue.
func (g *Gate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
	g.rearmLocked()
}

func (g *Gate) releaseLocked() {
	if g.enabled {
		g.enabled = false
		close(g.open)
	}
}

// Reset releases the gate, clears a pending fail_next and zeroes the entered count.
func (g *Gate) Reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
	g.failNext = 0
	g.entered = 0
	g.notifyLocked()
	g.rearmLocked()
}

// FailNext makes the next matching op fail with OP_FAILED (after the gate lets it through,
// if the gate is enabled). Calls accumulate: n calls fail the next n ops.
func (g *Gate) FailNext() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failNext++
	g.rearmLocked()
}

// EnteredCount is the number of ops that reached the gate while it was armed, since the last
// Reset.
func (g *Gate) EnteredCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.entered
}

// WaitUntilEntered blocks until at least n ops have entered (see EnteredCount) or timeout
// passes (negative: no limit); it reports whether they have.
func (g *Gate) WaitUntilEntered(n int, timeout time.Duration) bool {
	var deadline <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		reached, changed := g.enteredAtLeast(n)
		if reached {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return g.EnteredCount() >= n
		}
	}
}

// enteredAtLeast reports whether n ops have entered, and the channel closed at the next change.
func (g *Gate) enteredAtLeast(n int) (bool, chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.entered >= n, g.changed
}

func (g *Gate) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// enter counts a matching op that finds the gate armed, returning the channel that lets it
// through and whether it must wait on it.
func (g *Gate) enter() (armed bool, open chan struct{}, enabled bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.enabled && g.failNext == 0 {
		return false, nil, false
	}
	g.entered++
	g.notifyLocked()
	return true, g.open, g.enabled
}

// Active reports whether an op enqueued now must go through the gate.
func (g *Gate) Active() bool { return g.armed.Load() }

// pass is called by a matching op once it is ready: it counts the entry, blocks while the gate
// is enabled (or until cancel is closed: owner, e.g. `stage 1 "name"`, is being destroyed and
// abandons the op), then consumes a pending fail_next.
func (g *Gate) pass(opID uint64, cancel <-chan struct{}, owner string) error {
	armed, open, enabled := g.enter()
	if !armed {
		return nil
	}
	if enabled {
		select {
		case <-open:
		case <-cancel:
			return status.Errorf(status.OpFailed, "op %d was abandoned: %s was destroyed while the %s test gate held the op", opID, owner, g.name)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failNext > 0 {
		g.failNext--
		g.rearmLocked()
		return status.Errorf(status.OpFailed, "op %d failed on purpose: the %s test gate's fail_next was armed", opID, g.name)
	}
	return nil
}
