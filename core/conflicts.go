package core

import (
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/sched"
)

// Conflict ordering: the one rule that makes every mutation's outcome, and the stage it leaves,
// a function of the ops' (ordinal, submission order) alone, however the workers interleave
// them (README "Ops run in parallel").
//
// A mutation waits for each earlier-submitted pending mutation it conflicts with. Two
// mutations conflict when their footprints share an attribute (a barrier shares every one)
// and any of these holds:
//   - either is a barrier (whole-prim delete, clone, INSERT, or a mutation of unknown shape):
//     prim existence and whole subtrees are involved;
//   - either deletes the attribute;
//   - their schemas for it differ, or one is unknown (map setup without dtype, FORCE): which
//     column a prim's cell lives in is decided by whichever runs first;
//   - the policy checks history and the earlier one is at a higher ordinal: the later one's
//     admission depends on whether the earlier one succeeds.
//
// Mutations that do not conflict commute: same-schema writes at different ordinals stage
// ordinal-keyed deltas that fold in (ordinal, submission) order whatever order they ran in,
// and every admission check only looks at changes of ops submitted before the checking op.
// Same-ordinal mutations also keep submission order (enqueue.go), as before.

// footprint is what a mutation may touch, fixed when it is enqueued.
type footprint struct {
	barrier bool
	deletes bool
	attrs   []uint64
	// schemas[i] is the schema written to attrs[i] (zero DType: not known at enqueue, which
	// conflicts with any other mutation of the attribute); unused when deletes is set.
	schemas []column.Schema
}

// barrierFootprint is the footprint of mutations that declare none.
var barrierFootprint = footprint{barrier: true}

// schemaOf returns the schema fp writes to attr (zero for a delete) and whether fp touches it.
func (f *footprint) schemaOf(attr uint64) (column.Schema, bool) {
	for i, a := range f.attrs {
		if a == attr {
			if f.deletes {
				return column.Schema{}, true
			}
			return f.schemas[i], true
		}
	}
	return column.Schema{}, false
}

func unknownSchema(sc column.Schema) bool { return sc.DType.Bits == 0 }

// conflicts reports whether later (a new op at laterOrd) must wait for earlier (pending).
func (s *Stage) conflicts(earlier *stageOp, later *footprint, laterOrd uint64) bool {
	e := earlier.fp
	if e == nil || e.barrier || later.barrier {
		return true
	}
	for _, a := range later.attrs {
		es, shared := e.schemaOf(a)
		if !shared {
			continue
		}
		if e.deletes || later.deletes {
			return true
		}
		ls, _ := later.schemaOf(a)
		if ls != es || unknownSchema(ls) {
			return true
		}
		if s.checksHistory() && earlier.ordinal > laterOrd {
			return true
		}
	}
	return false
}

// attrPending summarizes the pending mutations of one attribute, so that the common enqueue
// (a write of the schema every pending op of the attribute writes, at an ordinal not below
// theirs) needs no scan of the pending set.
type attrPending struct {
	n          int
	maxOrdinal uint64        // an upper bound while n > 0
	schema     column.Schema // the schema all n write, unless mixed
	mixed      bool          // some pending op deletes, is of unknown schema, or writes another
}

// conflictDepsLocked returns the pending mutations a new mutation with footprint fp at ordinal
// must wait for. When there are none, what the new op checks against the stage at enqueue
// (schemas, INSERT) cannot change before it runs, so a refusal found then is final.
func (s *Stage) conflictDepsLocked(fp *footprint, ordinal uint64) []*sched.Op {
	var deps []*sched.Op
	scan := fp.barrier
	for op := range s.pendingBarriers {
		deps = append(deps, op) // every mutation conflicts with a barrier
	}
	if !scan {
		for _, a := range fp.attrs {
			ap := s.attrPending[a]
			if ap == nil || ap.n == 0 {
				continue
			}
			sc, _ := fp.schemaOf(a)
			if ap.mixed || fp.deletes || sc != ap.schema || unknownSchema(sc) ||
				(s.checksHistory() && ap.maxOrdinal > ordinal) {
				scan = true
				break
			}
		}
	}
	if scan {
		deps = deps[:0]
		for op, o := range s.pendingMutations {
			if s.conflicts(o, fp, ordinal) {
				deps = append(deps, op)
			}
		}
	}
	return deps
}

// trackFootprintLocked adds a pending mutation to the summaries.
func (s *Stage) trackFootprintLocked(op *sched.Op, o *stageOp) {
	fp := o.fp
	if fp == nil || fp.barrier {
		s.pendingBarriers[op] = true
		return
	}
	for _, a := range fp.attrs {
		ap := s.attrPending[a]
		if ap == nil {
			ap = &attrPending{}
			s.attrPending[a] = ap
		}
		sc, _ := fp.schemaOf(a)
		if ap.n == 0 {
			ap.schema, ap.mixed, ap.maxOrdinal = sc, fp.deletes || unknownSchema(sc), o.ordinal
		} else {
			ap.mixed = ap.mixed || fp.deletes || unknownSchema(sc) || sc != ap.schema
			ap.maxOrdinal = max(ap.maxOrdinal, o.ordinal)
		}
		ap.n++
	}
}

// untrackFootprintLocked removes a finished mutation from the summaries.
func (s *Stage) untrackFootprintLocked(op *sched.Op, o *stageOp) {
	fp := o.fp
	if fp == nil || fp.barrier {
		delete(s.pendingBarriers, op)
		return
	}
	for _, a := range fp.attrs {
		if ap := s.attrPending[a]; ap != nil {
			if ap.n--; ap.n == 0 {
				*ap = attrPending{}
			}
		}
	}
}
