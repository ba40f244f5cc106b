package core

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// History window: a snapshot at N inside the window is the state at N after later ordinals
// were sealed; below the window it is OUT_OF_RANGE, and get_oldest_preserved_ordinal says
// where the window starts.

func windowConfig(ordinals uint64) Config { return Config{History: &History{Ordinals: ordinals}} }

func (f *fixture) oldestPreserved() uint64 {
	f.t.Helper()
	h, op, err := f.s.GetOldestPreservedOrdinal()
	require.NoError(f.t, err)
	f.wait(op)
	v, err := f.s.FetchOrdinal(h, TimeoutInfinite)
	require.NoError(f.t, err)
	_, err = f.s.ReleaseOrdinalQuery(h)
	require.NoError(f.t, err)
	return v
}

// writePrims writes vals[i] to the prim at position idx[i] of the fixture's query (a mask
// over the whole query).
func (f *fixture) writePrims(ordinal uint64, idx []uint32, vals []float32) {
	f.t.Helper()
	n := len(f.s.queries[f.query].Paths)
	payload := make([]float32, n)
	mask := make([]uint64, (n+63)/64)
	for i, p := range idx {
		payload[p] = vals[i]
		mask[p/64] |= 1 << (p % 64)
	}
	f.wait(must(f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: ordinal,
		Tensors: []tensor.Tensor{f32Tensor(payload)}, Count: uint32(n), Mask: mask, HasMask: true})))
}

func TestDefaultStageKeepsTheDefaultWindow(t *testing.T) {
	assert.Equal(t, DefaultHistory, NewStageForTest(t, Config{}).HistoryWindow())
	assert.Equal(t, History{Ordinals: 3, Bytes: DefaultHistoryBytes}, NewStageForTest(t, windowConfig(3)).HistoryWindow())
}

func NewStageForTest(t *testing.T, cfg Config) *Stage {
	s := NewStage("test", cfg)
	t.Cleanup(s.Destroy)
	return s
}

// Window 3, a whole-column write at every ordinal 1..10: at floor 10 the reads at 7..10 are
// served, 6 is not (its state was replaced at 7, whose prior image is dropped).
func TestWindowBoundaryIsExact(t *testing.T) {
	f := newFixtureConfig(t, windowConfig(3), "/A", "/B")
	for o := uint64(1); o <= 10; o++ {
		f.wait(must(f.write(o, []float32{float32(o), float32(10 * o)})))
		f.seal(o)
	}
	assert.Equal(t, uint64(7), f.oldestPreserved())
	for n := uint64(7); n <= 10; n++ {
		assert.Equal(t, valuesAt(n, float32(n), float32(10*n)), f.read(latestAt(n)), "latest(%d)", n)
	}
	assert.Equal(t, failed(status.OutOfRange), f.read(latestAt(6)))
	assert.Equal(t, failed(status.OutOfRange), f.read(latestAt(0)))
	// An advance with no change moves the window on.
	f.seal(11)
	assert.Equal(t, uint64(8), f.oldestPreserved())
	assert.Equal(t, failed(status.OutOfRange), f.read(latestAt(7)))
	assert.Equal(t, valuesAt(8, 8, 80), f.read(latestAt(8)))
}

// Several ordinals sealed by one advance each keep their own state.
func TestWindowOneAdvanceOverSeveralOrdinals(t *testing.T) {
	f := newFixtureConfig(t, Config{}, "/A", "/B")
	f.wait(must(f.write(1, []float32{1, 2})))
	f.writePrims(2, []uint32{0}, []float32{20})
	f.writePrims(3, []uint32{1}, []float32{30})
	f.writePrims(3, []uint32{0}, []float32{31}) // same ordinal, later submission
	f.seal(3)
	assert.Equal(t, valuesAt(1, 1, 2), f.read(latestAt(1)))
	assert.Equal(t, valuesAt(2, 20, 2), f.read(latestAt(2)))
	assert.Equal(t, valuesAt(3, 31, 30), f.read(latestAt(3)))
}

// Deletes and re-creation inside the window: the key is present before its tombstone, absent
// from it until the re-creation, then shows the new value; a key created later is absent.
func TestWindowDeletesAndCreates(t *testing.T) {
	f := newFixtureConfig(t, Config{}, "/A", "/B", "/C")
	f.writePrims(2, []uint32{0, 1}, []float32{1, 2})
	f.seal(2)
	list, err := f.s.Dictionary().CreateListFromStrings([]string{"/A"})
	require.NoError(t, err)
	qa, err := f.s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = f.s.Dictionary().Release(list)
	f.wait(must(f.s.DeleteAttributes(DeleteRequest{Query: qa, Tokens: []uint64{f.attr}, Ordinal: 4})))
	f.writePrims(5, []uint32{2}, []float32{3}) // /C created at 5
	f.writePrims(6, []uint32{0}, []float32{9}) // /A re-created at 6
	f.seal(6)
	at := func(n uint64) [][]float32 {
		r := f.read(latestAt(n))
		require.Zero(t, r.code, "latest(%d)", n)
		return r.values
	}
	assert.Equal(t, [][]float32{{1, 2}}, at(3), "before the delete")
	assert.Equal(t, [][]float32{{2}}, at(4), "/A deleted at 4")
	assert.Equal(t, [][]float32{{2, 3}}, at(5), "/C created at 5")
	assert.Equal(t, [][]float32{{9, 2, 3}}, at(6), "/A re-created at 6")
	assert.Equal(t, noGroups, f.read(latestAt(1)), "nothing existed at 1")
}

// Several attributes read at N, in one read or in separate reads, show the same ordinal.
func TestWindowAttributesReadAtNAreConsistent(t *testing.T) {
	f := newFixtureConfig(t, Config{}, "/A", "/B")
	pos, vel := f.token("pos"), f.token("vel")
	write := func(attr, ordinal uint64, v float32) {
		f.wait(must(f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: attr, Ordinal: ordinal,
			Tensors: []tensor.Tensor{f32Tensor([]float32{v, v + 1})}})))
	}
	for o := uint64(1); o <= 6; o++ {
		write(pos, o, float32(100*o))
		if o%2 == 0 {
			write(vel, o, float32(1000*o))
		}
		f.seal(o)
	}
	both := f.readVia(f.query, []uint64{pos, vel}, latestAt(3))
	want := readResult{values: [][]float32{{300, 301}, {2000, 2001}}, ordinals: []uint64{3, 2}, deletes: []bool{false, false}}
	assert.Equal(t, want, both)
	assert.Equal(t, valuesAt(3, 300, 301), f.readVia(f.query, []uint64{pos}, latestAt(3)))
	assert.Equal(t, valuesAt(2, 2000, 2001), f.readVia(f.query, []uint64{vel}, latestAt(3)))
}

// An unsealed change at or before N still refuses the read (WRITE_FLOOR_VIOLATION); one after
// N does not.
func TestWindowKeepsTheUnsealedRule(t *testing.T) {
	f := newFixtureConfig(t, Config{}, "/A")
	f.wait(must(f.write(1, []float32{1})))
	f.wait(must(f.write(2, []float32{2})))
	f.seal(2)
	f.wait(must(f.write(4, []float32{4})))
	assert.Equal(t, valuesAt(1, 1), f.read(latestAt(1)))
	assert.Equal(t, failed(status.WriteFloorViolation), f.read(latestAt(4)))
	assert.Equal(t, valuesAt(2, 2), f.read(latestAt(3)))
}

// Partial changes keep only the changed rows: K versions of a column of which a few rows
// change per ordinal cost about K x the changed bytes; whole-column writes keep the replaced
// buffer itself, which a read at its ordinal shares (no copy).
func TestWindowSharesWhatDidNotChange(t *testing.T) {
	const rows, changed, k = 1000, 10, 8
	paths := make([]string, rows)
	for i := range paths {
		paths[i] = "/P" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	f := newFixtureConfig(t, windowConfig(k), paths...)
	vals := make([]float32, rows)
	f.wait(must(f.write(1, vals)))
	f.seal(1)
	for o := uint64(2); o <= 2+k; o++ {
		idx := make([]uint32, changed)
		v := make([]float32, changed)
		for i := range idx {
			idx[i] = uint32((int(o)*37 + i*97) % rows)
			v[i] = float32(o)
		}
		f.writePrims(o, idx, v)
		f.seal(o)
	}
	col := f.s.columns[f.attr][0]
	// Each version: the changed rows' 4 bytes plus their row index (4 bytes); their key states
	// (values before and after) are kept once per version, not per row.
	assert.Equal(t, int64(k)*int64(changed)*(4+4), col.VersionBytes(), "K x the changed rows, not K x %d rows", rows)
	assert.Less(t, col.VersionBytes(), int64(rows*4), "less than one copy of the column")

	// Whole-column writes: the version at N is the buffer that was sealed at N.
	g := newFixtureConfig(t, windowConfig(k), "/A", "/B")
	g.wait(must(g.write(1, []float32{1, 2})))
	g.seal(1)
	h, op, err := g.s.ReadAttributes(g.query, []uint64{g.attr}, latestAt(1))
	require.NoError(t, err)
	g.wait(op)
	grp, err := g.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(t, err)
	at1 := grp.Tensors[0].Buffer.Data()
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
	_, _ = g.s.ReleaseRead(h)
	g.wait(must(g.write(2, []float32{3, 4})))
	g.seal(2)
	h, op, err = g.s.ReadAttributes(g.query, []uint64{g.attr}, latestAt(1))
	require.NoError(t, err)
	g.wait(op)
	grp, err = g.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(t, err)
	assert.Equal(t, at1, grp.Tensors[0].Buffer.Data(), "the replaced buffer itself, not a copy")
	assert.Equal(t, []float32{1, 2}, groupValues(grp))
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
	_, _ = g.s.ReleaseRead(h)
}

// Memory goes back when the floor moves past the window, and an export of an old version
// keeps its bytes after that.
func TestWindowReleasesMemoryPastTheWindow(t *testing.T) {
	before := buffer.LiveCount()
	f := newFixtureConfig(t, windowConfig(4), "/A", "/B")
	f.wait(must(f.write(1, []float32{1, 2})))
	f.seal(1)
	for o := uint64(2); o <= 5; o++ {
		f.writePrims(o, []uint32{0}, []float32{float32(o)})
		f.seal(o)
	}
	col := f.s.columns[f.attr][0]
	require.Positive(t, col.VersionBytes())
	h, op, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, latestAt(2))
	require.NoError(t, err)
	f.wait(op)
	grp, err := f.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(t, err)
	ev, err := f.s.ExportView(grp.ID, 0, false)
	require.NoError(t, err)
	require.NoError(t, f.s.ReleaseGroup(grp.ID))
	_, _ = f.s.ReleaseRead(h)
	f.seal(20)
	assert.Zero(t, col.VersionBytes(), "every image is behind the window")
	assert.Equal(t, uint64(5), f.oldestPreserved())
	got := unsafe.Slice((*float32)(ev.Buffer.Data()), 2)
	assert.Equal(t, []float32{2, 2}, []float32{got[0], got[1]}, "the export holds its version")
	ev.Buffer.Release()
	f.s.Destroy()
	assert.Equal(t, before, buffer.LiveCount(), "nothing leaks")
}

// The stage's memory budget drops the oldest versions first and raises the frontier.
func TestWindowMemoryBudget(t *testing.T) {
	f := newFixtureConfig(t, Config{History: &History{Ordinals: 16, Bytes: 20}}, "/A", "/B")
	for o := uint64(1); o <= 6; o++ {
		f.wait(must(f.write(o, []float32{float32(o), float32(o)}))) // 8 bytes per replaced version
		f.seal(o)
	}
	col := f.s.columns[f.attr][0]
	assert.LessOrEqual(t, col.VersionBytes(), int64(20))
	frontier := f.oldestPreserved()
	assert.Equal(t, uint64(4), frontier, "images of 5 and 6 fit (16 bytes), 4's does not")
	assert.Equal(t, failed(status.OutOfRange), f.read(latestAt(frontier-1)))
	assert.Equal(t, valuesAt(frontier, float32(frontier), float32(frontier)), f.read(latestAt(frontier)))
}

// Window 0 keeps nothing: the reference's answer, and the records' frontier.
func TestWindowZeroIsParity(t *testing.T) {
	f := newFixtureConfig(t, windowConfig(0), "/A")
	f.wait(must(f.write(1, []float32{1})))
	f.seal(1)
	f.wait(must(f.write(2, []float32{2})))
	assert.Equal(t, failed(status.OutOfRange), f.read(latestAt(1)), "an unsealed change after 1")
	f.seal(2)
	assert.Equal(t, failed(status.OutOfRange), f.read(latestAt(1)))
	assert.Zero(t, f.s.columns[f.attr][0].VersionBytes())
	assert.Zero(t, f.oldestPreserved())
	assert.Equal(t, column.ReferenceParity, f.s.readAdmission)
}
