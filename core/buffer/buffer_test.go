package buffer

import (
	"bytes"
	"testing"
	"unsafe"

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

func TestUninitBufferIsAlignedAndAccounted(t *testing.T) {
	before, beforeBytes := LiveCount(), LiveBytes()
	b, err := NewUninit(1000)
	require.NoError(t, err)
	assert.Zero(t, uintptr(b.Data())%64)
	assert.Len(t, b.Bytes(), 1000)
	assert.Equal(t, before+1, LiveCount())
	assert.Equal(t, beforeBytes+1000, LiveBytes())
	b.Release()
	assert.Equal(t, before, LiveCount())
	assert.Equal(t, beforeBytes, LiveBytes())
}

func TestLargeBuffersAreReusedWarmAndZeroedOnRequest(t *testing.T) {
	Trim()
	const size = 3<<20 + 5
	a, err := NewUninit(size)
	require.NoError(t, err)
	copy(a.Bytes(), bytes.Repeat([]byte{0xAB}, size))
	addr := a.Data()
	a.Release()
	assert.Equal(t, int64(3<<20+4096), CachedBytes(), "rounded up to a page and kept")

	b, err := NewUninit(size)
	require.NoError(t, err)
	assert.Equal(t, addr, b.Data(), "same-size allocation reuses the cached memory")
	assert.Zero(t, CachedBytes())
	b.Release()

	z, err := New(size)
	require.NoError(t, err)
	assert.Equal(t, addr, z.Data())
	assert.Equal(t, make([]byte, size), z.Bytes(), "New zero-fills reused memory")
	z.Release()

	other, err := NewUninit(8 << 20)
	require.NoError(t, err)
	assert.NotEqual(t, addr, other.Data(), "a different size does not take the cached buffer")
	other.Release()
	assert.Equal(t, int64(3<<20+4096+8<<20), CachedBytes())
	Trim()
	assert.Zero(t, CachedBytes())
}

func TestCacheIsBounded(t *testing.T) {
	Trim()
	var bufs []Buffer
	for i := 0; i < 70; i++ {
		b, err := NewUninit(2 << 20)
		require.NoError(t, err)
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		b.Release()
	}
	assert.Equal(t, int64(64*(2<<20)), CachedBytes(), "at most 64 large buffers are kept")
	Trim()
	assert.Zero(t, CachedBytes())
}

func TestSmallBuffersFromFourKiBAreRecycled(t *testing.T) {
	Trim()
	a, err := NewUninit(5000)
	require.NoError(t, err)
	copy(a.Bytes(), bytes.Repeat([]byte{7}, 5000))
	addr := a.Data()
	a.Release()
	assert.Positive(t, CachedBytes())
	b, err := New(5000)
	require.NoError(t, err)
	assert.Equal(t, addr, b.Data())
	assert.Equal(t, make([]byte, 5000), b.Bytes(), "zero-filled on reuse")
	b.Release()
	tiny, err := NewUninit(100)
	require.NoError(t, err)
	tiny.Release()
	Trim()
	assert.Zero(t, CachedBytes(), "buffers below 4 KiB are not cached; Trim empties the cache")
}

func TestAllocErrorSaysOutOfMemory(t *testing.T) {
	var err error = &AllocError{Size: 1 << 20}
	oom, ok := err.(interface{ OutOfMemory() bool })
	if !ok || !oom.OutOfMemory() {
		t.Fatal("an allocation failure must report OutOfMemory() (status.CodeOf maps it)")
	}
	if err.Error() != "cannot allocate 1048576 bytes" {
		t.Fatalf("message %q", err.Error())
	}
	if _, err := New(-1); err == nil {
		t.Fatal("a negative size must be refused")
	}
}

// Copy streams large copies into aligned memory (buffer.c, stream_copy) and uses memcpy
// otherwise: every size, tail and alignment copies exactly the source bytes, and nothing past
// the destination's end.
func TestCopyIsExactForEverySizeAndAlignment(t *testing.T) {
	const streamMin = 1 << 20
	src := make([]byte, 2*streamMin+200)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	for _, n := range []int{1, 63, 4096, streamMin - 1, streamMin, streamMin + 1, streamMin + 63, 2*streamMin + 100} {
		for _, offset := range []int{0, 1, 16} {
			dst := make([]byte, n+offset+64)
			Copy(unsafe.Pointer(&dst[offset]), unsafe.Pointer(&src[3]), n)
			require.Equal(t, src[3:3+n], dst[offset:offset+n], "n=%d offset=%d", n, offset)
			require.Equal(t, make([]byte, 64), dst[offset+n:], "n=%d offset=%d: bytes past the end", n, offset)
		}
	}
}
