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

//export ovsgo_get_hierarchy
func ovsgo_get_hierarchy(p C.uintptr_t, list, ordinal C.uint64_t, relation C.int32_t, outHandle unsafe.Pointer,
	out *C.ovstage_enqueue_result_t) {
	const fn = "ovstage_get_hierarchy"
	defer guardEnqueue(fn, out)
	op, err := func() (uint64, error) {
		o, err := out64(outHandle, "out_hierarchy_handle")
		if err != nil {
			return 0, err
		}
		in, err := byBundle(p)
		if err != nil {
			return 0, err
		}
		if err := need(uint64(list), "prim_paths"); err != nil {
			return 0, err
		}
		h, op, err := in.stage.GetHierarchy(uint64(list), uint64(ordinal), int32(relation))
		if err == nil {
			*o = h
		}
		return op, err
	}()
	enqueued(fn, op, err, out)
}

//export ovsgo_fetch_hierarchy_result
func ovsgo_fetch_hierarchy_result(p C.uintptr_t, handle C.uint64_t, out unsafe.Pointer) (code C.int) {
	const fn = "ovstage_fetch_hierarchy_result"
	defer guard(fn, &code)
	if out == nil {
		return fail(fn, invalid("out_result is NULL"))
	}
	abi.Zero(out, abi.HierarchyResultSize)
	in, err := byBundle(p)
	if err == nil {
		err = need(uint64(handle), "hierarchy_handle")
	}
	if err != nil {
		return fail(fn, err)
	}
	res, err := in.stage.FetchHierarchyResult(uint64(handle), 0) // never blocks
	if err != nil {
		return fail(fn, err)
	}
	block, err := in.hierResults.KeepHierarchyResult(res, in.stage.Dictionary())
	if err != nil {
		return fail(fn, err)
	}
	block.CopyTo(out)
	return 0
}

//export ovsgo_release_hierarchy_result
func ovsgo_release_hierarchy_result(p C.uintptr_t, result unsafe.Pointer) (code C.int) {
	const fn = "ovstage_release_hierarchy_result"
	defer guard(fn, &code)
	in, err := byBundle(p)
	if err != nil {
		return fail(fn, err)
	}
	if result == nil {
		return fail(fn, invalid("result is NULL"))
	}
	if id := abi.HierarchyResultID(result); !in.hierResults.Release(id) {
		return fail(fn, status.Errorf(status.InvalidHandle, "hierarchy result %d is not a fetched, unreleased result of this instance", id))
	}
	return 0
}

//export ovsgo_release_hierarchy
func ovsgo_release_hierarchy(p C.uintptr_t, handle C.uint64_t, out *C.ovstage_enqueue_result_t) {
	const fn = "ovstage_release_hierarchy"
	defer guardEnqueue(fn, out)
	in, err := byBundle(p)
	if err == nil {
		err = need(uint64(handle), "handle")
	}
	var op uint64
	if err == nil {
		op, err = in.stage.ReleaseHierarchy(uint64(handle))
	}
	enqueued(fn, op, err, out)
}

//export ovsgo_get_hierarchy_computation_models
func ovsgo_get_hierarchy_computation_models(p C.uintptr_t, outModels, outCount unsafe.Pointer) (code C.int) {
	const fn = "ovstage_get_hierarchy_computation_models"
	defer guard(fn, &code)
	if outModels == nil || outCount == nil {
		return fail(fn, invalid("out_models and out_model_count must not be NULL"))
	}
	*(*unsafe.Pointer)(outModels) = nil
	*(*C.size_t)(outCount) = 0
	in, err := byBundle(p)
	if err != nil {
		return fail(fn, err)
	}
	*(*unsafe.Pointer)(outModels) = in.models.Ptr()
	*(*C.size_t)(outCount) = C.size_t(in.nModels)
	return 0
}

//export ovsgo_compute_hierarchy
func ovsgo_compute_hierarchy(p C.uintptr_t, model C.int32_t, input, output C.uint64_t, out *C.ovstage_enqueue_result_t) {
	const fn = "ovstage_compute_hierarchy"
	defer guardEnqueue(fn, out)
	in, err := byBundle(p)
	var op uint64
	if err == nil {
		// The stage resolves RUNTIME_DEFAULT to the model the instance captured when created.
		op, err = in.stage.ComputeHierarchy(int32(model), uint64(input), uint64(output))
	}
	enqueued(fn, op, err, out)
}
