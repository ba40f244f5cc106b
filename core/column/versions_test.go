package column

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
)

// windowed is a column keeping keep ordinals of versions.
func windowed(t *testing.T, keep uint64) *Column {
	c, err := New(1, f32)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	c.SetVersionWindow(keep)
	return c
}

// A delta naming a row twice (row k of its payload for each) ends with the later value, and
// the state before it is restored exactly, whether the fold swapped its own payload in (Src
// nil) or copied the rows out first (Src set, or a payload someone else holds).
func TestVersionsRestoreRowsNamedTwice(t *testing.T) {
	prims := []uint64{1, 2, 3}
	for _, how := range []string{"swap", "copy", "shared"} {
		t.Run(how, func(t *testing.T) {
			c := windowed(t, 4)
			write(c, 1, 1, prims, nil, payload(t, 1, 2, 3))
			require.NoError(t, c.Seal(1))
			twice := []uint64{2, 3, 2}
			switch how {
			case "swap":
				write(c, 2, 2, twice, nil, payload(t, 20, 30, 21))
			case "copy":
				write(c, 2, 2, twice, []int32{2, 1, 0}, payload(t, 21, 30, 20))
			case "shared":
				p := payload(t, 20, 30, 21)
				held := p.Retain()
				defer func() {
					assert.Equal(t, []float32{20, 30, 21}, bufferValues(held, 3), "a payload someone else holds is never written")
					held.Release()
				}()
				write(c, 2, 2, twice, nil, p)
			}
			require.NoError(t, c.Seal(2))
			got, err := latestAt(c, prims, 2)
			require.NoError(t, err)
			assert.Equal(t, []float32{1, 21, 30}, got)
			got, err = latestAt(c, prims, 1)
			require.NoError(t, err)
			assert.Equal(t, []float32{1, 2, 3}, got)
		})
	}
}

// Reads behind the floor share one materialised state per fold, as reads at the floor share
// the sealed buffer: the same buffer for every read at N (and at any N it serves), through the
// query's cached selection when only values changed. At most maxCachedStates are kept.
func TestVersionsReadsAtNShareOneState(t *testing.T) {
	c := windowed(t, 8)
	prims := []uint64{1, 2, 3, 4}
	write(c, 1, 1, prims, nil, payload(t, 1, 1, 1, 1))
	require.NoError(t, c.Seal(1))
	for o := uint64(2); o <= 6; o++ {
		write(c, o, o, []uint64{prims[o%4]}, nil, payload(t, float32(o)))
		require.NoError(t, c.Seal(o))
	}
	read := func(sel *Selection, end uint64) (*Selection, *Selection, Snapshot) {
		cache, picked, snap, err := c.ReadSnapshot(prims, sel, Bounds{End: end}, describe)
		require.NoError(t, err)
		return cache, picked, snap
	}
	images := c.VersionBytes()
	sel, picked, first := read(nil, 3)
	defer first.Release()
	assert.Same(t, sel, picked, "values changed only: the current selection")
	assert.Equal(t, []float32{1, 1, 2, 3}, values(first, picked))
	before := c.VersionBytes()
	assert.Equal(t, images+4*4, before, "one state: a copy of the 4 rows")
	_, _, again := read(sel, 3)
	defer again.Release()
	assert.Equal(t, first.Views[0].Buffer.Raw(), again.Views[0].Buffer.Raw(), "the same state, not a copy")
	assert.Equal(t, before, c.VersionBytes())
	assert.Equal(t, uint64(3), again.Ordinal)

	write(c, 7, 7, prims[:1], nil, payload(t, 7))
	require.NoError(t, c.Seal(7))
	images = c.VersionBytes() - 4*4
	_, picked, later := read(sel, 3)
	defer later.Release()
	assert.Equal(t, first.Views[0].Buffer.Raw(), later.Views[0].Buffer.Raw(), "a later fold leaves the state at 3")
	assert.Equal(t, []float32{1, 1, 2, 3}, values(later, picked))

	for _, end := range []uint64{4, 5, 2} {
		_, picked, s := read(sel, end)
		assert.Equal(t, map[uint64][]float32{4: {4, 1, 2, 3}, 5: {4, 5, 2, 3}, 2: {1, 1, 2, 1}}[end], values(s, picked), "latest(%d)", end)
		s.Release()
	}
	c.mu.Lock()
	assert.Len(t, c.ver.cached, maxCachedStates)
	c.mu.Unlock()
	assert.Equal(t, []float32{1, 1, 2, 3}, values(first, sel), "a reader keeps its state after it is dropped")
	c.DropVersionStates()
	assert.Equal(t, images, c.VersionBytes(), "the states' bytes go back")
}

// A range ending inside the window selects the keys changed in it, in their state at its end.
func TestVersionsRangeIsTheStateAtItsEnd(t *testing.T) {
	c := windowed(t, 8)
	prims := []uint64{1, 2}
	write(c, 1, 1, prims, nil, payload(t, 1, 2))
	require.NoError(t, c.Seal(1))
	c.Stage(prims[:1], &Delta{Ordinal: 2, Seq: 2, Tombstone: true})
	write(c, 3, 3, prims, nil, payload(t, 3, 4))
	require.NoError(t, c.Seal(3))
	sel, err := c.SelectRange(prims, Bounds{Start: 1, End: 1}, describe)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2}, rangeValues(sel))
	sel.Values.Release()
	sel, err = c.SelectRange(prims, Bounds{Start: 2, End: 2}, describe)
	require.NoError(t, err)
	assert.Equal(t, []uint32{0}, sel.TombQueryIdx, "prim 1 deleted at 2")
	assert.Empty(t, sel.ValueRows)
	assert.Equal(t, uint64(2), sel.TombOrdinal)
	c.SetVersionWindow(0) // the reference's answer: a sealed change after the end refuses it
	_, err = c.SelectRange(prims, Bounds{Start: 1, End: 1}, describe)
	assert.Error(t, err)
}

func rangeValues(sel RangeSelection) []float32 {
	return values(sel.Values, &Selection{Rows: sel.ValueRows, Count: len(sel.ValueRows)})
}

func bufferValues(b buffer.Buffer, n int) []float32 {
	return append([]float32(nil), unsafe.Slice((*float32)(b.Data()), n)...)
}

// A state no reader holds is rewritten in place into the state at another N (only the rows
// the folds between the two changed), and one a reader holds is never touched: random
// partial writes and deletes, reads at random N inside the window (some kept, some released)
// against a model of every ordinal's values.
func TestVersionsReuseStatesNoReaderHolds(t *testing.T) {
	const nprims, keep = 64, 6
	rng := rand.New(rand.NewPCG(3, 14))
	c := windowed(t, keep)
	prims := make([]uint64, nprims)
	vals := make([]float32, nprims)
	for i := range prims {
		prims[i], vals[i] = uint64(i+1), float32(i)
	}
	write(c, 1, 1, prims, nil, payload(t, vals...))
	require.NoError(t, c.Seal(1))
	type state struct {
		vals []float32
		live []bool
	}
	live := make([]bool, nprims)
	for i := range live {
		live[i] = true
	}
	model := map[uint64]state{1: {slices.Clone(vals), slices.Clone(live)}}
	type held struct {
		snap Snapshot
		sel  *Selection
		want []float32
	}
	var holding []held
	reused := 0
	for o := uint64(2); o <= 60; o++ {
		n := 1 + rng.IntN(8)
		rows := make([]uint64, n)
		w := make([]float32, n)
		for k := range rows {
			i := rng.IntN(nprims)
			if rng.IntN(3) == 0 && k > 0 { // a row named twice
				i = int(rows[k-1] - 1)
			}
			rows[k], w[k] = prims[i], float32(o*100+uint64(k))
			vals[i], live[i] = w[k], true
		}
		write(c, o, o, rows, nil, payload(t, w...))
		if rng.IntN(5) == 0 {
			i := rng.IntN(nprims)
			c.Stage(prims[i:i+1], &Delta{Ordinal: o, Seq: o + 1000, Tombstone: true})
			live[i] = false
		}
		require.NoError(t, c.Seal(o))
		model[o] = state{slices.Clone(vals), slices.Clone(live)}
		for range 3 {
			end := uint64(max(1, int(o)-rng.IntN(keep+1)))
			before := map[any]bool{}
			c.mu.Lock()
			for _, im := range c.ver.cached {
				before[im.state.buf.Raw()] = true
			}
			c.mu.Unlock()
			sel, snap, err := snapshot(c, prims, end)
			require.NoError(t, err)
			var want []float32
			for i, v := range model[end].vals {
				if model[end].live[i] {
					want = append(want, v)
				}
			}
			if sel.Count == 0 {
				assert.Empty(t, want, "latest(%d) at %d", end, o)
				snap.Release()
				continue
			}
			require.Equal(t, want, values(snap, sel), "latest(%d) after sealing %d", end, o)
			if end < o && before[snap.Views[0].Buffer.Raw()] {
				reused++
			}
			if rng.IntN(4) == 0 {
				holding = append(holding, held{snap, sel, want})
			} else {
				snap.Release()
			}
		}
	}
	for _, h := range holding {
		assert.Equal(t, h.want, values(h.snap, h.sel), "a state a reader holds is never rewritten")
		h.snap.Release()
	}
	assert.Positive(t, reused, "some reads were served by a reused state")
}
