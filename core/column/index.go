package column

import "sync"

// rowIndex maps prims (path ids) to rows and back, in as little memory as the rows allow:
//
//   - runs: rows created in order from increasing path ids, as runs of consecutive ids (row
//     r+k of a run holds prim id+k). A path list interned in one go is one run; the meshes of
//     a scene under their group prims are one run per group. It costs 16 bytes per run, nothing
//     per row (docs/architecture.md, "Memory");
//   - dense: a row table indexed by path id - lo, when the ids are compact;
//   - sparse: a map, otherwise.
//
// It starts with runs and converts once (to dense or sparse) when a row breaks the order, or
// when the runs get short enough that a table is as cheap.
type rowIndex struct {
	n       int
	ordered bool    // runs mode
	runs    []idRun // runs mode: in row order, ids increasing

	prims  []uint64         // row -> prim (dense and sparse)
	lo     uint64           // dense: path id of dense[0]
	dense  []int32          // dense: row+1 per path id (0: no row)
	sparse map[uint64]int32 // sparse
	// sparse: the id range seen, to go back to dense when the ids turn out compact
	minID, maxID uint64
}

// idRun is rows row, row+1, ..., row+n-1 holding prims id, id+1, ..., id+n-1.
type idRun struct {
	id  uint64
	row int32
	n   int32
}

func newRowIndex() rowIndex { return rowIndex{ordered: true} }

// maxDenseSpan bounds the id span of a dense table: 4 bytes per id in the span, so twice the
// rows (plus slack) costs at most ~8 bytes per row, less than a map.
func maxDenseSpan(rows int) uint64 { return 2*uint64(rows) + 4096 }

// maxRuns bounds the runs of rows rows: beyond it runs average under 8 rows, and a lookup's
// binary search is no longer worth the memory it saves over a table.
func maxRuns(rows int) int { return rows/8 + 64 }

// len is the number of rows.
func (x *rowIndex) len() int { return x.n }

// lastAtOrBelow is the last i in [0, n) for which below(i) holds (-1 if none), for below
// true on a prefix (a binary search over runs or spans in order).
func lastAtOrBelow(n int, below func(i int) bool) int {
	lo, hi := 0, n // the answer is in [lo-1, hi)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if below(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// runOfID is the index of the run that would hold id p (the last run starting at or below
// it; -1 if none).
func (x *rowIndex) runOfID(p uint64) int {
	return lastAtOrBelow(len(x.runs), func(i int) bool { return x.runs[i].id <= p })
}

// lookup returns prim's row.
func (x *rowIndex) lookup(p uint64) (int32, bool) {
	switch {
	case x.ordered:
		if i := x.runOfID(p); i >= 0 && p-x.runs[i].id < uint64(x.runs[i].n) {
			return x.runs[i].row + int32(p-x.runs[i].id), true
		}
		return 0, false
	case x.sparse != nil:
		r, ok := x.sparse[p]
		return r, ok
	default:
		if p >= x.lo && p-x.lo < uint64(len(x.dense)) {
			if r := x.dense[p-x.lo]; r > 0 {
				return r - 1, true
			}
		}
		return 0, false
	}
}

// primAt is the prim of row r.
func (x *rowIndex) primAt(r int32) uint64 {
	if !x.ordered {
		return x.prims[r]
	}
	run := x.runs[lastAtOrBelow(len(x.runs), func(i int) bool { return x.runs[i].row <= r })]
	return run.id + uint64(r-run.row)
}

// add appends a row for prim (which must not have one) and returns it.
func (x *rowIndex) add(p uint64) int32 {
	r := int32(x.n)
	if x.ordered {
		if x.addToRuns(p) {
			x.n++
			return r
		}
		x.materialize()
	}
	x.prims = append(x.prims, p)
	x.n++
	if x.sparse != nil {
		x.sparse[p] = r
		x.minID, x.maxID = min(x.minID, p), max(x.maxID, p)
		if x.n&(x.n-1) == 0 && x.maxID-x.minID < maxDenseSpan(x.n) {
			x.toDense() // re-checked each time the row count doubles
		}
		return r
	}
	lo, hi := min(x.lo, p), max(x.lo+uint64(len(x.dense)), p+1)
	if len(x.dense) == 0 {
		lo, hi = p, p+1
	}
	if hi-lo > maxDenseSpan(x.n) {
		x.toSparse()
		x.sparse[p] = r
		return r
	}
	if lo < x.lo || hi > x.lo+uint64(len(x.dense)) {
		grown := make([]int32, max(hi-lo, uint64(len(x.dense))*5/4))
		copy(grown[x.lo-lo:], x.dense)
		x.dense, x.lo = grown, lo
	}
	x.dense[p-x.lo] = r + 1
	return r
}

// addToRuns records row n for p in runs mode; false when p breaks the order or the runs
// would get too many.
func (x *rowIndex) addToRuns(p uint64) bool {
	if len(x.runs) == 0 {
		x.runs = append(x.runs, idRun{id: p, row: 0, n: 1})
		return true
	}
	last := &x.runs[len(x.runs)-1]
	end := last.id + uint64(last.n)
	switch {
	case p == end:
		last.n++
		return true
	case p > end && len(x.runs) < maxRuns(x.n+1):
		x.runs = append(x.runs, idRun{id: p, row: int32(x.n), n: 1})
		return true
	}
	return false
}

// materialize leaves runs mode: it writes out the prims of the existing rows into a dense
// table, or a map when their ids are spread too far.
func (x *rowIndex) materialize() {
	x.ordered = false
	x.prims = make([]uint64, 0, x.n+x.n/4+1)
	for _, run := range x.runs {
		for k := range uint64(run.n) {
			x.prims = append(x.prims, run.id+k)
		}
	}
	x.runs = nil
	if x.n == 0 {
		return
	}
	x.minID, x.maxID = x.prims[0], x.prims[x.n-1] // ids were increasing
	if x.maxID-x.minID >= maxDenseSpan(x.n) {
		x.toSparse()
		return
	}
	x.toDense()
}

func (x *rowIndex) toSparse() {
	x.sparse = make(map[uint64]int32, x.n)
	x.minID, x.maxID = x.prims[0], x.prims[0]
	for r, p := range x.prims {
		x.sparse[p] = int32(r)
		x.minID, x.maxID = min(x.minID, p), max(x.maxID, p)
	}
	x.dense = nil
}

func (x *rowIndex) toDense() {
	x.lo = x.minID
	x.dense = make([]int32, x.maxID-x.minID+1)
	for r, p := range x.prims {
		x.dense[p-x.lo] = int32(r) + 1
	}
	x.sparse = nil
}

// identity is a shared, read-only 0, 1, 2, ... sequence: row lists that are exactly the first
// n rows (a write through the query that created the column) all alias it.
var identity struct {
	mu   sync.Mutex
	rows []int32
}

// identityRows returns the rows 0..n-1 (read-only; full slice expression, so appends copy).
func identityRows(n int) []int32 {
	identity.mu.Lock()
	defer identity.mu.Unlock()
	if len(identity.rows) < n {
		grown := make([]int32, max(n, 2*len(identity.rows)))
		for i := range grown {
			grown[i] = int32(i)
		}
		identity.rows = grown // older slices stay valid: they are never written
	}
	return identity.rows[:n:n]
}
