// Package column stores one attribute's values (of one schema) for many prims. Sealed values
// live in refcounted C buffers; changes above the write floor wait as ordinal-keyed deltas and
// are folded in when the floor passes them. Readers hold references to the buffer versions
// they view; folding copies first when a fixed buffer is shared (copy-on-write), and a delta
// covering the whole column is swapped in without a copy. Each column also keeps the change
// membership of its keys (which ordinals changed which rows), exact above a retention frontier.
package column

import (
	"sort"
	"sync"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Schema is a column's immutable layout.
type Schema struct {
	IsArray  bool
	DType    tensor.DType // value (fixed) or element (array) type, lanes = tuple width
	Semantic int32
}

// Delta is one staged mutation of some rows.
type Delta struct {
	Ordinal uint64
	Seq     uint64 // submission order among equal ordinals
	Rows    []int32
	// Src[i] is the payload row that Rows[i] takes (nil: row i).
	Src []int32
	// Payload holds the source rows (owned). Fixed: rowBytes per row. Array: RowOff/RowLen
	// give each source row's byte offset and element count; when they are nil, the rows are
	// uniform: row s starts at s*Width bytes and holds WidthElems elements (a packed payload
	// may name far more rows than it holds bytes, e.g. empty rows up to a large index map
	// entry, so they are not materialized).
	Payload    buffer.Buffer
	RowOff     []int64
	RowLen     []int64
	Width      int64
	WidthElems int64
	// Tombstone deletes the rows instead of writing them (no payload).
	Tombstone bool
	// Untracked changes keep no change record (a clone's copy of a connection whose name
	// also has a value: the name's change is recorded through the value only).
	Untracked bool
	// Later lists deletes ordered after this write that already ran: Stage gives the rows
	// they cover their tombstones too (see LaterDelete).
	Later []LaterDelete
	// Place is where Payload lives and where the column moves when the delta seals; the
	// zero value (map commits, clones) follows the column.
	Place Placement
}

// row returns the byte offset and element count of array source row s.
func (d *Delta) row(s int32) (off, n int64) {
	if d.RowOff == nil {
		return int64(s) * d.Width, d.WidthElems
	}
	return d.RowOff[s], d.RowLen[s]
}

func (d *Delta) src(i int) int32 {
	if d.Src == nil {
		return int32(i)
	}
	return d.Src[i]
}

// key is a row's sealed state. (Its sealed ordinal need not be kept: deltas fold in ordinal
// order and the floor only rises, so a newer sealed version never meets an older delta.)
type key struct {
	hasSealed bool // a sealed version (value or tombstone) exists
	deleted   bool // the sealed version is a tombstone
}

// visible: latest reads return the key (its sealed version is a value).
func (k key) visible() bool { return k.hasSealed && !k.deleted }

// record is one retained change: the rows an ordinal changed (all rows when all is set).
type record struct {
	ordinal   uint64
	seq       uint64
	rows      []int32
	tombstone bool
}

// DefaultRetention is how many change records a column keeps before coalescing the oldest
// sealed ones away (raising the retention frontier).
const DefaultRetention = 1024

// Column is one attribute's storage for one schema. All methods are safe for concurrent use.
type Column struct {
	Name     uint64
	Schema   Schema
	rowBytes int // fixed: bytes per row; array: bytes per element
	// store allocates and copies in the column's current placement (host, or one CUDA
	// device); placer moves the column and payloads between placements (placer.go).
	store  Storage
	placer Placer

	mu     sync.Mutex
	rows   rowIndex // prim <-> row
	keys   keyStore
	layout uint64 // layout generation: bumps when rows appear or keys are deleted/revived

	// Fixed columns: rows in one buffer.
	sealed     buffer.Buffer
	sealedCap  int
	sealedRows int
	// Array columns: the sealed rows (arrays.go).
	arrays arrayStore

	pending []*Delta
	// records are the retained changes, sealed and pending, in (ordinal, seq) order.
	records []record
	// staged counts Stage calls: a consumer that derives data from the column (the
	// hierarchy's world transforms) tells from it whether the column changed since it looked.
	staged uint64
	// frontier: records at or above it are exact (older ones were dropped into dropped).
	frontier  uint64
	retention int
	dropped   coalesced
	// ver holds the prior images that serve snapshots behind the floor (versions.go).
	ver versions
	// foldedTo is the highest floor folded in: changes at or below it are sealed, changes
	// above it are the pending deltas (admission never stages a change at or below a floor).
	foldedTo uint64
	// sealedOrdinal is the newest sealed change of any row.
	sealedOrdinal uint64
	// sealGen counts the folds that changed sealed state (cached group ordinals use it).
	sealGen uint64

	// lastPrims/lastRows memoize the row lookup of the previous Stage call: repeated writes
	// through one query pass the same prims slice, so they skip a map lookup per prim.
	lastPrims []uint64
	lastRows  []int32
	lastGen   uint64
}

// New creates an empty host column that stays on the host.
func New(name uint64, schema Schema) (*Column, error) {
	return NewPlaced(name, schema, HostStorage(), hostPlacer{})
}

// NewPlaced creates an empty column whose buffers live where store puts them until a placed
// change moves it (through placer); the column closes its storage.
func NewPlaced(name uint64, schema Schema, store Storage, placer Placer) (*Column, error) {
	buf, err := store.New(0)
	if err != nil {
		store.Close()
		return nil, err
	}
	return &Column{Name: name, Schema: schema, rowBytes: schema.DType.ElemBytes(), store: store,
		placer: placer, rows: newRowIndex(), sealed: buf, layout: 1, retention: DefaultRetention}, nil
}

// Placement is where the column's current copy lives.
func (c *Column) Placement() Placement {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store.Placement()
}

// RowBytes is the size of one fixed row (array columns: of one element).
func (c *Column) RowBytes() int { return c.rowBytes }

// SetRetention sets how many change records the column keeps (tests).
func (c *Column) SetRetention(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retention = max(1, n)
}

// Stage records a mutation (write or tombstone) at d.Ordinal for prims; d.Rows is filled in.
// Missing rows are created (for writes only: a tombstone never creates rows). It takes
// ownership of d.Payload and reports whether the column's set of rows grew.
func (c *Column) Stage(prims []uint64, d *Delta) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	gen := c.layout
	switch {
	case d.Tombstone:
		d.Rows = c.existingRows(prims)
	case c.sameAsLast(prims):
		d.Rows = c.lastRows
	default:
		d.Rows = c.lookupRows(prims)
		c.lastPrims, c.lastRows, c.lastGen = prims, d.Rows, c.layout
	}
	c.staged++
	if len(d.Later) > 0 {
		c.stageLaterDeletesLocked(prims, d, d.Later)
		d.Later = nil
	} else {
		c.insertPending(d)
		c.recordLocked(d)
	}
	return c.layout != gen
}

// recordLocked keeps the change record of staged delta d, unless it is untracked.
func (c *Column) recordLocked(d *Delta) {
	if !d.Untracked {
		c.addRecord(record{ordinal: d.Ordinal, seq: d.Seq, rows: d.Rows, tombstone: d.Tombstone})
	}
}

// StageCount is the number of mutations staged so far (it only grows).
func (c *Column) StageCount() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.staged
}

func (c *Column) existingRows(prims []uint64) []int32 {
	rows := make([]int32, 0, len(prims))
	for _, p := range prims {
		if r, ok := c.rows.lookup(p); ok {
			rows = append(rows, r)
		}
	}
	return rows
}

// lookupRows maps prims to rows, creating missing rows. When the result is the first
// len(prims) rows in order, it is the shared identity sequence (no allocation).
func (c *Column) lookupRows(prims []uint64) []int32 {
	var rows []int32 // nil while rows[i] == i
	for i, p := range prims {
		r, ok := c.rows.lookup(p)
		if !ok {
			r = c.rows.add(p)
			c.keys.add(key{})
			if c.Schema.IsArray {
				c.arrays.grow()
			}
			c.layout++
		}
		if rows == nil && int(r) != i {
			rows = make([]int32, i, len(prims))
			copy(rows, identityRows(i))
		}
		if rows != nil {
			rows = append(rows, r)
		}
	}
	if rows == nil {
		return identityRows(len(prims))
	}
	return rows
}

// sameAsLast reports whether prims is the very slice of the previous Stage call (callers never
// mutate query path slices) and no row was added since.
func (c *Column) sameAsLast(prims []uint64) bool {
	return len(prims) > 0 && len(prims) == len(c.lastPrims) && &prims[0] == &c.lastPrims[0] &&
		c.lastGen == c.layout
}

func less(ao, as, bo, bs uint64) bool { return ao < bo || (ao == bo && as < bs) }

// insertPending adds d in (ordinal, seq) order.
func (c *Column) insertPending(d *Delta) {
	i := sort.Search(len(c.pending), func(i int) bool {
		return less(d.Ordinal, d.Seq, c.pending[i].Ordinal, c.pending[i].Seq)
	})
	c.pending = append(c.pending, nil)
	copy(c.pending[i+1:], c.pending[i:])
	c.pending[i] = d
}

func (c *Column) addRecord(r record) {
	if len(r.rows) == 0 {
		return
	}
	i := sort.Search(len(c.records), func(i int) bool {
		return less(r.ordinal, r.seq, c.records[i].ordinal, c.records[i].seq)
	})
	c.records = append(c.records, record{})
	copy(c.records[i+1:], c.records[i:])
	c.records[i] = r
}

// Frontier is the inclusive retention frontier: change membership is exact at or above it.
func (c *Column) Frontier() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frontier
}

// pruneRecords drops the oldest sealed records beyond the retention budget.
func (c *Column) pruneRecords(floor uint64) {
	excess := len(c.records) - c.retention
	if excess <= 0 {
		return
	}
	n := 0
	for n < excess && c.records[n].ordinal <= floor {
		n++
	}
	if n == 0 {
		return
	}
	// Records are exact from the next retained ordinal on; a coalesced key keeps its latest
	// state (the sealed version) and its latest dropped change, but loses older membership.
	c.frontier = max(c.frontier, c.records[n-1].ordinal+1)
	for _, rec := range c.records[:n] {
		c.dropped.drop(rec, c.rows.len())
	}
	// Drop the prefix by slicing, not by moving the kept records down: a column at its budget
	// drops one record per seal, and the move copied the whole budget every time (with GC
	// write barriers for their rows). append reallocates once the backing array's tail is
	// used up, which copies only the kept records, once per many seals.
	clear(c.records[:n])
	c.records = c.records[n:]
}

// Seal folds every pending delta at or below floor, in (ordinal, seq) order.
func (c *Column) Seal(floor uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.foldedTo = max(c.foldedTo, floor)
	n := 0
	for n < len(c.pending) && c.pending[n].Ordinal <= floor {
		n++
	}
	if n == 0 {
		c.trimVersionsLocked()
		return nil
	}
	c.sealGen++
	fold := c.pending[:n:n]
	c.pending = append([]*Delta(nil), c.pending[n:]...)
	defer func() {
		for _, d := range fold {
			if d.Payload.Valid() {
				d.Payload.Release()
			}
		}
		c.pruneRecords(floor)
		c.trimVersionsLocked()
	}()
	for rest := fold; len(rest) > 0; {
		n, target := c.placedRun(rest)
		if c.ver.keep > 0 {
			n = sameOrdinal(rest[:n]) // each ordinal's fold keeps its own prior image
		}
		if err := c.sealRunLocked(rest[:n], target); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// sameOrdinal is how many leading deltas of run share the first one's ordinal.
func sameOrdinal(run []*Delta) int {
	n := 1
	for n < len(run) && run[n].Ordinal == run[0].Ordinal {
		n++
	}
	return n
}

// sealRunLocked folds deltas that seal in one placement: the column first moves there when its
// current copy is elsewhere, then payloads staged elsewhere (host payloads of map commits and
// clones) are moved in.
func (c *Column) sealRunLocked(run []*Delta, target Placement) error {
	if target != c.store.Placement() {
		if err := c.moveToLocked(target); err != nil {
			return err
		}
	}
	im := c.beginImageLocked(run)
	for _, d := range run {
		if d.Payload.Valid() {
			p, err := c.placer.Move(d.Payload, target)
			if err != nil {
				if im != nil {
					im.release()
				}
				return err
			}
			d.Payload = p
		}
	}
	if c.Schema.IsArray {
		for _, d := range run {
			c.applyArray(d)
		}
		c.addImageLocked(im)
		return nil
	}
	err := c.applyFixed(run, im)
	c.addImageLocked(im) // what was applied is undone by it, even after a failed copy
	return err
}

func (c *Column) markSealed(r int32, d *Delta) {
	// Latest reads return the visible keys: a change of visibility invalidates cached
	// selections.
	if c.keys.get(r).visible() == d.Tombstone {
		c.layout++
	}
	c.keys.set(r, key{hasSealed: true, deleted: d.Tombstone})
	c.sealedOrdinal = max(c.sealedOrdinal, d.Ordinal)
}

// applyFixed folds deltas into the sealed buffer; im (nil: no window) saves what a partial
// fold replaces, part i for fold[i].
func (c *Column) applyFixed(fold []*Delta, im *priorImage) error {
	nrows := c.rows.len()
	start := 0
	for i := len(fold) - 1; i >= 0; i-- {
		if c.coversWholeColumn(fold[i], nrows) {
			// Everything before a whole-column write is overwritten: swap its payload in.
			c.sealed.Release()
			c.sealed = fold[i].Payload
			fold[i].Payload = buffer.Buffer{}
			c.sealedCap, c.sealedRows = nrows, nrows
			if c.keys.anyNotVisible() {
				c.layout++ // some keys appear in latest reads
			}
			c.keys.setAll(key{hasSealed: true})
			c.sealedOrdinal = max(c.sealedOrdinal, fold[i].Ordinal)
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
	for i, d := range fold[start:] {
		if !d.Tombstone { // a tombstone only marks keys; its rows keep their bytes
			var err error
			if im != nil && !im.whole {
				err = c.saveAndApplyLocked(d, &im.parts[start+i])
			} else {
				err = c.copyDeltaRowsLocked(d)
			}
			if err != nil {
				_ = c.store.Flush(c.sealed)
				return err
			}
		}
		for _, r := range d.Rows {
			c.markSealed(r, d)
		}
	}
	return c.store.Flush(c.sealed)
}

func (c *Column) applyArray(d *Delta) {
	if len(d.Rows) == 0 {
		return
	}
	if lo, src, ok := spanShaped(d); ok && !d.Tombstone {
		sp := arraySpan{lo: lo, hi: lo + int32(len(d.Rows)), src: src, buf: d.Payload.Retain(),
			layout: rowLayout{off: d.RowOff, len: d.RowLen, width: d.Width, widthElems: d.WidthElems}}
		if c.arrays.assignSpan(sp) {
			c.markSealedRows(d)
			return
		}
		sp.buf.Release()
	}
	for i, r := range d.Rows {
		if d.Tombstone {
			c.arrays.set(r, arrayRow{})
		} else {
			off, n := d.row(d.src(i))
			c.arrays.set(r, arrayRow{buf: d.Payload.Retain(), off: off, n: n})
		}
		c.markSealed(r, d)
	}
}

// spanShaped reports whether d's rows are consecutive rows lo, lo+1, ... taking consecutive
// source rows src, src+1, ... (a write through the query that made the rows).
func spanShaped(d *Delta) (lo, src int32, ok bool) {
	lo = d.Rows[0]
	if d.Src != nil {
		src = d.Src[0]
	}
	if d.Src == nil && lo == 0 && isIdentity(d.Rows) {
		return 0, 0, true
	}
	for i, r := range d.Rows {
		if r != lo+int32(i) || (d.Src != nil && d.Src[i] != src+int32(i)) {
			return 0, 0, false
		}
	}
	return lo, src, true
}

// isWholeSpan reports whether d (with rows) writes rows 0, 1, ... in order.
func isWholeSpan(d *Delta) bool {
	lo, _, ok := spanShaped(d)
	return ok && lo == 0
}

// markSealedRows marks the rows of write d sealed (in one step when d covers every row).
func (c *Column) markSealedRows(d *Delta) {
	if d.Tombstone || d.Rows[0] != 0 || len(d.Rows) != c.keys.len() {
		for _, r := range d.Rows {
			c.markSealed(r, d)
		}
		return
	}
	if c.keys.anyNotVisible() {
		c.layout++ // some keys appear in latest reads
	}
	c.keys.setAll(key{hasSealed: true})
	c.sealedOrdinal = max(c.sealedOrdinal, d.Ordinal)
}

func (c *Column) coversWholeColumn(d *Delta, nrows int) bool {
	if d.Tombstone || d.Src != nil || len(d.Rows) != nrows || d.Payload.Size() != nrows*c.rowBytes {
		return false
	}
	if nrows > 0 && &d.Rows[0] == &identityRows(1)[0] {
		return true // the shared identity sequence
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

// RowCount is the number of rows (prims that ever carried the attribute).
func (c *Column) RowCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rows.len()
}

// Live reports whether prim carries the attribute in the committed (executed) state: it has a
// row whose latest change is not a delete.
func (c *Column) Live(prim uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.rows.lookup(prim)
	return ok && c.liveLocked(r)
}

// liveLocked: the row's latest change (pending deltas included) is a write.
func (c *Column) liveLocked(r int32) bool {
	for i := len(c.pending) - 1; i >= 0; i-- {
		d := c.pending[i]
		for _, pr := range d.Rows {
			if pr == r {
				return !d.Tombstone
			}
		}
	}
	return c.keys.get(r).visible()
}

// LivePrims lists prims whose latest committed change is a write.
func (c *Column) LivePrims() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	state := make([]int8, c.rows.len()) // 0 unknown, 1 live, -1 deleted
	for i := len(c.pending) - 1; i >= 0; i-- {
		d := c.pending[i]
		for _, r := range d.Rows {
			if state[r] == 0 {
				state[r] = 1
				if d.Tombstone {
					state[r] = -1
				}
			}
		}
	}
	var out []uint64
	for r := range state {
		if state[r] == 1 || (state[r] == 0 && c.keys.get(int32(r)).visible()) {
			out = append(out, c.rows.primAt(int32(r)))
		}
	}
	return out
}

// Close releases the column's buffers.
func (c *Column) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed.Release()
	c.arrays.release()
	for _, d := range c.pending {
		if d.Payload.Valid() {
			d.Payload.Release()
		}
	}
	c.pending = nil
	for _, im := range c.ver.images {
		im.release()
	}
	c.ver.images, c.ver.cached, c.ver.bytes = nil, nil, 0
	c.store.Close()
}
