// Package dlpack reads DLPack tensors handed in by Python (as addresses of DLTensor structs)
// and exports refcounted buffers as DLPack managed tensors (legacy and versioned) whose
// deleters run in C on any thread. The ABI structs are in dlpack.h.
package dlpack

/*
#cgo CFLAGS: -I${SRCDIR}/../core/buffer
#include <stdlib.h>
#include "dlpack.h"
#include "ovs_buffer.h"
DLManagedTensorVersioned* ovs_export_new(ovs_buffer* buf, uint64_t byte_offset, uint8_t code,
	uint8_t bits, uint16_t lanes, int64_t rows, int32_t device_type, int32_t device_id, uint64_t flags);
void* ovs_export_clone(DLManagedTensorVersioned* src, int versioned);
void ovs_export_free(DLManagedTensorVersioned* m);
void ovs_capsule_destructor(void* capsule);
static uintptr_t ovs_capsule_destructor_address(void) { return (uintptr_t)&ovs_capsule_destructor; }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// Device types and type codes used by the engine (DLPack values).
const (
	DeviceCPU         int32 = 1
	DeviceCUDA        int32 = 2
	DeviceCUDAHost    int32 = 3
	DeviceCUDAManaged int32 = 13

	CodeInt    uint8 = 0
	CodeUInt   uint8 = 1
	CodeFloat  uint8 = 2
	CodeBfloat uint8 = 4
	CodeBool   uint8 = 6
)

// MaxDims bounds the rank of an input tensor; anything larger is malformed for ovstage.
const MaxDims = 32

// DType is a DLDataType.
type DType struct {
	Code  uint8
	Bits  uint8
	Lanes uint16
}

// ElemBytes is the size of one value (bits*lanes/8).
func (d DType) ElemBytes() int { return int(d.Bits) / 8 * int(d.Lanes) }

func (d DType) String() string {
	names := map[uint8]string{CodeInt: "int", CodeUInt: "uint", CodeFloat: "float",
		CodeBfloat: "bfloat", CodeBool: "bool", 3: "opaque", 5: "complex"}
	n, ok := names[d.Code]
	if !ok {
		n = fmt.Sprintf("code%d", d.Code)
	}
	return fmt.Sprintf("%s%dx%d", n, d.Bits, d.Lanes)
}

// Tensor is a Go copy of a DLTensor's description (the data stays where it is).
type Tensor struct {
	Data       unsafe.Pointer
	DeviceType int32
	DeviceID   int32
	DType      DType
	Shape      []int64
	Strides    []int64 // nil = compact row-major
}

// Rows is shape[0] (1 for a 0-d tensor).
func (t Tensor) Rows() int64 {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[0]
}

// NumElements is the product of the shape (each element has DType.Lanes lanes).
func (t Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Compact reports whether the data is dense row-major.
func (t Tensor) Compact() bool {
	if t.Strides == nil {
		return true
	}
	want := int64(1)
	for i := len(t.Shape) - 1; i >= 0; i-- {
		if t.Shape[i] != 1 && t.Strides[i] != want {
			return false
		}
		want *= t.Shape[i]
	}
	return true
}

func invalid(format string, args ...any) error {
	return status.Errorf(status.InvalidArgument, format, args...)
}

// maxElements keeps byte sizes far from int64 overflow.
const maxElements = int64(1) << 46

// FromAddress reads and validates the DLTensor at addr. name is used in error messages.
func FromAddress(addr uintptr, name string) (Tensor, error) {
	if addr == 0 {
		return Tensor{}, invalid("%s: DLTensor pointer is NULL", name)
	}
	ct := (*C.DLTensor)(cptr.At(addr))
	t := Tensor{
		DeviceType: int32(ct.device.device_type),
		DeviceID:   int32(ct.device.device_id),
		DType:      DType{Code: uint8(ct.dtype.code), Bits: uint8(ct.dtype.bits), Lanes: uint16(ct.dtype.lanes)},
	}
	ndim := int(ct.ndim)
	if ndim < 0 || ndim > MaxDims {
		return Tensor{}, invalid("%s: ndim %d is outside 0..%d", name, ndim, MaxDims)
	}
	if ndim > 0 && ct.shape == nil {
		return Tensor{}, invalid("%s: shape pointer is NULL with ndim %d", name, ndim)
	}
	if ndim > 0 {
		t.Shape = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(ct.shape)), ndim)...)
		if ct.strides != nil {
			t.Strides = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(ct.strides)), ndim)...)
		}
	}
	n := int64(1)
	for i, d := range t.Shape {
		if d < 0 {
			return Tensor{}, invalid("%s: shape[%d] = %d is negative", name, i, d)
		}
		if d > 0 && n > maxElements/d {
			return Tensor{}, invalid("%s: shape %v is too large", name, t.Shape)
		}
		n *= d
	}
	if t.DType.Lanes == 0 {
		return Tensor{}, invalid("%s: dtype lanes is 0", name)
	}
	if t.DType.Bits == 0 || t.DType.Bits%8 != 0 {
		return Tensor{}, status.Errorf(status.NotSupported, "%s: dtype %s has a bit width that is not a whole number of bytes", name, t.DType)
	}
	// Divide rather than multiply: n*ElemBytes can overflow int64 (up to 2^46 elements of up
	// to 31*65535 bytes each).
	if n > maxElements/int64(t.DType.ElemBytes()) {
		return Tensor{}, invalid("%s: tensor of %d elements of %d bytes is too large", name, n, t.DType.ElemBytes())
	}
	if ct.data == nil && n > 0 {
		return Tensor{}, invalid("%s: data pointer is NULL for a non-empty tensor", name)
	}
	if n > 0 {
		if err := checkExtent(t, uintptr(ct.data), uint64(ct.byte_offset), name); err != nil {
			return Tensor{}, err
		}
	}
	t.Data = unsafe.Add(ct.data, uintptr(ct.byte_offset))
	return t, nil
}

// checkExtent checks the addresses a non-empty tensor's elements would be read from: strides
// and byte_offset must keep every element offset within maxElements bytes of each other (no
// overflow in the offset arithmetic), and data + byte_offset + each offset must stay inside
// the address space (no wrap-around below 0 or past the top).
func checkExtent(t Tensor, data uintptr, byteOffset uint64, name string) error {
	elem := int64(t.DType.ElemBytes())
	lo, hi := int64(0), t.NumElements()-1 // element offsets reached, relative to the base
	if t.Strides != nil {
		hi = 0
		for i, d := range t.Shape {
			st := t.Strides[i]
			if d == 1 || st == 0 {
				continue // a single index or a broadcast: the stride moves nothing
			}
			if st < -maxElements || st > maxElements || max(st, -st) > maxElements/(d-1) {
				return invalid("%s: strides %v over shape %v reach beyond %d elements", name, t.Strides, t.Shape, maxElements)
			}
			if st < 0 {
				lo += st * (d - 1)
			} else {
				hi += st * (d - 1)
			}
		}
		// Each term is at most maxElements and there are at most MaxDims: no overflow.
		if hi-lo >= maxElements/elem {
			return invalid("%s: strides %v over shape %v span more than %d bytes", name, t.Strides, t.Shape, maxElements)
		}
	}
	if byteOffset > uint64(maxElements) {
		return invalid("%s: byte_offset %d is too large", name, byteOffset)
	}
	base := uint64(data) + byteOffset
	below, above := uint64(-lo*elem), uint64((hi+1)*elem)
	if base < uint64(data) || below > base || base+above < base {
		return invalid("%s: data %#x + byte_offset %d with shape %v and strides %v lies outside the address space",
			name, data, byteOffset, t.Shape, t.Strides)
	}
	return nil
}

// ByteSize is the compact size of the tensor's data.
func (t Tensor) ByteSize() int64 { return t.NumElements() * int64(t.DType.ElemBytes()) }

// CopyCompact copies the tensor's data into dst in compact row-major order, following strides
// (in elements, may be negative). dst must hold ByteSize() bytes. Host memory only.
func (t Tensor) CopyCompact(dst []byte) error {
	size := t.ByteSize()
	if int64(len(dst)) != size {
		return status.Errorf(status.Internal, "copy destination holds %d bytes, tensor needs %d", len(dst), size)
	}
	if size == 0 {
		return nil
	}
	if t.Compact() {
		copy(dst, unsafe.Slice((*byte)(t.Data), int(size)))
		return nil
	}
	elem := int64(t.DType.ElemBytes())
	idx := make([]int64, len(t.Shape))
	inner := len(t.Shape) - 1
	out := int64(0)
	for {
		off := int64(0)
		for i := 0; i < inner; i++ {
			off += idx[i] * t.Strides[i]
		}
		for j := int64(0); j < t.Shape[inner]; j++ {
			src := unsafe.Add(t.Data, (off+j*t.Strides[inner])*elem)
			copy(dst[out:out+elem], unsafe.Slice((*byte)(src), int(elem)))
			out += elem
		}
		k := inner - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < t.Shape[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return nil
		}
	}
}

// Flags are the DLManagedTensorVersioned flags of an export.
type Flags uint64

// The export flags the engine sets (DLPack values).
const (
	// ReadOnly: the consumer must not write (a view of sealed data).
	ReadOnly Flags = C.OVS_DLPACK_FLAG_READ_ONLY
	// IsCopied: the data is a private copy, not shared with the producer.
	IsCopied Flags = C.OVS_DLPACK_FLAG_IS_COPIED
)

// Export makes a raw (1-D, lanes kept) versioned managed tensor over rows values of dtype in
// buf at byteOffset, holding its own buffer reference: the template CloneForCapsule copies for
// each capsule. The result is a DLManagedTensorVersioned* address.
func Export(buf buffer.Buffer, byteOffset int, dt DType, rows int64, deviceType, deviceID int32, flags Flags) (uintptr, error) {
	m := C.ovs_export_new((*C.ovs_buffer)(buf.Raw()), C.uint64_t(byteOffset), C.uint8_t(dt.Code),
		C.uint8_t(dt.Bits), C.uint16_t(dt.Lanes), C.int64_t(rows), C.int32_t(deviceType), C.int32_t(deviceID), C.uint64_t(flags))
	if m == nil {
		return 0, status.Errorf(status.OutOfMemory, "cannot allocate a DLPack export")
	}
	return uintptr(unsafe.Pointer(m)), nil
}

// CloneForCapsule returns a fresh managed tensor (versioned or legacy) sharing the storage of
// the versioned export at addr.
func CloneForCapsule(addr uintptr, versioned bool) (uintptr, error) {
	if addr == 0 {
		return 0, invalid("managed tensor address is NULL")
	}
	v := C.int(0)
	if versioned {
		v = 1
	}
	p := C.ovs_export_clone((*C.DLManagedTensorVersioned)(cptr.At(addr)), v)
	if p == nil {
		return 0, status.Errorf(status.OutOfMemory, "cannot allocate a DLPack export")
	}
	return uintptr(p), nil
}

// Free runs the deleter of a versioned export made by Export.
func Free(addr uintptr) {
	if addr != 0 {
		C.ovs_export_free((*C.DLManagedTensorVersioned)(cptr.At(addr)))
	}
}

// CapsuleDestructorAddress is the C function to pass to PyCapsule_New for our exports.
func CapsuleDestructorAddress() uintptr { return uintptr(C.ovs_capsule_destructor_address()) }
