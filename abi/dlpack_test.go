package abi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/tensor"
)

func TestExportHoldsBufferReferenceAndPublishesTheTypedShape(t *testing.T) {
	for _, tc := range []struct {
		lanes          uint16
		semantic       int32
		shape, strides []int64
	}{
		{1, core.SemanticNone, []int64{2}, []int64{1}},
		{3, core.SemanticNone, []int64{2, 3}, []int64{3, 1}},
		{16, core.SemanticMatrix, []int64{2, 4, 4}, []int64{16, 4, 1}},
		{16, core.SemanticNone, []int64{2, 16}, []int64{16, 1}},
	} {
		buf, err := buffer.New(2 * int(tc.lanes) * 4)
		require.NoError(t, err)
		before := buffer.LiveCount()
		tv := core.TensorView{Buffer: buf, DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: tc.lanes},
			Rows: 2, DeviceType: tensor.DeviceCPU}
		tmpl, err := Export(tv, tc.semantic, ReadOnly)
		require.NoError(t, err)
		buf.Release() // the export keeps the memory alive
		assert.Equal(t, before, buffer.LiveCount())

		for _, versioned := range []bool{true, false} {
			c, err := CloneForCapsule(tmpl, versioned)
			require.NoError(t, err)
			var dl *cTensorView
			if versioned {
				dl = versionedTensor(c)
				assert.Equal(t, [2]uint32{1, 3}, versionOf(c), "the header's DLPack version")
			} else {
				dl = legacyTensor(c)
			}
			assert.Equal(t, int32(len(tc.shape)), dl.ndim())
			assert.Equal(t, tc.shape, dl.shape())
			assert.Equal(t, tc.strides, dl.strides())
			assert.Equal(t, uint16(1), dl.lanes())
			runDeleter(c, versioned)
		}
		FreeExport(tmpl)
		assert.Equal(t, before-1, buffer.LiveCount(), "last export gone: buffer freed")
	}
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

func TestExportBufferIsTheViewedBuffer(t *testing.T) {
	buf, err := buffer.New(64)
	require.NoError(t, err)
	tv := core.TensorView{Buffer: buf, ByteOffset: 16, DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1},
		Rows: 4, DeviceType: tensor.DeviceCPU}
	addr, err := Export(tv, core.SemanticNone, ReadOnly)
	require.NoError(t, err)
	got, err := ExportBuffer(addr)
	require.NoError(t, err)
	assert.Equal(t, buf.Data(), got.Data(), "the buffer, not the offset view")
	assert.Equal(t, int64(2), buf.Refs(), "borrowed: no reference added")
	FreeExport(addr)
	assert.Equal(t, int64(1), buf.Refs())
	buf.Release()
	_, err = ExportBuffer(0)
	assert.Error(t, err)
}

// CheckTensor is FromAddress's rules for a tensor described without a DLTensor (the numpy fast
// path): the same errors for the same descriptions.
func TestCheckTensorAppliesTheDLTensorRules(t *testing.T) {
	f32 := tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}
	data := uintptr(0x10000)
	require.NoError(t, CheckTensor(tensor.Tensor{DType: f32, Shape: []int64{4, 3}}, data, 0, "t"))
	for _, tc := range []struct {
		t    tensor.Tensor
		data uintptr
		want string
	}{
		{tensor.Tensor{DType: f32, Shape: []int64{-1}}, data, "shape[0] = -1 is negative"},
		{tensor.Tensor{DType: f32, Shape: []int64{1 << 40, 1 << 40}}, data, "too large"},
		{tensor.Tensor{DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32}, Shape: []int64{2}}, data, "lanes is 0"},
		{tensor.Tensor{DType: tensor.DType{Code: tensor.CodeFloat, Bits: 4, Lanes: 1}, Shape: []int64{2}}, data, "bit width"},
		{tensor.Tensor{DType: f32, Shape: []int64{2}}, 0, "data pointer is NULL"},
		{tensor.Tensor{DType: f32, Shape: []int64{2}}, ^uintptr(0) - 4, "outside the address space"},
	} {
		assert.ErrorContains(t, CheckTensor(tc.t, tc.data, 0, "t"), tc.want)
	}
}
