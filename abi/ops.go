package abi

import (
	"slices"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
)

// Op tracking as both front ends state it (README.md, "Op tracking"), over the engine's op
// table, whose WaitOp reports a failed chain with OK and whose ReleaseOp drops pending ops:
//   - wait_op answers OP_FAILED when the waited op failed, listing the failed ops of its chain
//     (root cause first) with their texts; a failure of an op it merely followed is not
//     reported (OK);
//   - op id 0, an unknown or a released id is INVALID_ARGUMENT for wait_op;
//   - release_op of a pending op is refused with OP_FAILED and the op stays tracked;
//     release_op(0) is INVALID_ARGUMENT, an unknown id INVALID_HANDLE.

// FailedOp is one failed op of a waited chain and its failure text.
type FailedOp struct {
	ID   uint64
	Text string
}

// WaitOutcome is the answer of WaitOp: Status OK, TIMEOUT (with LowestPending) or OP_FAILED
// (with Failed, root cause first).
type WaitOutcome struct {
	Status        status.Code
	LowestPending uint64
	Failed        []FailedOp
}

// WaitOp waits up to timeoutNs for op id of stage s. The error is INVALID_ARGUMENT for an op
// id the stage does not track, or the stage's own error when it is gone.
func WaitOp(s *core.Stage, id, timeoutNs uint64) (WaitOutcome, error) {
	if id == 0 {
		return WaitOutcome{}, invalid("op id 0 is never a valid op")
	}
	res, err := s.WaitOp(id, timeoutNs)
	if err != nil {
		if s.Destroyed() {
			return WaitOutcome{}, err
		}
		return WaitOutcome{}, invalid("%s", status.MessageOf(err))
	}
	if res.Status == status.Timeout {
		return WaitOutcome{Status: status.Timeout, LowestPending: res.LowestPending}, nil
	}
	if !slices.Contains(res.ErrorOpIDs, id) {
		return WaitOutcome{Status: status.OK}, nil
	}
	out := WaitOutcome{Status: status.OpFailed, Failed: make([]FailedOp, len(res.ErrorOpIDs))}
	for i, failed := range res.ErrorOpIDs {
		out.Failed[i] = FailedOp{ID: failed, Text: s.LastOpError(failed)}
	}
	if out.Failed[0].Text == "" {
		out.Failed[0].Text = res.Message // the root cause was released: the wait carries it
	}
	return out, nil
}

// ReleaseOp stops tracking op id of stage s once it is complete.
func ReleaseOp(s *core.Stage, id uint64) error {
	if id == 0 {
		return invalid("op id 0 is never a valid op")
	}
	res, err := s.WaitOp(id, 0)
	if err != nil {
		return err
	}
	if res.Status == status.Timeout {
		return status.Errorf(status.OpFailed, "op %d is still pending: release it once a wait reported it complete (it stays tracked)", id)
	}
	return s.ReleaseOp(id)
}
