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
