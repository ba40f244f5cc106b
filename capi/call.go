package main

/*
#include "capi.h"
*/
import "C"

import (
	"runtime/debug"
	"unsafe"

	"github.com/ovstage-go/ovstage/core/logbus"
	"github.com/ovstage-go/ovstage/core/status"
)

// Every export recovers a Go panic into INTERNAL (never aborting the host), and reports a
// failure as a status code plus the thread's last-error text "<function>: <message>".

func fail(fn string, err error) C.int {
	msg := fn + ": " + status.MessageOf(err)
	C.ovs_set_last_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
	return C.int(status.CodeOf(err))
}

// result is the status of a synchronous call that returned err.
func result(fn string, err error) C.int {
	if err == nil {
		return C.int(status.OK)
	}
	return fail(fn, err)
}

func recovered(fn string, r any) error {
	logbus.Logf(logbus.Error, logbus.ChannelInternal, "internal panic in %s: %v\n%s", fn, r, debug.Stack())
	return status.Errorf(status.Internal, "internal error (a Go panic, recovered): %v", r)
}

// guard is deferred by synchronous exports: a panic becomes INTERNAL in *code.
func guard(fn string, code *C.int) {
	if r := recover(); r != nil {
		*code = fail(fn, recovered(fn, r))
	}
}

// guardEnqueue is deferred by asynchronous exports: a panic becomes a rejected enqueue.
func guardEnqueue(fn string, out *C.ovstage_enqueue_result_t) {
	if r := recover(); r != nil {
		enqueued(fn, 0, recovered(fn, r), out)
	}
}

// enqueued writes an enqueue result: accepted with op, or rejected (op id 0) with err.
func enqueued(fn string, op uint64, err error, out *C.ovstage_enqueue_result_t) {
	if err != nil {
		out.status = C.ovstage_api_status_t(fail(fn, err))
		out.op_index = 0
		return
	}
	out.status = C.ovstage_api_status_t(status.OK)
	out.op_index = C.ovstage_op_id_t(op)
}

func invalid(format string, args ...any) error {
	return status.Errorf(status.InvalidArgument, format, args...)
}

func notSupported(format string, args ...any) error {
	return status.Errorf(status.NotSupported, format, args...)
}

// need rejects handle value 0 (never a valid handle) naming the argument; a non-zero handle
// the instance does not know is the engine's INVALID_HANDLE.
func need(h uint64, name string) error {
	if h == 0 {
		return invalid("%s is 0, which is never a valid handle", name)
	}
	return nil
}

// out64 is an out-pointer to a uint64 (handle, ordinal, count), cleared on entry.
func out64(p unsafe.Pointer, name string) (*uint64, error) {
	if p == nil {
		return nil, invalid("%s is NULL", name)
	}
	o := (*uint64)(p)
	*o = 0
	return o, nil
}
