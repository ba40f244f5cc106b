package column

import (
	"fmt"
	"sort"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
)

// Current is the end ordinal of a read of current values: no change comes after it.
const Current = ^uint64(0)

// Admission is how a read answers when a selected key changed after the requested end.
type Admission uint8

const (
	// ServeSealed (ours): a change after the end that is not sealed yet leaves the sealed state
	// untouched, and that state is the state at the end; only a sealed change after the end
	// (which replaced the state at the end) fails the read with OUT_OF_RANGE.
	ServeSealed Admission = iota
	// ReferenceParity answers as the reference, which keeps only the current payload: any
	// recorded change after the end fails the read with OUT_OF_RANGE, sealed or not.
	ReferenceParity
)

// Bounds is what a read asks of a column: a snapshot at End (ReadSnapshot), or the changes in
// [Start, End] (SelectRange).
type Bounds struct {
	Start, End uint64
	Admission  Admission
}

// Read admission, per column (the stage orders columns and attributes):
//
//  1. WRITE_FLOOR_VIOLATION when a selected change at or below End (a range: inside
//     [Start, End]) is not sealed yet.
//  2. Else OUT_OF_RANGE when a selected key changed after End (sealed changes only, unless
//     ReferenceParity); never when End is Current.
//  3. Else the sealed state of the selected keys, which is their state at End.
//
// A snapshot selects every queried key the column has (written, deleted, or only pending); a
// range selects the queried keys with a change inside [Start, End].

// Selection maps a query's prims onto this column's rows for snapshot reads. It stays valid
// while the column's layout generation is unchanged, so repeated reads through one query
// cost O(1) instead of a lookup per prim.
type Selection struct {
	Layout uint64
	// QueryIdx[k] is the query position of returned prim k (nil = all query prims, in order).
	QueryIdx []uint32
	// Rows[k] is the column row of returned prim k: the queried keys whose sealed version is
	// a value.
	Rows []int32
	// Count is the number of returned prims.
	Count int
	// IdentityRows: Rows[k] == k for every k (no data index map needed).
	IdentityRows bool

	// keys are the rows of every queried prim (what admission looks at).
	keys keySet
	// allVisible: Rows holds every row of the column (the group's ordinal is the column's).
	allVisible bool
	// ordinal is the group ordinal computed at sealGen ordinalGen (0: not yet).
	ordinal    uint64
	ordinalGen uint64
}

// selectLocked resolves prims (in query order) to the selected keys and the returned rows,
// reusing prev when still valid.
func (c *Column) selectLocked(prims []uint64, prev *Selection) *Selection {
	if prev != nil && prev.Layout == c.layout {
		return prev
	}
	nrows := c.rows.len()
	sel := &Selection{Layout: c.layout, IdentityRows: true}
	keys, visible := newRowSet(nrows), newRowSet(nrows)
	nkeys, nvisible := 0, 0
	all := true
	for i, p := range prims {
		r, ok := c.rows.lookup(p)
		if ok && keys.add(r) {
			nkeys++
		}
		if ok && !c.keys.get(r).visible() {
			ok = false
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
		if visible.add(r) {
			nvisible++
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
	sel.keys = keySet{all: nkeys == nrows}
	if !sel.keys.all {
		sel.keys.rows = keys
	}
	sel.allVisible = nvisible == nrows
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
	// one per local prim for an array column. None when no prim is returned.
	Views []View
	// Ordinal is the group's ordinal: the newest sealed change among the returned rows.
	Ordinal uint64
	Layout  uint64
	// Dense: a fixed snapshot whose rows are exactly the whole column in order, so local prim
	// k is row k with no data index map. Otherwise the view spans the whole column and the
	// reader needs the rows as a data index map.
	Dense bool
}

// Release drops the snapshot's buffer references.
func (s Snapshot) Release() {
	for _, v := range s.Views {
		v.Buffer.Release()
	}
}

// ReadSnapshot admits a snapshot read at b.End of prims (see the rules above) and pins the
// state at b.End of the returned keys. It returns the selection to cache for the next read
// through the same prims (prev is the cached one) even when admission fails, and the
// selection of the returned keys (the cached one, unless retained versions served the read);
// describe names a prim in errors.
func (c *Column) ReadSnapshot(prims []uint64, prev *Selection, b Bounds, describe func(prim uint64) string) (cache, picked *Selection, snap Snapshot, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sel := c.selectLocked(prims, prev)
	if err := c.admitSnapshotLocked(sel.keys, b, describe); err != nil {
		return sel, sel, Snapshot{}, err
	}
	if from, ok := c.versionAtLocked(b.End); ok {
		// Sealed changes after the end replaced some of its state (snapshot_at.go).
		picked, snap, err := c.versionSnapshotLocked(prims, sel, b.End, from)
		if err != nil {
			return sel, sel, Snapshot{}, err
		}
		return sel, picked, snap, nil
	}
	if sel.Count == 0 {
		return sel, sel, Snapshot{Layout: c.layout}, nil
	}
	snap = c.snapshotRowsLocked(sel.Rows, sel.IdentityRows)
	switch {
	case sel.allVisible:
		snap.Ordinal = c.sealedOrdinal
	case sel.ordinalGen == c.sealGen && sel.ordinalGen != 0:
		snap.Ordinal = sel.ordinal
	default:
		snap.Ordinal = c.newestSealedLocked(sel.Rows)
		sel.ordinal, sel.ordinalGen = snap.Ordinal, c.sealGen
	}
	return sel, sel, snap, nil
}

// admitSnapshotLocked applies rules 1 and 2 to a snapshot of keys.
func (c *Column) admitSnapshotLocked(keys keySet, b Bounds, describe func(uint64) string) error {
	for _, d := range c.pending { // (ordinal, seq) order
		if d.Ordinal > b.End {
			break
		}
		if r, ok := keys.first(d.Rows); ok {
			return status.Errorf(status.WriteFloorViolation,
				"%s changed at ordinal %d, at or before %s, and that change is not sealed yet (above the write floor %d); advance the write floor first",
				describe(c.rows.primAt(r)), d.Ordinal, endName(b.End), c.foldedTo)
		}
	}
	if b.End == Current || c.servesVersionLocked(b.End) {
		return nil
	}
	newest := c.sealedOrdinal
	if b.Admission == ReferenceParity && len(c.records) > 0 {
		newest = max(newest, c.records[len(c.records)-1].ordinal)
	}
	if newest <= b.End {
		return nil
	}
	if r, o, ok := c.changedAfterLocked(keys, b); ok {
		return c.outOfRange(describe(c.rows.primAt(r)), o, b)
	}
	return nil
}

// changedAfterLocked finds a key of keys with a change after b.End that rule 2 counts, and
// the ordinal of that change.
func (c *Column) changedAfterLocked(keys keySet, b Bounds) (int32, uint64, bool) {
	i := sort.Search(len(c.records), func(i int) bool { return c.records[i].ordinal > b.End })
	for _, rec := range c.records[i:] {
		if rec.ordinal > c.foldedTo && b.Admission != ReferenceParity {
			break
		}
		if r, ok := keys.first(rec.rows); ok {
			return r, rec.ordinal, true
		}
	}
	if c.dropped.any() {
		for r := int32(0); int(r) < c.rows.len(); r++ {
			if o := c.dropped.get(r); o > b.End && keys.has(r) {
				return r, o, true
			}
		}
	}
	return 0, 0, false
}

// endName names a requested end in messages.
func endName(end uint64) string {
	if end == Current {
		return "the requested end (current values)"
	}
	return fmt.Sprintf("the requested ordinal %d", end)
}

func (c *Column) outOfRange(what string, changed uint64, b Bounds) error {
	if b.Admission == ReferenceParity {
		return status.Errorf(status.OutOfRange,
			"%s changed at ordinal %d, after the requested ordinal %d; only its latest value is kept, so the value at %d cannot be returned",
			what, changed, b.End, b.End)
	}
	return status.Errorf(status.OutOfRange,
		"%s changed at ordinal %d, after the requested ordinal %d, and that change is sealed; its value at %d is no longer held (read at a later ordinal)",
		what, changed, b.End, b.End)
}

// newestSealedLocked is the newest sealed change among rows (a group's ordinal). Records are
// scanned newest first; rows whose every change was dropped fall back on their markers.
func (c *Column) newestSealedLocked(rows []int32) uint64 {
	set := newRowSet(c.rows.len())
	for _, r := range rows {
		set.add(r)
	}
	i := sort.Search(len(c.records), func(i int) bool { return c.records[i].ordinal > c.foldedTo })
	for i--; i >= 0; i-- {
		if _, ok := set.first(c.records[i].rows); ok {
			return c.records[i].ordinal
		}
	}
	newest := uint64(0) // every change of these rows was dropped: their markers say when
	for _, r := range rows {
		newest = max(newest, c.dropped.get(r))
	}
	return newest
}

// snapshotRowsLocked pins the sealed values of rows (keys with a sealed value).
func (c *Column) snapshotRowsLocked(rows []int32, identity bool) Snapshot {
	snap := Snapshot{Ordinal: c.sealedOrdinal, Layout: c.layout}
	if c.Schema.IsArray {
		snap.Views = make([]View, len(rows))
		for k, r := range rows {
			a := c.arrays.get(r)
			snap.Views[k] = View{Buffer: a.buf.Retain(), ByteOffset: a.off, Rows: a.n}
		}
		return snap
	}
	snap.Dense = identity && len(rows) == c.sealedRows
	snap.Views = []View{{Buffer: c.sealed.Retain(), Rows: int64(c.sealedRows)}}
	return snap
}

// RangeSelection is what a range read returns from this column: the queried keys with a
// change in [start, end], split into value keys (with a snapshot of their values) and
// tombstoned keys.
type RangeSelection struct {
	ValueQueryIdx []uint32
	ValueRows     []int32
	Values        Snapshot // valid when ValueRows is not empty; release it
	TombQueryIdx  []uint32
	// TombOrdinal is the tombstone group's ordinal: the newest sealed change of its keys.
	TombOrdinal uint64
}

// SelectRange admits a range read of [b.Start, b.End] over prims (see the rules above) and
// selects the keys that changed inside it.
func (c *Column) SelectRange(prims []uint64, b Bounds, describe func(prim uint64) string) (RangeSelection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	const (
		inRange  = 1 << iota
		unsealed // an unsealed change in range
		after    // a change after the range that rule 2 counts
	)
	// Inside the history window a sealed change after the range does not refuse it: the keys'
	// state at End is served from the versions (snapshot_at.go).
	from, versioned := c.versionAtLocked(b.End)
	marks := make([]uint8, c.rows.len())
	firstUnsealed, firstAfter := map[int32]uint64{}, map[int32]uint64{}
	i := sort.Search(len(c.records), func(i int) bool { return c.records[i].ordinal >= b.Start })
	for _, rec := range c.records[i:] {
		switch {
		case rec.ordinal <= b.End:
			for _, r := range rec.rows {
				marks[r] |= inRange
				if rec.ordinal > c.foldedTo {
					marks[r] |= unsealed
					if _, ok := firstUnsealed[r]; !ok {
						firstUnsealed[r] = rec.ordinal
					}
				}
			}
		case b.End != Current && !versioned && (rec.ordinal <= c.foldedTo || b.Admission == ReferenceParity):
			for _, r := range rec.rows {
				marks[r] |= after
				if _, ok := firstAfter[r]; !ok {
					firstAfter[r] = rec.ordinal
				}
			}
		}
	}
	if c.dropped.any() { // a key's latest dropped change still counts (it is sealed)
		for r := int32(0); int(r) < len(marks); r++ {
			switch o := c.dropped.get(r); {
			case o == 0 || o < b.Start:
			case o <= b.End:
				marks[r] |= inRange
			case b.End != Current && !versioned:
				marks[r] |= after
				if _, ok := firstAfter[r]; !ok || o < firstAfter[r] {
					firstAfter[r] = o
				}
			}
		}
	}
	rowOf := func(p uint64) (int32, bool) {
		r, ok := c.rows.lookup(p)
		return r, ok && marks[r]&inRange != 0
	}
	for _, p := range prims { // rule 1 over every selected key first
		if r, ok := rowOf(p); ok && marks[r]&unsealed != 0 {
			return RangeSelection{}, status.Errorf(status.WriteFloorViolation,
				"%s changed at ordinal %d, inside the range [%d, %d], and that change is not sealed yet (above the write floor %d); advance the write floor first",
				describe(p), firstUnsealed[r], b.Start, b.End, c.foldedTo)
		}
	}
	for _, p := range prims {
		if r, ok := rowOf(p); ok && marks[r]&after != 0 {
			return RangeSelection{}, c.outOfRange(describe(p), firstAfter[r], b)
		}
	}
	if versioned {
		return c.versionRangeLocked(prims, rowOf, b.End, from)
	}
	var sel RangeSelection
	var tombRows []int32
	for i, p := range prims {
		r, ok := rowOf(p)
		if !ok {
			continue
		}
		if c.keys.get(r).deleted {
			sel.TombQueryIdx = append(sel.TombQueryIdx, uint32(i))
			tombRows = append(tombRows, r)
		} else {
			sel.ValueQueryIdx = append(sel.ValueQueryIdx, uint32(i))
			sel.ValueRows = append(sel.ValueRows, r)
		}
	}
	if len(sel.ValueRows) > 0 {
		// Every selected change is sealed: the keys' sealed state is their state at End.
		sel.Values = c.snapshotRowsLocked(sel.ValueRows, isIdentity(sel.ValueRows))
		sel.Values.Ordinal = c.newestSealedLocked(sel.ValueRows)
	}
	if len(tombRows) > 0 {
		sel.TombOrdinal = c.newestSealedLocked(tombRows)
	}
	return sel, nil
}
