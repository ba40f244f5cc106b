package column

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// rowRuns is the runs rowCopies hands a device storage for rows[i] taking source row i (or
// src[i]).
func rowRuns(rows, src []int32, rowBytes int) []Run {
	rc := newRowCopies(placedHost{CUDA(0)}, buffer.Buffer{}, buffer.Buffer{}, rowBytes)
	for i, r := range rows {
		s := int32(i)
		if src != nil {
			s = src[i]
		}
		rc.add(int64(r), int64(s))
	}
	rc.issue()
	return rc.runs
}

func TestRowCopiesMergeContiguousRows(t *testing.T) {
	// identity rows: one run
	assert.Equal(t, []Run{{Dst: 0, Src: 0, Len: 12}}, rowRuns([]int32{0, 1, 2}, nil, 4))
	// shifted destination, contiguous on both sides
	assert.Equal(t, []Run{{Dst: 20, Src: 0, Len: 8}}, rowRuns([]int32{5, 6}, nil, 4))
	// a gap in the destination splits the run
	assert.Equal(t, []Run{{Dst: 0, Src: 0, Len: 4}, {Dst: 8, Src: 4, Len: 4}}, rowRuns([]int32{0, 2}, nil, 4))
	// gather (index map): source rows 3,4 contiguous, then 0
	assert.Equal(t, []Run{{Dst: 0, Src: 24, Len: 16}, {Dst: 16, Src: 0, Len: 8}},
		rowRuns([]int32{0, 1, 2}, []int32{3, 4, 0}, 8))
	// rows last first (putting back an image) merge backwards
	assert.Equal(t, []Run{{Dst: 4, Src: 8, Len: 8}}, rowRuns([]int32{2, 1}, []int32{3, 2}, 4))
	// broadcast of one source row never merges
	assert.Equal(t, []Run{{Dst: 0, Src: 0, Len: 4}, {Dst: 4, Src: 0, Len: 4}}, rowRuns([]int32{0, 1}, []int32{0, 0}, 4))
	// a row written twice keeps both copies, in order
	assert.Equal(t, []Run{{Dst: 4, Src: 0, Len: 4}, {Dst: 4, Src: 4, Len: 4}}, rowRuns([]int32{1, 1}, nil, 4))
	assert.Empty(t, rowRuns(nil, nil, 4))
}

func TestPlacementSpelling(t *testing.T) {
	assert.Equal(t, "cpu", Host.String())
	assert.True(t, Host.IsHost())
	assert.Equal(t, "cuda:3", CUDA(3).String())
	assert.False(t, CUDA(0).IsHost())
	assert.Equal(t, "device(7, 1)", Placement{DeviceType: 7, DeviceID: 1}.String())
}

// recordingStorage is host storage that logs calls, to check the column's use of Storage:
// copies as merged runs, one Flush per Seal, and replaced versions released only after it.
type recordingStorage struct {
	hostStorage
	t        *testing.T
	copies   [][]Run
	flushes  int
	closed   bool
	watch    buffer.Buffer // a buffer that must stay referenced until Flush
	refsSeen []int64
}

func (r *recordingStorage) Copy(dst, src buffer.Buffer, runs []Run) error {
	r.copies = append(r.copies, append([]Run(nil), runs...))
	return r.hostStorage.Copy(dst, src, runs)
}

func (r *recordingStorage) Flush(dst buffer.Buffer) error {
	r.flushes++
	if r.watch.Valid() {
		r.refsSeen = append(r.refsSeen, r.watch.Refs())
	}
	return nil
}

func (r *recordingStorage) Close() { r.closed = true }

func TestSealCopiesThroughStorage(t *testing.T) {
	rs := &recordingStorage{t: t}
	c, err := NewPlaced(1, f32, rs, hostPlacer{})
	require.NoError(t, err)
	assert.Equal(t, Host, c.Placement())
	prims := []uint64{10, 11, 12, 13}
	c.Stage(prims, &Delta{Ordinal: 1, Seq: 1, Payload: payload(t, 1, 2, 3, 4)})
	require.NoError(t, c.Seal(1))
	assert.Empty(t, rs.copies, "a whole-column delta is swapped in without a copy")
	assert.Equal(t, 0, rs.flushes)

	// rows 11,12 from payload rows 1,0 (an index map), and 13 alone
	c.Stage([]uint64{11, 12, 13}, &Delta{Ordinal: 2, Seq: 2, Src: []int32{1, 0, 2}, Payload: payload(t, 20, 30, 40)})
	sel, snap, err := snapshot(c, prims, 1) // a reader holds the current version: copy-on-write
	require.NoError(t, err)
	rs.watch = snap.Views[0].Buffer
	require.NoError(t, c.Seal(2))
	// copy-on-write copy of the old version, then the delta: dst rows 1,2,3 <- src rows 1,0,2
	require.Len(t, rs.copies, 2)
	assert.Equal(t, []Run{{Dst: 0, Src: 0, Len: 16}}, rs.copies[0])
	assert.Equal(t, []Run{{Dst: 4, Src: 4, Len: 4}, {Dst: 8, Src: 0, Len: 4}, {Dst: 12, Src: 8, Len: 4}}, rs.copies[1])
	assert.Equal(t, 1, rs.flushes)
	assert.Equal(t, []int64{2}, rs.refsSeen, "the replaced version is still referenced by the column at Flush")
	assert.Equal(t, int64(1), snap.Views[0].Buffer.Refs(), "and released after it")
	assert.Equal(t, []float32{1, 2, 3, 4}, values(snap, sel), "the reader's version never changes")
	snap.Release()

	sel2, snap2, err := snapshot(c, prims, Current)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 30, 20, 40}, values(snap2, sel2))
	snap2.Release()

	c.Close()
	assert.True(t, rs.closed)
}

func TestNewPlacedReportsPlacement(t *testing.T) {
	c, err := NewPlaced(1, Schema{DType: tensor.DType{Code: tensor.CodeUInt, Bits: 8, Lanes: 1}}, placedHost{CUDA(1)}, hostPlacer{})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, "cuda:1", c.Placement().String())
}

type placedHost struct{ p Placement }

func (h placedHost) Placement() Placement                     { return h.p }
func (placedHost) New(size int) (buffer.Buffer, error)        { return buffer.New(size) }
func (placedHost) Copy(dst, src buffer.Buffer, r []Run) error { return hostStorage{}.Copy(dst, src, r) }
func (placedHost) Flush(buffer.Buffer) error                  { return nil }
func (placedHost) Close()                                     {}
