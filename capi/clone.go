package main

/*
#include "capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core/status"
)

// cloneRecord is what fetch_clone_result needs of an accepted clone op; the report is
// counted on the first successful fetch and kept until release_op.
type cloneRecord struct {
	ordinal uint64
	source  uint64   // path id
	targets []uint64 // path ids
	report  *abi.CloneReport
}

func (in *instance) forgetClone(op uint64) {
	in.mu.Lock()
	delete(in.clones, op)
	in.mu.Unlock()
}

//export ovsgo_clone
func ovsgo_clone(p C.uintptr_t, source unsafe.Pointer, targets unsafe.Pointer, n C.size_t, ordinal C.uint64_t,
	out *C.ovstage_enqueue_result_t) {
	const fn = "ovstage_clone"
	defer guardEnqueue(fn, out)
	op, err := func() (uint64, error) {
		in, err := byBundle(p)
		if err != nil {
			return 0, err
		}
		src, err := abi.String(source, "source_path")
		if err != nil {
			return 0, err
		}
		dsts, err := abi.Strings(targets, uint64(n), "target_paths")
		if err != nil {
			return 0, err
		}
		op, err := in.stage.Clone(src, dsts, uint64(ordinal))
		if err != nil {
			return 0, err
		}
		// The engine interned these paths to validate them, so interning returns the same ids.
		rec := &cloneRecord{ordinal: uint64(ordinal), targets: make([]uint64, len(dsts))}
		dict := in.stage.Dictionary()
		rec.source, _ = dict.InternPath(src)
		for i, d := range dsts {
			rec.targets[i], _ = dict.InternPath(d)
		}
		in.mu.Lock()
		in.clones[op] = rec
		in.mu.Unlock()
		return op, nil
	}()
	enqueued(fn, op, err, out)
}

//export ovsgo_fetch_clone_result
func ovsgo_fetch_clone_result(p C.uintptr_t, op, timeout C.uint64_t, out unsafe.Pointer) (code C.int) {
	const fn = "ovstage_fetch_clone_result"
	defer guard(fn, &code)
	if out == nil {
		return fail(fn, invalid("instance and out_result must not be NULL"))
	}
	abi.Zero(out, abi.CloneResultSize)
	in, err := byBundle(p)
	if err != nil {
		return fail(fn, err)
	}
	in.mu.Lock()
	rec := in.clones[uint64(op)]
	in.mu.Unlock()
	if rec == nil {
		return fail(fn, status.Errorf(status.InvalidHandle, "op id %d is not a live clone operation of this instance", op))
	}
	res, err := in.stage.WaitOp(uint64(op), uint64(timeout))
	if err != nil {
		return fail(fn, status.Errorf(status.InvalidHandle, "op id %d is not a live clone operation of this instance", op))
	}
	if res.Status == status.Timeout {
		return fail(fn, status.Errorf(status.Timeout, "clone op %d is still pending", op))
	}
	if cerr := in.stage.OpError(uint64(op)); cerr != nil {
		return fail(fn, cerr)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if rec.report == nil {
		// Counted now, from the prims the stage holds: a later mutation of these subtrees
		// before the first fetch changes the counts (see docs/c-api.md).
		r := &abi.CloneReport{Ordinal: rec.ordinal, TargetCount: uint64(len(rec.targets)),
			SourcePrimCount: uint64(in.stage.SubtreePrimCount(rec.source))}
		for _, t := range rec.targets {
			r.PrimsCloned += uint64(in.stage.SubtreePrimCount(t))
		}
		rec.report = r
	}
	abi.PutCloneResult(out, *rec.report)
	return 0
}
