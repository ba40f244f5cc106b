package pybind

import (
	"fmt"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/buffer"
)

// CreateStage creates a stage; workers <= 0 uses one worker per CPU. policy is the ordinal
// admission policy the stage captured (ovstage_ordinal_admission_policy_t; DEFAULT (0) is
// NONDECREASING); hierarchyModel is the model RUNTIME_DEFAULT resolves to (compute_hierarchy,
// floor advances; 0 or 4: CPU_INCREMENTAL).
func CreateStage(name string, workers int, policy int, hierarchyModel int32) (uint64, error) {
	if int(int32(policy)) != policy {
		policy = -1 // out of range: refused by OpenStage
	}
	return call(func() (uint64, error) {
		s, err := core.OpenStage(name, core.Config{Workers: workers,
			Admission: core.AdmissionPolicy(policy), HierarchyModel: hierarchyModel})
		if err != nil {
			return 0, err
		}
		return s.ID, nil
	})
}

// DestroyStage waits for the stage's pending ops and releases everything it holds.
func DestroyStage(stageID uint64) (bool, error) {
	return withStage(stageID, func(s *core.Stage) (bool, error) {
		s.Destroy()
		return true, nil
	})
}

// WaitOp waits for an op and its chain; it returns "<status> <lowest pending> <failed ids>
// <root cause message>" (the message last: it may contain spaces; empty without a failure).
func WaitOp(stageID, op, timeoutNs uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		res, err := s.WaitOp(op, timeoutNs)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d %d %s %s", int32(res.Status), res.LowestPending, joinIDs(res.ErrorOpIDs), res.Message), nil
	})
}

// ReleaseOp forgets an op id; it returns the status code (0 on success).
func ReleaseOp(stageID, op uint64) (int, error) {
	return withStage(stageID, func(s *core.Stage) (int, error) { return 0, s.ReleaseOp(op) })
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
		return fmt.Sprintf("%d %d %d %d %d %d %d %d %d", d.Ops, d.Queries, d.Reads, d.Groups, d.Columns,
			buffer.LiveCount(), d.OrdinalQueries, d.Maps, s.Dictionary().LiveLists()), nil
	})
}
