// Package tensor is the engine's own description of a tensor handed to it: where the data is,
// on which device, its element type and shape. It is pure Go and names no wire format: the
// boundary (abi/) converts DLPack structs to and from it. The constants carry DLPack's values
// so that conversion is a copy of each field.
package tensor

import (
	"fmt"
	"unsafe"

	"github.com/ovstage-go/ovstage/core/status"
)

// Device types the engine knows (DLPack values).
const (
	DeviceCPU         int32 = 1
	DeviceCUDA        int32 = 2
	DeviceCUDAHost    int32 = 3
	DeviceCUDAManaged int32 = 13
)

// Element type codes (DLPack values).
const (
	CodeInt     uint8 = 0
	CodeUInt    uint8 = 1
	CodeFloat   uint8 = 2
	CodeOpaque  uint8 = 3
	CodeBfloat  uint8 = 4
	CodeComplex uint8 = 5
	CodeBool    uint8 = 6
)

// DType is an element type: code, bits per lane, lanes (the tuple width).
type DType struct {
	Code  uint8
	Bits  uint8
	Lanes uint16
}

// ElemBytes is the size of one value (bits*lanes/8).
func (d DType) ElemBytes() int { return int(d.Bits) / 8 * int(d.Lanes) }

var codeNames = map[uint8]string{CodeInt: "int", CodeUInt: "uint", CodeFloat: "float",
	CodeBfloat: "bfloat", CodeBool: "bool", CodeOpaque: "opaque", CodeComplex: "complex"}

func (d DType) String() string {
	n, ok := codeNames[d.Code]
	if !ok {
		n = fmt.Sprintf("code%d", d.Code)
	}
	return fmt.Sprintf("%s%dx%d", n, d.Bits, d.Lanes)
}

// Tensor describes a caller's tensor (the data stays where it is).
type Tensor struct {
	Data       unsafe.Pointer // first element (any byte offset already applied)
	DeviceType int32
	DeviceID   int32
	DType      DType
	Shape      []int64
	Strides    []int64 // in elements; nil = compact row-major
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

// Run is one contiguous piece of a tensor's data: Len bytes at byte offset Src from Data (may
// be negative: strides may be), which land at byte offset Dst of the compact copy.
type Run struct{ Dst, Src, Len int64 }

// CompactRuns lists the contiguous pieces a compact copy of the tensor is made of, in compact
// order: what a copy engine that moves contiguous bytes only (a CUDA copy, docs/architecture.md)
// queues one copy each for. The compact innermost axes form one piece, so a tensor of every
// other row is one run per row. ok is false when there would be more than limit pieces (runs
// is then nil). A compact tensor is one run; an empty one none.
func (t Tensor) CompactRuns(limit int) (runs []Run, ok bool) {
	size := t.ByteSize()
	if size == 0 {
		return nil, true
	}
	if t.Compact() {
		return []Run{{0, 0, size}}, limit >= 1
	}
	// the compact suffix: the innermost axes whose strides are those of a compact tensor
	block, outer := int64(1), len(t.Shape)-1
	for ; outer >= 0 && (t.Shape[outer] == 1 || t.Strides[outer] == block); outer-- {
		block *= t.Shape[outer]
	}
	count := int64(1)
	for i := 0; i <= outer; i++ {
		count *= t.Shape[i]
		if count > int64(limit) {
			return nil, false
		}
	}
	elem := int64(t.DType.ElemBytes())
	piece := block * elem
	idx := make([]int64, outer+1)
	runs = make([]Run, 0, count)
	for dst := int64(0); dst < size; dst += piece {
		src := int64(0)
		for i, at := range idx {
			src += at * t.Strides[i] * elem
		}
		runs = append(runs, Run{Dst: dst, Src: src, Len: piece})
		for k := outer; k >= 0; k-- { // the next index, last axis fastest
			if idx[k]++; idx[k] < t.Shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return runs, true
}
