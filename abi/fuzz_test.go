package abi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/big"
	"testing"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// FuzzFromAddress feeds malformed C DLTensors to FromAddress: any ndim (negative, 0, above
// MaxDims), shapes with negative or huge dims, NULL shape/data, odd dtypes and byte offsets.
// FromAddress must never panic or read past what ndim allows; what it accepts must be
// self-consistent, and a compact accepted tensor copies out exactly its bytes.
func FuzzFromAddress(f *testing.F) {
	le := func(vals ...int64) []byte {
		b := make([]byte, 8*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
		return b
	}
	f.Add(int32(1), le(3), false, []byte(nil), uint8(tensor.CodeFloat), uint8(32), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	f.Add(int32(2), le(2, 3), true, le(1, 2), uint8(tensor.CodeInt), uint8(16), uint16(3), int32(tensor.DeviceCPU), uint64(8), false)
	f.Add(int32(0), []byte(nil), false, []byte(nil), uint8(tensor.CodeUInt), uint8(8), uint16(1), int32(tensor.DeviceCPU), uint64(0), true)
	f.Add(int32(-1), le(1), false, []byte(nil), uint8(tensor.CodeFloat), uint8(32), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	f.Add(int32(1<<30), le(1), false, []byte(nil), uint8(tensor.CodeFloat), uint8(32), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	f.Add(int32(1), le(-5), false, []byte(nil), uint8(tensor.CodeFloat), uint8(32), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	f.Add(int32(1), le(1<<45), false, []byte(nil), uint8(tensor.CodeFloat), uint8(64), uint16(65535), int32(tensor.DeviceCPU), uint64(0), false)
	f.Add(int32(3), le(1<<40, 1<<40, 1<<40), false, []byte(nil), uint8(tensor.CodeFloat), uint8(8), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	f.Add(int32(1), le(4), false, []byte(nil), uint8(CodeComplexForTest), uint8(12), uint16(0), int32(tensor.DeviceCUDA), uint64(1<<63), true)
	f.Add(int32(33), le(make([]int64, 33)...), false, []byte(nil), uint8(tensor.CodeBool), uint8(8), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	// 2^40 rows (accepted here: the write checks rows against its prims before copying).
	f.Add(int32(1), le(1<<40), false, []byte(nil), uint8(tensor.CodeFloat), uint8(32), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	// Strides whose offsets overflow, reach below the data, or span too much; a huge byte_offset.
	f.Add(int32(1), le(2), true, le(1<<62), uint8(tensor.CodeFloat), uint8(32), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	f.Add(int32(2), le(1<<20, 1<<20), true, le(1<<40, 1), uint8(tensor.CodeUInt), uint8(8), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	f.Add(int32(1), le(3), true, le(-1<<44), uint8(tensor.CodeInt), uint8(64), uint16(1), int32(tensor.DeviceCPU), uint64(0), false)
	f.Add(int32(1), le(3), true, le(-1), uint8(tensor.CodeInt), uint8(32), uint16(1), int32(tensor.DeviceCPU), uint64(8), false)
	f.Add(int32(1), le(3), false, []byte(nil), uint8(tensor.CodeFloat), uint8(32), uint16(1), int32(tensor.DeviceCPU), uint64(1<<63), false)
	f.Add(int32(2), le(3, 0), true, le(1<<62, 1<<62), uint8(tensor.CodeFloat), uint8(32), uint16(1), int32(tensor.DeviceCPU), uint64(1<<62), false)
	f.Fuzz(func(t *testing.T, ndim int32, shapeBytes []byte, hasStrides bool, strideBytes []byte,
		code, bits uint8, lanes uint16, device int32, byteOffset uint64, nullData bool) {
		shape := int64s(shapeBytes, 40)
		// A producer's shape array always has ndim entries; only ndim itself is malformed.
		for ndim > 0 && ndim <= 64 && len(shape) < int(ndim) {
			shape = append(shape, int64(len(shape)%3))
		}
		var strides []int64
		if hasStrides {
			strides = int64s(strideBytes, 40)
			for len(strides) < len(shape) {
				strides = append(strides, 1)
			}
		}
		// The data: compact-size bytes when that is small, else a token allocation
		// (FromAddress cannot know the extent; nothing below reads past compactSize).
		compact, fits := compactBytes(ndim, shape, bits, lanes)
		dataSize := 16
		if fits && compact <= 1<<16 {
			dataSize = int(compact)
		}
		if nullData {
			dataSize = -1
		}
		ct := newFuzzCTensor(ndim, shape, strides, code, bits, lanes, device, byteOffset, dataSize)
		defer ct.free()

		tn, err := FromAddress(ct.addr, "t")
		if err != nil {
			var se *status.Error
			if !errors.As(err, &se) || (se.Code != status.InvalidArgument && se.Code != status.NotSupported) {
				t.Fatalf("FromAddress error %v is not INVALID_ARGUMENT / NOT_SUPPORTED", err)
			}
			return
		}
		// Accepted: the description must be consistent with the C struct.
		if ndim < 0 || ndim > MaxDims || len(tn.Shape) != int(ndim) {
			t.Fatalf("accepted ndim %d with shape %v", ndim, tn.Shape)
		}
		for i, d := range tn.Shape {
			if d < 0 || d != shape[i] {
				t.Fatalf("accepted shape %v (C shape %v)", tn.Shape, shape)
			}
		}
		if tn.DType.Lanes == 0 || tn.DType.Bits == 0 || tn.DType.Bits%8 != 0 {
			t.Fatalf("accepted dtype %s", tn.DType)
		}
		if !fits {
			t.Fatalf("accepted a tensor whose byte size overflows int64: shape %v dtype %s", tn.Shape, tn.DType)
		}
		if tn.ByteSize() != compact {
			t.Fatalf("ByteSize %d, want %d (shape %v dtype %s)", tn.ByteSize(), compact, tn.Shape, tn.DType)
		}
		if tn.NumElements() > 0 && ct.data == nil {
			t.Fatalf("accepted NULL data for %d elements", tn.NumElements())
		}
		if ct.data != nil && uintptr(tn.Data) != uintptr(ct.data)+uintptr(byteOffset) {
			t.Fatalf("data %p is not the C data %p + byte_offset %d", tn.Data, ct.data, byteOffset)
		}
		if tn.NumElements() > 0 {
			lo, hi := extent(tn)
			elem := big.NewInt(int64(tn.DType.ElemBytes()))
			span := new(big.Int).Mul(new(big.Int).Sub(new(big.Int).Add(hi, big.NewInt(1)), lo), elem)
			if span.Cmp(big.NewInt(maxElements)) > 0 || byteOffset > uint64(maxElements) {
				t.Fatalf("accepted shape %v strides %v byte_offset %d: %v bytes apart", tn.Shape, tn.Strides, byteOffset, span)
			}
			base := new(big.Int).Add(new(big.Int).SetUint64(uint64(uintptr(ct.data))), new(big.Int).SetUint64(byteOffset))
			first := new(big.Int).Add(base, new(big.Int).Mul(lo, elem))
			end := new(big.Int).Add(base, new(big.Int).Mul(new(big.Int).Add(hi, big.NewInt(1)), elem))
			if first.Sign() < 0 || end.Cmp(new(big.Int).Lsh(big.NewInt(1), 64)) > 0 {
				t.Fatalf("accepted a tensor reaching outside the address space: [%v, %v)", first, end)
			}
		}
		// A compact tensor whose bytes we allocated copies out exactly those bytes.
		if byteOffset == 0 && ct.data != nil && compact == int64(dataSize) && (tn.Strides == nil || tn.Compact()) {
			dst := make([]byte, compact)
			if err := tn.CopyCompact(dst); err != nil {
				t.Fatalf("CopyCompact: %v", err)
			}
			if !bytes.Equal(dst, ct.bytes()) {
				t.Fatalf("CopyCompact of a compact tensor changed its bytes")
			}
		}
	})
}

// extent is the lowest and highest element offset an accepted tensor's strides reach (big
// integers, independent of FromAddress).
func extent(tn tensor.Tensor) (lo, hi *big.Int) {
	lo, hi = new(big.Int), new(big.Int)
	step := big.NewInt(1)
	for i := len(tn.Shape) - 1; i >= 0; i-- {
		d := big.NewInt(tn.Shape[i] - 1)
		st := new(big.Int).Set(step)
		if tn.Strides != nil {
			st = big.NewInt(tn.Strides[i])
		}
		reach := new(big.Int).Mul(st, d)
		if reach.Sign() < 0 {
			lo.Add(lo, reach)
		} else {
			hi.Add(hi, reach)
		}
		step.Mul(step, big.NewInt(tn.Shape[i]))
	}
	return lo, hi
}

// CodeComplexForTest is DLPack's kDLComplex (not a value type ovstage stores).
const CodeComplexForTest = 5

// int64s decodes up to limit little-endian int64s.
func int64s(b []byte, limit int) []int64 {
	var out []int64
	for len(b) >= 8 && len(out) < limit {
		out = append(out, int64(binary.LittleEndian.Uint64(b)))
		b = b[8:]
	}
	return out
}

// compactBytes is the exact compact byte size of the described tensor and whether it fits
// in an int64 (computed with big integers, independent of FromAddress).
func compactBytes(ndim int32, shape []int64, bits uint8, lanes uint16) (int64, bool) {
	if ndim < 0 || int(ndim) > len(shape) {
		return 0, false
	}
	n := big.NewInt(int64(bits) / 8 * int64(lanes))
	for _, d := range shape[:ndim] {
		if d < 0 {
			return 0, false
		}
		n.Mul(n, big.NewInt(d))
	}
	if !n.IsInt64() {
		return 0, false
	}
	return n.Int64(), true
}
