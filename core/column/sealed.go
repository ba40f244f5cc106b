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

// SealedChanges calls fn, in row order, for each row whose newest sealed change lies in
// (from, floor], for replication (docs/replication.md): the row, its prim, that change's ordinal, and
// its sealed state, a tombstone (deleted) or a value (a fixed row's bytes, or an array row's
// element bytes; valid only during the call). When change records above from were coalesced
// away (the retention frontier passed from+1), membership is no longer exact: fn sees every
// row with a sealed version, at floor, and exact is false.
func (c *Column) SealedChanges(from, floor uint64, fn func(row int32, prim, ordinal uint64, deleted bool, value []byte)) (exact bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	views := hostViews{placer: c.placer}
	defer views.release()
	emit := func(r int32, ordinal uint64) {
		k := c.keys.get(r)
		switch {
		case !k.hasSealed:
		case k.deleted:
			fn(r, c.rows.primAt(r), ordinal, true, nil)
		case c.Schema.IsArray:
			a := c.arrays.get(r)
			if a.n == 0 {
				fn(r, c.rows.primAt(r), ordinal, false, []byte{})
				return
			}
			fn(r, c.rows.primAt(r), ordinal, false, views.bytes(a.buf)[a.off:a.off+a.n*int64(c.rowBytes)])
		default:
			rb := c.rowBytes
			fn(r, c.rows.primAt(r), ordinal, false, views.bytes(c.sealed)[int(r)*rb:int(r+1)*rb])
		}
	}
	nrows := c.rows.len()
	if c.frontier > from+1 {
		for r := int32(0); int(r) < nrows; r++ {
			emit(r, floor)
		}
		return false
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
		for r, o := range at {
			if o != 0 {
				emit(int32(r), o)
			}
		}
		return true
	}
	at := map[int32]uint64{}
	for _, rec := range c.records[lo:hi] {
		for _, r := range rec.rows {
			at[r] = rec.ordinal
		}
	}
	rows := make([]int32, 0, len(at))
	for r := range at {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i] < rows[j] })
	for _, r := range rows {
		emit(r, at[r])
	}
	return true
}
