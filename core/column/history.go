package column

import "sort"

// Change-history questions the stage asks before it admits a mutation at (ordinal, seq), and
// the tombstone rules that keep the outcome a function of (ordinal, submission order) alone.
// Every change above a column's write floor is retained (records are only coalesced once
// sealed), so these answers are exact for any mutation the floors admit.

// before reports whether (ao, as) comes before (bo, bs) in (ordinal, seq) order.
func before(ao, as, bo, bs uint64) bool { return less(ao, as, bo, bs) }

// ChangeAbove looks for a retained change of one of prims at an ordinal above ordinal (at or
// above it when orEqual) made by an op submitted before seq (ops number their changes with
// their op id). It returns the first such prim and the ordinal of its change.
func (c *Column) ChangeAbove(prims []uint64, ordinal uint64, orEqual bool, seq uint64) (prim, at uint64, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.records)
	if n == 0 {
		return 0, 0, false
	}
	if top := c.records[n-1].ordinal; top < ordinal || (top == ordinal && !orEqual) {
		return 0, 0, false // the common case: nothing retained above the new ordinal
	}
	i := sort.Search(n, func(i int) bool {
		o := c.records[i].ordinal
		return o > ordinal || (orEqual && o == ordinal)
	})
	var rows map[int32]uint64
	for _, rec := range c.records[i:] {
		if rec.seq >= seq {
			continue
		}
		if rows == nil {
			rows = c.rowsOfLocked(prims)
			if len(rows) == 0 {
				return 0, 0, false
			}
		}
		for _, r := range rec.rows {
			if p, ok := rows[r]; ok {
				return p, rec.ordinal, true
			}
		}
	}
	return 0, 0, false
}

// rowsOfLocked maps the rows of those of prims that have one to their prim.
func (c *Column) rowsOfLocked(prims []uint64) map[int32]uint64 {
	rows := make(map[int32]uint64, len(prims))
	for _, p := range prims {
		if r, ok := c.rows.lookup(p); ok {
			rows[r] = p
		}
	}
	return rows
}

// valueRowsBeforeLocked marks, among rows, those with a value change before (ordinal, seq):
// a sealed version (every row starts with a value, and a sealed change is below any ordinal
// still admitted), or a pending write ordered before it.
func (c *Column) valueRowsBeforeLocked(rows []int32, ordinal, seq uint64) []bool {
	has := make([]bool, len(rows))
	var open map[int32][]int // rows without a sealed version -> their positions in rows
	for i, r := range rows {
		if c.keys.get(r).hasSealed {
			has[i] = true
			continue
		}
		if open == nil {
			open = map[int32][]int{}
		}
		open[r] = append(open[r], i)
	}
	for _, d := range c.pending {
		if len(open) == 0 || !before(d.Ordinal, d.Seq, ordinal, seq) {
			break
		}
		if d.Tombstone {
			continue
		}
		for _, r := range d.Rows {
			for _, i := range open[r] {
				has[i] = true
			}
			delete(open, r)
		}
	}
	return has
}

// TombstoneRows lists the rows a delete at (ordinal, seq) of prims tombstones: those with a
// value change ordered before it. A row whose only values come later in ordinal order (written
// by an op submitted earlier at a higher ordinal) keeps them and records no tombstone.
func (c *Column) TombstoneRows(prims []uint64, ordinal, seq uint64) []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := c.existingRows(prims)
	has := c.valueRowsBeforeLocked(all, ordinal, seq)
	var rows []int32
	for i, r := range all {
		if has[i] {
			rows = append(rows, r)
		}
	}
	return rows
}

// StageTombstone deletes rows (from TombstoneRows, nothing staged since) at (ordinal, seq).
func (c *Column) StageTombstone(rows []int32, ordinal, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stageTombstoneLocked(rows, ordinal, seq)
}

func (c *Column) stageTombstoneLocked(rows []int32, ordinal, seq uint64) {
	if len(rows) == 0 {
		return
	}
	d := &Delta{Ordinal: ordinal, Seq: seq, Rows: rows, Tombstone: true}
	c.staged++ // a consumer deriving data from the column sees the delete
	c.insertPending(d)
	c.addRecord(record{ordinal: ordinal, seq: seq, rows: rows, tombstone: true})
}

// LaterDelete is a delete ordered after a write (a higher ordinal) that ran before the write:
// the write's rows it covers must end tombstoned at the delete's (ordinal, seq), exactly as if
// the write had run first.
type LaterDelete struct {
	Ordinal, Seq uint64
	Covers       func(prim uint64) bool
}

// stageLaterDeletesLocked stages write d and, for each later delete, tombstones the rows of d
// it covers that had no value change before the delete until d (a row that had one already
// carries the delete's tombstone: the delete covered it when it ran, or an earlier write added
// it here).
func (c *Column) stageLaterDeletesLocked(prims []uint64, d *Delta, later []LaterDelete) {
	type todo struct {
		ld   LaterDelete
		rows []int32
	}
	var work []todo
	for _, ld := range later {
		var cand []int32
		seen := map[int32]bool{}
		for i, r := range d.Rows {
			if !seen[r] && ld.Covers(prims[i]) {
				seen[r] = true
				cand = append(cand, r)
			}
		}
		has := c.valueRowsBeforeLocked(cand, ld.Ordinal, ld.Seq)
		var rows []int32
		for i, r := range cand {
			if !has[i] {
				rows = append(rows, r)
			}
		}
		work = append(work, todo{ld, rows})
	}
	// Every delete's question is answered against the state before d; then d is staged,
	// and the tombstones after it.
	c.insertPending(d)
	c.recordLocked(d)
	for _, w := range work {
		c.stageTombstoneLocked(w.rows, w.ld.Ordinal, w.ld.Seq)
	}
}

// LiveFrom reports whether prim carries the attribute in this column at any point from just
// before (ordinal, seq) on: live at that point, or given a value by a later change. A write of
// another schema at (ordinal, seq) would then overlap this one in time.
func (c *Column) LiveFrom(prim, ordinal, seq uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.rows.lookup(prim)
	if !ok {
		return false
	}
	for i := len(c.pending) - 1; i >= 0; i-- {
		d := c.pending[i]
		if !slicesContains(d.Rows, r) {
			continue
		}
		if !before(d.Ordinal, d.Seq, ordinal, seq) { // a change after the new one
			if !d.Tombstone {
				return true
			}
			continue
		}
		return !d.Tombstone // the row's latest change before the new one
	}
	return c.keys.get(r).visible()
}

func slicesContains(rows []int32, r int32) bool {
	for _, x := range rows {
		if x == r {
			return true
		}
	}
	return false
}

// ValueAfter lists those of prims that have a pending write ordered after (ordinal, seq).
func (c *Column) ValueAfter(prims []uint64, ordinal, seq uint64) []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rows map[int32]bool
	for i := len(c.pending) - 1; i >= 0; i-- {
		d := c.pending[i]
		if before(d.Ordinal, d.Seq, ordinal, seq) || (d.Ordinal == ordinal && d.Seq == seq) {
			break
		}
		if d.Tombstone {
			continue
		}
		if rows == nil {
			rows = map[int32]bool{}
		}
		for _, r := range d.Rows {
			rows[r] = true
		}
	}
	var out []uint64
	for _, p := range prims {
		if r, ok := c.rows.lookup(p); ok && rows[r] {
			out = append(out, p)
		}
	}
	return out
}

// Change is one retained change of a row, for inspection.
type Change struct {
	Prim, Ordinal, Seq uint64
	Tombstone          bool
}

// Changes lists the column's retained changes in (ordinal, seq) order.
func (c *Column) Changes() []Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Change
	for _, rec := range c.records {
		for _, r := range rec.rows {
			out = append(out, Change{Prim: c.rows.primAt(r), Ordinal: rec.ordinal, Seq: rec.seq, Tombstone: rec.tombstone})
		}
	}
	return out
}
