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

//export ovsgo_query
func ovsgo_query(ctx C.uintptr_t, filter, attrs unsafe.Pointer, n C.size_t, outHandle unsafe.Pointer, out *C.ovstage_enqueue_result_t) {
	const fn = "query"
	defer guardEnqueue(fn, out)
	op, err := func() (uint64, error) {
		o, err := out64(outHandle, "out_query_handle")
		if err != nil {
			return 0, err
		}
		in, err := byContext(ctx)
		if err != nil {
			return 0, err
		}
		preds, err := abi.Filter(filter, in.stage.Dictionary())
		if err != nil {
			return 0, err
		}
		toks, err := abi.Tokens(attrs, uint64(n), "attrs")
		if err != nil {
			return 0, err
		}
		h, op, err := in.stage.Query(preds, toks)
		if err != nil {
			return 0, err
		}
		*o = h
		return op, nil
	}()
	enqueued(fn, op, err, out)
}

//export ovsgo_query_from_path_list
func ovsgo_query_from_path_list(ctx C.uintptr_t, list C.uint64_t, outHandle unsafe.Pointer) (code C.int) {
	const fn = "query_from_path_list"
	defer guard(fn, &code)
	o, err := out64(outHandle, "out_handle")
	if err != nil {
		return fail(fn, err)
	}
	in, err := byContext(ctx)
	if err == nil {
		err = need(uint64(list), "path_list")
	}
	if err != nil {
		return fail(fn, err)
	}
	h, err := in.stage.QueryFromPathList(uint64(list))
	if err != nil {
		return fail(fn, err)
	}
	*o = h
	return 0
}

//export ovsgo_fetch_query_result
func ovsgo_fetch_query_result(ctx C.uintptr_t, query, timeout C.uint64_t, out unsafe.Pointer) (code C.int) {
	const fn = "fetch_query_result"
	defer guard(fn, &code)
	if out == nil {
		return fail(fn, invalid("out_result is NULL"))
	}
	abi.Zero(out, abi.QueryResultSize)
	in, err := byContext(ctx)
	if err == nil {
		err = need(uint64(query), "query_handle")
	}
	if err != nil {
		return fail(fn, err)
	}
	res, err := in.stage.FetchQueryResult(uint64(query), uint64(timeout))
	if err != nil {
		return fail(fn, err)
	}
	block, err := in.queryResults.KeepQueryResult(uint64(query), res)
	if err != nil {
		return fail(fn, err)
	}
	block.CopyTo(out)
	return 0
}

//export ovsgo_release_query_result
func ovsgo_release_query_result(ctx C.uintptr_t, result unsafe.Pointer) (code C.int) {
	const fn = "release_query_result"
	defer guard(fn, &code)
	in, err := byContext(ctx)
	if err != nil {
		return fail(fn, err)
	}
	if result == nil {
		return fail(fn, invalid("result is NULL"))
	}
	if id := abi.QueryResultID(result); !in.queryResults.Release(id) {
		return fail(fn, status.Errorf(status.InvalidHandle, "query result %d is not a fetched, unreleased result of this instance", id))
	}
	return 0
}

//export ovsgo_release_query
func ovsgo_release_query(ctx C.uintptr_t, query C.uint64_t, out *C.ovstage_enqueue_result_t) {
	const fn = "release_query"
	defer guardEnqueue(fn, out)
	in, err := byContext(ctx)
	if err == nil {
		err = need(uint64(query), "handle")
	}
	var op uint64
	if err == nil {
		op, err = in.stage.ReleaseQuery(uint64(query))
	}
	enqueued(fn, op, err, out)
}
