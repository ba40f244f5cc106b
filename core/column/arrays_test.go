package column

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/tensor"
)

var u32Array = Schema{IsArray: true, DType: tensor.DType{Code: tensor.CodeUInt, Bits: 32, Lanes: 1}}

// arrayChange is one change of a prim in the model: a value (nil: empty row) or a delete.
type arrayChange struct {
	ordinal uint64
	value   []uint32
	deleted bool
}

// arrayModel is every prim's changes in (ordinal, submission) order.
type arrayModel map[uint64][]arrayChange

// at is prim's value at ordinal n (ok=false: no value then).
func (m arrayModel) at(prim, n uint64) ([]uint32, bool) {
	var got *arrayChange
	for i, ch := range m[prim] {
		if ch.ordinal <= n {
			got = &m[prim][i]
		}
	}
	if got == nil || got.deleted {
		return nil, false
	}
	return got.value, true
}

// arrayDelta builds a write of rows (one value per prim, in payload order), packed uniform
// when every row has the same length and uniform is set.
func arrayDelta(t *testing.T, ordinal, seq uint64, rows [][]uint32, uniform bool) *Delta {
	total := 0
	for _, r := range rows {
		total += len(r)
	}
	b, err := buffer.New(4 * total)
	require.NoError(t, err)
	d := &Delta{Ordinal: ordinal, Seq: seq, Payload: b}
	data := unsafe.Slice((*uint32)(b.Data()), total)
	off := 0
	for _, r := range rows {
		copy(data[off:], r)
		if !uniform {
			d.RowOff = append(d.RowOff, int64(4*off))
			d.RowLen = append(d.RowLen, int64(len(r)))
		}
		off += len(r)
	}
	if uniform {
		d.WidthElems = int64(len(rows[0]))
		d.Width = 4 * d.WidthElems
	}
	return d
}

func viewValues(v View) []uint32 {
	if v.Rows == 0 {
		return nil
	}
	return slices.Clone(unsafe.Slice((*uint32)(unsafe.Add(v.Buffer.Data(), v.ByteOffset)), int(v.Rows)))
}

// checkArraysAt compares a snapshot read of every prim at end with the model at n.
func checkArraysAt(t *testing.T, c *Column, m arrayModel, prims []uint64, end, n uint64, what string) {
	t.Helper()
	_, sel, snap, err := c.ReadSnapshot(prims, nil, Bounds{End: end}, describe)
	require.NoError(t, err, what)
	defer snap.Release()
	got := map[uint64][]uint32{}
	for k := range sel.Count {
		i := k
		if sel.QueryIdx != nil {
			i = int(sel.QueryIdx[k])
		}
		got[prims[i]] = viewValues(snap.Views[k])
	}
	want := map[uint64][]uint32{}
	for _, p := range prims {
		if v, ok := m.at(p, n); ok {
			want[p] = v
		}
	}
	require.Equal(t, want, got, what)
}

// TestArrayColumnMatchesModel drives an array column (with a version window) through random
// whole-column, run, scattered and index-mapped writes, deletes and lagging seals, and compares
// every read inside the window, the committed view and the buffer references with a model.
// The rows switch between spans and the per-row table as the changes take their shapes.
func TestArrayColumnMatchesModel(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runArrayModel(t, seed) })
	}
}

func runArrayModel(t *testing.T, seed int64) {
	const window = 3
	rng := rand.New(rand.NewSource(seed))
	live0 := buffer.LiveCount()
	c, err := New(1, u32Array)
	require.NoError(t, err)
	c.SetVersionWindow(window)
	all := make([]uint64, 48)
	for i := range all {
		all[i] = 100 + uint64(i) + uint64(i/16) // runs of 16 ids
	}
	first := all[:32]
	m := arrayModel{}
	written := map[uint64]bool{}
	value := func(o uint64, p uint64, n int) []uint32 {
		if n == 0 {
			return nil
		}
		v := make([]uint32, n)
		for k := range v {
			v[k] = uint32(o*10_000 + p*10 + uint64(k))
		}
		return v
	}
	stage := func(o, seq uint64, prims []uint64, src []int32, uniform bool) {
		rows := make([][]uint32, len(prims))
		n := rng.Intn(3)
		for i := range rows {
			if !uniform {
				n = rng.Intn(4)
			}
			rows[i] = value(o, uint64(i), n)
		}
		d := arrayDelta(t, o, seq, rows, uniform)
		d.Src = src
		c.Stage(prims, d)
		for i, p := range prims {
			s := i
			if src != nil {
				s = int(src[i])
			}
			m[p] = append(m[p], arrayChange{ordinal: o, value: rows[s]})
			written[p] = true
		}
	}
	seq := uint64(0)
	floor := uint64(0)
	for o := uint64(1); o <= 30; o++ {
		for range 1 + rng.Intn(2) {
			seq++
			switch kind := rng.Intn(6); {
			case o == 1 || kind == 0: // whole column (the first write creates the rows)
				stage(o, seq, first, nil, rng.Intn(2) == 0)
			case kind == 1: // a run of the query's prims
				a := rng.Intn(len(all))
				b := a + 1 + rng.Intn(len(all)-a)
				stage(o, seq, all[a:b], nil, rng.Intn(2) == 0)
			case kind == 2: // scattered prims, each its own payload row
				var prims []uint64
				for _, p := range rng.Perm(len(all))[:1+rng.Intn(8)] {
					prims = append(prims, all[p])
				}
				stage(o, seq, prims, nil, false)
			case kind == 3: // a run through an index map that reverses the payload rows
				a := rng.Intn(len(all) - 1)
				prims := all[a : a+2+rng.Intn(len(all)-a-1)]
				src := make([]int32, len(prims))
				for i := range src {
					src[i] = int32(len(prims) - 1 - i)
				}
				stage(o, seq, prims, src, false)
			case kind == 4: // delete some prims that have rows
				var prims []uint64
				for _, p := range rng.Perm(len(all))[:1+rng.Intn(12)] {
					if written[all[p]] {
						prims = append(prims, all[p])
					}
				}
				if len(prims) > 0 {
					c.Stage(prims, &Delta{Ordinal: o, Seq: seq, Tombstone: true})
					for _, p := range prims {
						m[p] = append(m[p], arrayChange{ordinal: o, deleted: true})
					}
				}
			default: // the same run as an earlier one: a span inside a span
				stage(o, seq, all[8:24], nil, true)
			}
		}
		if rng.Intn(3) > 0 || o == 30 { // the floor lags by up to a few ordinals
			floor = o - uint64(rng.Intn(2))
			require.NoError(t, c.Seal(floor))
			for n := max(floor, window) - window; n <= floor; n++ {
				checkArraysAt(t, c, m, all, n, n, fmt.Sprintf("ordinal %d at floor %d", n, floor))
			}
			if floor == o { // nothing pending: a current read is the sealed state
				checkArraysAt(t, c, m, all, Current, floor, fmt.Sprintf("current at floor %d", floor))
			}
		}
		committed := map[uint64][]uint32{}
		c.Committed(all, func(i int, v []byte) {
			var vals []uint32
			if len(v) > 0 {
				vals = slices.Clone(unsafe.Slice((*uint32)(unsafe.Pointer(&v[0])), len(v)/4))
			}
			committed[all[i]] = vals
		})
		want := map[uint64][]uint32{}
		for _, p := range all {
			if v, ok := m.at(p, o); ok {
				want[p] = v
			}
		}
		require.Equal(t, want, committed, "committed after ordinal %d", o)
	}
	c.Close()
	assert.Equal(t, live0, buffer.LiveCount(), "every buffer reference is released")
}

// A whole-query write of uniform rows is one span: no per-row table, one reference; the
// version window keeps the replaced spans, not an entry per row.
func TestArrayColumnWholeWritesKeepNoRowTable(t *testing.T) {
	c, err := New(1, u32Array)
	require.NoError(t, err)
	defer c.Close()
	c.SetVersionWindow(4)
	prims := make([]uint64, 1000)
	for i := range prims {
		prims[i] = uint64(10 + i)
	}
	for o := uint64(1); o <= 3; o++ {
		rows := make([][]uint32, len(prims))
		for i := range rows {
			rows[i] = []uint32{uint32(o), uint32(i)}
		}
		c.Stage(prims, arrayDelta(t, o, o, rows, true))
		require.NoError(t, c.Seal(o))
	}
	assert.Nil(t, c.arrays.table)
	require.Len(t, c.arrays.spans, 1)
	assert.Equal(t, []uint32{3, 999}, viewValues(View{Buffer: c.arrays.get(999).buf,
		ByteOffset: c.arrays.get(999).off, Rows: c.arrays.get(999).n}))
	assert.Nil(t, c.rows.prims, "one run of ids: no row table either")
	require.Len(t, c.ver.images, 3)
	assert.Nil(t, c.ver.images[0].parts[0].store, "the first fold replaced nothing")
	for _, im := range c.ver.images[1:] {
		assert.Nil(t, im.parts[0].arrays)
		require.NotNil(t, im.parts[0].store)
		assert.Len(t, im.parts[0].store.spans, 1)
	}
	checkArraysAt(t, c, arrayModel{10: {{ordinal: 1, value: []uint32{1, 0}}, {ordinal: 2, value: []uint32{2, 0}}}},
		prims[:1], 1, 1, "the first ordinal, behind the floor")
}

// copyPlacer "moves" a buffer by copying it into a new host buffer; it fails the failAt-th
// move (0: none) and counts the moves.
type copyPlacer struct {
	moves, failAt int
}

func (p *copyPlacer) Open(Placement) (Storage, error) { return HostStorage(), nil }

func (p *copyPlacer) Move(b buffer.Buffer, _ Placement) (buffer.Buffer, error) {
	p.moves++
	if p.moves == p.failAt {
		return b, fmt.Errorf("move %d refused", p.moves)
	}
	nb, err := buffer.New(b.Size())
	if err != nil {
		return b, err
	}
	copy(nb.Bytes(), b.Bytes())
	b.Release()
	return nb, nil
}

// Moving an array column moves each payload once, spans and per-row rows alike; a failed
// move leaves the column as it was.
func TestArrayColumnMovesEachPayloadOnce(t *testing.T) {
	live0 := buffer.LiveCount()
	for _, failAt := range []int{0, 2} {
		placer := &copyPlacer{}
		c, err := NewPlaced(1, u32Array, HostStorage(), placer)
		require.NoError(t, err)
		prims := []uint64{1, 2, 3, 4, 5, 6}
		whole := [][]uint32{{1}, {2, 2}, {3}, {4, 4}, {5}, {6, 6}}
		c.Stage(prims, arrayDelta(t, 1, 1, whole, false))
		c.Stage(prims[2:4], arrayDelta(t, 2, 2, [][]uint32{{30}, {40}}, true))      // a span inside
		c.Stage([]uint64{6, 1}, arrayDelta(t, 3, 3, [][]uint32{{60}, {10}}, false)) // per row
		require.NoError(t, c.Seal(3))
		require.NotNil(t, c.arrays.table)
		before := c.arrays.rows()
		placer.moves, placer.failAt = 0, failAt // (the seal moved the payloads in too)
		err = c.moveToLocked(Host)
		want := arrayModel{1: {{value: []uint32{10}}}, 2: {{value: []uint32{2, 2}}}, 3: {{value: []uint32{30}}},
			4: {{value: []uint32{40}}}, 5: {{value: []uint32{5}}}, 6: {{value: []uint32{60}}}}
		if failAt > 0 {
			require.Error(t, err)
			for r, row := range c.arrays.rows() {
				assert.Equal(t, before[r].buf.Raw(), row.buf.Raw(), "row %d keeps its buffer", r)
			}
		} else {
			require.NoError(t, err)
			assert.Equal(t, 3, placer.moves, "three payloads, each moved once")
			for r, row := range c.arrays.rows() {
				assert.NotEqual(t, before[r].buf.Raw(), row.buf.Raw(), "row %d moved", r)
			}
		}
		checkArraysAt(t, c, want, prims, Current, 3, "after the move")
		c.Close()
	}
	assert.Equal(t, live0, buffer.LiveCount(), "every buffer reference is released")
}

// An array column takes its versions along when a placed change moves it: snapshots behind
// the floor are still served, each payload (shared by rows and images) moves once, and the
// frontier stays. A version that fails to move drops the versions (the frontier rises) and
// leaves the column's rows served.
func TestArrayColumnMovesItsVersions(t *testing.T) {
	live0 := buffer.LiveCount()
	prims := []uint64{1, 2, 3, 4}
	m := arrayModel{1: {{ordinal: 1, value: []uint32{1}}}, 2: {{ordinal: 1, value: []uint32{2, 2}}},
		3: {{ordinal: 1, value: []uint32{3}}}, 4: {{ordinal: 1, value: []uint32{4, 4}}}}
	for _, failAt := range []int{0, 3} {
		placer := &copyPlacer{}
		c, err := NewPlaced(1, u32Array, HostStorage(), placer)
		require.NoError(t, err)
		c.SetVersionWindow(8)
		c.Stage(prims, arrayDelta(t, 1, 1, [][]uint32{{1}, {2, 2}, {3}, {4, 4}}, false))
		require.NoError(t, c.Seal(1))
		c.Stage(prims[1:3], arrayDelta(t, 2, 2, [][]uint32{{20}, {30}}, true)) // a span inside
		require.NoError(t, c.Seal(2))
		c.Stage([]uint64{4, 1}, arrayDelta(t, 3, 3, [][]uint32{{40}, {10}}, false)) // per row
		require.NoError(t, c.Seal(3))
		placer.moves, placer.failAt = 0, failAt
		moved := arrayDelta(t, 4, 4, [][]uint32{{300}}, false)
		moved.Place = CUDA(0)
		c.Stage(prims[2:3], moved)
		require.NoError(t, c.Seal(4))
		want := arrayModel{}
		for p, chs := range m {
			want[p] = slices.Clone(chs)
		}
		want[2] = append(want[2], arrayChange{ordinal: 2, value: []uint32{20}})
		want[3] = append(want[3], arrayChange{ordinal: 2, value: []uint32{30}}, arrayChange{ordinal: 4, value: []uint32{300}})
		want[4] = append(want[4], arrayChange{ordinal: 3, value: []uint32{40}})
		want[1] = append(want[1], arrayChange{ordinal: 3, value: []uint32{10}})
		checkArraysAt(t, c, want, prims, Current, 4, "current, after the move")
		if failAt == 0 {
			assert.Equal(t, 4, placer.moves, "three payloads of the rows and images, each once, and the delta's own")
			assert.Zero(t, c.VersionFrontier(), "no version was dropped")
			for n := uint64(1); n <= 3; n++ {
				checkArraysAt(t, c, want, prims, n, n, fmt.Sprintf("latest(%d) after the move", n))
			}
		} else {
			assert.Equal(t, uint64(3), c.VersionFrontier(), "a version that failed to move drops them all")
		}
		c.Close()
	}
	assert.Equal(t, live0, buffer.LiveCount(), "every buffer reference is released")
}
