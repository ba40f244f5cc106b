package main

/*
#include "capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
)

// settle hands managed tensors over once an enqueue is decided (abi.Managed.Settle); the
// instance's destroy waits for the releases of accepted writes.
func settle(in *instance, owned *abi.Managed, op uint64, err error) {
	if in == nil {
		owned.Release()
		return
	}
	owned.Settle(in.stage, op, err, &in.managed)
}

func placedName(fn string, placement unsafe.Pointer) string {
	if placement != nil {
		return fn + "_on_device"
	}
	return fn
}

//export ovsgo_write_attribute
func ovsgo_write_attribute(ctx C.uintptr_t, query C.uint64_t, attr unsafe.Pointer, ordinal C.uint64_t, data unsafe.Pointer,
	primMode C.int32_t, placement unsafe.Pointer, out *C.ovstage_enqueue_result_t) {
	fn := placedName("write_attribute", placement)
	defer guardEnqueue(fn, out)
	req, owned, err := abi.Write(uint64(query), attr, uint64(ordinal), data, int32(primMode), placement)
	settled := false
	defer func() {
		if !settled {
			owned.Release()
		}
	}()
	in, lerr := byContext(ctx)
	if err == nil {
		err = lerr
	}
	if err == nil {
		err = need(uint64(query), "handle")
	}
	var op uint64
	if err == nil {
		op, err = in.stage.WriteAttribute(req)
	}
	settled = true
	settle(in, owned, op, err)
	enqueued(fn, op, err, out)
}

//export ovsgo_write_attributes
func ovsgo_write_attributes(ctx C.uintptr_t, query C.uint64_t, writes unsafe.Pointer, n C.size_t, ordinal C.uint64_t,
	primMode C.int32_t, placement unsafe.Pointer, out *C.ovstage_enqueue_result_t) {
	fn := placedName("write_attributes", placement)
	defer guardEnqueue(fn, out)
	reqs, owned, err := abi.WriteBatch(writes, uint64(n), placement)
	settled := false
	defer func() {
		if !settled {
			owned.Release()
		}
	}()
	in, lerr := byContext(ctx)
	if err == nil {
		err = lerr
	}
	if err == nil {
		err = need(uint64(query), "handle")
	}
	var op uint64
	if err == nil {
		op, err = in.stage.WriteAttributes(uint64(query), uint64(ordinal), int32(primMode), reqs)
	}
	settled = true
	settle(in, owned, op, err)
	enqueued(fn, op, err, out)
}

//export ovsgo_delete_attributes
func ovsgo_delete_attributes(ctx C.uintptr_t, query C.uint64_t, attrs unsafe.Pointer, n C.size_t, ordinal C.uint64_t,
	out *C.ovstage_enqueue_result_t) {
	const fn = "delete_attributes"
	defer guardEnqueue(fn, out)
	in, err := byContext(ctx)
	if err != nil {
		enqueued(fn, 0, err, out)
		return
	}
	if err := need(uint64(query), "handle"); err != nil {
		enqueued(fn, 0, err, out)
		return
	}
	req, err := abi.Delete(uint64(query), attrs, uint64(n), uint64(ordinal))
	var op uint64
	if err == nil {
		op, err = in.stage.DeleteAttributes(req)
	}
	enqueued(fn, op, err, out)
}
