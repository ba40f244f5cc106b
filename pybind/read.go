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

// FetchReadNextNow is FetchReadNext with no wait (the fast path's fetch of a complete read): it
// never blocks, so its wrapper keeps the GIL (setup.py GIL_HELD; API.md, "The GIL").
func FetchReadNextNow(stageID, read uint64) (uintptr, error) { return FetchReadNext(stageID, read, 0) }

// ReleaseGroup releases a fetched group.
func ReleaseGroup(stageID, group uint64) (bool, error) {
	return withStage(stageID, func(s *core.Stage) (bool, error) { return true, s.ReleaseGroup(group) })
}

// ReleaseRead enqueues the release of a read handle.
func ReleaseRead(stageID, read uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) { return s.ReleaseRead(read) })
}

// Words ReadAttributesTo writes at out: the read handle, the op id, and the groups the read
// hands out when it is already complete (readGroupsUnknown while it runs).
const (
	readAnswerWords   = 3
	readGroupsUnknown = ^uint64(0)
)

// ReadAttributesTo is read_attributes' fast path (python/ovstage/_fastpath.py): the read of
// ReadAttributes without a placement, its range passed as plain ints and, for one attribute, its
// token as tok (attrs 0), so the caller builds no ctypes structs. It writes the read handle,
// the op id and the group count (readAnswerWords) as uint64 at out, which the caller owns: a
// caller that has fetched that many groups knows the next fetch is the end without asking.
func ReadAttributesTo(stageID, query, tok uint64, attrs uintptr, n int, start, end uint64, hasStart bool,
	out uintptr) (bool, error) {
	return withStage(stageID, func(s *core.Stage) (bool, error) {
		var toks []uint64
		if attrs == 0 && n == 1 {
			toks = []uint64{tok}
		} else {
			var err error
			if toks, err = abi.Tokens(cptr.At(attrs), uint64(max(n, 0)), "attrs"); err != nil {
				return false, err
			}
		}
		if out == 0 {
			return false, status.Errorf(status.InvalidArgument, "out is NULL")
		}
		h, op, err := s.ReadAttributes(query, toks, core.OrdinalRange{Start: start, End: end, HasStart: hasStart})
		if err != nil {
			return false, err
		}
		answer := (*[readAnswerWords]uint64)(cptr.At(out))
		answer[0], answer[1], answer[2] = h, op, readGroupsUnknown
		if n, ok := s.ReadGroupsLeft(h); ok {
			answer[2] = uint64(n)
		}
		return true, nil
	})
}

// ReleaseReadNow is the release at the end of `with read_attributes(...)`: ReleaseRead, and
// when that release has already succeeded (a read that ran on the caller's thread), its op
// released too; it returns 0 then, else the release's op id for the caller to wait. readOp, if
// not 0, is the read's own op, which nobody will wait for any more (DetachOp).
func ReleaseReadNow(stageID, read, readOp uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		op, err := s.ReleaseRead(read)
		if err != nil {
			return 0, err
		}
		if readOp != 0 {
			_ = s.DetachOp(readOp)
		}
		res, err := abi.WaitOp(s, op, 0)
		if err == nil && res.Status == status.OK && len(res.Failed) == 0 && abi.ReleaseOp(s, op) == nil {
			return 0, nil
		}
		return op, nil
	})
}
