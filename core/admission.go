package core

import (
	"fmt"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
)

// AdmissionPolicy is a stage's ordinal admission policy: which mutations at an ordinal older
// than a retained change of the same cell (prim, attribute) or prim lifecycle it refuses. The
// values are those of the C and Python enums.
type AdmissionPolicy int32

// Ordinal admission policies.
const (
	// AdmissionDefault asks for the process's policy; a stage that gets it resolves it to
	// NONDECREASING.
	AdmissionDefault AdmissionPolicy = 0
	// AdmissionFloorOnly checks the write floors only.
	AdmissionFloorOnly AdmissionPolicy = 1
	// AdmissionNondecreasing also refuses an ordinal below a retained change (equal is fine).
	AdmissionNondecreasing AdmissionPolicy = 2
	// AdmissionStrictlyIncreasing also refuses an ordinal equal to a retained change.
	AdmissionStrictlyIncreasing AdmissionPolicy = 3
)

var admissionNames = map[AdmissionPolicy]string{AdmissionDefault: "DEFAULT", AdmissionFloorOnly: "FLOOR_ONLY",
	AdmissionNondecreasing: "NONDECREASING", AdmissionStrictlyIncreasing: "STRICTLY_INCREASING"}

func (p AdmissionPolicy) String() string {
	if n, ok := admissionNames[p]; ok {
		return n
	}
	return fmt.Sprintf("AdmissionPolicy(%d)", int32(p))
}

// Resolve maps DEFAULT to the policy it stands for (NONDECREASING); other values are kept.
func (p AdmissionPolicy) Resolve() AdmissionPolicy {
	if p == AdmissionDefault {
		return AdmissionNondecreasing
	}
	return p
}

// CheckAdmissionPolicy validates a policy value given as argument arg.
func CheckAdmissionPolicy(p AdmissionPolicy, arg string) error {
	if _, ok := admissionNames[p]; !ok {
		return status.Errorf(status.InvalidArgument,
			"%s: %d is not an ordinal admission policy (DEFAULT=0, FLOOR_ONLY=1, NONDECREASING=2, STRICTLY_INCREASING=3)", arg, int32(p))
	}
	return nil
}

// checksHistory: the policy refuses mutations that conflict with retained history.
func (s *Stage) checksHistory() bool { return s.policy != AdmissionFloorOnly }

// strictAdmission: a change at the same ordinal also conflicts.
func (s *Stage) strictAdmission() bool { return s.policy == AdmissionStrictlyIncreasing }

// AdmissionPolicy is the stage's resolved policy.
func (s *Stage) AdmissionPolicy() AdmissionPolicy { return s.policy }

// historyConflict is a retained change that refuses a mutation.
type historyConflict struct {
	prim, ordinal uint64
	what          string // "change", "deletion", "creation"
}

// cellConflictLocked finds a retained change (value, tombstone, or a delete naming the cell)
// of attr on one of prims that the policy says blocks a mutation at (ordinal, seq). Only ops
// submitted before seq count: a later op's change never refuses an earlier one.
func (s *Stage) cellConflictLocked(attr uint64, prims []uint64, ordinal, seq uint64) (historyConflict, bool) {
	if len(prims) == 0 {
		return historyConflict{}, false
	}
	strict := s.strictAdmission()
	for _, c := range s.columns[attr] {
		if p, at, ok := c.ChangeAbove(prims, ordinal, strict, seq); ok {
			return historyConflict{p, at, "change"}, true
		}
	}
	for _, e := range s.history.above(ordinal, strict, seq) {
		if e.kind == historyPrimCreate || (e.kind == historyAttrDelete && !containsAttr(e.attrs, attr)) {
			continue
		}
		if p, ok := e.firstPrim(prims); ok {
			return historyConflict{p, e.ordinal, "deletion"}, true
		}
	}
	return historyConflict{}, false
}

// primConflictLocked finds a retained change of any cell of prims, or a lifecycle event
// (creation, deletion) of one of them, that blocks a mutation at (ordinal, seq): the check of
// whole-prim deletes and of the prims a clone creates.
func (s *Stage) primConflictLocked(prims []uint64, ordinal, seq uint64) (historyConflict, bool) {
	if len(prims) == 0 {
		return historyConflict{}, false
	}
	strict := s.strictAdmission()
	for _, cols := range s.columns {
		for _, c := range cols {
			if p, at, ok := c.ChangeAbove(prims, ordinal, strict, seq); ok {
				return historyConflict{p, at, "change"}, true
			}
		}
	}
	for _, e := range s.history.above(ordinal, strict, seq) {
		if p, ok := e.firstPrim(prims); ok {
			what := "deletion"
			if e.kind == historyPrimCreate {
				what = "creation"
			}
			return historyConflict{p, e.ordinal, what}, true
		}
	}
	return historyConflict{}, false
}

func containsAttr(attrs []uint64, a uint64) bool {
	for _, x := range attrs {
		if x == a {
			return true
		}
	}
	return false
}

// conflictError reports a policy refusal of a mutation at ordinal (opName names the call; attr
// is 0 for a prim lifecycle conflict).
func (s *Stage) conflictError(opName, label string, attr, ordinal uint64, c historyConflict) error {
	rel := "below"
	if s.strictAdmission() {
		rel = "not above"
	}
	subject := fmt.Sprintf("for prim %s", s.pathName(c.prim))
	if attr != 0 {
		subject = fmt.Sprintf("for requested attribute %q on prim %s", s.tokenName(attr), s.pathName(c.prim))
	}
	return status.Errorf(status.WriteFloorViolation,
		"%s: %sordinal conflict %s: ordinal %d is %s the retained %s at ordinal %d (ordinal admission policy %s)",
		opName, label, subject, ordinal, rel, c.what, c.ordinal, s.policy)
}

// admitCellsLocked applies the policy to a mutation of attr on prims at (ordinal, seq).
func (s *Stage) admitCellsLocked(opName, label string, attr uint64, prims []uint64, ordinal, seq uint64) error {
	if !s.checksHistory() {
		return nil
	}
	if c, ok := s.cellConflictLocked(attr, prims, ordinal, seq); ok {
		return s.conflictError(opName, label, attr, ordinal, c)
	}
	return nil
}

// laterDeletesLocked lists, for a FLOOR_ONLY write of attr to prims at (ordinal, seq), the
// deletes ordered after it that already ran and cover some of its cells (the write's rows
// must end tombstoned by them), and the prims whose whole-prim deletion is ordered after it
// (the write does not bring them back).
func (s *Stage) laterDeletesLocked(attr uint64, prims []uint64, ordinal, seq uint64) ([]column.LaterDelete, map[uint64]bool) {
	var later []column.LaterDelete
	var gone map[uint64]bool
	for _, e := range s.history.above(ordinal, false, seq) {
		if e.kind == historyPrimCreate || (e.kind == historyAttrDelete && !containsAttr(e.attrs, attr)) {
			continue
		}
		if _, ok := e.firstPrim(prims); !ok {
			continue
		}
		later = append(later, column.LaterDelete{Ordinal: e.ordinal, Seq: e.seq, Covers: e.hasPrim})
		if e.kind == historyPrimDelete {
			if gone == nil {
				gone = map[uint64]bool{}
			}
			for _, p := range prims {
				if e.hasPrim(p) {
					gone[p] = true
				}
			}
		}
	}
	return later, gone
}

// admitCloneLocked is a clone's admission at (ordinal, seq): the global floor and the floors of
// the attributes the source subtree carries (the ones it reproduces at the targets), and,
// except under FLOOR_ONLY, the retained history of every cell and the lifecycle of each prim
// it creates or merges into (targets).
func (s *Stage) admitCloneLocked(attrs, targets []uint64, ordinal, seq uint64) error {
	if err := s.checkGlobalAdmission(ordinal); err != nil {
		return err
	}
	for _, a := range attrs {
		if err := s.checkAdmission(s.floors.effective(a), ordinal, a); err != nil {
			return err
		}
	}
	if !s.checksHistory() {
		return nil
	}
	if c, ok := s.primConflictLocked(targets, ordinal, seq); ok {
		return s.conflictError("clone", "", 0, ordinal, c)
	}
	return nil
}

// recordCreatedLocked records prims a clone created at (ordinal, seq) in the lifecycle history
// (they may carry no attribute, so no column records them).
func (s *Stage) recordCreatedLocked(prims []uint64, ordinal, seq uint64) {
	if len(prims) > 0 {
		s.history.add(&historyEntry{ordinal: ordinal, seq: seq, kind: historyPrimCreate, prims: prims})
	}
}
