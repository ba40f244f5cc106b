package main

/*
#include "capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
)

//export ovsgo_advance_write_floor
func ovsgo_advance_write_floor(ctx C.uintptr_t, desc unsafe.Pointer, out *C.ovstage_enqueue_result_t) {
	const fn = "advance_write_floor"
	defer guardEnqueue(fn, out)
	in, err := byContext(ctx)
	var op uint64
	if err == nil {
		ordinal, scope, attrs, derr := abi.WriteFloor(desc)
		if err = derr; err == nil {
			op, err = in.stage.AdvanceWriteFloor(ordinal, scope, attrs)
		}
	}
	enqueued(fn, op, err, out)
}

//export ovsgo_get_oldest_preserved_ordinal
func ovsgo_get_oldest_preserved_ordinal(ctx C.uintptr_t, outHandle unsafe.Pointer, out *C.ovstage_enqueue_result_t) {
	const fn = "get_oldest_preserved_ordinal"
	defer guardEnqueue(fn, out)
	op, err := func() (uint64, error) {
		o, err := out64(outHandle, "out_handle")
		if err != nil {
			return 0, err
		}
		in, err := byContext(ctx)
		if err != nil {
			return 0, err
		}
		h, op, err := in.stage.GetOldestPreservedOrdinal()
		if err == nil {
			*o = h
		}
		return op, err
	}()
	enqueued(fn, op, err, out)
}

//export ovsgo_get_attribute_write_floor
func ovsgo_get_attribute_write_floor(ctx C.uintptr_t, attr unsafe.Pointer, outHandle unsafe.Pointer, out *C.ovstage_enqueue_result_t) {
	const fn = "get_attribute_write_floor"
	defer guardEnqueue(fn, out)
	op, err := func() (uint64, error) {
		o, err := out64(outHandle, "out_handle")
		if err != nil {
			return 0, err
		}
		in, err := byContext(ctx)
		if err != nil {
			return 0, err
		}
		// An empty attribute ({0, {NULL, 0}}) asks for the global floor.
		tok, err := abi.Token(attr, "attribute", in.stage.Dictionary(), true)
		if err != nil {
			return 0, err
		}
		h, op, err := in.stage.GetAttributeWriteFloor(tok)
		if err == nil {
			*o = h
		}
		return op, err
	}()
	enqueued(fn, op, err, out)
}

//export ovsgo_fetch_ordinal
func ovsgo_fetch_ordinal(ctx C.uintptr_t, handle, timeout C.uint64_t, outOrdinal unsafe.Pointer) (code C.int) {
	const fn = "fetch_ordinal"
	defer guard(fn, &code)
	o, err := out64(outOrdinal, "out_ordinal")
	if err != nil {
		return fail(fn, err)
	}
	in, err := byContext(ctx)
	if err == nil {
		err = need(uint64(handle), "handle")
	}
	if err != nil {
		return fail(fn, err)
	}
	v, err := in.stage.FetchOrdinal(uint64(handle), uint64(timeout))
	if err != nil {
		return fail(fn, err)
	}
	*o = v
	return 0
}

//export ovsgo_release_ordinal_query
func ovsgo_release_ordinal_query(ctx C.uintptr_t, handle C.uint64_t, out *C.ovstage_enqueue_result_t) {
	const fn = "release_ordinal_query"
	defer guardEnqueue(fn, out)
	in, err := byContext(ctx)
	if err == nil {
		err = need(uint64(handle), "handle")
	}
	var op uint64
	if err == nil {
		op, err = in.stage.ReleaseOrdinalQuery(uint64(handle))
	}
	enqueued(fn, op, err, out)
}
