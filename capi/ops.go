package main

/*
#include "capi.h"
*/
import "C"

import (
	"slices"
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core/status"
)

// Op tracking as the C API states it, over the engine's op table (the engine's WaitOp reports
// a failed chain with OK and its ReleaseOp drops pending ops; the Python layer has its own
// rules on top):
//   - wait_op returns OP_FAILED when the waited op failed, listing the failed ops of its chain
//     (root cause first) in the thread-local error_op_ids, with their texts for
//     get_last_op_error; a failure of an op it merely followed is not reported (OK);
//   - op id 0, an unknown or a released id is INVALID_ARGUMENT for wait_op;
//   - release_op of a pending op is refused with OP_FAILED and the op stays tracked;
//     release_op(0) is INVALID_ARGUMENT, an unknown id INVALID_HANDLE.

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
	if op == 0 {
		return fail(fn, invalid("op id 0 is never a valid op"))
	}
	res, err := in.stage.WaitOp(uint64(op), uint64(timeout))
	if err != nil {
		return fail(fn, invalid("%s", status.MessageOf(err)))
	}
	if res.Status == status.Timeout {
		putWaitResult(out, res.LowestPending)
		return fail(fn, status.Errorf(status.Timeout, "op %d is still pending (lowest pending op of its chain: %d)", op, res.LowestPending))
	}
	if !slices.Contains(res.ErrorOpIDs, uint64(op)) {
		return 0
	}
	for _, id := range res.ErrorOpIDs {
		text := in.stage.LastOpError(id)
		C.ovs_wait_add(C.uint64_t(id), (*C.char)(unsafe.Pointer(unsafe.StringData(text))), C.size_t(len(text)))
	}
	putWaitResult(out, 0)
	return fail(fn, status.Errorf(status.OpFailed, "op %d failed: %s", op, in.stage.LastOpError(res.ErrorOpIDs[0])))
}

//export ovsgo_release_op
func ovsgo_release_op(ctx C.uintptr_t, op C.uint64_t) (code C.int) {
	const fn = "release_op"
	defer guard(fn, &code)
	in, err := byContext(ctx)
	if err != nil {
		return fail(fn, err)
	}
	if op == 0 {
		return fail(fn, invalid("op id 0 is never a valid op"))
	}
	res, err := in.stage.WaitOp(uint64(op), 0)
	if err != nil {
		return fail(fn, err)
	}
	if res.Status == status.Timeout {
		return fail(fn, status.Errorf(status.OpFailed, "op %d is still pending: release it once wait_op reported it complete (it stays tracked)", op))
	}
	if err := in.stage.ReleaseOp(uint64(op)); err != nil {
		return fail(fn, err)
	}
	return 0
}
