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

// UnmapGroup enqueues the commit of one map group; event and stream are its write_done_sync.
func UnmapGroup(stageID, m, group, event, stream uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		sync, err := unmapSync(s, m, event, stream)
		if err != nil {
			return 0, err
		}
		return s.UnmapGroupWithSync(m, group, sync)
	})
}

// UnmapAttribute enqueues the commit of every remaining group and ends the session; event and
// stream are its write_done_sync.
func UnmapAttribute(stageID, m, event, stream uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		sync, err := unmapSync(s, m, event, stream)
		if err != nil {
			return 0, err
		}
		return s.UnmapAttributeWithSync(m, sync)
	})
}

// unmapSync is an unmap's write_done_sync: honoured by sessions staging on a CUDA device
// (placement=), refused for sessions staging in host memory.
func unmapSync(s *core.Stage, m, event, stream uint64) (core.CudaSync, error) {
	sync := core.CudaSync{Stream: uintptr(stream), Event: uintptr(event)}
	if sync.IsZero() || s.MapStagesOnDevice(m) {
		return sync, nil
	}
	name := "cuda_stream"
	if event != 0 {
		name = "cuda_event"
	}
	return sync, status.Errorf(status.NotSupported,
		"%s: CUDA synchronization is not supported for unmaps of sessions staging in host memory "+
			"(map groups are host memory; map_attribute with a CUDA placement stages on the device)", name)
}
