package column

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

// SealedChanges lists the rows whose newest sealed change lies in (from, floor], with that
// change's ordinal, for replication (docs/replication.md). When change records above from were
// coalesced away (the retention frontier passed from+1), membership is no longer exact: every
// row with a sealed version is listed, at floor, and exact is false.
func (c *Column) SealedChanges(from, floor uint64) (prims, ordinals []uint64, exact bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frontier > from+1 {
		for r := int32(0); int(r) < c.rows.len(); r++ {
			if c.keys.get(r).hasSealed {
				prims = append(prims, c.rows.primAt(r))
				ordinals = append(ordinals, floor)
			}
		}
		return prims, ordinals, false
	}
	at := map[int32]uint64{}
	var order []int32
	for _, rec := range c.records { // (ordinal, seq) order: later records win
		if rec.ordinal <= from || rec.ordinal > floor {
			continue
		}
		for _, r := range rec.rows {
			if _, seen := at[r]; !seen {
				order = append(order, r)
			}
			at[r] = rec.ordinal
		}
	}
	for _, r := range order {
		prims = append(prims, c.rows.primAt(r))
		ordinals = append(ordinals, at[r])
	}
	return prims, ordinals, true
}

// SealedValues calls fn for each of prims that has a sealed version: deleted for a tombstone,
// else the value (a fixed row's bytes, or an array row's element bytes; valid only during the
// call). Changes above the floor are not seen.
func (c *Column) SealedValues(prims []uint64, fn func(i int, deleted bool, value []byte)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	views := hostViews{placer: c.placer}
	defer views.release()
	rb := c.rowBytes
	for i, p := range prims {
		r, ok := c.rows.lookup(p)
		if !ok || !c.keys.get(r).hasSealed {
			continue
		}
		switch k := c.keys.get(r); {
		case k.deleted:
			fn(i, true, nil)
		case c.Schema.IsArray:
			a := c.arrays[r]
			if a.n == 0 {
				fn(i, false, []byte{})
				continue
			}
			fn(i, false, views.bytes(a.buf)[a.off:a.off+a.n*int64(rb)])
		default:
			fn(i, false, views.bytes(c.sealed)[int(r)*rb:int(r+1)*rb])
		}
	}
}
