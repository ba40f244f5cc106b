package pybind

import (
	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// Clone enqueues a subtree clone of the path at source (an ovx_string_t*) to the n paths at
// targets (ovx_string_t[n]), decoded by abi.String and abi.Strings.
func Clone(stageID uint64, source, targets uintptr, n int, ordinal uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		src, err := abi.String(cptr.At(source), "source_path")
		if err != nil {
			return 0, err
		}
		dsts, err := abi.Strings(cptr.At(targets), uint64(max(n, 0)), "target_paths")
		if err != nil {
			return 0, err
		}
		return s.Clone(src, dsts, ordinal)
	})
}

// FetchCloneResult waits up to timeoutNs for clone op id and writes its completion report to
// the ovstage_clone_result_t at out (abi.PutCloneResult); out is zeroed first, so a failure
// leaves it zero. The op stays tracked: ReleaseOp forgets it and its report.
func FetchCloneResult(stageID, op, timeoutNs uint64, out uintptr) (bool, error) {
	return withStage(stageID, func(s *core.Stage) (bool, error) {
		p := cptr.At(out)
		if p == nil {
			return false, status.Errorf(status.InvalidArgument, "fetch_clone_result: out_result is NULL")
		}
		abi.Zero(p, abi.CloneResultSize)
		report, err := s.FetchCloneResult(op, timeoutNs)
		if err != nil {
			return false, err
		}
		abi.PutCloneResult(p, report)
		return true, nil
	})
}
