package pybind

import (
	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// AdvanceWriteFloor enqueues a floor advance described by the ovstage_write_floor_desc_t at
// desc (abi.WriteFloor).
func AdvanceWriteFloor(stageID uint64, desc uintptr) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		ordinal, scope, attrs, err := abi.WriteFloor(cptr.At(desc))
		if err != nil {
			return 0, err
		}
		return s.AdvanceWriteFloor(ordinal, scope, attrs)
	})
}

// AdvanceWriteFloorAll is advance_write_floor's fast path: every attribute (ScopeAll) sealed up
// to ordinal, with no descriptor to decode.
func AdvanceWriteFloorAll(stageID, ordinal uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		return s.AdvanceWriteFloor(ordinal, core.ScopeAll, nil)
	})
}

// GlobalWriteFloor is the reported global floor (minimum over known attributes).
func GlobalWriteFloor(stageID uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) { return s.GlobalFloor(), nil })
}
