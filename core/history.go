package core

import (
	"slices"
	"sort"
)

// The stage's lifecycle history: the deletes and prim creations that column records cannot
// hold. A column records the changes of the rows it has; a delete also names cells that have
// no row (yet): a write at a lower ordinal that runs after the delete must still end deleted
// (FLOOR_ONLY) or be refused (NONDECREASING, STRICTLY_INCREASING). Clones record the prims
// they create, which may carry no attribute at all. Entries are kept while a mutation the
// floors admit can still be ordered before them.

type historyKind uint8

const (
	historyAttrDelete historyKind = iota // attrs deleted on prims
	historyPrimDelete                    // whole prims deleted (every attribute, and the prims)
	historyPrimCreate                    // prims created by a clone
)

// historyEntry is one delete or creation, at (ordinal, seq).
type historyEntry struct {
	ordinal, seq uint64
	kind         historyKind
	attrs        []uint64 // historyAttrDelete
	prims        []uint64 // borrowed: query path slices never change
	set          map[uint64]bool
}

func (e *historyEntry) hasPrim(p uint64) bool {
	if e.set == nil {
		e.set = make(map[uint64]bool, len(e.prims))
		for _, q := range e.prims {
			e.set[q] = true
		}
	}
	return e.set[p]
}

// firstPrim returns the first of prims the entry names (ok=false when none).
func (e *historyEntry) firstPrim(prims []uint64) (uint64, bool) {
	for _, p := range prims {
		if e.hasPrim(p) {
			return p, true
		}
	}
	return 0, false
}

// opHistory holds the entries in (ordinal, seq) order.
type opHistory struct{ entries []*historyEntry }

func (h *opHistory) add(e *historyEntry) {
	i := sort.Search(len(h.entries), func(i int) bool {
		x := h.entries[i]
		return e.ordinal < x.ordinal || (e.ordinal == x.ordinal && e.seq < x.seq)
	})
	h.entries = slices.Insert(h.entries, i, e)
}

// above returns the entries at ordinals above ordinal (at or above it when orEqual) made by
// ops submitted before seq.
func (h *opHistory) above(ordinal uint64, orEqual bool, seq uint64) []*historyEntry {
	n := len(h.entries)
	if n == 0 || h.entries[n-1].ordinal < ordinal || (h.entries[n-1].ordinal == ordinal && !orEqual) {
		return nil
	}
	i := sort.Search(n, func(i int) bool {
		o := h.entries[i].ordinal
		return o > ordinal || (orEqual && o == ordinal)
	})
	var out []*historyEntry
	for _, e := range h.entries[i:] {
		if e.seq < seq {
			out = append(out, e)
		}
	}
	return out
}

// prune drops the entries no admissible mutation can be ordered before any more: floorOf(e)
// is the lowest write floor of what e covers.
func (h *opHistory) prune(floorOf func(e *historyEntry) uint64) {
	h.entries = slices.DeleteFunc(h.entries, func(e *historyEntry) bool { return e.ordinal <= floorOf(e) })
}

// historyFloorLocked is the lowest write floor of the cells an entry covers: a mutation at or
// below it is refused by the floors, so the entry no longer matters once its ordinal is there.
func (s *Stage) historyFloorLocked(e *historyEntry) uint64 {
	if e.kind != historyAttrDelete {
		return s.floors.global // prims: every attribute, including ones not created yet
	}
	lowest := ^uint64(0)
	for _, a := range e.attrs {
		lowest = min(lowest, s.floors.effective(a))
	}
	return lowest
}
