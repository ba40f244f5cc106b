package abi

/*
#include <stdlib.h>
#include <ovx/dlpack/dlpack.h>
static void ovs_test_legacy_delete(DLManagedTensor* m) { m->deleter(m); }
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/tensor"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// DLPack helpers for this package's tests (cgo is not allowed in _test.go files).

// cTensorView is a test view of a C DLTensor.
type cTensorView struct{ t *C.DLTensor }

func (d *cTensorView) ndim() int32 { return int32(d.t.ndim) }
func (d *cTensorView) shape() []int64 {
	return append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(d.t.shape)), int(d.t.ndim))...)
}
func (d *cTensorView) strides() []int64 {
	return append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(d.t.strides)), int(d.t.ndim))...)
}

func (d *cTensorView) lanes() uint16 { return uint16(d.t.dtype.lanes) }

func versionOf(addr uintptr) [2]uint32 {
	v := (*C.DLManagedTensorVersioned)(cptr.At(addr)).version
	return [2]uint32{uint32(v.major), uint32(v.minor)}
}

func versionedTensor(addr uintptr) *cTensorView {
	return &cTensorView{t: &(*C.DLManagedTensorVersioned)(cptr.At(addr)).dl_tensor}
}

func legacyTensor(addr uintptr) *cTensorView {
	return &cTensorView{t: &(*C.DLManagedTensor)(cptr.At(addr)).dl_tensor}
}

func runDeleter(addr uintptr, versioned bool) {
	if versioned {
		FreeExport(addr)
		return
	}
	C.ovs_test_legacy_delete((*C.DLManagedTensor)(cptr.At(addr)))
}

func newCTensor(ndim int32, shape []int64, bits uint8, lanes uint16, withData bool) uintptr {
	t := (*C.DLTensor)(C.calloc(1, C.size_t(unsafe.Sizeof(C.DLTensor{}))))
	t.ndim = C.int32_t(ndim)
	t.device.device_type = C.DLDeviceType(tensor.DeviceCPU)
	t.dtype.code = C.uint8_t(tensor.CodeFloat)
	t.dtype.bits = C.uint8_t(bits)
	t.dtype.lanes = C.uint16_t(lanes)
	s := (*C.int64_t)(C.calloc(C.size_t(max(int(ndim), len(shape))), 8))
	copy(unsafe.Slice((*int64)(unsafe.Pointer(s)), len(shape)), shape)
	t.shape = s
	if withData {
		t.data = C.calloc(64, 1)
	}
	return uintptr(unsafe.Pointer(t))
}

func freeCTensor(addr uintptr) {
	t := (*C.DLTensor)(cptr.At(addr))
	C.free(t.data)
	C.free(unsafe.Pointer(t.shape))
	C.free(unsafe.Pointer(t))
}
