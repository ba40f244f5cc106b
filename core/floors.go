package core

import (
	"fmt"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// Scope selects which attributes a floor advance raises.
type Scope int32

// Scopes.
const (
	ScopeAll     Scope = 0
	ScopeInclude Scope = 1
	ScopeExclude Scope = 2
)

// floors holds the global floor G and per-attribute floors F[a]; effective(a) = max(G, F[a]).
// Floors only rise.
type floors struct {
	global uint64
	attr   map[uint64]uint64
}

func newFloors() floors { return floors{attr: map[uint64]uint64{}} }

func (f *floors) effective(a uint64) uint64 { return max(f.global, f.attr[a]) }

func (f *floors) raise(a, n uint64) { f.attr[a] = max(f.attr[a], n) }

// floorAdvance is what one advance raises, fixed when it is enqueued: the admission check at
// enqueue (requested floors) and the floors applied when it runs use the same set, so an
// attribute that appears between the two cannot be counted differently.
type floorAdvance struct {
	ordinal uint64
	global  bool     // ALL, or EXCLUDE with an empty list: G and so every attribute
	attrs   []uint64 // per-attribute floors raised
}

func (f *floors) apply(a floorAdvance) {
	if a.global {
		f.global = max(f.global, a.ordinal)
	}
	for _, attr := range a.attrs {
		f.raise(attr, a.ordinal)
	}
}

// planAdvanceLocked resolves an advance's scope: INCLUDE raises the listed attributes; EXCLUDE
// raises every attribute known at submission except the listed ones. Known at submission means
// it has a column, or a mutation submitted earlier and still pending writes it (that write may
// run after the advance, which does not wait for writes above its ordinal, but comes first in
// submission order).
func (s *Stage) planAdvanceLocked(ordinal uint64, scope Scope, listed []uint64) floorAdvance {
	adv := floorAdvance{ordinal: ordinal}
	switch {
	case scope == ScopeInclude:
		adv.attrs = listed
	case scope == ScopeAll || len(listed) == 0:
		adv.global = true
	default:
		known := map[uint64]bool{}
		for a := range s.columns {
			known[a] = true
		}
		for _, o := range s.pendingMutations {
			for _, a := range o.writes {
				known[a] = true
			}
		}
		for _, a := range listed {
			delete(known, a)
		}
		for a := range known {
			adv.attrs = append(adv.attrs, a)
		}
	}
	return adv
}

// AdvanceWriteFloor seals ordinals <= ordinal for the attributes in scope (floors clamp: an
// advance never lowers a floor and never fails). It is ordered after every earlier mutation at
// an ordinal <= ordinal; later mutations at or below the requested floor are rejected at enqueue.
func (s *Stage) AdvanceWriteFloor(ordinal uint64, scope Scope, attrs []uint64) (uint64, error) {
	if scope != ScopeAll && scope != ScopeInclude && scope != ScopeExclude {
		return 0, status.Errorf(status.InvalidArgument, "scope %d is not ALL (0), INCLUDE (1) or EXCLUDE (2)", scope)
	}
	for i, a := range attrs {
		if !s.validToken(a) {
			return 0, InvalidToken(fmt.Sprintf("attributes[%d]", i), a)
		}
	}
	attrs = s.canonicalAttrs(attrs) // a copy, aliases resolved (aliases.go)
	s.mu.Lock()
	defer s.unlockAndStart()
	if err := s.checkLiveLocked(); err != nil {
		return 0, err
	}
	var deps []*sched.Op
	for op, o := range s.pendingMutations {
		if o.ordinal <= ordinal {
			deps = append(deps, op)
		}
	}
	adv := s.planAdvanceLocked(ordinal, scope, attrs)
	s.requested.apply(adv)
	op := s.enqueueLocked(opSpec{deps: deps, advance: true, ordinal: ordinal, run: func(op *sched.Op) error {
		s.autoComputeHierarchy(op, adv) // before the floors move (hierarchy.go)
		return s.applyFloor(adv)
	}})
	return op.ID, nil
}

// applyFloor raises the floors, then folds every column up to its attribute's effective floor.
// With an advance observer attached (advance_feed.go), advances apply one at a time and the
// observer sees each one's sealed changes.
func (s *Stage) applyFloor(adv floorAdvance) error {
	feed := s.feed.Load()
	var ended []primsEnded
	if feed != nil {
		feed.mu.Lock()
		defer feed.mu.Unlock()
		ended = s.primDeletesSealedBy(adv) // before raiseFloors prunes them from the history
	}
	work := s.raiseFloors(adv)
	for _, w := range work {
		if err := w.col.Seal(w.floor); err != nil {
			return err
		}
	}
	s.trimVersions()
	if feed != nil {
		feed.report(s, adv, work, ended)
	}
	return nil
}

// sealWork is one column of attribute attr to fold up to floor (from: its floor before).
type sealWork struct {
	attr, from, floor uint64
	col               *column.Column
}

// raiseFloors applies an advance to the floors and lists the columns to seal.
func (s *Stage) raiseFloors(adv floorAdvance) []sealWork {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return nil
	}
	injectFault(faultFloorApply)
	before := make(map[uint64]uint64, len(s.columns))
	for a := range s.columns {
		before[a] = s.floors.effective(a)
	}
	s.floors.apply(adv)
	s.history.prune(s.historyFloorLocked)
	var todo []sealWork
	for a, cols := range s.columns {
		for _, c := range cols {
			todo = append(todo, sealWork{attr: a, from: before[a], floor: s.floors.effective(a), col: c})
		}
	}
	return todo
}

// globalFloorLocked is the reported global floor: the minimum effective floor over known
// attributes, or G when none is known.
func (s *Stage) globalFloorLocked() uint64 {
	if len(s.columns) == 0 {
		return s.floors.global
	}
	lowest := ^uint64(0)
	for a := range s.columns {
		lowest = min(lowest, s.floors.effective(a))
	}
	return lowest
}

// GlobalFloor is the reported global floor.
func (s *Stage) GlobalFloor() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.globalFloorLocked()
}
