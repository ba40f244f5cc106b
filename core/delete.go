package core

import (
	"fmt"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// DeleteRequest is one delete_attributes call: attributes given as tokens (non-zero) or names;
// none at all deletes the whole prims.
type DeleteRequest struct {
	Query   uint64
	Tokens  []uint64
	Names   []string
	Ordinal uint64
}

// DeleteAttributes enqueues tombstones at ordinal for the listed attributes on the query's
// prims, or for every attribute of the prims (which then stop existing) when none is listed.
func (s *Stage) DeleteAttributes(req DeleteRequest) (uint64, error) {
	if len(req.Names) != 0 && len(req.Names) != len(req.Tokens) {
		return 0, status.Errorf(status.InvalidArgument, "attributes: %d names for %d tokens", len(req.Names), len(req.Tokens))
	}
	attrs := make([]uint64, len(req.Tokens))
	for i, tok := range req.Tokens {
		name := ""
		if req.Names != nil {
			name = req.Names[i]
		}
		a, err := s.resolveAttribute(tok, name, fmt.Sprintf("attributes[%d]", i))
		if err != nil {
			return 0, err
		}
		if err := checkNotDerived(fmt.Sprintf("attributes[%d]: ", i), s.tokenName(a)); err != nil {
			return 0, err
		}
		attrs[i] = a
	}
	wholePrims := len(attrs) == 0
	s.mu.Lock()
	defer s.unlockAndStart()
	q, err := s.queryLocked(req.Query)
	if err != nil {
		return 0, err
	}
	check := attrs
	if wholePrims {
		check = s.attributesOfLocked(q.Paths)
	}
	for _, a := range check {
		if err := s.checkAdmission(s.requested.effective(a), req.Ordinal, a); err != nil {
			return 0, err
		}
	}
	// A tombstone only covers rows that exist when it runs, so it waits for the mutations
	// submitted before it at lower ordinals: one of them may create the rows it must delete.
	var deps []*sched.Op
	for op, o := range s.pendingMutations {
		if o.ordinal < req.Ordinal {
			deps = append(deps, op)
		}
	}
	op := s.enqueueLocked(opSpec{
		deps: deps, inputs: []*sched.Op{q.Producer}, mutation: true, ordinal: req.Ordinal,
		run: func(op *sched.Op) error { return s.applyDelete(op, q, attrs, req.Ordinal) },
	})
	q.addUserLocked(op)
	return op.ID, nil
}

// attributesOfLocked lists the attribute names that some of prims carry.
func (s *Stage) attributesOfLocked(prims []uint64) []uint64 {
	var out []uint64
	for a, cols := range s.columns {
	next:
		for _, c := range cols {
			for _, p := range prims {
				if c.Live(p) {
					out = append(out, a)
					break next
				}
			}
		}
	}
	return out
}

func (s *Stage) applyDelete(op *sched.Op, q *Query, attrs []uint64, ordinal uint64) error {
	cols, err := s.deleteColumns(q, attrs, ordinal)
	if err != nil {
		return err
	}
	for _, c := range cols {
		c.Stage(q.Paths, &column.Delta{Ordinal: ordinal, Seq: op.ID, Tombstone: true})
	}
	return nil
}

// deleteColumns checks a delete against the applied floors and returns the columns to
// tombstone (every attribute of the prims for a whole-prim delete, which forgets the prims).
func (s *Stage) deleteColumns(q *Query, attrs []uint64, ordinal uint64) ([]*column.Column, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	injectFault(faultDeleteApply)
	wholePrims := len(attrs) == 0
	if wholePrims {
		attrs = s.attributesOfLocked(q.Paths)
	}
	var cols []*column.Column
	for _, a := range attrs {
		if err := s.checkAdmission(s.floors.effective(a), ordinal, a); err != nil {
			return nil, err
		}
		cols = append(cols, s.columns[a]...)
	}
	if wholePrims {
		s.removePrimsLocked(q.Paths)
	}
	return cols, nil
}
