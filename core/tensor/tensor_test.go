package tensor

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCopyCompactFollowsStrides(t *testing.T) {
	// 2x3 int32 viewed transposed: shape (3,2), strides (1,3).
	src := []int32{1, 2, 3, 4, 5, 6}
	tn := Tensor{Data: unsafe.Pointer(&src[0]), DeviceType: DeviceCPU,
		DType: DType{Code: CodeInt, Bits: 32, Lanes: 1}, Shape: []int64{3, 2}, Strides: []int64{1, 3}}
	assert.False(t, tn.Compact())
	dst := make([]byte, tn.ByteSize())
	require.NoError(t, tn.CopyCompact(dst))
	assert.Equal(t, []int32{1, 4, 2, 5, 3, 6}, unsafe.Slice((*int32)(unsafe.Pointer(&dst[0])), 6))

	// Negative stride: reversed vector.
	rev := Tensor{Data: unsafe.Pointer(&src[5]), DType: DType{Code: CodeInt, Bits: 32, Lanes: 1},
		Shape: []int64{6}, Strides: []int64{-1}}
	dst = make([]byte, rev.ByteSize())
	require.NoError(t, rev.CopyCompact(dst))
	assert.Equal(t, []int32{6, 5, 4, 3, 2, 1}, unsafe.Slice((*int32)(unsafe.Pointer(&dst[0])), 6))

	assert.Error(t, rev.CopyCompact(make([]byte, 3)), "a destination of the wrong size is refused")
}

func TestDTypeNamesAndSizes(t *testing.T) {
	assert.Equal(t, "float32x3", DType{Code: CodeFloat, Bits: 32, Lanes: 3}.String())
	assert.Equal(t, 12, DType{Code: CodeFloat, Bits: 32, Lanes: 3}.ElemBytes())
	assert.Equal(t, int64(1), Tensor{}.Rows(), "a 0-d tensor is one row")
	assert.Equal(t, int64(4), Tensor{Shape: []int64{4, 2}}.Rows())
}
