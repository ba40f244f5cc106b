package core

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/tensor"
)

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestBulkColumnsCostLittleBeyondTheirPayload: whole-query writes of prims interned in one go
// keep no per-prim tables (affine row index, uniform key states, shared identity rows, bitset
// prim set), so the Go heap grows by a small fraction of the payload.
func TestBulkColumnsCostLittleBeyondTheirPayload(t *testing.T) {
	const n = 200_000
	s := NewStage("mem", Config{})
	t.Cleanup(s.Destroy)
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/Mem/p%d", i)
	}
	list, err := s.Dictionary().CreateListFromStrings(paths)
	require.NoError(t, err)
	q, err := s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = s.Dictionary().Release(list)
	vals := make([]float32, n)
	write := func(a int) {
		tok, err := s.Dictionary().InternToken(fmt.Sprint("mem", a))
		require.NoError(t, err)
		id, err := s.WriteAttribute(WriteRequest{Query: q, AttrToken: tok, Ordinal: 1, Tensors: []tensor.Tensor{f32Tensor(vals)}})
		require.NoError(t, err)
		res, err := s.WaitOp(id, TimeoutInfinite)
		require.NoError(t, err)
		require.Empty(t, res.ErrorOpIDs)
	}
	// The first column creates the prims and the process-wide identity row sequence.
	write(0)
	heap0, payload0 := heapInUse(), buffer.LiveBytes()
	for a := 1; a <= 3; a++ {
		write(a)
	}
	adv, err := s.AdvanceWriteFloor(1, ScopeAll, nil)
	require.NoError(t, err)
	_, _ = s.WaitOp(adv, TimeoutInfinite)
	heap1, payload1 := heapInUse(), buffer.LiveBytes()
	payload := int64(3 * 4 * n)
	assert.Equal(t, payload, payload1-payload0)
	growth := int64(heap1) - int64(heap0)
	assert.Less(t, growth, payload/10, "Go heap growth %d bytes for %d bytes of payload", growth, payload)
}
