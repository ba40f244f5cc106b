package abi

/*
#include <ovstage/ovstage.h>
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// MaxDims bounds the rank of an input tensor; anything larger is malformed for ovstage.
const MaxDims = 32

// maxElements keeps byte sizes far from int64 overflow.
const maxElements = int64(1) << 46

// FromAddress reads and validates the DLTensor at addr, the one check every tensor entering the
// engine passes (C and Python writes alike). name is used in error messages.
func FromAddress(addr uintptr, name string) (tensor.Tensor, error) {
	if addr == 0 {
		return tensor.Tensor{}, invalid("%s: DLTensor pointer is NULL", name)
	}
	ct := (*C.DLTensor)(cptr.At(addr))
	t := tensor.Tensor{
		DeviceType: int32(ct.device.device_type),
		DeviceID:   int32(ct.device.device_id),
		DType:      tensor.DType{Code: uint8(ct.dtype.code), Bits: uint8(ct.dtype.bits), Lanes: uint16(ct.dtype.lanes)},
	}
	ndim := int(ct.ndim)
	if ndim < 0 || ndim > MaxDims {
		return tensor.Tensor{}, invalid("%s: ndim %d is outside 0..%d", name, ndim, MaxDims)
	}
	if ndim > 0 && ct.shape == nil {
		return tensor.Tensor{}, invalid("%s: shape pointer is NULL with ndim %d", name, ndim)
	}
	if ndim > 0 {
		t.Shape = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(ct.shape)), ndim)...)
		if ct.strides != nil {
			t.Strides = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(ct.strides)), ndim)...)
		}
	}
	if err := CheckTensor(t, uintptr(ct.data), uint64(ct.byte_offset), name); err != nil {
		return tensor.Tensor{}, err
	}
	t.Data = unsafe.Add(ct.data, uintptr(ct.byte_offset))
	return t, nil
}

// CheckTensor holds the rules of a tensor's description (shape, dtype, data, extent) for t
// whose data is at data + byteOffset (t.Data is not read). FromAddress applies them to every
// DLTensor; the numpy fast path, which describes its array without a DLTensor, applies them too.
func CheckTensor(t tensor.Tensor, data uintptr, byteOffset uint64, name string) error {
	n := int64(1)
	for i, d := range t.Shape {
		if d < 0 {
			return invalid("%s: shape[%d] = %d is negative", name, i, d)
		}
		if d > 0 && n > maxElements/d {
			return invalid("%s: shape %v is too large", name, t.Shape)
		}
		n *= d
	}
	if t.DType.Lanes == 0 {
		return invalid("%s: dtype lanes is 0", name)
	}
	if t.DType.Bits == 0 || t.DType.Bits%8 != 0 {
		return status.Errorf(status.NotSupported, "%s: dtype %s has a bit width that is not a whole number of bytes", name, t.DType)
	}
	// Divide rather than multiply: n*ElemBytes can overflow int64 (up to 2^46 elements of up
	// to 31*65535 bytes each).
	if n > maxElements/int64(t.DType.ElemBytes()) {
		return invalid("%s: tensor of %d elements of %d bytes is too large", name, n, t.DType.ElemBytes())
	}
	if data == 0 && n > 0 {
		return invalid("%s: data pointer is NULL for a non-empty tensor", name)
	}
	if n > 0 {
		return checkExtent(t, data, byteOffset, name)
	}
	return nil
}

// checkExtent checks the addresses a non-empty tensor's elements would be read from: strides
// and byte_offset must keep every element offset within maxElements bytes of each other (no
// overflow in the offset arithmetic), and data + byte_offset + each offset must stay inside
// the address space (no wrap-around below 0 or past the top).
func checkExtent(t tensor.Tensor, data uintptr, byteOffset uint64, name string) error {
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
