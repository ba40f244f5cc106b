package column

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

var f32 = Schema{DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}}

func payload(t *testing.T, vals ...float32) buffer.Buffer {
	b, err := buffer.New(4 * len(vals))
	require.NoError(t, err)
	if len(vals) > 0 {
		copy(unsafe.Slice((*float32)(b.Data()), len(vals)), vals)
	}
	return b
}

func write(c *Column, ordinal, seq uint64, prims []uint64, src []int32, p buffer.Buffer) {
	c.Stage(prims, &Delta{Ordinal: ordinal, Seq: seq, Src: src, Payload: p})
}

func values(s Snapshot, sel *Selection) []float32 {
	v := s.Views[0]
	all := unsafe.Slice((*float32)(unsafe.Add(v.Buffer.Data(), v.ByteOffset)), int(v.Rows))
	out := make([]float32, sel.Count)
	for k, r := range sel.Rows {
		out[k] = all[r]
	}
	return out
}

func describe(uint64) string { return "prim" }

// snapshot reads prims at end (ServeSealed) without a cached selection.
func snapshot(c *Column, prims []uint64, end uint64) (*Selection, Snapshot, error) {
	_, sel, snap, err := c.ReadSnapshot(prims, nil, Bounds{End: end}, describe)
	return sel, snap, err
}

// latestAt returns prims' values at end.
func latestAt(c *Column, prims []uint64, end uint64) ([]float32, error) {
	sel, s, err := snapshot(c, prims, end)
	if err != nil {
		return nil, err
	}
	defer s.Release()
	if sel.Count == 0 {
		return nil, nil
	}
	return values(s, sel), nil
}

// latest returns prims' current values.
func latest(_ *testing.T, c *Column, prims []uint64) ([]float32, error) {
	return latestAt(c, prims, Current)
}

func rangeOf(start, end uint64) Bounds { return Bounds{Start: start, End: end} }

func TestUnsealedKeyHasNoSnapshotUntilSealed(t *testing.T) {
	c, err := New(1, f32)
	require.NoError(t, err)
	defer c.Close()
	prims := []uint64{10, 11, 12}
	write(c, 1, 1, prims, nil, payload(t, 1, 2, 3))
	_, err = latest(t, c, prims)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err))

	require.NoError(t, c.Seal(1))
	got, err := latest(t, c, prims)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2, 3}, got)
	sel, snap, err := snapshot(c, prims, 1)
	require.NoError(t, err)
	snap.Release()
	assert.True(t, sel.IdentityRows)
	assert.Nil(t, sel.QueryIdx)
}

func TestSealedVersionVisibleWhileNewerChangeIsPending(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{10, 11}
	write(c, 1, 1, prims, nil, payload(t, 1, 2))
	require.NoError(t, c.Seal(1))
	write(c, 2, 2, prims, nil, payload(t, 5, 6))
	got, err := latestAt(c, prims, 1)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2}, got)
	require.NoError(t, c.Seal(2))
	got, err = latest(t, c, prims)
	require.NoError(t, err)
	assert.Equal(t, []float32{5, 6}, got)
}

func TestFoldAppliesOrdinalOrderNotArrivalOrder(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{10}
	write(c, 5, 9, prims, nil, payload(t, 50))
	write(c, 3, 10, prims, nil, payload(t, 30)) // arrives later, lower ordinal
	write(c, 5, 8, prims, nil, payload(t, 49))  // same ordinal, submitted earlier
	require.NoError(t, c.Seal(10))
	got, err := latest(t, c, prims)
	require.NoError(t, err)
	assert.Equal(t, []float32{50}, got)
	_, snap, err := snapshot(c, prims, Current)
	require.NoError(t, err)
	snap.Release()
	assert.Equal(t, uint64(5), snap.Ordinal, "the group ordinal is the newest sealed change")
}

func TestCopyOnWriteKeepsReaderSnapshot(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{10, 11}
	write(c, 1, 1, prims, nil, payload(t, 1, 2))
	require.NoError(t, c.Seal(1))
	sel, old, err := snapshot(c, prims, Current)
	require.NoError(t, err)
	write(c, 2, 2, []uint64{11}, nil, payload(t, 9)) // partial: folded by row copy
	require.NoError(t, c.Seal(2))
	assert.Equal(t, []float32{1, 2}, values(old, sel))
	sel, _, cur, err := c.ReadSnapshot(prims, sel, Bounds{End: Current}, describe)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 9}, values(cur, sel))
	assert.NotEqual(t, old.Views[0].Buffer.Data(), cur.Views[0].Buffer.Data())
	old.Release()
	cur.Release()
}

func TestWholeColumnDeltaIsSwappedIn(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{10, 11}
	p := payload(t, 7, 8)
	addr := p.Data()
	write(c, 1, 1, prims, nil, p)
	require.NoError(t, c.Seal(1))
	_, s, err := snapshot(c, prims, Current)
	require.NoError(t, err)
	defer s.Release()
	assert.Equal(t, addr, s.Views[0].Buffer.Data(), "whole-column delta becomes the sealed buffer")
}

func TestSelectionSparseAndReordered(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	write(c, 1, 1, []uint64{10, 11}, nil, payload(t, 1, 2))
	require.NoError(t, c.Seal(1))
	q := []uint64{99, 11, 10}
	sel, snap, err := snapshot(c, q, Current)
	require.NoError(t, err)
	snap.Release()
	assert.Equal(t, []uint32{1, 2}, sel.QueryIdx)
	assert.Equal(t, []int32{1, 0}, sel.Rows)
	assert.False(t, sel.IdentityRows)
	again, _, snap, err := c.ReadSnapshot(q, sel, Bounds{End: Current}, describe)
	require.NoError(t, err)
	snap.Release()
	assert.Same(t, sel, again, "unchanged layout reuses the selection")
	write(c, 2, 2, []uint64{99}, nil, payload(t, 3))
	again, _, _, err = c.ReadSnapshot(q, sel, Bounds{End: 1}, describe)
	require.NoError(t, err, "the new row's change (at 2) comes after 1 and is not sealed")
	assert.NotSame(t, sel, again, "a new row invalidates it")
}

func TestSrcIndexGather(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{1, 2, 3}
	write(c, 1, 1, prims, []int32{1, 2, 0}, payload(t, 111, 222, 333))
	require.NoError(t, c.Seal(1))
	got, err := latest(t, c, prims)
	require.NoError(t, err)
	assert.Equal(t, []float32{222, 333, 111}, got)
}

func TestTombstoneHidesKeyOnceSealedAndWriteRevivesIt(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	prims := []uint64{1, 2}
	write(c, 1, 1, prims, nil, payload(t, 1, 2))
	require.NoError(t, c.Seal(1))
	c.Stage([]uint64{2, 77}, &Delta{Ordinal: 2, Seq: 2, Tombstone: true})
	assert.False(t, c.Live(2), "committed state: deleted")
	assert.Equal(t, []uint64{1}, c.LivePrims())
	got, err := latestAt(c, prims, 1)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2}, got, "the sealed snapshot at 1 still has it")
	require.NoError(t, c.Seal(2))
	sel, snap, err := snapshot(c, prims, Current)
	require.NoError(t, err)
	snap.Release()
	assert.Equal(t, []uint32{0}, sel.QueryIdx)
	assert.Equal(t, 2, c.RowCount(), "a tombstone never creates rows")

	write(c, 3, 3, []uint64{2}, nil, payload(t, 5))
	require.NoError(t, c.Seal(3))
	got, err = latest(t, c, prims)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 5}, got)
}

func TestRangeSelectionMembershipAndErrors(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	a, b, d := uint64(1), uint64(2), uint64(3)
	write(c, 1, 1, []uint64{a, b, d}, nil, payload(t, 1, 2, 3))
	write(c, 3, 2, []uint64{b}, nil, payload(t, 20))
	c.Stage([]uint64{d}, &Delta{Ordinal: 4, Seq: 3, Tombstone: true})
	require.NoError(t, c.Seal(4))
	q := []uint64{a, b, d}

	sel, err := c.SelectRange(q, rangeOf(2, 4), describe)
	require.NoError(t, err)
	assert.Equal(t, []uint32{1}, sel.ValueQueryIdx)
	assert.Equal(t, []uint32{2}, sel.TombQueryIdx)
	sel.Values.Release()

	sel, err = c.SelectRange(q, rangeOf(5, 9), describe)
	require.NoError(t, err)
	assert.Empty(t, sel.ValueQueryIdx)
	assert.Empty(t, sel.TombQueryIdx)

	_, err = c.SelectRange(q, rangeOf(1, 2), describe)
	assert.Equal(t, status.OutOfRange, status.CodeOf(err), "b changed again at 3")

	write(c, 6, 4, []uint64{a}, nil, payload(t, 9))
	_, err = c.SelectRange(q, rangeOf(5, 6), describe)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "in-range change above the floor")
}

func TestRetentionDropsOldRecordsAndRaisesFrontier(t *testing.T) {
	c, _ := New(1, f32)
	defer c.Close()
	c.SetRetention(4)
	for o := uint64(1); o <= 10; o++ {
		write(c, o, o, []uint64{1}, nil, payload(t, float32(o)))
		require.NoError(t, c.Seal(o))
	}
	assert.Equal(t, uint64(7), c.Frontier())
	sel, err := c.SelectRange([]uint64{1}, rangeOf(10, 10), describe)
	require.NoError(t, err)
	assert.Len(t, sel.ValueQueryIdx, 1)
	sel.Values.Release()
}

func TestArrayRowsKeepTheirOwnReferences(t *testing.T) {
	c, _ := New(1, Schema{IsArray: true, DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}})
	defer c.Close()
	p := payload(t, 1, 2, 3, 4, 5, 6)
	c.Stage([]uint64{1, 2}, &Delta{Ordinal: 1, Seq: 1, Payload: p, RowOff: []int64{0, 8}, RowLen: []int64{2, 4}})
	require.NoError(t, c.Seal(1))
	_, s, err := snapshot(c, []uint64{1, 2}, Current)
	require.NoError(t, err)
	require.Len(t, s.Views, 2)
	assert.Equal(t, int64(2), s.Views[0].Rows)
	assert.Equal(t, int64(4), s.Views[1].Rows)
	second := unsafe.Slice((*float32)(unsafe.Add(s.Views[1].Buffer.Data(), s.Views[1].ByteOffset)), 4)
	assert.Equal(t, []float32{3, 4, 5, 6}, second)
	s.Release()
}
