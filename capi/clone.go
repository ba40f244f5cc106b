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
		return in.stage.Clone(src, dsts, uint64(ordinal))
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
	if op == 0 {
		return fail(fn, status.Errorf(status.InvalidHandle, "op id 0 is not a live clone operation of this instance"))
	}
	// The engine keeps the report from the clone's completion until release_op.
	report, err := in.stage.FetchCloneResult(uint64(op), uint64(timeout))
	if err != nil {
		return fail(fn, err)
	}
	abi.PutCloneResult(out, report)
	return 0
}
