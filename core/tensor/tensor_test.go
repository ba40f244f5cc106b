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

// gather copies the runs of tn (host memory) into a compact buffer, as a device copy engine
// would: it must equal CopyCompact.
func gather(tn Tensor, runs []Run) []byte {
	out := make([]byte, tn.ByteSize())
	for _, r := range runs {
		copy(out[r.Dst:r.Dst+r.Len], unsafe.Slice((*byte)(unsafe.Add(tn.Data, r.Src)), int(r.Len)))
	}
	return out
}

func TestCompactRunsCoverTheCompactCopy(t *testing.T) {
	src := make([]int32, 48)
	for i := range src {
		src[i] = int32(i)
	}
	i32 := DType{Code: CodeInt, Bits: 32, Lanes: 1}
	at := func(i int) unsafe.Pointer { return unsafe.Pointer(&src[i]) }
	cases := []struct {
		name    string
		tn      Tensor
		want    []Run
		maxRuns int
	}{
		{"compact", Tensor{Data: at(0), DType: i32, Shape: []int64{4, 3}}, []Run{{0, 0, 48}}, 1},
		{"every other row", Tensor{Data: at(0), DType: i32, Shape: []int64{3, 4}, Strides: []int64{8, 1}},
			[]Run{{0, 0, 16}, {16, 32, 16}, {32, 64, 16}}, 3},
		{"rows of a wider array", Tensor{Data: at(2), DType: i32, Shape: []int64{2, 2, 2}, Strides: []int64{12, 4, 1}},
			[]Run{{0, 0, 8}, {8, 16, 8}, {16, 48, 8}, {24, 64, 8}}, 4},
		{"transposed", Tensor{Data: at(0), DType: i32, Shape: []int64{3, 2}, Strides: []int64{1, 3}},
			[]Run{{0, 0, 4}, {4, 12, 4}, {8, 4, 4}, {12, 16, 4}, {16, 8, 4}, {20, 20, 4}}, 6},
		{"reversed", Tensor{Data: at(5), DType: i32, Shape: []int64{3}, Strides: []int64{-1}},
			[]Run{{0, 0, 4}, {4, -4, 4}, {8, -8, 4}}, 3},
		// strides that say "not compact" on an axis of one, and a broadcast (stride 0) axis
		{"broadcast rows", Tensor{Data: at(0), DType: i32, Shape: []int64{2, 1, 3}, Strides: []int64{0, 7, 1}},
			[]Run{{0, 0, 12}, {12, 0, 12}}, 2},
		// strides count elements of the whole dtype, lanes included
		{"lanes", Tensor{Data: at(0), DType: DType{Code: CodeInt, Bits: 32, Lanes: 2}, Shape: []int64{3}, Strides: []int64{2}},
			[]Run{{0, 0, 8}, {8, 16, 8}, {16, 32, 8}}, 3},
		{"empty", Tensor{Data: at(0), DType: i32, Shape: []int64{0, 4}, Strides: []int64{8, 1}}, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs, ok := c.tn.CompactRuns(c.maxRuns)
			require.True(t, ok)
			assert.Equal(t, c.want, runs)
			want := make([]byte, c.tn.ByteSize())
			require.NoError(t, c.tn.CopyCompact(want))
			assert.Equal(t, want, gather(c.tn, runs))
			if c.maxRuns > 0 {
				_, ok = c.tn.CompactRuns(c.maxRuns - 1)
				assert.False(t, ok, "more runs than the limit")
			}
		})
	}
}
