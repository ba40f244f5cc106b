package column

import (
	"slices"
	"sort"

	"github.com/ovstage-go/ovstage/core/buffer"
)

// Reads behind the floor (versions.go keeps the images): the state at an ordinal N inside the
// window is the state just before the first fold after N, which is the current state with the
// images of every fold after N put back. A fixed column materialises that state once and keeps
// it with the image (versionState), so every later read at N, of any attribute's column, shares
// one buffer as readers at the floor share the sealed one. When no fold after N changed a key's
// state (values overwrote values), a read at N selects the rows a current read does and reuses
// the query's cached selection.

// servesVersionLocked reports whether a snapshot at end is served from the retained versions
// (a sealed change after end does not refuse it).
func (c *Column) servesVersionLocked(end uint64) bool {
	return c.ver.keep > 0 && end != Current && end >= c.ver.frontier
}

// imagesAfterLocked is the index of the first image after end (len: none).
func (c *Column) imagesAfterLocked(end uint64) int {
	return sort.Search(len(c.ver.images), func(i int) bool { return c.ver.images[i].ordinal > end })
}

// versionAtLocked is the index of the first image after end when a read at end is served
// from the versions and later folds replaced some of its state (ok=false: the current state
// is the state at end, or end is not served).
func (c *Column) versionAtLocked(end uint64) (from int, ok bool) {
	if !c.servesVersionLocked(end) {
		return 0, false
	}
	from = c.imagesAfterLocked(end)
	return from, from < len(c.ver.images)
}

// keysChangeFromLocked reports whether a fold from image from on changed some key's state.
func (c *Column) keysChangeFromLocked(from int) bool {
	for _, im := range c.ver.images[from:] {
		if im.keysChange {
			return true
		}
	}
	return false
}

// versionSnapshotLocked pins the state at end (images after end exist, from the first) of the
// queried prims whose key at end is a value, and returns their selection; sel is the query's
// current selection.
func (c *Column) versionSnapshotLocked(prims []uint64, sel *Selection, end uint64, from int) (*Selection, Snapshot, error) {
	if !c.Schema.IsArray && !c.keysChangeFromLocked(from) {
		return c.sameKeysSnapshotLocked(sel, end, from)
	}
	keys := c.keysAtLocked(from)
	picked := &Selection{}
	identity := true
	for i, p := range prims {
		r, ok := c.rows.lookup(p)
		if !ok || !keys[r].visible() {
			continue
		}
		picked.QueryIdx = append(picked.QueryIdx, uint32(i))
		if int(r) != len(picked.Rows) {
			identity = false
		}
		picked.Rows = append(picked.Rows, r)
	}
	picked.Count = len(picked.Rows)
	if picked.Count == len(prims) {
		picked.QueryIdx = nil
	}
	snap, err := c.pinAtLocked(from, picked.Rows, identity)
	if err != nil {
		return nil, Snapshot{}, err
	}
	snap.Ordinal = c.newestSealedAtLocked(picked.Rows, end)
	return picked, snap, nil
}

// versionRangeLocked splits the keys of prims that rowOf selects (a change inside a range
// ending at end, images after end from the first) by their state at end: values, pinned at
// end, and tombstones.
func (c *Column) versionRangeLocked(prims []uint64, rowOf func(uint64) (int32, bool), end uint64, from int) (RangeSelection, error) {
	keys := c.keysAtLocked(from)
	var sel RangeSelection
	var tombRows []int32
	for i, p := range prims {
		r, ok := rowOf(p)
		switch {
		case !ok:
		case keys[r].deleted:
			sel.TombQueryIdx = append(sel.TombQueryIdx, uint32(i))
			tombRows = append(tombRows, r)
		default:
			sel.ValueQueryIdx = append(sel.ValueQueryIdx, uint32(i))
			sel.ValueRows = append(sel.ValueRows, r)
		}
	}
	if len(sel.ValueRows) > 0 {
		var err error
		if sel.Values, err = c.pinAtLocked(from, sel.ValueRows, isIdentity(sel.ValueRows)); err != nil {
			return RangeSelection{}, err
		}
		sel.Values.Ordinal = c.newestSealedAtLocked(sel.ValueRows, end)
	}
	if len(tombRows) > 0 {
		sel.TombOrdinal = c.newestSealedAtLocked(tombRows, end)
	}
	return sel, nil
}

// pinAtLocked pins rows (keys with a value then) of the state before image from.
func (c *Column) pinAtLocked(from int, rows []int32, identity bool) (Snapshot, error) {
	snap := Snapshot{Layout: c.layout}
	if len(rows) == 0 {
		return snap, nil
	}
	if c.Schema.IsArray {
		arrays := c.arraysAtLocked(from)
		snap.Views = make([]View, len(rows))
		for k, r := range rows {
			a := arrays[r]
			if a.buf.Valid() {
				a.buf = a.buf.Retain()
			}
			snap.Views[k] = View{Buffer: a.buf, ByteOffset: a.off, Rows: a.n}
		}
		return snap, nil
	}
	st, err := c.stateBeforeLocked(from)
	if err != nil {
		return Snapshot{}, err
	}
	snap.Views = []View{{Buffer: st.buf.Retain(), Rows: int64(st.rows)}}
	snap.Dense = identity && len(rows) == st.rows
	return snap, nil
}

// sameKeysSnapshotLocked is a fixed snapshot at end when the folds after it changed values
// only: the current selection over the materialised state at end.
func (c *Column) sameKeysSnapshotLocked(sel *Selection, end uint64, from int) (*Selection, Snapshot, error) {
	if sel.Count == 0 {
		return sel, Snapshot{Layout: c.layout}, nil
	}
	st, err := c.stateBeforeLocked(from)
	if err != nil {
		return nil, Snapshot{}, err
	}
	if !st.buf.Valid() { // nothing was sealed then (never with a visible key: keysChange)
		return &Selection{}, Snapshot{Layout: c.layout}, nil
	}
	snap := Snapshot{Layout: c.layout, Views: []View{{Buffer: st.buf.Retain(), Rows: int64(st.rows)}},
		Dense: sel.IdentityRows && sel.Count == st.rows}
	if st.ordSel != sel || st.ordEnd != end {
		// Keys kept their states since end, so a selection of every row then is one now.
		st.ordSel, st.ordEnd, st.ordinal = sel, end, c.newestSealedAtOfLocked(sel.Rows, end, sel.allVisible)
	}
	snap.Ordinal = st.ordinal
	return sel, snap, nil
}

// stateBeforeLocked returns the fixed column's state just before image from folded,
// materialising it on first use.
func (c *Column) stateBeforeLocked(from int) (*versionState, error) {
	imgs := c.ver.images[from:]
	if st := imgs[0].state; st != nil {
		c.touchStateLocked(imgs[0])
		return st, nil
	}
	if st, err := c.reuseStateLocked(from); st != nil || err != nil {
		if err == nil {
			c.cacheStateLocked(imgs[0], st)
		}
		return st, err
	}
	// Put the images back newest first. A whole image replaces everything, so the state
	// starts from the oldest whole image (its buffer itself, when nothing older follows).
	start, base := len(imgs)-1, slices.IndexFunc(imgs, func(im *priorImage) bool { return im.whole })
	if base >= 0 {
		start = base - 1
	}
	st := &versionState{}
	var err error
	switch {
	case base == 0:
		st.rows = imgs[0].bufRows
		if imgs[0].buf.Valid() { // else nothing was sealed
			st.buf = imgs[0].buf.Retain()
		}
	case base > 0:
		im := imgs[base]
		st.rows = max(im.bufRows, c.sealedRows)
		st.buf, err = c.copyRowsLocked(im.buf, im.bufRows, st.rows)
	default:
		st.rows = c.sealedRows
		st.buf, err = c.copyRowsLocked(c.sealed, c.sealedRows, c.sealedRows)
	}
	if err != nil {
		return nil, err
	}
	if base != 0 {
		st.bytes = int64(st.buf.Size())
	}
	for i := start; i >= 0; i-- {
		if err := c.putBackBytesLocked(st, imgs[i], nil); err != nil {
			st.buf.Release()
			return nil, err
		}
	}
	if st.buf.Valid() {
		if err := c.store.Flush(st.buf); err != nil {
			st.buf.Release()
			return nil, err
		}
	}
	c.cacheStateLocked(imgs[0], st)
	return st, nil
}

// reuseStateLocked turns a materialised state that no reader holds any more into the state
// before image from, rewriting only the rows the folds between the two states changed: a
// reader lagging a fixed distance behind an advancing floor then reads each new N for the cost
// of about one ordinal's changed rows, not a copy of the column. Nil (and no error) when no
// cached state can be reused; on error the reused state is gone.
func (c *Column) reuseStateLocked(from int) (*versionState, error) {
	for _, im := range c.ver.cached {
		st, at := im.state, slices.Index(c.ver.images, im)
		if at < 0 || st.bytes == 0 || st.rows != c.sealedRows || st.buf.Refs() != 1 {
			continue // an image's own buffer, rows added since, or a reader still holds it
		}
		lo, hi := min(at, from), max(at, from)
		if slices.ContainsFunc(c.ver.images[lo:], func(im *priorImage) bool { return im.whole }) {
			continue
		}
		c.detachStateLocked(im)
		if err := c.rewriteStateLocked(st, lo, hi, from); err != nil {
			st.buf.Release()
			return nil, err
		}
		st.ordSel = nil
		return st, nil
	}
	return nil, nil
}

// rewriteStateLocked turns st, the state before image lo or hi, into the state before image
// from (the other one). The rows that differ between the two are the rows the folds between
// them wrote (a tombstone leaves the bytes): their state at from is their sealed value with
// the images from from on put back.
func (c *Column) rewriteStateLocked(st *versionState, lo, hi, from int) error {
	if len(c.ver.changed) < (st.rows+63)/64 {
		c.ver.changed = newRowSet(st.rows)
	}
	changed := c.ver.changed
	defer clear(changed)
	copies := newRowCopies(c.store, st.buf, c.sealed, c.rowBytes)
	for _, im := range c.ver.images[lo:hi] {
		for i := range im.parts {
			if !im.parts[i].buf.Valid() {
				continue
			}
			for _, r := range im.parts[i].rows {
				if int(r) < st.rows && changed.add(r) {
					copies.add(int64(r), int64(r))
				}
			}
		}
	}
	err := copies.flush()
	for i := len(c.ver.images) - 1; i >= from && err == nil; i-- {
		err = c.putBackBytesLocked(st, c.ver.images[i], changed)
	}
	if err == nil {
		err = c.store.Flush(st.buf)
	}
	return err
}

// putBackBytesLocked restores into st the bytes a partial fold replaced (of the rows in only,
// when it is not nil), last row first.
func (c *Column) putBackBytesLocked(st *versionState, im *priorImage, only rowSet) error {
	for i := len(im.parts) - 1; i >= 0; i-- {
		p := &im.parts[i]
		if !p.buf.Valid() {
			continue
		}
		copies := newRowCopies(c.store, st.buf, p.buf, c.rowBytes)
		for k := len(p.rows) - 1; k >= 0; k-- {
			if r := p.rows[k]; int(r) < st.rows && (only == nil || only.has(r)) {
				copies.add(int64(r), int64(k))
			}
		}
		if err := copies.flush(); err != nil {
			return err
		}
	}
	return nil
}

// keysAtLocked is every row's key state just before image from folded.
func (c *Column) keysAtLocked(from int) []key {
	imgs := c.ver.images[from:]
	keys := make([]key, c.rows.len())
	start, base := len(imgs)-1, slices.IndexFunc(imgs, func(im *priorImage) bool { return im.whole })
	if base >= 0 {
		start = base - 1
		wk := &imgs[base].wholeKeys
		for r := range keys {
			if r < wk.len() {
				keys[r] = wk.get(int32(r))
			}
		}
	} else {
		for r := range keys {
			keys[r] = c.keys.get(int32(r))
		}
	}
	for i := start; i >= 0; i-- {
		parts := imgs[i].parts
		for j := len(parts) - 1; j >= 0; j-- {
			for k := len(parts[j].rows) - 1; k >= 0; k-- {
				keys[parts[j].rows[k]] = parts[j].keys.get(k)
			}
		}
	}
	return keys
}

// arraysAtLocked is every row of an array column just before image from folded (references
// not retained).
func (c *Column) arraysAtLocked(from int) []arrayRow {
	arrays := c.arrays.rows()
	imgs := c.ver.images[from:]
	for i := len(imgs) - 1; i >= 0; i-- {
		parts := imgs[i].parts
		for j := len(parts) - 1; j >= 0; j-- {
			if st := parts[j].store; st != nil { // every row, as it was
				prior := st.rows()
				copy(arrays, prior)
				clear(arrays[len(prior):]) // rows made since were empty then
				continue
			}
			for k := len(parts[j].rows) - 1; k >= 0; k-- {
				prior := arrayRow{} // a nil image: every row was empty
				if parts[j].arrays != nil {
					prior = parts[j].arrays[k]
				}
				arrays[parts[j].rows[k]] = prior
			}
		}
	}
	return arrays
}

// cacheStateLocked keeps st as im's state, dropping the least recently read state beyond
// maxCachedStates.
func (c *Column) cacheStateLocked(im *priorImage, st *versionState) {
	im.state = st
	c.ver.bytes += st.bytes
	c.ver.cached = append(c.ver.cached, im)
	if len(c.ver.cached) > maxCachedStates {
		c.uncacheStateLocked(c.ver.cached[0])
	}
}

// touchStateLocked marks im's state as the most recently read.
func (c *Column) touchStateLocked(im *priorImage) {
	if i := slices.Index(c.ver.cached, im); i >= 0 {
		c.ver.cached = append(slices.Delete(c.ver.cached, i, i+1), im)
	}
}

// uncacheStateLocked releases im's state (readers keep their references).
func (c *Column) uncacheStateLocked(im *priorImage) {
	if st := c.detachStateLocked(im); st != nil && st.buf.Valid() {
		st.buf.Release()
	}
}

// detachStateLocked takes im's state out of the cache and returns it (nil: none).
func (c *Column) detachStateLocked(im *priorImage) *versionState {
	st := im.state
	if st == nil {
		return nil
	}
	if i := slices.Index(c.ver.cached, im); i >= 0 {
		c.ver.cached = slices.Delete(c.ver.cached, i, i+1)
	}
	c.ver.bytes -= st.bytes
	im.state = nil
	return st
}

// DropVersionStates releases the materialised states (the stage's memory budget: they are
// rebuilt from the images when read again).
func (c *Column) DropVersionStates() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.ver.cached) > 0 {
		c.uncacheStateLocked(c.ver.cached[0])
	}
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
	return c.newestSealedAtOfLocked(rows, end, false)
}

// newestSealedAtOfLocked is newestSealedAtLocked, told whether rows are every row of the
// column (then the newest record at or before end holds one of them: no row set to build).
func (c *Column) newestSealedAtOfLocked(rows []int32, end uint64, every bool) uint64 {
	i := sort.Search(len(c.records), func(i int) bool { return c.records[i].ordinal > min(end, c.foldedTo) })
	if every && i > 0 {
		return c.records[i-1].ordinal
	}
	set := newRowSet(c.rows.len())
	for _, r := range rows {
		set.add(r)
	}
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
