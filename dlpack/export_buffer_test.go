package dlpack

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
)

func TestExportBufferIsTheViewedBuffer(t *testing.T) {
	buf, err := buffer.New(64)
	require.NoError(t, err)
	addr, err := Export(buf, 16, DType{Code: CodeFloat, Bits: 32, Lanes: 1}, 4, DeviceCPU, 0, ReadOnly)
	require.NoError(t, err)
	got, err := ExportBuffer(addr)
	require.NoError(t, err)
	assert.Equal(t, buf.Data(), got.Data(), "the buffer, not the offset view")
	assert.Equal(t, int64(2), buf.Refs(), "borrowed: no reference added")
	Free(addr)
	assert.Equal(t, int64(1), buf.Refs())
	buf.Release()
	_, err = ExportBuffer(0)
	assert.Error(t, err)
}
