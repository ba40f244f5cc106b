package column

import (
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
)

// Selection maps a query's prims onto this column's rows for latest reads. It stays valid
// while the column's layout generation is unchanged, so repeated reads through one query
// cost O(1) instead of a lookup per prim.
type Selection struct {
	Layout uint64
	// QueryIdx[k] is the query position of local prim k (nil = all query prims, in order).
	QueryIdx []uint32
	// Rows[k] is the column row of local prim k.
	Rows []int32
	// Count is the number of local prims.
	Count int
	// IdentityRows: Rows[k] == k for every k (no data index map needed).
	IdentityRows bool
	allSealed    bool
}

// Select resolves prims (in query order) to the rows a latest read returns: rows whose sealed
// version is not a tombstone, plus rows with no sealed version yet (Snapshot rejects those).
// It reuses prev when still valid.
func (c *Column) Select(prims []uint64, prev *Selection) *Selection {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev != nil && prev.Layout == c.layout {
		return prev
	}
	sel := &Selection{Layout: c.layout, IdentityRows: true}
	all := true
	for i, p := range prims {
		r, ok := c.rows.lookup(p)
		if ok {
			if k := c.keys.get(r); k.hasSealed && k.deleted {
				ok = false
			}
		}
		if !ok {
			if all {
				all = false
				sel.QueryIdx = make([]uint32, 0, len(prims))
				for j := 0; j < i; j++ {
					sel.QueryIdx = append(sel.QueryIdx, uint32(j))
				}
			}
			continue
		}
		if !all {
			sel.QueryIdx = append(sel.QueryIdx, uint32(i))
		}
		if int(r) != len(sel.Rows) {
			sel.IdentityRows = false
		}
		sel.Rows = append(sel.Rows, r)
	}
	sel.Count = len(sel.Rows)
	return sel
}

// View is one exported tensor: Rows values (fixed) or elements (array row) at ByteOffset of
// Buffer, which holds one reference for the reader.
type View struct {
	Buffer     buffer.Buffer
	ByteOffset int64
	Rows       int64
}

// Snapshot is a reader's view of sealed values.
type Snapshot struct {
	// Views: one for a fixed column (row k of local prim k, or Rows[k] with a data index map);
	// one per local prim for an array column.
	Views   []View
	Ordinal uint64
	Layout  uint64
	// Dense: a fixed snapshot whose rows are exactly the whole column in order, so local prim
	// k is row k with no data index map. Otherwise the view spans the whole column and the
	// reader needs the rows as a data index map (spec §1.4 canonical layout).
	Dense bool
}

// Release drops the snapshot's buffer references.
func (s Snapshot) Release() {
	for _, v := range s.Views {
		v.Buffer.Release()
	}
}

// Snapshot pins the sealed state of sel's rows. It fails with WRITE_FLOOR_VIOLATION when a
// selected key has no sealed version (only unsealed changes); describe names a prim.
func (c *Column) Snapshot(sel *Selection, describe func(prim uint64) string) (Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotRowsLocked(sel.Rows, sel.IdentityRows, sel.Layout == c.layout && sel.allSealed,
		func() { sel.allSealed = sel.Layout == c.layout }, describe)
}

func (c *Column) snapshotRowsLocked(rows []int32, identity, knownSealed bool, sealedOK func(),
	describe func(prim uint64) string) (Snapshot, error) {
	if !knownSealed {
		for _, r := range rows {
			if !c.keys.get(r).hasSealed {
				return Snapshot{}, status.Errorf(status.WriteFloorViolation,
					"%s has no sealed value yet (its latest change, at ordinal %d, is above the write floor); advance the write floor first",
					describe(c.rows.primAt(r)), c.latestPendingLocked(r))
			}
		}
		if sealedOK != nil {
			sealedOK()
		}
	}
	snap := Snapshot{Ordinal: c.sealedOrdinal, Layout: c.layout}
	if c.Schema.IsArray {
		snap.Views = make([]View, len(rows))
		for k, r := range rows {
			a := c.arrays[r]
			snap.Views[k] = View{Buffer: a.buf.Retain(), ByteOffset: a.off, Rows: a.n}
		}
		return snap, nil
	}
	snap.Dense = identity && len(rows) == c.sealedRows
	snap.Views = []View{{Buffer: c.sealed.Retain(), Rows: int64(c.sealedRows)}}
	return snap, nil
}

// RangeSelection is what a range read returns from this column: keys whose retained change
// membership intersects [start, end], split into value keys (with a snapshot of their values)
// and tombstoned keys.
type RangeSelection struct {
	ValueQueryIdx []uint32
	ValueRows     []int32
	Values        Snapshot // valid when ValueRows is not empty; release it
	TombQueryIdx  []uint32
}

// SelectRange selects the query's keys that changed in [start, end] (spec §1.10): it fails
// with WRITE_FLOOR_VIOLATION when a selected in-range change is above floor, and with
// OUT_OF_RANGE when a selected key changed again after end (latest-only payloads).
func (c *Column) SelectRange(prims []uint64, start, end, floor uint64, describe func(prim uint64) string) (RangeSelection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	const (
		inRange = 1 << iota
		aboveFloor
		afterEnd
	)
	marks := make([]uint8, c.rows.len())
	firstAbove := make(map[int32]uint64)
	for _, rec := range c.records {
		switch {
		case rec.ordinal < start:
			continue
		case rec.ordinal <= end:
			for _, r := range rec.rows {
				marks[r] |= inRange
				if rec.ordinal > floor {
					marks[r] |= aboveFloor
					if _, ok := firstAbove[r]; !ok {
						firstAbove[r] = rec.ordinal
					}
				}
			}
		default:
			for _, r := range rec.rows {
				marks[r] |= afterEnd
			}
		}
	}
	var sel RangeSelection
	for i, p := range prims {
		r, ok := c.rows.lookup(p)
		if !ok || marks[r]&inRange == 0 {
			continue
		}
		if marks[r]&aboveFloor != 0 {
			return RangeSelection{}, status.Errorf(status.WriteFloorViolation,
				"%s changed at ordinal %d, inside the range [%d, %d] but above the write floor %d",
				describe(p), firstAbove[r], start, end, floor)
		}
		if marks[r]&afterEnd != 0 {
			return RangeSelection{}, status.Errorf(status.OutOfRange,
				"%s changed again after the range end %d; only its latest value is stored, so the in-range value cannot be returned (widen the range or read latest)",
				describe(p), end)
		}
		if c.keys.get(r).deleted {
			sel.TombQueryIdx = append(sel.TombQueryIdx, uint32(i))
		} else {
			sel.ValueQueryIdx = append(sel.ValueQueryIdx, uint32(i))
			sel.ValueRows = append(sel.ValueRows, r)
		}
	}
	if len(sel.ValueRows) > 0 {
		identity := true
		for k, r := range sel.ValueRows {
			if int(r) != k {
				identity = false
				break
			}
		}
		// Every selected change is at or below the floor, hence sealed.
		sel.Values, _ = c.snapshotRowsLocked(sel.ValueRows, identity, true, nil, nil)
	}
	return sel, nil
}

// SealedOrdinal is the column's latest sealed change.
func (c *Column) SealedOrdinal() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sealedOrdinal
}
