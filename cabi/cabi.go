// Package cabi lays out engine results (read groups) as the ovstage C ABI structs in one C
// allocation per group. The Python layer maps them with ctypes; the block is freed when the
// group is released.
package cabi

/*
#cgo CFLAGS: -I${SRCDIR}/../dlpack
#include <stdlib.h>
#include <string.h>
#include "ovstage_abi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/status"
)

// Block is one C allocation holding a group's structs.
type Block struct{ p unsafe.Pointer }

// Address is the ovstage_read_group_t address.
func (b Block) Address() uintptr { return uintptr(b.p) }

// Free releases the allocation.
func (b Block) Free() { C.free(b.p) }

func align8(n uintptr) uintptr { return (n + 7) &^ 7 }

// NewReadGroup builds the ovstage_read_group_t for g: the struct, its DLTensors with shapes and
// strides, and the prim/data index maps, all in one block.
func NewReadGroup(g *core.Group) (Block, error) {
	nt := uintptr(len(g.Tensors))
	groupSize := align8(unsafe.Sizeof(C.ovstage_read_group_t{}))
	tensorsSize := align8(nt * unsafe.Sizeof(C.DLTensor{}))
	dimsSize := nt * 2 * 8 // shape[1] + strides[1] per tensor
	primMapSize := align8(uintptr(len(g.PrimIndexMap)) * 4)
	dataMapSize := align8(uintptr(len(g.DataIndexMap)) * 4)
	total := groupSize + tensorsSize + dimsSize + primMapSize + dataMapSize
	p := C.calloc(1, C.size_t(total))
	if p == nil {
		return Block{}, status.Errorf(status.OutOfMemory, "cannot allocate a read group")
	}
	rg := (*C.ovstage_read_group_t)(p)
	tensors := unsafe.Add(p, groupSize)
	dims := unsafe.Add(tensors, tensorsSize)
	primMap := unsafe.Add(dims, dimsSize)
	dataMap := unsafe.Add(primMap, primMapSize)

	rg.read_group_id = C.uint64_t(g.ID)
	rg.attribute = C.uint64_t(g.Attribute)
	rg.ordinal = C.uint64_t(g.Ordinal)
	rg.is_delete = C.bool(g.IsDelete)
	rg.is_array = C.bool(g.IsArray)
	rg.semantic = C.int32_t(g.Semantic)
	rg.prims.list = C.uint64_t(g.PrimList)
	rg.prims.offset = C.uint32_t(g.PrimOffset)
	rg.prims.count = C.uint32_t(g.PrimCount)
	if len(g.PrimIndexMap) > 0 {
		copy(unsafe.Slice((*uint32)(primMap), len(g.PrimIndexMap)), g.PrimIndexMap)
		rg.prims.index_map = (*C.uint32_t)(primMap)
	}
	if nt > 0 {
		rg.data.tensors = (*C.DLTensor)(tensors)
	}
	rg.data.tensor_count = C.uint32_t(nt)
	if g.DataIndexMap != nil {
		copy(unsafe.Slice((*uint32)(dataMap), len(g.DataIndexMap)), g.DataIndexMap)
		rg.data.index_map = (*C.uint32_t)(dataMap)
		rg.data.count = C.uint32_t(len(g.DataIndexMap))
	}
	if nt > 0 {
		// Device groups: readers wait for the version's ready event (spec §2.12); {0,0} on host.
		rg.data.cuda_sync.wait_event = C.uintptr_t(cuda.ReadyEvent(g.Tensors[0].Buffer))
	}
	rg.meta.attribute_write_floor_ordinal = C.uint64_t(g.FloorOrdinal)
	rg.meta.layout_generation = C.uint64_t(g.LayoutGen)

	dts := unsafe.Slice((*C.DLTensor)(tensors), nt)
	dimv := unsafe.Slice((*C.int64_t)(dims), nt*2)
	for i, tv := range g.Tensors {
		dt := &dts[i]
		dt.data = unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)
		dt.device.device_type = C.int32_t(tv.DeviceType)
		dt.device.device_id = C.int32_t(tv.DeviceID)
		dt.ndim = 1
		dt.dtype.code = C.uint8_t(tv.DType.Code)
		dt.dtype.bits = C.uint8_t(tv.DType.Bits)
		dt.dtype.lanes = C.uint16_t(tv.DType.Lanes)
		dimv[2*i] = C.int64_t(tv.Rows)
		dimv[2*i+1] = 1
		dt.shape = &dimv[2*i]
		dt.strides = &dimv[2*i+1]
	}
	return Block{p: p}, nil
}
