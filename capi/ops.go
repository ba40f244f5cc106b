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

// Op tracking follows abi.WaitOp and abi.ReleaseOp (the rules both front ends share); the
// failed ids and their texts live in this thread's wait storage until its next wait_op.

// putWaitResult fills the caller's ovstage_op_wait_result_t from this thread's storage.
func putWaitResult(out unsafe.Pointer, lowest uint64) {
	var n C.size_t
	ids := C.ovs_wait_ids(&n)
	abi.PutWaitResult(out, unsafe.Pointer(ids), int(n), lowest)
}

//export ovsgo_wait_op
func ovsgo_wait_op(ctx C.uintptr_t, op, timeout C.uint64_t, out unsafe.Pointer) (code C.int) {
	const fn = "wait_op"
	defer guard(fn, &code)
	if out == nil {
		return fail(fn, invalid("out_wait_result is NULL"))
	}
	abi.Zero(out, abi.WaitResultSize)
	in, err := byContext(ctx)
	if err != nil {
		return fail(fn, err)
	}
	res, err := abi.WaitOp(in.stage, uint64(op), uint64(timeout))
	if err != nil {
		return fail(fn, err)
	}
	switch res.Status {
	case status.Timeout:
		putWaitResult(out, res.LowestPending)
		return fail(fn, status.Errorf(status.Timeout, "op %d is still pending (lowest pending op of its chain: %d)", op, res.LowestPending))
	case status.OK:
		return 0
	}
	for _, f := range res.Failed {
		C.ovs_wait_add(C.uint64_t(f.ID), (*C.char)(unsafe.Pointer(unsafe.StringData(f.Text))), C.size_t(len(f.Text)))
	}
	putWaitResult(out, 0)
	return fail(fn, status.Errorf(status.OpFailed, "op %d failed: %s", op, res.Failed[0].Text))
}

//export ovsgo_release_op
func ovsgo_release_op(ctx C.uintptr_t, op C.uint64_t) (code C.int) {
	const fn = "release_op"
	defer guard(fn, &code)
	in, err := byContext(ctx)
	if err != nil {
		return fail(fn, err)
	}
	if err := abi.ReleaseOp(in.stage, uint64(op)); err != nil {
		return fail(fn, err)
	}
	return 0
}
