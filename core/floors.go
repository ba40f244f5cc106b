package core

import (
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

// advanceAll raises G and every known attribute's floor to n.
func (f *floors) advanceAll(n uint64, known func(yield func(uint64) bool)) {
	f.global = max(f.global, n)
	for a := range known {
		f.attr[a] = max(f.attr[a], n)
	}
}

// AdvanceWriteFloor seals ordinals <= ordinal (scope ALL). It is ordered after every earlier
// mutation at an ordinal <= ordinal; later mutations at or below it are rejected at enqueue.
func (s *Stage) AdvanceWriteFloor(ordinal uint64, scope Scope, attrs []uint64) (uint64, error) {
	if scope != ScopeAll {
		return 0, status.Errorf(status.NotSupported, "scope %d: only Scope.ALL is implemented so far (INCLUDE/EXCLUDE are not done yet)", scope)
	}
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
	s.requested.advanceAll(ordinal, s.knownAttributesLocked)
	op := s.enqueueLocked(opSpec{deps: deps, advance: true, run: func(*sched.Op) error {
		return s.applyFloorAll(ordinal)
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

func (s *Stage) applyFloorAll(ordinal uint64) error {
	s.mu.Lock()
	if s.destroyed {
		s.mu.Unlock()
		return nil
	}
	s.floors.advanceAll(ordinal, s.knownAttributesLocked)
	type work struct {
		floor uint64
		col   interface{ Seal(uint64) error }
	}
	todo := make([]work, 0, len(s.columns))
	for a, c := range s.columns {
		todo = append(todo, work{floor: s.floors.effective(a), col: c})
	}
	s.mu.Unlock()
	for _, w := range todo {
		if err := w.col.Seal(w.floor); err != nil {
			return err
		}
	}
	return nil
}

// GlobalFloor is the reported global floor: the minimum effective floor over known attributes,
// or G when none is known.
func (s *Stage) GlobalFloor() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.columns) == 0 {
		return s.floors.global
	}
	lowest := ^uint64(0)
	for a := range s.columns {
		lowest = min(lowest, s.floors.effective(a))
	}
	return lowest
}
