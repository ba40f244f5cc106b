package buffer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewZeroFilledAlignedAndFreedWithLastReference(t *testing.T) {
	before := LiveCount()
	b, err := New(100)
	require.NoError(t, err)
	assert.Equal(t, 100, b.Size())
	assert.Zero(t, uintptr(b.Data())%64, "payload must be 64-byte aligned")
	for _, v := range b.Bytes() {
		require.Zero(t, v)
	}
	assert.Equal(t, before+1, LiveCount())
	b.Retain()
	assert.Equal(t, int64(2), b.Refs())
	b.Release()
	assert.Equal(t, before+1, LiveCount())
	b.Release()
	assert.Equal(t, before, LiveCount())
}

func TestZeroSizeBufferHasData(t *testing.T) {
	b, err := New(0)
	require.NoError(t, err)
	defer b.Release()
	assert.NotNil(t, b.Data())
	assert.Nil(t, b.Bytes())
}

func TestNegativeSizeRejected(t *testing.T) {
	_, err := New(-1)
	require.Error(t, err)
}
