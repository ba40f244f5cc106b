package column

import (
	"slices"

	"github.com/ovstage-go/ovstage/core/buffer"
)

// arrayRow is one sealed ragged row: n elements at byte offset off of buf (a held reference
// where a store or an image keeps it; borrowed where get returns it).
type arrayRow struct {
	buf buffer.Buffer
	off int64
	n   int64
}

// arrayStore holds an array column's sealed rows. Rows sealed together from one payload in
// row order (a write through the query that created the column, the common case) are one
// span, which keeps a reference to the payload and reads each row's offset and length from
// the delta's layout (computed for uniform rows): nothing per row. A change that is not
// span-shaped, or too many spans, turns the store into a table of one arrayRow per row
// (docs/architecture.md, "Memory").
type arrayStore struct {
	n int
	// spans, while table is nil: in row order, not overlapping; a row in no span is empty.
	spans []arraySpan
	table []arrayRow
	// held: some row took a value since the store was last emptied.
	held bool
}

// arraySpan is rows [lo, hi) taking source rows src, src+1, ... of a payload.
type arraySpan struct {
	lo, hi int32
	src    int32
	buf    buffer.Buffer // one held reference for the span
	layout rowLayout
}

// rowLayout is where a payload's source rows lie (see Delta.row).
type rowLayout struct {
	off, len          []int64
	width, widthElems int64
}

func (l *rowLayout) row(s int32) (off, n int64) {
	if l.off == nil {
		return int64(s) * l.width, l.widthElems
	}
	return l.off[s], l.len[s]
}

// maxSpans bounds the spans of a store before it becomes a table.
const maxSpans = 64

func (a *arrayStore) len() int { return a.n }

// grow appends an empty row.
func (a *arrayStore) grow() {
	a.n++
	if a.table != nil {
		a.table = append(a.table, arrayRow{})
	}
}

// spanOf is the index of the span holding row r (-1 if none).
func (a *arrayStore) spanOf(r int32) int {
	if i := lastAtOrBelow(len(a.spans), func(i int) bool { return a.spans[i].lo <= r }); i >= 0 && r < a.spans[i].hi {
		return i
	}
	return -1
}

// get returns row r (its buffer borrowed: retain it to keep it).
func (a *arrayStore) get(r int32) arrayRow {
	if a.table != nil {
		return a.table[r]
	}
	i := a.spanOf(r)
	if i < 0 {
		return arrayRow{}
	}
	sp := &a.spans[i]
	off, n := sp.layout.row(sp.src + r - sp.lo)
	return arrayRow{buf: sp.buf, off: off, n: n}
}

// rows returns every row (buffers borrowed), a fresh slice.
func (a *arrayStore) rows() []arrayRow {
	out := make([]arrayRow, a.n)
	if a.table != nil {
		copy(out, a.table)
		return out
	}
	for i := range a.spans {
		sp := &a.spans[i]
		for r := sp.lo; r < sp.hi; r++ {
			off, n := sp.layout.row(sp.src + r - sp.lo)
			out[r] = arrayRow{buf: sp.buf, off: off, n: n}
		}
	}
	return out
}

// empty reports whether every row is empty (no row took a value since the store was last
// emptied: a column never sealed, say).
func (a *arrayStore) empty() bool { return !a.held }

// set puts row r to v, taking over v's reference.
func (a *arrayStore) set(r int32, v arrayRow) {
	a.toTable()
	old := a.table[r]
	a.table[r] = v
	a.held = a.held || v.buf.Valid()
	if old.buf.Valid() {
		old.buf.Release()
	}
}

// toTable leaves span mode: one arrayRow (one held reference) per row.
func (a *arrayStore) toTable() {
	if a.table != nil {
		return
	}
	a.table = a.rows()
	for _, row := range a.table {
		if row.buf.Valid() {
			row.buf.Retain()
		}
	}
	a.releaseSpans()
}

func (a *arrayStore) releaseSpans() {
	for i := range a.spans {
		a.spans[i].buf.Release()
	}
	a.spans = nil
}

// assignSpan makes rows [sp.lo, sp.hi) the span sp (taking over its reference) and reports
// whether it could: a table store, or one that would hold too many spans, refuses (sp stays
// the caller's).
func (a *arrayStore) assignSpan(sp arraySpan) bool {
	if sp.lo == 0 && int(sp.hi) == a.n {
		// The whole column: everything before is replaced, table or spans.
		a.release()
		a.spans, a.held = []arraySpan{sp}, true
		return true
	}
	if a.table != nil {
		return false
	}
	kept := make([]arraySpan, 0, len(a.spans)+2)
	for _, old := range a.spans {
		switch {
		case old.hi <= sp.lo || old.lo >= sp.hi: // untouched
			kept = append(kept, old)
		case old.lo < sp.lo && old.hi > sp.hi: // split around sp
			left, right := old, old
			left.hi = sp.lo
			right.src += sp.hi - old.lo
			right.lo = sp.hi
			right.buf = old.buf.Retain()
			kept = append(kept, left, right)
		case old.lo < sp.lo: // sp covers old's tail
			old.hi = sp.lo
			kept = append(kept, old)
		case old.hi > sp.hi: // sp covers old's head
			old.src += sp.hi - old.lo
			old.lo = sp.hi
			kept = append(kept, old)
		default: // covered: dropped
			old.buf.Release()
		}
	}
	i := 0
	for i < len(kept) && kept[i].lo < sp.lo {
		i++
	}
	kept = append(kept, arraySpan{})
	copy(kept[i+1:], kept[i:])
	kept[i] = sp
	a.spans, a.held = kept, true
	if len(a.spans) > maxSpans {
		a.toTable()
	}
	return true
}

// retained is a copy of the store holding its own references.
func (a *arrayStore) retained() *arrayStore {
	out := &arrayStore{n: a.n, held: a.held, spans: slices.Clone(a.spans), table: slices.Clone(a.table)}
	out.forEachRef(func(b *buffer.Buffer) { b.Retain() })
	return out
}

// bytes is what the store holds: its rows' share of their payloads and its own entries.
func (a *arrayStore) bytes(elemBytes int) int64 {
	eb := int64(elemBytes)
	if a.table != nil {
		total := int64(0)
		for _, row := range a.table {
			total += 16 + row.n*eb
		}
		return total
	}
	total := int64(0)
	for i := range a.spans {
		sp := &a.spans[i]
		total += 48
		if sp.layout.off == nil {
			total += int64(sp.hi-sp.lo) * sp.layout.widthElems * eb
			continue
		}
		for s := sp.src; s < sp.src+sp.hi-sp.lo; s++ {
			total += sp.layout.len[s] * eb
		}
	}
	return total
}

// forEachRef calls fn with every reference the store holds (fn may replace it).
func (a *arrayStore) forEachRef(fn func(b *buffer.Buffer)) {
	for i := range a.spans {
		fn(&a.spans[i].buf)
	}
	for i := range a.table {
		if a.table[i].buf.Valid() {
			fn(&a.table[i].buf)
		}
	}
}

// release drops every reference; the rows become empty.
func (a *arrayStore) release() {
	a.releaseSpans()
	for _, row := range a.table {
		if row.buf.Valid() {
			row.buf.Release()
		}
	}
	a.table, a.held = nil, false
}
