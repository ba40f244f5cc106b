package abi

/*
#include <stdlib.h>
#include <string.h>
#include <ovstage/ovstage.h>
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>

static int ovs_abi_test_deleted;
static void ovs_abi_test_deleter(DLManagedTensorVersioned* self) {
	(void)self;
	ovs_abi_test_deleted++;
}
static void ovs_abi_test_set_deleter(DLManagedTensorVersioned* m) { m->deleter = ovs_abi_test_deleter; }
static int ovs_abi_test_deleted_count(void) { return ovs_abi_test_deleted; }
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
)

// The helpers below exist for this package's tests (cgo is not allowed in _test.go files):
// they build request structs in C memory the way a C caller (or Python ctypes) would, and read
// result structs back.

// cArena owns the C allocations of one test.
type cArena struct{ ptrs []unsafe.Pointer }

func (a *cArena) alloc(n uintptr) unsafe.Pointer {
	p := C.calloc(1, C.size_t(max(n, 1)))
	a.ptrs = append(a.ptrs, p)
	return p
}

func (a *cArena) free() {
	for _, p := range a.ptrs {
		C.free(p)
	}
	a.ptrs = nil
}

func (a *cArena) str(s string) C.ovx_string_t {
	if s == "" {
		return C.ovx_string_t{}
	}
	p := a.alloc(uintptr(len(s)) + 1)
	copy(unsafe.Slice((*byte)(p), len(s)), s)
	return C.ovx_string_t{ptr: (*C.char)(p), length: C.size_t(len(s))}
}

func (a *cArena) int64s(v ...int64) *C.int64_t {
	p := a.alloc(uintptr(len(v)) * 8)
	copy(unsafe.Slice((*int64)(p), len(v)), v)
	return (*C.int64_t)(p)
}

// tensorSpec describes a DLTensor to build: float32 values (nil data when noData) with shape.
type tensorSpec struct {
	values []float32
	shape  []int64
	lanes  uint16
	noData bool
}

func (a *cArena) fillTensor(t *C.DLTensor, s tensorSpec) {
	t.device.device_type = C.kDLCPU
	t.ndim = C.int32_t(len(s.shape))
	t.dtype.code = C.kDLFloat
	t.dtype.bits = 32
	t.dtype.lanes = C.uint16_t(max(s.lanes, 1))
	if len(s.shape) > 0 {
		t.shape = a.int64s(s.shape...)
	}
	if !s.noData {
		p := a.alloc(uintptr(max(len(s.values), 1)) * 4)
		copy(unsafe.Slice((*float32)(p), len(s.values)), s.values)
		t.data = p
	}
}

func (a *cArena) tensors(specs ...tensorSpec) *C.DLTensor {
	p := (*C.DLTensor)(a.alloc(uintptr(len(specs)) * dlTensorSize))
	ts := unsafe.Slice(p, len(specs))
	for i, s := range specs {
		a.fillTensor(&ts[i], s)
	}
	return p
}

// managed builds a versioned managed tensor whose deleter counts calls (managedDeleted).
func (a *cArena) managed(s tensorSpec) *C.DLManagedTensorVersioned {
	m := (*C.DLManagedTensorVersioned)(a.alloc(unsafe.Sizeof(C.DLManagedTensorVersioned{})))
	m.version.major = C.DLPACK_MAJOR_VERSION
	m.version.minor = C.DLPACK_MINOR_VERSION
	C.ovs_abi_test_set_deleter(m)
	a.fillTensor(&m.dl_tensor, s)
	return m
}

func managedDeleted() int { return int(C.ovs_abi_test_deleted_count()) }

func (a *cArena) managedList(ms ...*C.DLManagedTensorVersioned) **C.DLManagedTensorVersioned {
	p := (**C.DLManagedTensorVersioned)(a.alloc(uintptr(len(ms)) * 8))
	copy(unsafe.Slice(p, len(ms)), ms)
	return p
}

// writeSpec describes an ovstage_write_data_t.
type writeSpec struct {
	tensors     *C.DLTensor
	managed     **C.DLManagedTensorVersioned
	tensorCount uint32
	count       uint32
	indexMap    []uint32
	mask        []uint64
	stream      uintptr
	event       uintptr
	semantic    int32
	isArray     bool
	mode        uint32
}

func (a *cArena) fillData(d *C.ovstage_write_data_t, s writeSpec) {
	d.tensors = s.tensors
	d.managed_tensors = s.managed
	d.tensor_count = C.uint32_t(s.tensorCount)
	d.count = C.uint32_t(s.count)
	if s.indexMap != nil {
		p := a.alloc(uintptr(len(s.indexMap)) * 4)
		copy(unsafe.Slice((*uint32)(p), len(s.indexMap)), s.indexMap)
		d.index_map = (*C.uint32_t)(p)
	}
	if s.mask != nil {
		p := a.alloc(uintptr(len(s.mask)) * 8)
		copy(unsafe.Slice((*uint64)(p), len(s.mask)), s.mask)
		d.mask = (*C.uint64_t)(p)
	}
	d.cuda_sync.stream = C.uintptr_t(s.stream)
	d.cuda_sync.wait_event = C.uintptr_t(s.event)
	d.semantic = C.ovstage_attribute_semantic_t(s.semantic)
	d.is_array = C.bool(s.isArray)
	d.attribute_mode = C.ovstage_attribute_mode_t(s.mode)
}

func (a *cArena) data(s writeSpec) unsafe.Pointer {
	d := (*C.ovstage_write_data_t)(a.alloc(unsafe.Sizeof(C.ovstage_write_data_t{})))
	a.fillData(d, s)
	return unsafe.Pointer(d)
}

// attr builds an ovx_string_or_token_t.
func (a *cArena) attr(token uint64, name string) unsafe.Pointer {
	st := (*C.ovx_string_or_token_t)(a.alloc(unsafe.Sizeof(C.ovx_string_or_token_t{})))
	st.token = C.ovx_token_t(token)
	st.string = a.str(name)
	return unsafe.Pointer(st)
}

// rawAttr builds an ovx_string_or_token_t with a chosen (possibly invalid) string view.
func (a *cArena) rawAttr(ptr unsafe.Pointer, length uint64) unsafe.Pointer {
	st := (*C.ovx_string_or_token_t)(a.alloc(unsafe.Sizeof(C.ovx_string_or_token_t{})))
	st.string.ptr = (*C.char)(ptr)
	st.string.length = C.size_t(length)
	return unsafe.Pointer(st)
}

type batchEntry struct {
	token uint64
	name  string
	data  writeSpec
}

func (a *cArena) batch(entries ...batchEntry) unsafe.Pointer {
	p := (*C.ovstage_attribute_write_t)(a.alloc(uintptr(len(entries)) * unsafe.Sizeof(C.ovstage_attribute_write_t{})))
	es := unsafe.Slice(p, len(entries))
	for i, e := range entries {
		es[i].attribute.token = C.ovx_token_t(e.token)
		es[i].attribute.string = a.str(e.name)
		a.fillData(&es[i].data, e.data)
	}
	return unsafe.Pointer(p)
}

func (a *cArena) placement(deviceType, deviceID int32, stream, event uintptr) unsafe.Pointer {
	p := (*C.ovstage_placement_t)(a.alloc(unsafe.Sizeof(C.ovstage_placement_t{})))
	p.device.device_type = C.DLDeviceType(deviceType)
	p.device.device_id = C.int32_t(deviceID)
	p.stream = C.uintptr_t(stream)
	p.availability_event = C.uintptr_t(event)
	return unsafe.Pointer(p)
}

type predicateSpec struct {
	token  uint64
	name   string
	op     int32
	values []string
	count  uint64 // value_count when values is nil
}

func (a *cArena) filter(preds []predicateSpec, count uint64, nilPredicates bool) unsafe.Pointer {
	f := (*C.ovstage_filter_t)(a.alloc(unsafe.Sizeof(C.ovstage_filter_t{})))
	f.count = C.size_t(count)
	if nilPredicates {
		return unsafe.Pointer(f)
	}
	p := (*C.ovstage_predicate_t)(a.alloc(uintptr(len(preds)) * unsafe.Sizeof(C.ovstage_predicate_t{})))
	ps := unsafe.Slice(p, len(preds))
	for i, pr := range preds {
		ps[i].attribute.token = C.ovx_token_t(pr.token)
		ps[i].attribute.string = a.str(pr.name)
		ps[i].op = C.ovstage_filter_op_t(pr.op)
		if pr.values != nil {
			vs := (*C.ovx_string_t)(a.alloc(uintptr(len(pr.values)) * unsafe.Sizeof(C.ovx_string_t{})))
			for j, v := range pr.values {
				unsafe.Slice(vs, len(pr.values))[j] = a.str(v)
			}
			ps[i].values = vs
			ps[i].value_count = C.size_t(len(pr.values))
		} else {
			ps[i].value_count = C.size_t(pr.count)
		}
	}
	f.predicates = p
	return unsafe.Pointer(f)
}

func (a *cArena) floorDesc(ordinal uint64, scope int32, attrs []uint64, count uint64) unsafe.Pointer {
	d := (*C.ovstage_write_floor_desc_t)(a.alloc(unsafe.Sizeof(C.ovstage_write_floor_desc_t{})))
	d.ordinal = C.ovstage_ordinal_t(ordinal)
	d.scope = C.ovstage_scope_t(scope)
	if attrs != nil {
		p := a.alloc(uintptr(len(attrs)) * 8)
		copy(unsafe.Slice((*uint64)(p), len(attrs)), attrs)
		d.attributes = (*C.ovx_token_t)(p)
	}
	d.attribute_count = C.size_t(count)
	return unsafe.Pointer(d)
}

func (a *cArena) ordinalRange(start, end uint64, hasStart bool) unsafe.Pointer {
	r := (*C.ovstage_ordinal_range_t)(a.alloc(unsafe.Sizeof(C.ovstage_ordinal_range_t{})))
	r.start_ordinal, r.end_ordinal, r.has_start_ordinal = C.ovstage_ordinal_t(start), C.ovstage_ordinal_t(end), C.bool(hasStart)
	return unsafe.Pointer(r)
}

func (a *cArena) mapDesc(token uint64, name string, bits uint8, semantic, primMode int32, mode uint32) unsafe.Pointer {
	d := (*C.ovstage_map_desc_t)(a.alloc(unsafe.Sizeof(C.ovstage_map_desc_t{})))
	d.attribute.token = C.ovx_token_t(token)
	d.attribute.string = a.str(name)
	if bits != 0 {
		d.dtype.code, d.dtype.bits, d.dtype.lanes = C.kDLFloat, C.uint8_t(bits), 1
	}
	d.semantic = C.ovstage_attribute_semantic_t(semantic)
	d.prim_mode = C.ovstage_prim_mode_t(primMode)
	d.attribute_mode = C.ovstage_attribute_mode_t(mode)
	return unsafe.Pointer(d)
}

func (a *cArena) sizes(v ...uint64) unsafe.Pointer {
	p := a.alloc(uintptr(len(v)) * 8)
	copy(unsafe.Slice((*uint64)(p), len(v)), v)
	return p
}

func (a *cArena) attrList(items ...[2]any) unsafe.Pointer {
	p := (*C.ovx_string_or_token_t)(a.alloc(uintptr(len(items)) * unsafe.Sizeof(C.ovx_string_or_token_t{})))
	ps := unsafe.Slice(p, len(items))
	for i, it := range items {
		ps[i].token = C.ovx_token_t(it[0].(uint64))
		ps[i].string = a.str(it[1].(string))
	}
	return unsafe.Pointer(p)
}

// configEntry builds one ovstage_config_entry_t of the given key type.
type configSpec struct {
	keyType int32
	key     int32
	u       uint64
	s       string
	nullPtr bool // a string view with NULL ptr and non-zero length
	blob    []byte
}

func (a *cArena) config(entries []configSpec, count uint64, nilEntries bool) unsafe.Pointer {
	c := (*C.ovstage_config_t)(a.alloc(unsafe.Sizeof(C.ovstage_config_t{})))
	c.entry_count = C.size_t(count)
	if nilEntries {
		return unsafe.Pointer(c)
	}
	p := (*C.ovstage_config_entry_t)(a.alloc(uintptr(len(entries)) * unsafe.Sizeof(C.ovstage_config_entry_t{})))
	es := unsafe.Slice(p, len(entries))
	for i, e := range entries {
		es[i].key_type = C.ovstage_config_key_type_t(e.keyType)
		*(*int32)(unsafe.Pointer(&es[i].key)) = e.key
		v := unsafe.Pointer(&es[i].value)
		switch {
		case e.nullPtr:
			(*C.ovx_string_t)(v).length = 3
		case e.s != "":
			*(*C.ovx_string_t)(v) = a.str(e.s)
		case e.blob != nil:
			b := a.alloc(uintptr(len(e.blob)))
			copy(unsafe.Slice((*byte)(b), len(e.blob)), e.blob)
			*(*unsafe.Pointer)(v) = b
			*(*C.size_t)(unsafe.Add(v, 8)) = C.size_t(len(e.blob))
		default:
			*(*uint64)(v) = e.u
		}
	}
	c.entries = p
	return unsafe.Pointer(c)
}

// Views of result structs.

type tensorView struct {
	data    unsafe.Pointer
	device  int32
	ndim    int32
	lanes   uint16
	bits    uint8
	shape   []int64
	strides []int64
}

func viewTensors(p *C.DLTensor, n int) []tensorView {
	out := make([]tensorView, n)
	for i, t := range unsafe.Slice(p, n) {
		out[i] = tensorView{data: t.data, device: int32(t.device.device_type), ndim: int32(t.ndim),
			lanes: uint16(t.dtype.lanes), bits: uint8(t.dtype.bits),
			shape:   append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(t.shape)), int(t.ndim))...),
			strides: append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(t.strides)), int(t.ndim))...)}
	}
	return out
}

type groupView struct {
	id, attribute, ordinal uint64
	isDelete, isArray      bool
	semantic               int32
	list                   uint64
	offset, count          uint32
	primMap                []uint32
	tensorsPtr             unsafe.Pointer
	tensors                []tensorView
	dataCount              uint32
	dataMap                []uint32
	maskNil                bool
	waitEvent              uintptr
	floor, layoutGen       uint64
}

func viewData(g *groupView, prims *C.ovstage_prim_group_t, data *C.ovstage_data_t, meta *C.ovstage_attribute_meta_t) {
	g.list, g.offset, g.count = uint64(prims.list), uint32(prims.offset), uint32(prims.count)
	if prims.index_map != nil {
		g.primMap = append([]uint32(nil), unsafe.Slice((*uint32)(unsafe.Pointer(prims.index_map)), int(prims.count))...)
	}
	g.tensorsPtr = unsafe.Pointer(data.tensors)
	g.tensors = viewTensors(data.tensors, int(data.tensor_count))
	g.dataCount = uint32(data.count)
	if data.index_map != nil {
		g.dataMap = append([]uint32(nil), unsafe.Slice((*uint32)(unsafe.Pointer(data.index_map)), int(data.count))...)
	}
	g.maskNil = data.mask == nil
	g.waitEvent = uintptr(data.cuda_sync.wait_event)
	g.floor, g.layoutGen = uint64(meta.attribute_write_floor_ordinal), uint64(meta.layout_generation)
}

func viewReadGroup(p unsafe.Pointer) groupView {
	rg := (*C.ovstage_read_group_t)(p)
	g := groupView{id: uint64(rg.read_group_id), attribute: uint64(rg.attribute), ordinal: uint64(rg.ordinal),
		isDelete: bool(rg.is_delete), isArray: bool(rg.is_array), semantic: int32(rg.semantic)}
	viewData(&g, &rg.prims, &rg.data, &rg.meta)
	return g
}

func viewMapGroup(p unsafe.Pointer) groupView {
	mg := (*C.ovstage_map_group_t)(p)
	var g groupView
	viewData(&g, &mg.prims, &mg.data, &mg.meta)
	return g
}

type queryResultView struct {
	id, all     uint64
	attributes  []uint64
	total       uint64
	attrsNilPtr bool
}

func viewQueryResult(p unsafe.Pointer) queryResultView {
	qr := (*C.ovstage_query_result_t)(p)
	v := queryResultView{id: uint64(qr.query_result_id), all: uint64(qr.all_handle), total: uint64(qr.total_prim_count),
		attrsNilPtr: qr.attributes == nil}
	if qr.attributes != nil {
		v.attributes = append([]uint64(nil), unsafe.Slice((*uint64)(unsafe.Pointer(qr.attributes)), int(qr.attribute_count))...)
	}
	return v
}

type hierarchyItemView struct {
	status        int32
	offset, count uint64
}

func viewHierarchyResult(p unsafe.Pointer) (id, ordinal uint64, items []hierarchyItemView, paths []string) {
	hr := (*C.ovstage_hierarchy_result_t)(p)
	for _, it := range unsafe.Slice(hr.items, int(hr.input_count)) {
		items = append(items, hierarchyItemView{int32(it.status), uint64(it.path_offset), uint64(it.path_count)})
	}
	for _, ps := range unsafe.Slice(hr.paths, int(hr.path_count)) {
		if ps.token != 0 || ps.string.ptr == nil {
			paths = append(paths, "<bad entry>")
			continue
		}
		paths = append(paths, C.GoStringN(ps.string.ptr, C.int(ps.string.length))+terminator(ps.string))
	}
	return uint64(hr.hierarchy_result_id), uint64(hr.ordinal), items, paths
}

// terminator is "" when the view is NUL-terminated, else a marker that fails comparisons.
func terminator(s C.ovx_string_t) string {
	if *(*byte)(unsafe.Add(unsafe.Pointer(s.ptr), uintptr(s.length))) == 0 {
		return ""
	}
	return "<no NUL>"
}

type modelView struct {
	id                int32
	name, description string
}

func viewModels(p unsafe.Pointer, n int) []modelView {
	var out []modelView
	for _, d := range unsafe.Slice((*C.ovstage_hierarchy_computation_model_desc_t)(p), n) {
		out = append(out, modelView{int32(d.model_id), C.GoStringN(d.name.ptr, C.int(d.name.length)) + terminator(d.name),
			C.GoStringN(d.description.ptr, C.int(d.description.length))})
	}
	return out
}

func viewCloneResult(p unsafe.Pointer) core.CloneReport {
	cr := (*C.ovstage_clone_result_t)(p)
	return core.CloneReport{Ordinal: uint64(cr.ordinal), TargetCount: uint64(cr.target_count),
		SourcePrimCount: uint64(cr.source_prim_count), PrimsCloned: uint64(cr.prims_cloned)}
}

// sizeofConfig is sizeof(ovstage_config_t), for tests that copy a config view.
var sizeofConfig = unsafe.Sizeof(C.ovstage_config_t{})

func viewWaitResult(p unsafe.Pointer) (ids []uint64, lowest uint64, nilIDs bool) {
	wr := (*C.ovstage_op_wait_result_t)(p)
	if wr.error_op_ids != nil {
		ids = append([]uint64(nil), unsafe.Slice((*uint64)(unsafe.Pointer(wr.error_op_ids)), int(wr.error_op_id_count))...)
	}
	return ids, uint64(wr.lowest_pending_op_id), wr.error_op_ids == nil
}
