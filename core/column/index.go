package column

import "sync"

// rowIndex maps prims (path ids) to rows and back, in as little memory as the rows allow:
//
//   - affine: row r holds prim base+r. Rows created in order from consecutive path ids (a
//     path list interned in one go, the common bulk case) need no table at all;
//   - dense: a row table indexed by path id - lo, when the ids are compact;
//   - sparse: a map, otherwise.
//
// It starts affine and converts once (to dense or sparse) when a row breaks the pattern.
type rowIndex struct {
	n      int
	affine bool
	base   uint64

	prims  []uint64         // row -> prim (dense and sparse)
	lo     uint64           // dense: path id of dense[0]
	dense  []int32          // dense: row+1 per path id (0: no row)
	sparse map[uint64]int32 // sparse
	// sparse: the id range seen, to go back to dense when the ids turn out compact
	minID, maxID uint64
}

func newRowIndex() rowIndex { return rowIndex{affine: true} }

// maxDenseSpan bounds the id span of a dense table: 4 bytes per id in the span, so twice the
// rows (plus slack) costs at most ~8 bytes per row, less than a map.
func maxDenseSpan(rows int) uint64 { return 2*uint64(rows) + 4096 }

// len is the number of rows.
func (x *rowIndex) len() int { return x.n }

// lookup returns prim's row.
func (x *rowIndex) lookup(p uint64) (int32, bool) {
	switch {
	case x.affine:
		if p >= x.base && p-x.base < uint64(x.n) {
			return int32(p - x.base), true
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
	if x.affine {
		return x.base + uint64(r)
	}
	return x.prims[r]
}

// add appends a row for prim (which must not have one) and returns it.
func (x *rowIndex) add(p uint64) int32 {
	r := int32(x.n)
	if x.affine {
		if x.n == 0 {
			x.base = p
		}
		if p == x.base+uint64(x.n) {
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

// materialize leaves affine mode: it writes out the prims of the existing rows.
func (x *rowIndex) materialize() {
	x.affine = false
	x.prims = make([]uint64, x.n, x.n+x.n/4+1)
	for r := range x.prims {
		x.prims[r] = x.base + uint64(r)
	}
	if x.n > 0 {
		x.lo = x.base
		x.dense = make([]int32, x.n)
		for r := range x.dense {
			x.dense[r] = int32(r) + 1
		}
	}
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
