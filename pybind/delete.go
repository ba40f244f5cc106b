package pybind

import (
	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// DeleteAttributes enqueues tombstones for the n ovx_string_or_token_t at attrs (n == 0: delete
// the whole prims), decoded by abi.Delete.
func DeleteAttributes(stageID, query uint64, attrs uintptr, n int, ordinal uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		req, err := abi.Delete(query, cptr.At(attrs), uint64(max(n, 0)), ordinal)
		if err != nil {
			return 0, err
		}
		return s.DeleteAttributes(req)
	})
}
