package column

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkIndex compares x with a plain map model.
func checkIndex(t *testing.T, x *rowIndex, model map[uint64]int32, order []uint64) {
	t.Helper()
	require.Equal(t, len(order), x.len())
	for r, p := range order {
		got, ok := x.lookup(p)
		require.True(t, ok, "prim %d", p)
		require.Equal(t, int32(r), got)
		require.Equal(t, p, x.primAt(int32(r)))
	}
	for _, p := range []uint64{0, 1, 5_000_000, 1 << 40} {
		if _, in := model[p]; !in {
			_, ok := x.lookup(p)
			require.False(t, ok, "prim %d has no row", p)
		}
	}
}

// indexOf adds rows for ids in order; it returns the index, the model and the order.
func indexOf(ids []uint64) (rowIndex, map[uint64]int32, []uint64) {
	x := newRowIndex()
	model := map[uint64]int32{}
	for _, p := range ids {
		model[p] = x.add(p)
	}
	return x, model, ids
}

func TestRowIndexStaysOneRunForConsecutiveIDs(t *testing.T) {
	var ids []uint64
	for p := uint64(100); p < 1100; p++ {
		ids = append(ids, p)
	}
	x, model, order := indexOf(ids)
	assert.True(t, x.ordered)
	assert.Len(t, x.runs, 1)
	assert.Nil(t, x.prims, "no per-row table")
	checkIndex(t, &x, model, order)
}

// Meshes under group prims: increasing ids with a gap per group stay runs (no table).
func TestRowIndexKeepsRunsOfIncreasingIDs(t *testing.T) {
	var ids []uint64
	for g := range uint64(50) {
		for k := range uint64(1000) {
			ids = append(ids, 7+g*1001+k) // one id per group skipped (the group prim)
		}
	}
	x, model, order := indexOf(ids)
	assert.True(t, x.ordered)
	assert.Len(t, x.runs, 50)
	assert.Nil(t, x.prims)
	assert.Nil(t, x.dense)
	checkIndex(t, &x, model, order)
	for _, p := range []uint64{6, 7 + 1000, 7 + 49*1001 + 1000} { // before, the gaps, after
		_, ok := x.lookup(p)
		assert.False(t, ok, "prim %d has no row", p)
	}
}

// Many short runs become a table: beyond maxRuns the runs would cost more than it.
func TestRowIndexShortRunsBecomeATable(t *testing.T) {
	var ids []uint64
	for i := range uint64(2000) {
		ids = append(ids, 10+2*i) // every other id: runs of one
	}
	x, model, order := indexOf(ids)
	assert.False(t, x.ordered)
	assert.NotNil(t, x.dense)
	checkIndex(t, &x, model, order)
}

// A decreasing id leaves runs mode; ids spread too far for a table go to the map at once.
func TestRowIndexLeavesRunsOnDisorder(t *testing.T) {
	x, model, order := indexOf([]uint64{1 << 40, 1<<40 + 1, 5})
	assert.False(t, x.ordered)
	assert.NotNil(t, x.sparse)
	checkIndex(t, &x, model, order)
	y := newRowIndex()
	y.add(3)
	y.add(1 << 40) // a second run, far away
	assert.True(t, y.ordered)
	y.add(4)
	assert.NotNil(t, y.sparse)
	got, ok := y.lookup(1 << 40)
	assert.True(t, ok)
	assert.Equal(t, int32(1), got)
}

func TestRowIndexGoesDenseThenSparse(t *testing.T) {
	x := newRowIndex()
	model := map[uint64]int32{}
	var order []uint64
	add := func(p uint64) {
		model[p] = x.add(p)
		order = append(order, p)
	}
	for p := uint64(10); p < 20; p++ {
		add(p)
	}
	add(5) // breaks the order, below the first id
	assert.False(t, x.ordered)
	assert.NotNil(t, x.dense)
	add(40)
	checkIndex(t, &x, model, order)
	add(1 << 40) // far away: a dense table would be huge
	assert.NotNil(t, x.sparse)
	assert.Nil(t, x.dense)
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 500; i++ {
		p := uint64(rng.Int63())
		if _, dup := model[p]; !dup {
			add(p)
		}
	}
	checkIndex(t, &x, model, order)
}

func TestRowIndexRandomDenseIDs(t *testing.T) {
	x := newRowIndex()
	model := map[uint64]int32{}
	var order []uint64
	rng := rand.New(rand.NewSource(1))
	for _, p := range rng.Perm(5000) {
		id := uint64(p) + 1000
		model[id] = x.add(id)
		order = append(order, id)
	}
	assert.NotNil(t, x.dense, "a permutation of a compact id range stays dense")
	checkIndex(t, &x, model, order)
}

func TestKeyStoreIsUniformUntilRowsDiffer(t *testing.T) {
	var k keyStore
	for i := 0; i < 100; i++ {
		k.add(key{})
	}
	assert.Nil(t, k.states)
	assert.True(t, k.anyNotVisible())
	k.setAll(key{hasSealed: true})
	assert.Nil(t, k.states)
	assert.False(t, k.anyNotVisible())
	k.set(7, key{hasSealed: true}) // same state: still uniform
	assert.Nil(t, k.states)
	k.set(7, key{hasSealed: true, deleted: true})
	require.NotNil(t, k.states)
	assert.True(t, k.anyNotVisible())
	assert.Equal(t, key{hasSealed: true, deleted: true}, k.get(7))
	assert.Equal(t, key{hasSealed: true}, k.get(8))
	k.add(key{})
	assert.Equal(t, 101, k.len())
	assert.Equal(t, key{}, k.get(100))
}

func TestIdentityRowsAreSharedAndReadOnly(t *testing.T) {
	a := identityRows(10)
	b := identityRows(4)
	assert.Equal(t, []int32{0, 1, 2, 3}, b)
	assert.Equal(t, &a[0], &b[0])
	assert.Equal(t, len(b), cap(b), "appends copy instead of writing into the shared sequence")
}
