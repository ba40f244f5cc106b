// Package column stores one attribute's values for many prims. Sealed values live in a
// refcounted C buffer (one row per prim); changes above the write floor wait as ordinal-keyed
// deltas and are folded in when the floor passes them. Readers hold a reference to the sealed
// buffer version they view; folding copies first when the buffer is shared (copy-on-write), and
// a delta that covers the whole column is swapped in without a copy.
package column

import (
	"sort"
	"sync"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/dlpack"
)

// Schema is a column's immutable layout.
type Schema struct {
	IsArray  bool
	DType    dlpack.DType
	Semantic int32
}

// Delta is one staged mutation: Rows[i] takes payload row Src[i] (Src nil = row i).
type Delta struct {
	Ordinal uint64
	Seq     uint64 // submission order among equal ordinals
	Rows    []int32
	Src     []int32
	Payload buffer.Buffer // owned
}

type key struct {
	hasSealed bool
	sealedOrd uint64 // ordinal of the sealed version
	latestOrd uint64 // ordinal of the latest change, sealed or not
}

// Column is one attribute's storage. All methods are safe for concurrent use.
type Column struct {
	Name     uint64
	Schema   Schema
	rowBytes int
	// store allocates and copies in the column's placement (host, or one CUDA device).
	store Storage

	mu         sync.Mutex
	rowOf      map[uint64]int32
	prims      []uint64
	keys       []key
	sealed     buffer.Buffer
	sealedCap  int // rows the sealed buffer can hold
	pending    []*Delta
	layoutGen  uint64
	sealedRows int // rows covered by the sealed buffer
	// sealedOrdinal is the column's latest sealed change, reported as a read group's ordinal
	// (spec §1.9: the column's latest committed write ordinal).
	sealedOrdinal uint64
	// lastPrims/lastRows memoize the row lookup of the previous Stage call: repeated writes
	// through one query pass the same prims slice, so they skip a map lookup per prim.
	lastPrims []uint64
	lastRows  []int32
	lastGen   uint64
}

// New creates an empty host column.
func New(name uint64, schema Schema) (*Column, error) {
	return NewPlaced(name, schema, HostStorage())
}

// NewPlaced creates an empty column whose buffers live where store puts them; the column
// closes store.
func NewPlaced(name uint64, schema Schema, store Storage) (*Column, error) {
	buf, err := store.New(0)
	if err != nil {
		store.Close()
		return nil, err
	}
	return &Column{Name: name, Schema: schema, rowBytes: schema.DType.ElemBytes(), store: store,
		rowOf: map[uint64]int32{}, sealed: buf, layoutGen: 1}, nil
}

// Placement is where the column's payload lives.
func (c *Column) Placement() Placement { return c.store.Placement() }

// RowBytes is the size of one fixed row.
func (c *Column) RowBytes() int { return c.rowBytes }

// Stage records a mutation at ordinal for prims (payload row src[i] for prims[i]; src nil means
// row i). It creates missing rows and takes ownership of payload; it reports whether rows were
// added.
func (c *Column) Stage(ordinal, seq uint64, prims []uint64, src []int32, payload buffer.Buffer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rows []int32
	gen := c.layoutGen
	if c.sameAsLast(prims) {
		rows = c.lastRows
		for _, r := range rows {
			c.keys[r].latestOrd = max(c.keys[r].latestOrd, ordinal)
		}
	} else {
		rows = c.lookupRows(prims, ordinal)
		c.lastPrims, c.lastRows, c.lastGen = prims, rows, c.layoutGen
	}
	c.insertPending(&Delta{Ordinal: ordinal, Seq: seq, Rows: rows, Src: src, Payload: payload})
	return c.layoutGen != gen
}

// lookupRows maps prims to rows, creating missing rows, and records ordinal as their latest
// change.
func (c *Column) lookupRows(prims []uint64, ordinal uint64) []int32 {
	rows := make([]int32, len(prims))
	for i, p := range prims {
		r, ok := c.rowOf[p]
		if !ok {
			r = int32(len(c.prims))
			c.rowOf[p] = r
			c.prims = append(c.prims, p)
			c.keys = append(c.keys, key{})
			c.layoutGen++
		}
		rows[i] = r
		c.keys[r].latestOrd = max(c.keys[r].latestOrd, ordinal)
	}
	return rows
}

// sameAsLast reports whether prims is the very slice of the previous Stage call (callers never
// mutate query path slices) and no row was added since.
func (c *Column) sameAsLast(prims []uint64) bool {
	return len(prims) > 0 && len(prims) == len(c.lastPrims) && &prims[0] == &c.lastPrims[0] &&
		c.lastGen == c.layoutGen
}

// insertPending adds d in (ordinal, seq) order.
func (c *Column) insertPending(d *Delta) {
	i := sort.Search(len(c.pending), func(i int) bool {
		p := c.pending[i]
		return p.Ordinal > d.Ordinal || (p.Ordinal == d.Ordinal && p.Seq > d.Seq)
	})
	c.pending = append(c.pending, nil)
	copy(c.pending[i+1:], c.pending[i:])
	c.pending[i] = d
}

// Seal folds every pending delta at or below floor into the sealed buffer, in (ordinal, seq)
// order.
func (c *Column) Seal(floor uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(c.pending) && c.pending[n].Ordinal <= floor {
		n++
	}
	if n == 0 {
		return nil
	}
	fold := c.pending[:n:n]
	c.pending = append([]*Delta(nil), c.pending[n:]...)
	defer func() {
		for _, d := range fold {
			if d.Payload.Valid() {
				d.Payload.Release()
			}
		}
	}()
	nrows := len(c.prims)
	start := 0
	for i := len(fold) - 1; i >= 0; i-- {
		if c.coversWholeColumn(fold[i], nrows) {
			// Everything before a whole-column delta is overwritten: swap its payload in.
			c.sealed.Release()
			c.sealed = fold[i].Payload
			fold[i].Payload = buffer.Buffer{}
			c.sealedCap, c.sealedRows = nrows, nrows
			for r := range c.keys {
				c.markSealed(int32(r), fold[i].Ordinal)
			}
			start = i + 1
			break
		}
	}
	if start == len(fold) {
		return nil
	}
	old, err := c.makeWritable(nrows)
	if err != nil {
		return err
	}
	if old.Valid() {
		defer old.Release() // deferred calls run after the Flush below: copies may read it
	}
	for _, d := range fold[start:] {
		if err := c.store.Copy(c.sealed, d.Payload, rowRuns(d.Rows, d.Src, c.rowBytes)); err != nil {
			_ = c.store.Flush(c.sealed)
			return err
		}
		for _, r := range d.Rows {
			c.markSealed(r, d.Ordinal)
		}
	}
	return c.store.Flush(c.sealed)
}

func (c *Column) markSealed(r int32, ordinal uint64) {
	k := &c.keys[r]
	k.hasSealed = true
	c.sealedOrdinal = max(c.sealedOrdinal, ordinal)
	if ordinal >= k.sealedOrd {
		k.sealedOrd = ordinal
	}
}

func (c *Column) coversWholeColumn(d *Delta, nrows int) bool {
	if d.Src != nil || len(d.Rows) != nrows || d.Payload.Size() != nrows*c.rowBytes {
		return false
	}
	for i, r := range d.Rows {
		if int(r) != i {
			return false
		}
	}
	return true
}

// makeWritable ensures the sealed buffer holds nrows rows and has no other reader, copying it
// (copy-on-write) when a reader or export still holds the current version. It returns the
// replaced version, which the caller releases once the storage is flushed (a device copy
// from it may still be in flight).
func (c *Column) makeWritable(nrows int) (buffer.Buffer, error) {
	if c.sealed.Refs() == 1 && c.sealedCap >= nrows {
		c.sealedRows = nrows
		return buffer.Buffer{}, nil
	}
	capRows := nrows
	if nrows > c.sealedCap && c.sealedCap > 0 {
		capRows = max(nrows, c.sealedCap*2)
	}
	nb, err := c.store.New(capRows * c.rowBytes)
	if err != nil {
		return buffer.Buffer{}, err
	}
	keep := int64(min(c.sealedRows, nrows) * c.rowBytes)
	if keep > 0 {
		if err := c.store.Copy(nb, c.sealed, []Run{{Len: keep}}); err != nil {
			nb.Release()
			return buffer.Buffer{}, err
		}
	}
	old := c.sealed
	c.sealed, c.sealedCap, c.sealedRows = nb, capRows, nrows
	return old, nil
}

// Selection maps a query's prims onto this column's rows; it stays valid while the column's
// layout generation is unchanged, so repeated reads through one query cost O(1).
type Selection struct {
	LayoutGen uint64
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

// Select resolves prims (in query order) against the column, reusing prev when still valid.
func (c *Column) Select(prims []uint64, prev *Selection) *Selection {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev != nil && prev.LayoutGen == c.layoutGen {
		return prev
	}
	sel := &Selection{LayoutGen: c.layoutGen, IdentityRows: true}
	all := true
	for i, p := range prims {
		r, ok := c.rowOf[p]
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

// Snapshot is a reader's view of sealed values: it holds a buffer reference (release it).
type Snapshot struct {
	Buffer    buffer.Buffer
	Rows      int64 // rows the exported tensor spans
	Ordinal   uint64
	LayoutGen uint64
}

// Snapshot pins the sealed buffer for sel's rows. It fails with WRITE_FLOOR_VIOLATION when a
// selected key has no sealed version (only unsealed changes). describe names a row's prim in
// the message.
func (c *Column) Snapshot(sel *Selection, describe func(prim uint64) string) (Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !sel.allSealed || sel.LayoutGen != c.layoutGen {
		for _, r := range sel.Rows {
			if !c.keys[r].hasSealed {
				return Snapshot{}, status.Errorf(status.WriteFloorViolation,
					"prim %s has no sealed value yet (latest change at ordinal %d is above the write floor); advance the write floor first",
					describe(c.prims[r]), c.keys[r].latestOrd)
			}
		}
		sel.allSealed = sel.LayoutGen == c.layoutGen
	}
	rows := int64(c.sealedRows)
	if sel.IdentityRows {
		rows = int64(sel.Count)
	}
	return Snapshot{Buffer: c.sealed.Retain(), Rows: rows, Ordinal: c.sealedOrdinal, LayoutGen: c.layoutGen}, nil
}

// RowCount is the number of prims with a row.
func (c *Column) RowCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.prims)
}

// HasPrim reports whether prim has a row.
func (c *Column) HasPrim(prim uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.rowOf[prim]
	return ok
}

// Close releases the column's buffers.
func (c *Column) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed.Release()
	for _, d := range c.pending {
		if d.Payload.Valid() {
			d.Payload.Release()
		}
	}
	c.pending = nil
	c.store.Close()
}
