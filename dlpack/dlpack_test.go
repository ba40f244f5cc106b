package dlpack

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
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
}

func TestExportHoldsBufferReferenceAndExpandsLanes(t *testing.T) {
	buf, err := buffer.New(2 * 3 * 4)
	require.NoError(t, err)
	before := buffer.LiveCount()
	tmpl, err := Export(buf, 0, DType{Code: CodeFloat, Bits: 32, Lanes: 3}, 2, DeviceCPU, 0, ReadOnly)
	require.NoError(t, err)
	buf.Release() // the export keeps the memory alive
	assert.Equal(t, before, buffer.LiveCount())

	for _, versioned := range []bool{true, false} {
		c, err := CloneForCapsule(tmpl, versioned)
		require.NoError(t, err)
		var dl *cTensorView
		if versioned {
			dl = versionedTensor(c)
		} else {
			dl = legacyTensor(c)
		}
		assert.Equal(t, int32(2), dl.ndim())
		assert.Equal(t, []int64{2, 3}, dl.shape())
		assert.Equal(t, []int64{3, 1}, dl.strides())
		runDeleter(c, versioned)
	}
	Free(tmpl)
	assert.Equal(t, before-1, buffer.LiveCount(), "last export gone: buffer freed")
}

func TestFromAddressRejectsMalformed(t *testing.T) {
	_, err := FromAddress(0, "t")
	assert.ErrorContains(t, err, "NULL")
	for _, tc := range []struct {
		name string
		make func() uintptr
		want string
	}{
		{"negative shape", func() uintptr { return newCTensor(1, []int64{-1}, 32, 1, true) }, "negative"},
		{"ndim too large", func() uintptr { return newCTensor(64, []int64{1}, 32, 1, true) }, "ndim"},
		{"null data", func() uintptr { return newCTensor(1, []int64{2}, 32, 1, false) }, "data pointer is NULL"},
		{"zero lanes", func() uintptr { return newCTensor(1, []int64{2}, 32, 0, true) }, "lanes"},
		{"sub-byte bits", func() uintptr { return newCTensor(1, []int64{2}, 4, 1, true) }, "bit width"},
	} {
		addr := tc.make()
		_, err := FromAddress(addr, "t")
		assert.ErrorContains(t, err, tc.want, tc.name)
		freeCTensor(addr)
	}
	ok := newCTensor(2, []int64{2, 3}, 32, 1, true)
	defer freeCTensor(ok)
	tn, err := FromAddress(ok, "t")
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 3}, tn.Shape)
	assert.Equal(t, int64(24), tn.ByteSize())
}
