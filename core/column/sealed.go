package column

import "sort"

// SealedFixed returns, for a fixed-size column, every prim whose sealed version is a value
// (not a tombstone; keys with only unsealed changes are left out), the row of each, and a
// snapshot pinning the sealed buffer: prim k's value is at byte rows[k]*RowBytes() of
// snap.Views[0]. The caller releases snap. Array columns return nothing.
func (c *Column) SealedFixed() (prims []uint64, rows []int32, snap Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Schema.IsArray {
		return nil, nil, Snapshot{}
	}
	for r := int32(0); int(r) < c.rows.len(); r++ {
		if c.keys.get(r).visible() {
			prims = append(prims, c.rows.primAt(r))
			rows = append(rows, r)
		}
	}
	snap = Snapshot{Views: []View{{Buffer: c.sealed.Retain(), Rows: int64(c.sealedRows)}},
		Ordinal: c.sealedOrdinal, Layout: c.layout}
	return prims, rows, snap
}

// SealedRows is what SealedChanges collects, in row order: each changed row, its prim, the
// ordinal of its newest sealed change and whether that change is a tombstone. Values holds
// the written rows' sealed bytes back to back (fixed rows of RowBytes() each, array rows of
// Lengths[k] elements each).
type SealedRows struct {
	Rows     []int32
	Prims    []uint64
	Ordinals []uint64
	Deleted  []bool
	Values   []byte
	Lengths  []int64
}

// SealedChanges collects, for replication (docs/replication.md), each row whose newest
// sealed change lies in (from, floor], with that change's ordinal and its sealed state. When
// change records above from were coalesced away (the retention frontier passed from+1),
// membership is no longer exact: every row with a sealed version is collected, at floor, and
// exact is false. Runs of consecutive written rows of a fixed-size column are copied from the
// sealed buffer in one piece: a dense change set costs one copy, not one per row.
func (c *Column) SealedChanges(from, floor uint64) (out SealedRows, exact bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	views := hostViews{placer: c.placer}
	defer views.release()
	rows, ords, exact := c.changedRows(from, floor)
	n := len(rows)
	out = SealedRows{Rows: make([]int32, 0, n), Prims: make([]uint64, 0, n), Ordinals: make([]uint64, 0, n), Deleted: make([]bool, 0, n)}
	rb := c.rowBytes
	var sealed []byte
	if !c.Schema.IsArray {
		out.Values = make([]byte, 0, n*rb)
		if n > 0 {
			sealed = views.bytes(c.sealed)
		}
	}
	run := int32(-1) // first row of the pending run of written fixed rows
	flush := func(end int32) {
		if run >= 0 {
			out.Values = append(out.Values, sealed[int(run)*rb:int(end)*rb]...)
			run = -1
		}
	}
	for i, r := range rows {
		k := c.keys.get(r)
		if !k.hasSealed {
			continue
		}
		out.Rows = append(out.Rows, r)
		out.Prims = append(out.Prims, c.rows.primAt(r))
		out.Ordinals = append(out.Ordinals, ords[i])
		out.Deleted = append(out.Deleted, k.deleted)
		switch {
		case k.deleted:
			flush(r)
		case c.Schema.IsArray:
			a := c.arrays.get(r)
			out.Lengths = append(out.Lengths, a.n)
			if a.n > 0 {
				out.Values = append(out.Values, views.bytes(a.buf)[a.off:a.off+a.n*int64(rb)]...)
			}
		default:
			if run >= 0 && i > 0 && rows[i-1] != r-1 {
				flush(rows[i-1] + 1)
			}
			if run < 0 {
				run = r
			}
		}
	}
	if n > 0 {
		flush(rows[n-1] + 1)
	}
	return out, exact
}

// changedRows lists, in row order, the rows whose newest change lies in (from, floor] and
// that change's ordinal; inexact (every row, at floor) when the records were coalesced away.
func (c *Column) changedRows(from, floor uint64) (rows []int32, ords []uint64, exact bool) {
	nrows := c.rows.len()
	if c.frontier > from+1 {
		rows, ords = make([]int32, nrows), make([]uint64, nrows)
		for r := range rows {
			rows[r], ords[r] = int32(r), floor
		}
		return rows, ords, false
	}
	lo := sort.Search(len(c.records), func(i int) bool { return c.records[i].ordinal > from })
	hi := sort.Search(len(c.records), func(i int) bool { return c.records[i].ordinal > floor })
	touched := 0
	for _, rec := range c.records[lo:hi] {
		touched += len(rec.rows)
	}
	if touched*4 >= nrows { // dense: one ordinal slot per row, then a pass in row order
		at := make([]uint64, nrows)
		for _, rec := range c.records[lo:hi] { // (ordinal, seq) order: later records win
			for _, r := range rec.rows {
				at[r] = rec.ordinal
			}
		}
		rows, ords = make([]int32, 0, min(touched, nrows)), make([]uint64, 0, min(touched, nrows))
		for r, o := range at {
			if o != 0 {
				rows, ords = append(rows, int32(r)), append(ords, o)
			}
		}
		return rows, ords, true
	}
	at := map[int32]uint64{}
	for _, rec := range c.records[lo:hi] {
		for _, r := range rec.rows {
			at[r] = rec.ordinal
		}
	}
	rows = make([]int32, 0, len(at))
	for r := range at {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i] < rows[j] })
	ords = make([]uint64, len(rows))
	for i, r := range rows {
		ords[i] = at[r]
	}
	return rows, ords, true
}
