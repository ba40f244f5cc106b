package pybind

import (
	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
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
