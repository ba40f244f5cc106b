package abi

/*
#include <string.h>
#include <ovstage/ovstage.h>
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/pathdict"
)

// Sizes of result structs, for callers that clear an out-struct.
var (
	QueryResultSize     = unsafe.Sizeof(C.ovstage_query_result_t{})
	HierarchyResultSize = unsafe.Sizeof(C.ovstage_hierarchy_result_t{})
	CloneResultSize     = unsafe.Sizeof(C.ovstage_clone_result_t{})
)

// NewQueryResult lays out an ovstage_query_result_t (id, the query's own handle as all_handle)
// and its attribute tokens.
func NewQueryResult(id, handle uint64, res core.QueryResult) (Block, error) {
	var l layout
	l.add(QueryResultSize)
	attrs := l.add(uintptr(len(res.Attributes)) * 8)
	b, err := newBlock(l, QueryResultSize)
	if err != nil {
		return b, err
	}
	qr := (*C.ovstage_query_result_t)(b.p)
	qr.query_result_id = C.ovstage_query_result_id_t(id)
	qr.all_handle = C.ovstage_query_handle_t(handle)
	qr.total_prim_count = C.size_t(res.TotalPrimCount)
	qr.attribute_count = C.size_t(len(res.Attributes))
	if len(res.Attributes) > 0 {
		copy(unsafe.Slice((*uint64)(b.at(attrs)), len(res.Attributes)), res.Attributes)
		qr.attributes = (*C.ovx_token_t)(b.at(attrs))
	}
	return b, nil
}

// QueryResultID is the query_result_id of the ovstage_query_result_t at p.
func QueryResultID(p unsafe.Pointer) uint64 {
	return uint64((*C.ovstage_query_result_t)(p).query_result_id)
}

// NewHierarchyResult lays out an ovstage_hierarchy_result_t: one item per input path and the
// related paths of all items, each as a NUL-terminated path string (token 0).
func NewHierarchyResult(id uint64, res core.HierarchyResult, dict *pathdict.Dictionary) (Block, error) {
	var names []string
	for _, it := range res.Items {
		for _, p := range it.Paths {
			s, err := dict.PathString(p)
			if err != nil {
				return Block{}, invalid("hierarchy result path %d: %v", p, err)
			}
			names = append(names, s)
		}
	}
	var l layout
	l.add(HierarchyResultSize)
	items := l.add(uintptr(len(res.Items)) * unsafe.Sizeof(C.ovstage_hierarchy_item_t{}))
	paths := l.add(uintptr(len(names)) * unsafe.Sizeof(C.ovx_string_or_token_t{}))
	text := make([]uintptr, len(names))
	for i, s := range names {
		text[i] = l.add(uintptr(len(s)) + 1)
	}
	b, err := newBlock(l, HierarchyResultSize)
	if err != nil {
		return b, err
	}
	hr := (*C.ovstage_hierarchy_result_t)(b.p)
	hr.hierarchy_result_id = C.ovstage_hierarchy_result_id_t(id)
	hr.ordinal = C.ovstage_ordinal_t(res.Ordinal)
	hr.input_count = C.size_t(len(res.Items))
	hr.path_count = C.size_t(len(names))
	if len(res.Items) > 0 {
		hr.items = (*C.ovstage_hierarchy_item_t)(b.at(items))
	}
	if len(names) > 0 {
		hr.paths = (*C.ovx_string_or_token_t)(b.at(paths))
	}
	its := unsafe.Slice((*C.ovstage_hierarchy_item_t)(b.at(items)), len(res.Items))
	ps := unsafe.Slice((*C.ovx_string_or_token_t)(b.at(paths)), len(names))
	k := 0
	for i, it := range res.Items {
		its[i].status = C.ovstage_api_status_t(it.Status)
		its[i].path_offset = C.size_t(k)
		its[i].path_count = C.size_t(len(it.Paths))
		for range it.Paths {
			dst := b.at(text[k])
			C.memcpy(dst, unsafe.Pointer(unsafe.StringData(names[k])), C.size_t(len(names[k])))
			ps[k].string.ptr = (*C.char)(dst)
			ps[k].string.length = C.size_t(len(names[k]))
			k++
		}
	}
	return b, nil
}

// HierarchyResultID is the hierarchy_result_id of the ovstage_hierarchy_result_t at p.
func HierarchyResultID(p unsafe.Pointer) uint64 {
	return uint64((*C.ovstage_hierarchy_result_t)(p).hierarchy_result_id)
}

// NewHierarchyModels lays out an array of ovstage_hierarchy_computation_model_desc_t with
// NUL-terminated names and descriptions.
func NewHierarchyModels(models []core.HierarchyModel) (Block, error) {
	descSize := unsafe.Sizeof(C.ovstage_hierarchy_computation_model_desc_t{})
	var l layout
	l.add(uintptr(len(models)) * descSize)
	offs := make([][2]uintptr, len(models))
	for i, m := range models {
		offs[i] = [2]uintptr{l.add(uintptr(len(m.Name)) + 1), l.add(uintptr(len(m.Description)) + 1)}
	}
	b, err := newBlock(l, 0)
	if err != nil {
		return b, err
	}
	descs := unsafe.Slice((*C.ovstage_hierarchy_computation_model_desc_t)(b.p), len(models))
	for i, m := range models {
		descs[i].model_id = C.ovstage_hierarchy_computation_model_id_t(m.ID)
		descs[i].name = stringIn(b, offs[i][0], m.Name)
		descs[i].description = stringIn(b, offs[i][1], m.Description)
	}
	return b, nil
}

// stringIn copies s (NUL-terminated) to offset off of b and returns its view.
func stringIn(b Block, off uintptr, s string) C.ovx_string_t {
	dst := b.at(off)
	if len(s) > 0 {
		C.memcpy(dst, unsafe.Pointer(unsafe.StringData(s)), C.size_t(len(s)))
	}
	return C.ovx_string_t{ptr: (*C.char)(dst), length: C.size_t(len(s))}
}

// WaitResultSize is sizeof(ovstage_op_wait_result_t).
var WaitResultSize = unsafe.Sizeof(C.ovstage_op_wait_result_t{})

// PutWaitResult writes an ovstage_op_wait_result_t to out: the n failed op ids at ids (storage
// the caller keeps valid as long as the result is) and the lowest pending op id.
func PutWaitResult(out unsafe.Pointer, ids unsafe.Pointer, n int, lowestPending uint64) {
	wr := (*C.ovstage_op_wait_result_t)(out)
	wr.error_op_ids, wr.error_op_id_count = nil, 0
	if n > 0 {
		wr.error_op_ids = (*C.ovstage_op_id_t)(ids)
		wr.error_op_id_count = C.size_t(n)
	}
	wr.lowest_pending_op_id = C.ovstage_op_id_t(lowestPending)
}

// PutCloneResult writes the engine's clone report r to the ovstage_clone_result_t at out.
func PutCloneResult(out unsafe.Pointer, r core.CloneReport) {
	cr := (*C.ovstage_clone_result_t)(out)
	cr.ordinal = C.ovstage_ordinal_t(r.Ordinal)
	cr.target_count = C.size_t(r.TargetCount)
	cr.source_prim_count = C.size_t(r.SourcePrimCount)
	cr.prims_cloned = C.size_t(r.PrimsCloned)
}
