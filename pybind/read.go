package pybind

import (
	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// ReadAttributes enqueues a read of n attribute tokens (uint64) at attrs over the range at rng
// (an ovstage_ordinal_range_t*) and placement (an ovstage_placement_t*, 0: none), decoded by
// abi.Read; it returns "<read handle> <op id>".
func ReadAttributes(stageID, query uint64, attrs uintptr, n int, rng, placement uintptr) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		toks, r, placed, err := abi.Read(cptr.At(attrs), uint64(max(n, 0)), cptr.At(rng), cptr.At(placement))
		if err != nil {
			return "", err
		}
		return handleAndOp(s.ReadAttributesPlaced(query, toks, r, placed.Device, placed.Avail))
	})
}

// FetchReadNext returns the address of the next group's ovstage_read_group_t (abi.NewReadGroup),
// in C memory the group owns: valid until the group is released (ReleaseGroup, or the stage's
// destruction). After the last group it returns 0 (END_OF_ITERATION is the normal end of every
// read, so it is an answer, not an error).
func FetchReadNext(stageID, read, timeoutNs uint64) (uintptr, error) {
	return withStage(stageID, func(s *core.Stage) (uintptr, error) {
		g, err := s.FetchReadNext(read, timeoutNs)
		if status.CodeOf(err) == status.EndOfIteration {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		block, err := abi.NewReadGroup(g)
		if err != nil {
			_ = s.ReleaseGroup(g.ID)
			return 0, err
		}
		g.SetOnRelease(block.Free)
		return uintptr(block.Ptr()), nil
	})
}

// ReleaseGroup releases a fetched group.
func ReleaseGroup(stageID, group uint64) (bool, error) {
	return withStage(stageID, func(s *core.Stage) (bool, error) { return true, s.ReleaseGroup(group) })
}

// ReleaseRead enqueues the release of a read handle.
func ReleaseRead(stageID, read uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) { return s.ReleaseRead(read) })
}
