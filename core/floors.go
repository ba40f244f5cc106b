package core

import (
	"fmt"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// Scope selects which attributes a floor advance raises (spec §3.10).
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

// advance applies one advance: ALL (or EXCLUDE with an empty list) raises G and every known
// attribute; INCLUDE raises the listed ones; EXCLUDE raises every known one not listed.
func (f *floors) advance(n uint64, scope Scope, listed []uint64, known func(yield func(uint64) bool)) {
	in := map[uint64]bool{}
	for _, a := range listed {
		in[a] = true
	}
	switch {
	case scope == ScopeInclude:
		for _, a := range listed {
			f.raise(a, n)
		}
	case scope == ScopeAll || len(listed) == 0:
		f.global = max(f.global, n)
		for a := range known {
			f.raise(a, n)
		}
	default:
		for a := range known {
			if !in[a] {
				f.raise(a, n)
			}
		}
	}
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
	attrs = append([]uint64(nil), attrs...)
	s.mu.Lock()
	defer s.unlockAndStart()
	if err := s.checkLiveLocked(); err != nil {
		return 0, err
	}
	var deps []*sched.Op
	for op, o := range s.pendingMutations {
		if o <= ordinal {
			deps = append(deps, op)
		}
	}
	s.requested.advance(ordinal, scope, attrs, s.knownAttributesLocked)
	op := s.enqueueLocked(opSpec{deps: deps, advance: true, run: func(*sched.Op) error {
		return s.applyFloor(ordinal, scope, attrs)
	}})
	return op.ID, nil
}

func (s *Stage) knownAttributesLocked(yield func(uint64) bool) {
	for a := range s.columns {
		if !yield(a) {
			return
		}
	}
}

// applyFloor raises the floors, then folds every column up to its attribute's effective floor.
func (s *Stage) applyFloor(ordinal uint64, scope Scope, attrs []uint64) error {
	s.mu.Lock()
	if s.destroyed {
		s.mu.Unlock()
		return nil
	}
	s.floors.advance(ordinal, scope, attrs, s.knownAttributesLocked)
	type work struct {
		floor uint64
		col   *column.Column
	}
	var todo []work
	for a, cols := range s.columns {
		for _, c := range cols {
			todo = append(todo, work{floor: s.floors.effective(a), col: c})
		}
	}
	s.mu.Unlock()
	for _, w := range todo {
		if err := w.col.Seal(w.floor); err != nil {
			return err
		}
	}
	return nil
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
