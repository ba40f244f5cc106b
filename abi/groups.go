package abi

/*
#include <ovstage/ovstage.h>
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/cuda"
)

// Sizes of the group structs, for callers that clear an out-struct.
var (
	ReadGroupSize = unsafe.Sizeof(C.ovstage_read_group_t{})
	MapGroupSize  = unsafe.Sizeof(C.ovstage_map_group_t{})
)

// groupLayout reserves a group's tensors (at least one slot, so data.tensors of a map group is
// a unique address even without tensors), their shape and stride arrays, and the two index maps.
type groupLayout struct {
	layout
	tensors, dims, primMap, dataMap uintptr
}

func newGroupLayout(head uintptr, g *core.Group) groupLayout {
	var l groupLayout
	l.add(head)
	nt := uintptr(len(g.Tensors))
	l.tensors = l.add(max(nt, 1) * dlTensorSize)
	l.dims = l.add(nt * 2 * core.MaxTypedDims * 8) // the shape and strides of each tensor
	l.primMap = l.add(uintptr(len(g.PrimIndexMap)) * 4)
	l.dataMap = l.add(uintptr(len(g.DataIndexMap)) * 4)
	return l
}

// fillGroup writes the prims, data and meta of g. Tensors are typed views of the stored rows
// (scalar lanes, component axes: core.TypedShape) with explicit compact strides; device groups
// carry the ready event of their storage in data.cuda_sync.wait_event, host groups {0, 0}.
func fillGroup(b Block, l groupLayout, g *core.Group, prims *C.ovstage_prim_group_t, data *C.ovstage_data_t,
	meta *C.ovstage_attribute_meta_t, alwaysTensors bool) {
	prims.list = C.ovx_primpath_list_t(g.PrimList)
	prims.offset = C.uint32_t(g.PrimOffset)
	prims.count = C.uint32_t(g.PrimCount)
	if len(g.PrimIndexMap) > 0 {
		copy(unsafe.Slice((*uint32)(b.at(l.primMap)), len(g.PrimIndexMap)), g.PrimIndexMap)
		prims.index_map = (*C.uint32_t)(b.at(l.primMap))
	}
	nt := len(g.Tensors)
	if nt > 0 || alwaysTensors {
		data.tensors = (*C.DLTensor)(b.at(l.tensors))
	}
	data.tensor_count = C.uint32_t(nt)
	if g.DataIndexMap != nil {
		copy(unsafe.Slice((*uint32)(b.at(l.dataMap)), len(g.DataIndexMap)), g.DataIndexMap)
		data.index_map = (*C.uint32_t)(b.at(l.dataMap))
		data.count = C.uint32_t(len(g.DataIndexMap))
	}
	if nt > 0 {
		data.cuda_sync.wait_event = C.uintptr_t(cuda.ReadyEvent(g.Tensors[0].Buffer))
	}
	meta.attribute_write_floor_ordinal = C.ovstage_ordinal_t(g.FloorOrdinal)
	meta.layout_generation = C.uint64_t(g.LayoutGen)

	dts := unsafe.Slice((*C.DLTensor)(b.at(l.tensors)), nt)
	dims := unsafe.Slice((*C.int64_t)(b.at(l.dims)), 2*core.MaxTypedDims*nt)
	for i, tv := range g.Tensors {
		dt := &dts[i]
		dt.data = unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)
		dt.device.device_type = C.DLDeviceType(tv.DeviceType)
		dt.device.device_id = C.int32_t(tv.DeviceID)
		dt.dtype.code = C.uint8_t(tv.DType.Code)
		dt.dtype.bits = C.uint8_t(tv.DType.Bits)
		dt.dtype.lanes = 1
		shape, ndim := core.TypedShape(tv.Rows, tv.DType.Lanes, g.Semantic)
		own := dims[2*core.MaxTypedDims*i:][:2*core.MaxTypedDims]
		compactStrides(shape[:ndim], own[:ndim], own[core.MaxTypedDims:])
		dt.ndim = C.int32_t(ndim)
		dt.shape = &own[0]
		dt.strides = &own[core.MaxTypedDims]
	}
}

// compactStrides copies shape into cshape and writes its compact row-major strides (in
// elements) into cstrides.
func compactStrides(shape []int64, cshape, cstrides []C.int64_t) {
	step := int64(1)
	for axis := len(shape) - 1; axis >= 0; axis-- {
		cshape[axis] = C.int64_t(shape[axis])
		cstrides[axis] = C.int64_t(step)
		step *= shape[axis]
	}
}

// NewReadGroup lays out the ovstage_read_group_t of g and everything it points at in one
// block, valid until the group is released (free the block then).
func NewReadGroup(g *core.Group) (Block, error) {
	l := newGroupLayout(ReadGroupSize, g)
	b, err := newBlock(l.layout, ReadGroupSize)
	if err != nil {
		return b, err
	}
	rg := (*C.ovstage_read_group_t)(b.p)
	rg.read_group_id = C.ovstage_read_group_id_t(g.ID)
	rg.attribute = C.ovx_token_t(g.Attribute)
	rg.ordinal = C.ovstage_ordinal_t(g.Ordinal)
	rg.is_delete = C.bool(g.IsDelete)
	rg.is_array = C.bool(g.IsArray)
	rg.semantic = C.ovstage_attribute_semantic_t(g.Semantic)
	fillGroup(b, l, g, &rg.prims, &rg.data, &rg.meta, false)
	return b, nil
}

// ReadGroupID is the read_group_id of the ovstage_read_group_t at p.
func ReadGroupID(p unsafe.Pointer) uint64 {
	return uint64((*C.ovstage_read_group_t)(p).read_group_id)
}

// NewMapGroup lays out the ovstage_map_group_t of g. Its data.tensors is never NULL and is
// unique to the block: MapGroupKey identifies the group by it (the struct has no id).
func NewMapGroup(g *core.MapGroup) (Block, error) {
	l := newGroupLayout(MapGroupSize, &g.Group)
	b, err := newBlock(l.layout, MapGroupSize)
	if err != nil {
		return b, err
	}
	mg := (*C.ovstage_map_group_t)(b.p)
	fillGroup(b, l, &g.Group, &mg.prims, &mg.data, &mg.meta, true)
	return b, nil
}

// MapGroupKey identifies the map group at p (a copy the caller made of a fetched group is the
// same group).
func MapGroupKey(p unsafe.Pointer) uintptr {
	return uintptr(unsafe.Pointer((*C.ovstage_map_group_t)(p).data.tensors))
}

// MapGroupKeyOf is MapGroupKey of a block made by NewMapGroup.
func MapGroupKeyOf(b Block) uintptr { return MapGroupKey(b.p) }
