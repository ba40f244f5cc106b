package abi

import (
	"sync"
	"sync/atomic"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/pathdict"
)

// nextResultID mints query_result_id and hierarchy_result_id values, unique in the process
// (never 0).
var nextResultID atomic.Uint64

// Results keeps the result blocks of one kind (query or hierarchy results) handed out to a
// caller, by their result id, until the caller releases them or the owner frees them all. The
// zero value is ready to use.
type Results struct {
	mu sync.Mutex
	m  map[uint64]Block
}

func (r *Results) keep(id uint64, b Block) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[uint64]Block{}
	}
	r.m[id] = b
}

// KeepQueryResult lays out res (NewQueryResult, the query's own handle as all_handle) under a
// fresh id and keeps it.
func (r *Results) KeepQueryResult(handle uint64, res core.QueryResult) (Block, error) {
	id := nextResultID.Add(1)
	b, err := NewQueryResult(id, handle, res)
	if err == nil {
		r.keep(id, b)
	}
	return b, err
}

// KeepHierarchyResult lays out res (NewHierarchyResult) under a fresh id and keeps it.
func (r *Results) KeepHierarchyResult(res core.HierarchyResult, dict *pathdict.Dictionary) (Block, error) {
	id := nextResultID.Add(1)
	b, err := NewHierarchyResult(id, res, dict)
	if err == nil {
		r.keep(id, b)
	}
	return b, err
}

// Release frees the result kept under id; false when there is none (never fetched, or
// released already).
func (r *Results) Release(id uint64) bool {
	r.mu.Lock()
	b, ok := r.m[id]
	delete(r.m, id)
	r.mu.Unlock()
	b.Free()
	return ok
}

// FreeAll frees every result still kept.
func (r *Results) FreeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.m {
		b.Free()
	}
	r.m = nil
}
