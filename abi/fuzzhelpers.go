package abi

/*
#include <stdlib.h>
#include <string.h>
#include <ovx/dlpack/dlpack.h>
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/internal/cptr"
)

// fuzzCTensor is a C DLTensor built from arbitrary (possibly malformed) fields for the
// FromAddress fuzz target (cgo is not allowed in _test.go files). Unlike a real producer's
// tensor its fields need not agree: ndim may exceed the shape array, data may be NULL.
type fuzzCTensor struct {
	addr     uintptr
	data     unsafe.Pointer
	dataSize int
}

// newFuzzCTensor allocates the struct, a shape array holding shape (NULL when empty), a
// strides array holding strides (NULL when nil) and, unless dataSize < 0, dataSize bytes of
// data filled with a pattern.
func newFuzzCTensor(ndim int32, shape, strides []int64, code, bits uint8, lanes uint16,
	deviceType int32, byteOffset uint64, dataSize int) *fuzzCTensor {
	t := (*C.DLTensor)(C.calloc(1, C.size_t(unsafe.Sizeof(C.DLTensor{}))))
	t.ndim = C.int32_t(ndim)
	t.device.device_type = C.DLDeviceType(deviceType)
	t.dtype.code = C.uint8_t(code)
	t.dtype.bits = C.uint8_t(bits)
	t.dtype.lanes = C.uint16_t(lanes)
	t.byte_offset = C.uint64_t(byteOffset)
	if len(shape) > 0 {
		t.shape = (*C.int64_t)(C.calloc(C.size_t(len(shape)), 8))
		copy(unsafe.Slice((*int64)(unsafe.Pointer(t.shape)), len(shape)), shape)
	}
	if strides != nil {
		t.strides = (*C.int64_t)(C.calloc(C.size_t(max(1, len(strides))), 8))
		copy(unsafe.Slice((*int64)(unsafe.Pointer(t.strides)), len(strides)), strides)
	}
	f := &fuzzCTensor{addr: uintptr(unsafe.Pointer(t)), dataSize: dataSize}
	if dataSize >= 0 {
		t.data = C.malloc(C.size_t(max(1, dataSize)))
		b := unsafe.Slice((*byte)(t.data), max(1, dataSize))
		for i := range b {
			b[i] = byte(i*31 + 7)
		}
		f.data = t.data
	}
	return f
}

// bytes views the tensor's data (nil when it has none).
func (f *fuzzCTensor) bytes() []byte {
	if f.data == nil || f.dataSize <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(f.data), f.dataSize)
}

func (f *fuzzCTensor) free() {
	t := (*C.DLTensor)(cptr.At(f.addr))
	C.free(t.data)
	C.free(unsafe.Pointer(t.shape))
	C.free(unsafe.Pointer(t.strides))
	C.free(unsafe.Pointer(t))
}
