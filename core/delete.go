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
	resolved := q.Producer == nil || q.Producer.Done()
	check := attrs
	if wholePrims {
		// Ending a prim is a change of its lifecycle, under the global floor (the floor of
		// usd-path), whatever attributes it carries.
		if req.Ordinal <= s.requested.global {
			return 0, status.Errorf(status.WriteFloorViolation, "ordinal %d is at or below the global write floor %d (deleting whole prims)", req.Ordinal, s.requested.global)
		}
		if resolved {
			check = s.attributesOfLocked(q.Paths)
		}
	}
	for _, a := range check {
		if err := s.checkAdmission(s.requested.effective(a), req.Ordinal, a); err != nil {
			return 0, err
		}
	}
	// A retained change that is already applied refuses the delete now: it came from an op
	// submitted earlier, and changes are never taken back, so the delete would fail anyway.
	// One still pending is found when the delete runs (it waits for that op).
	if resolved {
		if err := s.admitDeleteLocked(q.Paths, attrs, req.Ordinal, ^uint64(0)); err != nil {
			return 0, err
		}
	}
	// The delete waits for the pending mutations of its attributes (all, for whole prims:
	// conflicts.go), so it covers the rows they create; and, like clones and map commits, for
	// the floor advances to its ordinal enqueued before it, so its floor check at execution
	// sees the floors asked for before it.
	op := s.enqueueLocked(opSpec{
		deps: s.advancesOverLocked(req.Ordinal), inputs: []*sched.Op{q.Producer}, mutation: true, ordinal: req.Ordinal,
		fp:  &footprint{barrier: wholePrims, deletes: true, attrs: attrs},
		run: func(op *sched.Op) error { return s.applyDelete(op, q, attrs, req.Ordinal) },
	})
	q.addUserLocked(op)
	return op.ID, nil
}

// admitDeleteLocked applies the ordinal admission policy to a delete at (ordinal, seq): an
// attribute delete checks the deleted cells, a whole-prim delete every cell of the prims and
// their lifecycles.
func (s *Stage) admitDeleteLocked(prims, attrs []uint64, ordinal, seq uint64) error {
	if !s.checksHistory() {
		return nil
	}
	if len(attrs) == 0 {
		if c, ok := s.primConflictLocked(prims, ordinal, seq); ok {
			return s.conflictError("delete_attributes", "", 0, ordinal, c)
		}
		return nil
	}
	for _, a := range attrs {
		if c, ok := s.cellConflictLocked(a, prims, ordinal, seq); ok {
			return s.conflictError("delete_attributes", "", a, ordinal, c)
		}
	}
	return nil
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

// applyDelete checks the delete against the applied floors and the policy, records it in the
// lifecycle history, and tombstones, in every column of the deleted attributes (every column,
// for whole prims), the prims' cells that have a value ordered before the delete. A whole-prim
// delete also forgets the prims, except those written or created again at a later ordinal.
// It runs under the stage lock: nothing it checks can change before it has staged.
func (s *Stage) applyDelete(op *sched.Op, q *Query, attrs []uint64, ordinal uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return err
	}
	injectFault(faultDeleteApply)
	wholePrims := len(attrs) == 0
	check := attrs
	type tomb struct {
		col  *column.Column
		rows []int32
	}
	var tombs []tomb
	if wholePrims {
		if err := s.checkGlobalAdmission(ordinal); err != nil {
			return err
		}
		check = s.attributesOfLocked(q.Paths)
	}
	for _, a := range check {
		if err := s.checkAdmission(s.floors.effective(a), ordinal, a); err != nil {
			return err
		}
	}
	if wholePrims {
		for a, cols := range s.columns {
			if s.floors.effective(a) >= ordinal {
				continue // sealed history: none of these prims carries a (checked above)
			}
			for _, c := range cols {
				if rows := c.TombstoneRows(q.Paths, ordinal, op.ID); len(rows) > 0 {
					tombs = append(tombs, tomb{c, rows})
				}
			}
		}
	} else {
		for _, a := range attrs {
			for _, c := range s.columns[a] {
				tombs = append(tombs, tomb{c, c.TombstoneRows(q.Paths, ordinal, op.ID)})
			}
		}
	}
	if err := s.admitDeleteLocked(q.Paths, attrs, ordinal, op.ID); err != nil {
		return err
	}
	entry := &historyEntry{ordinal: ordinal, seq: op.ID, kind: historyAttrDelete, attrs: attrs, prims: q.Paths}
	if wholePrims {
		entry.kind = historyPrimDelete
		s.removePrimsLocked(s.primsEndingLocked(q.Paths, ordinal, op.ID))
	}
	if len(q.Paths) > 0 {
		s.history.add(entry)
	}
	for _, t := range tombs {
		t.col.StageTombstone(t.rows, ordinal, op.ID)
	}
	return nil
}

// primsEndingLocked lists the prims a whole-prim delete at (ordinal, seq) removes: those not
// written or created again by a change ordered after it.
func (s *Stage) primsEndingLocked(prims []uint64, ordinal, seq uint64) []uint64 {
	keep := map[uint64]bool{}
	for _, cols := range s.columns {
		for _, c := range cols {
			for _, p := range c.ValueAfter(prims, ordinal, seq) {
				keep[p] = true
			}
		}
	}
	for _, e := range s.history.above(ordinal, false, ^uint64(0)) {
		if e.kind == historyPrimCreate {
			for _, p := range prims {
				if e.hasPrim(p) {
					keep[p] = true
				}
			}
		}
	}
	if len(keep) == 0 {
		return prims
	}
	var out []uint64
	for _, p := range prims {
		if !keep[p] {
			out = append(out, p)
		}
	}
	return out
}
