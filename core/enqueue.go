package core

import "github.com/ovstage-go/ovstage/core/sched"

// opSpec describes an op to enqueue.
type opSpec struct {
	deps     []*sched.Op
	inputs   []*sched.Op
	mutation bool     // ordinal-keyed mutation (write, delete, ...)
	ordinal  uint64   // for mutations; for advances, the floor asked for
	advance  bool     // floor advance
	writes   []uint64 // for mutations: attributes whose column they may create
	// fp is a mutation's footprint for conflict ordering (nil: a barrier).
	fp *footprint
	// clone marks a clone, cloneTo its targets: the subtrees it may create.
	clone   bool
	cloneTo []uint64
	run     func(op *sched.Op) error
	// gate holds the op before it runs while the gate is armed (mutations default to
	// WriteGate; reads pass QueryGate).
	gate *Gate
	// async ops never run inline on the enqueuing thread (long work that should overlap
	// with the caller, such as a large deferred copy).
	async bool
	// event is a placed op's availability event: run records it; when the op never runs (an
	// input or its gate failed) its cleanup does, so every accepted op records once.
	event *eventRecord
}

// stageOp is the engine side of one op: scheduler state, the stage bookkeeping its completion
// undoes, and what it runs. Ops with their own state (writes) embed it, so an enqueue makes
// one allocation; it is its own sched.Task.
type stageOp struct {
	sched.Op
	s        *Stage
	ordinal  uint64
	mutation bool
	advance  bool
	// writes are the attributes whose column this mutation may create (writes, map commits):
	// an EXCLUDE advance submitted after it counts them as known.
	writes []uint64
	// fp is the mutation's footprint (conflicts.go); conflictDeps says the enqueuing call
	// already added the waits it implies.
	fp           *footprint
	conflictDeps bool
	// clone marks a clone, cloneTo its targets (opSpec).
	clone   bool
	cloneTo []uint64
	// heldSource: the caller keeps the op's source alive until it completes (a write of
	// DeferCopyBytes or more); its completion is reported by TakeSourcesDone.
	heldSource bool
	gate       *Gate
	run        func(op *sched.Op) error
	// event is recorded by Cleanup when the op never ran (opSpec.event); ran says it did.
	event *eventRecord
	ran   bool
}

// Run does the op's work.
func (o *stageOp) Run(op *sched.Op) error {
	o.ran = true
	return o.run(op)
}

// Cleanup records the availability event of an op that never ran (the op has failed
// already, so a refused record changes nothing), then forgets the op's pending-mutation /
// pending-advance bookkeeping.
func (o *stageOp) Cleanup(*sched.Op) {
	if !o.ran {
		_ = o.event.record()
	}
	o.s.opFinished(o)
}

// Admit passes the op's test gate (sched calls it only for gated ops).
func (o *stageOp) Admit(op *sched.Op) error {
	return o.gate.pass(op.ID, o.s.closing, o.s.label())
}

// startItem is an op enqueued under s.mu, submitted by unlockAndStart.
type startItem struct {
	op   *stageOp
	task sched.Task
	mode sched.Mode
}

// enqueueLocked registers and submits an op described by spec. s.mu must be held.
func (s *Stage) enqueueLocked(spec opSpec) *sched.Op {
	o := &stageOp{ordinal: spec.ordinal, mutation: spec.mutation, advance: spec.advance,
		writes: spec.writes, fp: spec.fp, clone: spec.clone, cloneTo: spec.cloneTo, gate: spec.gate, run: spec.run,
		event: spec.event}
	return s.enqueueOpLocked(o, o, spec.deps, spec.inputs, spec.async)
}

// enqueueOpLocked registers o (whose task is task: o itself or the struct embedding it) with
// the ordering rules (docs/architecture.md, "Ops and their order") and conflict ordering
// (conflicts.go), and queues it for submission when s.mu is released.
func (s *Stage) enqueueOpLocked(o *stageOp, task sched.Task, deps, inputs []*sched.Op, async bool) *sched.Op {
	s.nextOp++
	o.s = s
	op := &o.Op
	op.Init(s.nextOp, deps, inputs)
	if o.mutation {
		if o.fp == nil {
			o.fp = &barrierFootprint
		}
		if !o.conflictDeps {
			for _, d := range s.conflictDepsLocked(o.fp, o.ordinal) {
				op.After(d)
			}
		}
		op.After(s.sameOrdinalTail[o.ordinal])
		s.sameOrdinalTail[o.ordinal] = op
		s.pendingMutations[op] = o
		s.trackFootprintLocked(op, o)
		if o.gate == nil {
			o.gate = WriteGate
		}
	}
	if o.advance {
		s.pendingAdvances[op] = o.ordinal
	}
	s.ops[op.ID] = op
	mode := sched.MayInline
	if async {
		mode = 0
	}
	if o.gate != nil && o.gate.Active() {
		mode = sched.Admit
	} else {
		o.gate = nil
	}
	s.toStart = append(s.toStart, startItem{op: o, task: task, mode: mode})
	return op
}

// opFinished runs when an op completes: it drops the op from the pending sets and reports a
// held source as no longer needed.
func (s *Stage) opFinished(o *stageOp) {
	if !o.mutation && !o.advance {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := &o.Op
	if o.heldSource && !s.destroyed {
		s.sourcesDone = append(s.sourcesDone, op.ID)
	}
	if o.mutation {
		delete(s.pendingMutations, op)
		s.untrackFootprintLocked(op, o)
		if s.sameOrdinalTail[o.ordinal] == op {
			delete(s.sameOrdinalTail, o.ordinal)
		}
	}
	if o.advance {
		delete(s.pendingAdvances, op)
	}
}

// unlockAndStart releases s.mu and submits the ops enqueued while it was held.
func (s *Stage) unlockAndStart() {
	var local [2]startItem
	var start []startItem
	if &s.toStart[:1][0] == &s.toStartBuf[0] {
		start = local[:copy(local[:], s.toStart)]
		s.toStartBuf = [2]startItem{}
	} else {
		start = s.toStart // grew past the inline buffer: hand over the heap slice
	}
	s.toStart = s.toStartBuf[:0]
	s.mu.Unlock()
	for _, it := range start {
		s.pool.SubmitTask(&it.op.Op, it.task, it.mode)
	}
}

// registerDoneLocked records an op that already completed on the caller's thread.
func (s *Stage) registerDoneLocked() *sched.Op {
	s.nextOp++
	op := sched.Immediate(s.nextOp, nil)
	s.ops[op.ID] = op
	return op
}
