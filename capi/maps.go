package main

/*
#include "capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
)

// mapGroupRef names a fetched map group: ovstage_map_group_t has no id, so unmap_group finds
// the group by the block its data.tensors points into (abi.MapGroupKey).
type mapGroupRef struct{ mapHandle, group uint64 }

//export ovsgo_map_attribute
func ovsgo_map_attribute(ctx C.uintptr_t, query C.uint64_t, desc unsafe.Pointer, ordinal C.uint64_t, sizes unsafe.Pointer,
	n C.size_t, placement unsafe.Pointer, outHandle unsafe.Pointer, out *C.ovstage_enqueue_result_t) {
	fn := placedName("map_attribute", placement)
	defer guardEnqueue(fn, out)
	op, err := func() (uint64, error) {
		o, err := out64(outHandle, "out_map_handle")
		if err != nil {
			return 0, err
		}
		in, err := byContext(ctx)
		if err != nil {
			return 0, err
		}
		if err := need(uint64(query), "handle"); err != nil {
			return 0, err
		}
		req, err := abi.Map(uint64(query), desc, uint64(ordinal), sizes, uint64(n), placement)
		if err != nil {
			return 0, err
		}
		h, op, err := in.stage.MapAttribute(req)
		if err == nil {
			*o = h
		}
		return op, err
	}()
	enqueued(fn, op, err, out)
}

//export ovsgo_fetch_map_next
func ovsgo_fetch_map_next(ctx C.uintptr_t, m, timeout C.uint64_t, out unsafe.Pointer) (code C.int) {
	const fn = "fetch_map_next"
	defer guard(fn, &code)
	if out == nil {
		return fail(fn, invalid("out_group is NULL"))
	}
	abi.Zero(out, abi.MapGroupSize)
	in, err := byContext(ctx)
	if err == nil {
		err = need(uint64(m), "map_handle")
	}
	if err != nil {
		return fail(fn, err)
	}
	g, err := in.stage.FetchMapNext(uint64(m), uint64(timeout))
	if err != nil {
		return fail(fn, err)
	}
	block, err := abi.NewMapGroup(g)
	if err != nil {
		return fail(fn, err)
	}
	key := abi.MapGroupKeyOf(block)
	in.mu.Lock()
	in.mapGroups[key] = mapGroupRef{mapHandle: uint64(m), group: g.ID}
	in.mu.Unlock()
	g.SetOnRelease(func() { // the session committed or ended the group
		in.mu.Lock()
		delete(in.mapGroups, key)
		in.mu.Unlock()
		block.Free()
	})
	block.CopyTo(out)
	return 0
}

// checkHostSync refuses a CUDA completion sync for a session that stages in host memory; a
// session placed on a CUDA device honours it (the commit waits for it).
func checkHostSync(in *instance, m uint64, stream, event C.uintptr_t) error {
	if (stream != 0 || event != 0) && !in.stage.MapStagesOnDevice(m) {
		return notSupported("write_done_sync {%#x, %#x}: a CUDA completion sync is only used by map sessions placed on a CUDA device "+
			"(map_attribute_on_device); this one stages in host memory: pass {0, 0}", uintptr(stream), uintptr(event))
	}
	return nil
}

//export ovsgo_unmap_group
func ovsgo_unmap_group(ctx C.uintptr_t, m C.uint64_t, group unsafe.Pointer, stream, event C.uintptr_t, out *C.ovstage_enqueue_result_t) {
	const fn = "unmap_group"
	defer guardEnqueue(fn, out)
	op, err := func() (uint64, error) {
		in, err := byContext(ctx)
		if err != nil {
			return 0, err
		}
		if err := need(uint64(m), "map_handle"); err != nil {
			return 0, err
		}
		if group == nil {
			return 0, invalid("group is NULL")
		}
		if err := checkHostSync(in, uint64(m), stream, event); err != nil {
			return 0, err
		}
		in.mu.Lock()
		ref, ok := in.mapGroups[abi.MapGroupKey(group)]
		in.mu.Unlock()
		if !ok || ref.mapHandle != uint64(m) {
			return 0, status.Errorf(status.InvalidHandle, "group is not a fetched, uncommitted group of map %d", m)
		}
		return in.stage.UnmapGroupWithSync(uint64(m), ref.group, core.CudaSync{Stream: uintptr(stream), Event: uintptr(event)})
	}()
	enqueued(fn, op, err, out)
}

//export ovsgo_unmap_attribute
func ovsgo_unmap_attribute(ctx C.uintptr_t, m C.uint64_t, stream, event C.uintptr_t, out *C.ovstage_enqueue_result_t) {
	const fn = "unmap_attribute"
	defer guardEnqueue(fn, out)
	in, err := byContext(ctx)
	if err == nil {
		err = need(uint64(m), "map_handle")
	}
	if err == nil {
		err = checkHostSync(in, uint64(m), stream, event)
	}
	var op uint64
	if err == nil {
		op, err = in.stage.UnmapAttributeWithSync(uint64(m), core.CudaSync{Stream: uintptr(stream), Event: uintptr(event)})
	}
	enqueued(fn, op, err, out)
}
