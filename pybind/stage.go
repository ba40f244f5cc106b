package pybind

import (
	"fmt"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
)

// WaitOp waits for an op and its chain (abi.WaitOp's rules); it returns "<status> <lowest
// pending> <failed ids> <message>": status OK, TIMEOUT, OP_FAILED (the failed ids root cause
// first, the root cause's text) or INVALID_ARGUMENT for an id the stage does not track (its
// reason). The message is last: it may contain spaces. Only a stage that is gone is an error.
func WaitOp(stageID, op, timeoutNs uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		res, err := abi.WaitOp(s, op, timeoutNs)
		if err != nil {
			if status.CodeOf(err) != status.InvalidArgument {
				return "", err
			}
			return fmt.Sprintf("%d 0  %s", int32(status.InvalidArgument), status.MessageOf(err)), nil
		}
		ids := make([]uint64, len(res.Failed))
		message := ""
		for i, f := range res.Failed {
			ids[i] = f.ID
		}
		if len(res.Failed) > 0 {
			message = res.Failed[0].Text
		}
		return fmt.Sprintf("%d %d %s %s", int32(res.Status), res.LowestPending, joinIDs(ids), message), nil
	})
}

// WaitReleaseOp is Operation.wait's hot path for an op that has already finished: it polls
// the op and, when it succeeded (no failure in its chain), releases it and returns 0. It
// returns 11 (TIMEOUT) while the op is pending and -1 for anything else (a failure, an error
// of the poll or of the release), leaving the op tracked: the caller then takes the full wait,
// which reports it.
func WaitReleaseOp(stageID, op uint64) (int, error) {
	return withStage(stageID, func(s *core.Stage) (int, error) {
		res, err := abi.WaitOp(s, op, 0)
		switch {
		case err != nil || len(res.Failed) > 0:
			return -1, nil
		case res.Status == status.Timeout:
			return int(status.Timeout), nil
		case res.Status != status.OK:
			return -1, nil
		}
		if abi.ReleaseOp(s, op) != nil {
			return -1, nil
		}
		return 0, nil
	})
}

// ReleaseOp stops tracking a complete op (abi.ReleaseOp's rules); it returns the status code:
// 0, OP_FAILED for a pending op (still tracked), INVALID_HANDLE for an unknown id,
// INVALID_ARGUMENT for 0. Only a stage that is gone is an error.
func ReleaseOp(stageID, op uint64) (int, error) {
	return withStage(stageID, func(s *core.Stage) (int, error) {
		err := abi.ReleaseOp(s, op)
		if err != nil && s.Destroyed() {
			return 0, err
		}
		return int(status.CodeOf(err)), nil
	})
}

// DetachOp says nobody will wait for an op any more: its id is forgotten once the op
// completes (at once if it has). The Python layer calls it when an unwaited Operation is
// garbage-collected; it returns true.
func DetachOp(stageID, op uint64) (bool, error) {
	return withStage(stageID, func(s *core.Stage) (bool, error) { return true, s.DetachOp(op) })
}

// TakeSourcesDone returns the ids of finished writes whose source the caller kept alive
// (payloads of DeferCopyBytes or more), comma-separated ("" when none), and forgets them.
func TakeSourcesDone(stageID uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		return joinIDs(s.TakeSourcesDone()), nil
	})
}

// GetLastOpError is the failure message of an op ("" when it did not fail or is unknown).
func GetLastOpError(stageID, op uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) { return s.LastOpError(op), nil })
}

// Diagnostics returns live object counts: "ops queries reads groups columns buffers
// ordinal_queries maps path_lists" (buffers are process-wide, path lists the stage's).
func Diagnostics(stageID uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		d := s.Diagnostics()
		return fmt.Sprintf("%d %d %d %d %d %d %d %d %d %d", d.Ops, d.Queries, d.Reads, d.Groups, d.Columns,
			buffer.LiveCount(), d.OrdinalQueries, d.Maps, s.Dictionary().LiveLists(), d.VersionBytes), nil
	})
}
