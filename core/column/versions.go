package column

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
)

// Retained versions: a column keeps, for a window of ordinals behind its floor, what each
// sealed change replaced, so a snapshot read at an ordinal N inside the window is served the
// state at N even after later ordinals were sealed. Each fold of one ordinal records a prior
// image of the rows it changes (their bytes and key states just before); the state at N is
// the current sealed state with the images of every ordinal after N put back, newest first.
// Only changed rows are copied, so K versions cost about K times the changed bytes; a fold
// that replaces the whole column keeps the replaced buffer itself (no copy).

// priorKeys are the key states some rows had before a fold: one state for all of them while
// they agree (the common case: values overwriting values), else one per row.
type priorKeys struct {
	uniform key
	states  []key // nil while every row had uniform
}

func (p *priorKeys) get(k int) key {
	if p.states == nil {
		return p.uniform
	}
	return p.states[k]
}

// undoPart is what one delta of a fold replaced.
type undoPart struct {
	rows []int32 // the delta's rows (shared with the delta and its record: never mutated)
	keys priorKeys
	// buf (fixed columns): the prior bytes of rows[k] at k*rowBytes. Invalid for a tombstone,
	// which leaves the bytes as they were. Often the delta's own payload, whose rows were
	// swapped with the sealed ones (swapInLocked): no allocation and no second copy.
	buf buffer.Buffer
	// arrays (array columns): the prior ragged row of rows[k] (held references); nil when
	// every row was empty (a fold into a column never sealed saves nothing).
	arrays []arrayRow
	// store (array columns, a delta over every row in order): the whole prior store instead,
	// its spans and their references (no per-row entries when it was spans).
	store *arrayStore
}

// priorImage is the state of some rows just before the fold of one ordinal changed them.
// Putting its parts back newest first, and each part's rows last first, restores that state
// even when a row appears twice (the later occurrence saved the earlier one's value).
type priorImage struct {
	ordinal uint64
	// whole: the fold replaced every row; buf is the replaced buffer (row r at r*rowBytes,
	// bufRows rows) and wholeKeys the key states of every row then.
	whole     bool
	bufRows   int
	wholeKeys keyStore
	buf       buffer.Buffer
	parts     []undoPart
	// keysChange: some key's state before the fold differs from its state after (a value
	// appeared or was deleted), so a snapshot across this fold selects other rows than a
	// current read.
	keysChange bool
	bytes      int64
	// state caches the column's state just before this fold: what every snapshot between the
	// previous image's ordinal and this one's is served from (versionState).
	state *versionState
}

func (im *priorImage) release() {
	if im.buf.Valid() {
		im.buf.Release()
	}
	for _, p := range im.parts {
		if p.buf.Valid() {
			p.buf.Release()
		}
		for _, a := range p.arrays {
			if a.buf.Valid() {
				a.buf.Release()
			}
		}
		if p.store != nil {
			p.store.release()
		}
	}
	if im.state != nil && im.state.buf.Valid() {
		im.state.buf.Release()
	}
}

// versionState is a fixed column's materialised state before one fold: readers at any
// ordinal it serves share its buffer (zero-copy, like readers at the floor share the sealed
// buffer). It never changes: later folds only add images after it.
type versionState struct {
	buf     buffer.Buffer
	rows    int
	bytes   int64 // memory it holds beyond the images (0 when it is an image's own buffer)
	ordSel  *Selection
	ordEnd  uint64
	ordinal uint64
}

// maxCachedStates bounds the materialised states a column keeps (each can be a column-sized
// buffer): a lagging reader and one more reading behind the floor.
const maxCachedStates = 2

// versions holds a column's prior images in fold order (ordinals nondecreasing).
type versions struct {
	// keep is how many ordinals behind the floor reads are served (0: no versions kept).
	keep   uint64
	images []*priorImage
	// frontier is the oldest end a snapshot read can be served at: the newest ordinal whose
	// image was dropped (a read before it would need that image).
	frontier uint64
	bytes    int64
	// cached lists the images whose state is materialised, least recently read first.
	cached []*priorImage
	// changed is scratch space for rewriting a cached state (empty between uses).
	changed rowSet
}

// SetVersionWindow sets how many ordinals behind its floor the column serves snapshots at
// (0: none, the reference's latest-only payloads). Call it before the column holds data.
func (c *Column) SetVersionWindow(ordinals uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ver.keep = ordinals
}

// VersionFrontier is the oldest snapshot end the column serves from its retained versions.
func (c *Column) VersionFrontier() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ver.frontier
}

// VersionBytes is the memory the retained versions hold.
func (c *Column) VersionBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ver.bytes
}

// OldestVersion is the ordinal of the oldest retained image (ok=false: none).
func (c *Column) OldestVersion() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ver.images) == 0 {
		return 0, false
	}
	return c.ver.images[0].ordinal, true
}

// DropOldestVersions drops the images at or below ordinal (the stage's memory budget).
func (c *Column) DropOldestVersions(ordinal uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropVersionsLocked(ordinal)
}

// dropVersionsLocked drops the images at ordinals <= upTo, raising the frontier.
func (c *Column) dropVersionsLocked(upTo uint64) {
	n := 0
	for n < len(c.ver.images) && c.ver.images[n].ordinal <= upTo {
		im := c.ver.images[n]
		c.ver.frontier = max(c.ver.frontier, im.ordinal)
		c.uncacheStateLocked(im)
		c.ver.bytes -= im.bytes
		im.release()
		n++
	}
	if n == 0 {
		return
	}
	kept := copy(c.ver.images, c.ver.images[n:])
	clear(c.ver.images[kept:])
	c.ver.images = c.ver.images[:kept]
}

// trimVersionsLocked drops the images no read inside the window needs: a read at the floor
// minus keep needs the images of the ordinals after it.
func (c *Column) trimVersionsLocked() {
	if c.foldedTo >= c.ver.keep {
		c.dropVersionsLocked(c.foldedTo - c.ver.keep)
	}
}

// moveVersionsLocked moves the column's images with it through m (which moved its rows: an
// array column's images share payloads with them), so snapshots behind the floor stay served
// after a change placed elsewhere. A failed move drops every image instead, which raises the
// frontier (get_oldest_preserved_ordinal reports it).
func (c *Column) moveVersionsLocked(m *mover) {
	for len(c.ver.cached) > 0 { // materialised states are rebuilt where the column is now
		c.uncacheStateLocked(c.ver.cached[0])
	}
	if m.moveAll(c.forEachVersionRefLocked) != nil {
		c.dropAllVersionsLocked()
	}
}

// forEachVersionRefLocked calls fn with every buffer reference the images hold.
func (c *Column) forEachVersionRefLocked(fn func(b *buffer.Buffer)) {
	for _, im := range c.ver.images {
		fn(&im.buf)
		for i := range im.parts {
			p := &im.parts[i]
			fn(&p.buf)
			for k := range p.arrays {
				fn(&p.arrays[k].buf)
			}
			if p.store != nil {
				p.store.forEachRef(fn)
			}
		}
	}
}

// dropAllVersionsLocked forgets every image.
func (c *Column) dropAllVersionsLocked() {
	if n := len(c.ver.images); n > 0 {
		c.dropVersionsLocked(c.ver.images[n-1].ordinal)
	}
}

// imageOrdinal is the ordinal a fold at ordinal is recorded under: never before an image
// already kept (a change sealed below the floor, such as a world matrix the hierarchy
// computes, shows from the newest retained ordinal on), so images stay in ordinal order.
func (c *Column) imageOrdinal(ordinal uint64) uint64 {
	if n := len(c.ver.images); n > 0 {
		return max(ordinal, c.ver.images[n-1].ordinal)
	}
	return ordinal
}

// addImageLocked keeps a finished image.
func (c *Column) addImageLocked(im *priorImage) {
	if im == nil {
		return
	}
	for _, p := range im.parts {
		im.bytes += int64(len(p.rows))*4 + int64(len(p.keys.states))*2
		if p.buf.Valid() {
			im.bytes += int64(p.buf.Size())
		}
		for _, a := range p.arrays {
			im.bytes += 16 + a.n*int64(c.rowBytes) // the row's share of its (shared) payload
		}
		if p.store != nil {
			im.bytes += p.store.bytes(c.rowBytes)
		}
	}
	c.ver.images = append(c.ver.images, im)
	c.ver.bytes += im.bytes
}

// beginImageLocked starts the image of run (deltas of one ordinal, in one placement) before
// it folds: the key states it replaces, and for array columns the replaced rows. A fixed
// partial fold's bytes are saved as it applies (saveAndApplyLocked). Nil: no window.
func (c *Column) beginImageLocked(run []*Delta) *priorImage {
	if c.ver.keep == 0 || len(run) == 0 {
		return nil
	}
	im := &priorImage{ordinal: c.imageOrdinal(run[0].Ordinal)}
	if !c.Schema.IsArray {
		nrows := c.rows.len()
		for _, d := range run {
			if c.coversWholeColumn(d, nrows) {
				// The run replaces the sealed buffer: keep it as it is.
				im.whole, im.bufRows = true, c.sealedRows
				if c.sealedRows > 0 { // else nothing was sealed: no key is visible before the run
					im.buf = c.sealed.Retain()
				}
				im.wholeKeys = c.keys.clone()
				im.keysChange = c.keys.anyNotVisible()
				im.bytes = int64(len(im.wholeKeys.states)) * 2
				if im.buf.Valid() {
					im.bytes += int64(im.buf.Size())
				}
				return im
			}
		}
	}
	im.parts = make([]undoPart, len(run))
	for i, d := range run {
		p := &im.parts[i]
		p.rows = d.Rows
		after := key{hasSealed: true, deleted: d.Tombstone}
		for k, r := range d.Rows {
			before := c.keys.get(r)
			if before != after {
				im.keysChange = true
			}
			switch {
			case k == 0:
				p.keys.uniform = before
			case p.keys.states == nil && before != p.keys.uniform:
				p.keys.states = make([]key, len(d.Rows))
				for j := range k {
					p.keys.states[j] = p.keys.uniform
				}
				fallthrough
			case p.keys.states != nil:
				p.keys.states[k] = before
			}
		}
		if c.Schema.IsArray && !c.arrays.empty() {
			if len(d.Rows) == c.arrays.len() && len(d.Rows) > 0 && isWholeSpan(d) {
				p.store = c.arrays.retained()
				continue
			}
			p.arrays = make([]arrayRow, len(d.Rows))
			for k, r := range d.Rows {
				a := c.arrays.get(r)
				if a.buf.Valid() {
					a.buf = a.buf.Retain()
				}
				p.arrays[k] = a
			}
		}
	}
	return im
}

// saveAndApplyLocked applies write d to the (writable) sealed buffer, saving the bytes it
// replaces into part. A host payload of its own, row k for row k, is swapped with the sealed
// rows and becomes the saved bytes (one pass, no allocation: a producer with the window on
// pays about what one with it off does); otherwise the rows are copied out first.
func (c *Column) saveAndApplyLocked(d *Delta, part *undoPart) error {
	rb := c.rowBytes
	if _, host := c.store.(hostStorage); host && d.Src == nil && d.Payload.OnHost() &&
		d.Payload.Refs() == 1 && d.Payload.Size() >= len(d.Rows)*rb {
		swapRows(c.sealed.Bytes(), d.Payload.Bytes(), d.Rows, rb)
		part.buf, d.Payload = d.Payload, buffer.Buffer{}
		return nil
	}
	buf, err := c.store.New(len(d.Rows) * rb)
	if err != nil {
		return err
	}
	save := newRowCopies(c.store, buf, c.sealed, rb) // the sealed row r to position k
	for k, r := range d.Rows {
		save.add(int64(k), int64(r))
	}
	if err := save.flush(); err != nil {
		buf.Release()
		return err
	}
	part.buf = buf
	return c.copyDeltaRowsLocked(d)
}

// swapRows exchanges row rows[k] of sealed with row k of payload, in order (a row named twice
// ends with its later value, and its later slot holds the earlier one).
func swapRows(sealed, payload []byte, rows []int32, rowBytes int) {
	if rowBytes%4 == 0 && len(sealed)%4 == 0 && len(payload)%4 == 0 && len(sealed) > 0 && len(payload) > 0 {
		w := rowBytes / 4
		s := unsafe.Slice((*uint32)(unsafe.Pointer(&sealed[0])), len(sealed)/4)
		p := unsafe.Slice((*uint32)(unsafe.Pointer(&payload[0])), len(payload)/4)
		for k, r := range rows {
			so, po := int(r)*w, k*w
			ss, ps := s[so:so+w:so+w], p[po:po+w:po+w]
			for j := range ss {
				ss[j], ps[j] = ps[j], ss[j]
			}
		}
		return
	}
	for k, r := range rows {
		so, po := int(r)*rowBytes, k*rowBytes
		ss, ps := sealed[so:so+rowBytes:so+rowBytes], payload[po:po+rowBytes:po+rowBytes]
		for j := range ss {
			ss[j], ps[j] = ps[j], ss[j]
		}
	}
}

// clone copies the key states.
func (k keyStore) clone() keyStore {
	if k.states != nil {
		k.states = append([]key(nil), k.states...)
	}
	return k
}
