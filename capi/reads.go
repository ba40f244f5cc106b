package main

/*
#include "capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
)

//export ovsgo_read_attributes
func ovsgo_read_attributes(ctx C.uintptr_t, query C.uint64_t, attrs unsafe.Pointer, n C.size_t, rng unsafe.Pointer,
	placement unsafe.Pointer, outHandle unsafe.Pointer, out *C.ovstage_enqueue_result_t) {
	fn := placedName("read_attributes", placement)
	defer guardEnqueue(fn, out)
	op, err := readAttributes(ctx, uint64(query), attrs, uint64(n), rng, placement, outHandle)
	enqueued(fn, op, err, out)
}

func readAttributes(ctx C.uintptr_t, query uint64, attrs unsafe.Pointer, n uint64, rng, placement, outHandle unsafe.Pointer) (uint64, error) {
	o, err := out64(outHandle, "out_read_handle")
	if err != nil {
		return 0, err
	}
	in, err := byContext(ctx)
	if err != nil {
		return 0, err
	}
	if err := need(query, "handle"); err != nil {
		return 0, err
	}
	toks, r, placed, err := abi.Read(attrs, n, rng, placement)
	if err != nil {
		return 0, err
	}
	h, op, err := in.stage.ReadAttributesPlaced(query, toks, r, placed.Device, placed.Avail)
	if err != nil {
		return 0, err
	}
	*o = h
	return op, nil
}

//export ovsgo_fetch_read_next
func ovsgo_fetch_read_next(ctx C.uintptr_t, read, timeout C.uint64_t, out unsafe.Pointer) (code C.int) {
	const fn = "fetch_read_next"
	defer guard(fn, &code)
	if out == nil {
		return fail(fn, invalid("out_group is NULL"))
	}
	abi.Zero(out, abi.ReadGroupSize)
	in, err := byContext(ctx)
	if err == nil {
		err = need(uint64(read), "read_handle")
	}
	if err != nil {
		return fail(fn, err)
	}
	g, err := in.stage.FetchReadNext(uint64(read), uint64(timeout))
	if err != nil {
		return fail(fn, err)
	}
	block, err := abi.NewReadGroup(g)
	if err != nil {
		_ = in.stage.ReleaseGroup(g.ID)
		return fail(fn, err)
	}
	g.SetOnRelease(block.Free)
	block.CopyTo(out)
	return 0
}

//export ovsgo_release_group
func ovsgo_release_group(ctx C.uintptr_t, group unsafe.Pointer) (code C.int) {
	const fn = "release_group"
	defer guard(fn, &code)
	in, err := byContext(ctx)
	if err != nil {
		return fail(fn, err)
	}
	if group == nil {
		return fail(fn, invalid("group is NULL"))
	}
	id := abi.ReadGroupID(group)
	if err := need(id, "group->read_group_id"); err != nil {
		return fail(fn, err)
	}
	return result(fn, in.stage.ReleaseGroup(id))
}

//export ovsgo_release_read
func ovsgo_release_read(ctx C.uintptr_t, read C.uint64_t, out *C.ovstage_enqueue_result_t) {
	const fn = "release_read"
	defer guardEnqueue(fn, out)
	in, err := byContext(ctx)
	if err == nil {
		err = need(uint64(read), "read_handle")
	}
	var op uint64
	if err == nil {
		op, err = in.stage.ReleaseRead(uint64(read))
	}
	enqueued(fn, op, err, out)
}
