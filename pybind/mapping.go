package pybind

import (
	"strconv"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// MapAttribute enqueues a map session: desc is an ovstage_map_desc_t* (dtype bits 0: the
// existing schema), sizes the size_t[n] element_sizes of an array attribute (0: none) and
// placement an ovstage_placement_t* (0: none), decoded by abi.Map. Returns "<map handle> <op id>".
func MapAttribute(stageID, query uint64, desc uintptr, ordinal uint64, sizes uintptr, n int, placement uintptr) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		req, err := abi.Map(query, cptr.At(desc), ordinal, cptr.At(sizes), uint64(max(n, 0)), cptr.At(placement))
		if err != nil {
			return "", err
		}
		return handleAndOp(s.MapAttribute(req))
	})
}

// FetchMapNext returns "<address> <group id>": the address of the next group's
// ovstage_map_group_t (abi.NewMapGroup), in C memory the group owns until it is committed (or
// the session or the stage ends), and the id UnmapGroup takes; "" after the last group.
func FetchMapNext(stageID, m, timeoutNs uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		g, err := s.FetchMapNext(m, timeoutNs)
		if status.CodeOf(err) == status.EndOfIteration {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		block, err := abi.NewMapGroup(g)
		if err != nil {
			return "", err
		}
		g.SetOnRelease(block.Free)
		s.RegisterMapGroup(g)
		return strconv.FormatUint(uint64(uintptr(block.Ptr())), 10) + " " + strconv.FormatUint(g.ID, 10), nil
	})
}

// UnmapGroup enqueues the commit of one map group; stream and event are its write_done_sync
// (ovstage_cuda_sync_t; a non-zero one fails a host session's commit when it executes).
func UnmapGroup(stageID, m, group uint64, stream, event uintptr) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		return s.UnmapGroupWithSync(m, group, abi.Sync(stream, event))
	})
}

// UnmapAttribute enqueues the commit of every remaining group and ends the session; stream and
// event are its write_done_sync, as for UnmapGroup (not looked at when nothing is left).
func UnmapAttribute(stageID, m uint64, stream, event uintptr) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		return s.UnmapAttributeWithSync(m, abi.Sync(stream, event))
	})
}
