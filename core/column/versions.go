package column

import (
	"sort"

	"github.com/ovstage-go/ovstage/core/buffer"
)

// Retained versions: a column keeps, for a window of ordinals behind its floor, what each
// sealed change replaced, so a snapshot read at an ordinal N inside the window is served the
// state at N even after later ordinals were sealed. Each fold of one ordinal records a prior
// image of the rows it changes (their bytes and key states just before); the state at N is
// the current sealed state with the images of every ordinal after N put back, newest first.
// Only changed rows are copied, so K versions cost about K times the changed bytes; a fold
// that replaces the whole column keeps the replaced buffer itself (no copy).

// priorImage is the state of some rows just before the fold of one ordinal changed them.
type priorImage struct {
	ordinal uint64
	// whole: the fold replaced every row; buf is the replaced buffer (row r at r*rowBytes,
	// bufRows rows) and wholeKeys the key states of every row then.
	whole     bool
	bufRows   int
	wholeKeys keyStore
	// rows and keys: the rows the fold changed and their prior key states.
	rows []int32
	keys []key
	// buf (fixed columns): the prior bytes of rows[i] at i*rowBytes (not whole).
	buf buffer.Buffer
	// arrays (array columns): the prior ragged row of rows[i] (held references).
	arrays []arrayRow
	bytes  int64
}

func (im *priorImage) release() {
	if im.buf.Valid() {
		im.buf.Release()
	}
	for _, a := range im.arrays {
		if a.buf.Valid() {
			a.buf.Release()
		}
	}
}

// versions holds a column's prior images in fold order (ordinals nondecreasing).
type versions struct {
	// keep is how many ordinals behind the floor reads are served (0: no versions kept).
	keep   uint64
	images []*priorImage
	// frontier is the oldest end a snapshot read can be served at: the newest ordinal whose
	// image was dropped (a read before it would need that image).
	frontier uint64
	bytes    int64
	// seen and runs are scratch space of captureLocked, reused seal after seal (a seal of
	// 10k scattered rows needs a row set the size of the column and 10k copy runs; allocating
	// them each time made the garbage collector a large part of a windowed producer's cost).
	// Under the column's lock; seen is all zero between captures.
	seen rowSet
	runs []Run
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

// dropAllVersionsLocked forgets every image (the column moved to another placement: its
// images are in the old one).
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

func (c *Column) addImage(im *priorImage) {
	c.ver.images = append(c.ver.images, im)
	c.ver.bytes += im.bytes
}

// changedRows is the union of the rows of run, in first-seen order.
func (c *Column) changedRows(run []*Delta) []int32 {
	total := 0
	for _, d := range run {
		total += len(d.Rows)
	}
	if n := (c.rows.len() + 63) / 64; len(c.ver.seen) < n {
		c.ver.seen = make(rowSet, n)
	}
	seen := c.ver.seen
	rows := make([]int32, 0, total) // the image keeps it
	for _, d := range run {
		for _, r := range d.Rows {
			if seen.add(r) {
				rows = append(rows, r)
			}
		}
	}
	for _, r := range rows {
		seen[int(r)>>6] = 0 // leave the scratch set empty for the next capture
	}
	return rows
}

// captureLocked records what run (deltas of one ordinal, in one placement) is about to change.
func (c *Column) captureLocked(run []*Delta) error {
	if c.ver.keep == 0 || len(run) == 0 {
		return nil
	}
	im := &priorImage{ordinal: c.imageOrdinal(run[0].Ordinal)}
	if c.Schema.IsArray {
		im.rows = c.changedRows(run)
		im.keys = make([]key, len(im.rows))
		im.arrays = make([]arrayRow, len(im.rows))
		for i, r := range im.rows {
			im.keys[i] = c.keys.get(r)
			a := c.arrays[r]
			if a.buf.Valid() {
				a.buf = a.buf.Retain()
			}
			im.arrays[i] = a
			im.bytes += 16 + a.n*int64(c.rowBytes) // the row's share of its (shared) payload
		}
		c.addImage(im)
		return nil
	}
	nrows := c.rows.len()
	for _, d := range run {
		if c.coversWholeColumn(d, nrows) {
			// The run replaces the sealed buffer: keep it as it is.
			im.whole, im.bufRows = true, c.sealedRows
			if c.sealedRows > 0 { // else nothing was sealed: no key is visible before the run
				im.buf = c.sealed.Retain()
			}
			im.wholeKeys = c.keys.clone()
			im.bytes = int64(len(im.wholeKeys.states)) * 2
			if im.buf.Valid() {
				im.bytes += int64(im.buf.Size())
			}
			c.addImage(im)
			return nil
		}
	}
	im.rows = c.changedRows(run)
	im.keys = make([]key, len(im.rows))
	for i, r := range im.rows {
		im.keys[i] = c.keys.get(r)
	}
	rb := int64(c.rowBytes)
	buf, err := c.store.New(len(im.rows) * c.rowBytes)
	if err != nil {
		return err
	}
	runs := c.ver.runs[:0]
	for i, r := range im.rows {
		if int(r) >= c.sealedRows {
			continue // no sealed bytes yet (a row created above the floor)
		}
		dst, src := int64(i)*rb, int64(r)*rb
		if n := len(runs); n > 0 && runs[n-1].Dst+runs[n-1].Len == dst && runs[n-1].Src+runs[n-1].Len == src {
			runs[n-1].Len += rb
			continue
		}
		runs = append(runs, Run{Dst: dst, Src: src, Len: rb})
	}
	c.ver.runs = runs[:0]
	if err := c.store.Copy(buf, c.sealed, runs); err != nil {
		buf.Release()
		return err
	}
	im.buf = buf
	im.bytes = int64(buf.Size()) + int64(len(im.rows))*6
	c.addImage(im)
	return nil
}

// clone copies the key states.
func (k keyStore) clone() keyStore {
	if k.states != nil {
		k.states = append([]key(nil), k.states...)
	}
	return k
}

// servesVersionLocked reports whether a snapshot at end is served from the retained versions
// (a sealed change after end does not refuse it).
func (c *Column) servesVersionLocked(end uint64) bool {
	return c.ver.keep > 0 && end != Current && end >= c.ver.frontier
}

// imagesAfterLocked is the index of the first image after end (len: none).
func (c *Column) imagesAfterLocked(end uint64) int {
	return sort.Search(len(c.ver.images), func(i int) bool { return c.ver.images[i].ordinal > end })
}

// versionSnapshotLocked pins the state at end of the returned prims when later sealed changes
// replaced it (images after end exist). It returns the query positions and rows of the prims
// whose key at end is a value, and the snapshot over them.
func (c *Column) versionSnapshotLocked(prims []uint64, end uint64, from int) (queryIdx []uint32, rows []int32, snap Snapshot, err error) {
	imgs := c.ver.images[from:]
	nrows := c.rows.len()
	keys := make([]key, nrows)
	for r := range keys {
		keys[r] = c.keys.get(int32(r))
	}
	snap = Snapshot{Layout: c.layout}
	var (
		buf     buffer.Buffer
		bufRows int
		arrays  []arrayRow
	)
	// Put the images back newest first. A whole image replaces everything, so the state
	// starts from the oldest whole image (its buffer itself, when nothing older follows).
	start := len(imgs) - 1
	if !c.Schema.IsArray {
		base := -1
		for i, im := range imgs {
			if im.whole {
				base = i
				break
			}
		}
		if base >= 0 {
			start = base - 1
			im := imgs[base]
			for r := range keys {
				if r < im.wholeKeys.len() {
					keys[r] = im.wholeKeys.get(int32(r))
				} else {
					keys[r] = key{}
				}
			}
			switch {
			case start < 0 && !im.buf.Valid():
				return nil, nil, Snapshot{Layout: c.layout}, nil // nothing was sealed at end
			case start < 0:
				buf, bufRows = im.buf.Retain(), im.bufRows
			default:
				if buf, err = c.copyRowsLocked(im.buf, im.bufRows, max(im.bufRows, c.sealedRows)); err != nil {
					return nil, nil, Snapshot{}, err
				}
				bufRows = max(im.bufRows, c.sealedRows)
			}
		} else {
			if buf, err = c.copyRowsLocked(c.sealed, c.sealedRows, c.sealedRows); err != nil {
				return nil, nil, Snapshot{}, err
			}
			bufRows = c.sealedRows
		}
	} else {
		arrays = append([]arrayRow(nil), c.arrays...)
	}
	rb := int64(c.rowBytes)
	for i := start; i >= 0; i-- {
		im := imgs[i]
		var runs []Run
		for k, r := range im.rows {
			keys[r] = im.keys[k]
			switch {
			case c.Schema.IsArray:
				arrays[r] = im.arrays[k]
			case int(r) < bufRows:
				runs = append(runs, Run{Dst: int64(r) * rb, Src: int64(k) * rb, Len: rb})
			}
		}
		if len(runs) > 0 {
			if err := c.store.Copy(buf, im.buf, runs); err != nil {
				buf.Release()
				return nil, nil, Snapshot{}, err
			}
		}
	}
	identity := true
	for i, p := range prims {
		r, ok := c.rows.lookup(p)
		if !ok || !keys[r].visible() {
			continue
		}
		queryIdx = append(queryIdx, uint32(i))
		if int(r) != len(rows) {
			identity = false
		}
		rows = append(rows, r)
	}
	if c.Schema.IsArray {
		snap.Views = make([]View, len(rows))
		for k, r := range rows {
			a := arrays[r]
			if a.buf.Valid() {
				a.buf = a.buf.Retain()
			}
			snap.Views[k] = View{Buffer: a.buf, ByteOffset: a.off, Rows: a.n}
		}
	} else {
		if err := c.store.Flush(buf); err != nil {
			buf.Release()
			return nil, nil, Snapshot{}, err
		}
		if len(rows) == 0 {
			buf.Release()
		} else {
			snap.Views = []View{{Buffer: buf, Rows: int64(bufRows)}}
			snap.Dense = identity && len(rows) == bufRows
		}
	}
	if len(queryIdx) == len(prims) {
		queryIdx = nil
	}
	snap.Ordinal = c.newestSealedAtLocked(rows, end)
	return queryIdx, rows, snap, nil
}

// copyRowsLocked returns a new buffer of capRows rows holding the first rows rows of src.
func (c *Column) copyRowsLocked(src buffer.Buffer, rows, capRows int) (buffer.Buffer, error) {
	buf, err := c.store.New(capRows * c.rowBytes)
	if err != nil {
		return buffer.Buffer{}, err
	}
	if n := int64(rows * c.rowBytes); n > 0 {
		if err := c.store.Copy(buf, src, []Run{{Len: n}}); err != nil {
			buf.Release()
			return buffer.Buffer{}, err
		}
	}
	return buf, nil
}

// newestSealedAtLocked is the newest change at or before end among rows (a group's ordinal
// at end).
func (c *Column) newestSealedAtLocked(rows []int32, end uint64) uint64 {
	set := newRowSet(c.rows.len())
	for _, r := range rows {
		set.add(r)
	}
	i := sort.Search(len(c.records), func(i int) bool { return c.records[i].ordinal > min(end, c.foldedTo) })
	for i--; i >= 0; i-- {
		if _, ok := set.first(c.records[i].rows); ok {
			return c.records[i].ordinal
		}
	}
	newest := uint64(0)
	for _, r := range rows {
		if o := c.dropped.get(r); o <= end {
			newest = max(newest, o)
		}
	}
	return newest
}
