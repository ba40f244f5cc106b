package core

import (
	"iter"
	"math/bits"
	"slices"

	"github.com/ovstage-go/ovstage/core/pathdict"
)

// primSet is the set of prims that exist in a stage. The paths of one dictionary differ only in
// a dense index (pathdict.IndexMask), so a stage holding a large share of its dictionary's paths
// keeps one bit per index; a sparse set (few prims with large indices) falls back to a map. The parent -> children index that usd-children reads need
// is built on first use and maintained from then on, so stages that never read usd-children
// do not pay for it.
type primSet struct {
	n        int
	tag      uint64              // the high bits shared by every path in bits
	bits     []uint64            // bitset over path indices, while dense
	sparse   map[uint64]struct{} // once too sparse for bits
	children map[uint64]map[uint64]struct{}
	// below and weight index the members by path, for subtree walks (clones): below[q] holds
	// the children c of path q that are members or have members under them, weight[c] counts
	// the members at or under c. Built on the first subtree walk and maintained from then on,
	// so a walk visits the subtree (and the unheld paths on the way), never the whole set.
	below  map[uint64]map[uint64]struct{}
	weight map[uint64]int
}

// bitsWorthIt reports whether a bitset covering ids up to maxID costs no more than about
// 2 bytes per member (plus slack); a map costs ~20 bytes per member.
func bitsWorthIt(maxID uint64, members int) bool { return maxID/8 <= 2*uint64(members)+1<<16 }

func (s *primSet) len() int { return s.n }

func (s *primSet) has(p uint64) bool {
	if s.sparse != nil {
		_, ok := s.sparse[p]
		return ok
	}
	i := p & pathdict.IndexMask
	w := i / 64
	return p&^pathdict.IndexMask == s.tag && w < uint64(len(s.bits)) && s.bits[w]&(1<<(i%64)) != 0
}

// add inserts p; it reports whether p was new. parent gives a prim's parent path.
func (s *primSet) add(p uint64, parent func(uint64) uint64) bool {
	if s.has(p) {
		return false
	}
	s.n++
	if s.n == 1 && s.sparse == nil {
		s.tag = p &^ pathdict.IndexMask
	}
	i := p & pathdict.IndexMask
	switch {
	case s.sparse != nil:
		s.sparse[p] = struct{}{}
	case p&^pathdict.IndexMask == s.tag && bitsWorthIt(i, s.n):
		if w := i / 64; w >= uint64(len(s.bits)) {
			s.bits = append(s.bits, make([]uint64, w+1-uint64(len(s.bits))+uint64(len(s.bits))/4)...)
		}
		s.bits[i/64] |= 1 << (i % 64)
	default:
		sparse := make(map[uint64]struct{}, s.n)
		for q := range s.all() {
			sparse[q] = struct{}{}
		}
		sparse[p] = struct{}{}
		s.sparse, s.bits = sparse, nil
	}
	if s.children != nil {
		s.link(p, parent(p))
	}
	if s.below != nil {
		s.occupy(p, parent, 1)
	}
	return true
}

// remove deletes p; it reports whether p was a member.
func (s *primSet) remove(p uint64, parent func(uint64) uint64) bool {
	if !s.has(p) {
		return false
	}
	s.n--
	if s.sparse != nil {
		delete(s.sparse, p)
	} else {
		i := p & pathdict.IndexMask
		s.bits[i/64] &^= 1 << (i % 64)
	}
	if s.children != nil {
		par := parent(p)
		delete(s.children[par], p)
		if len(s.children[par]) == 0 {
			delete(s.children, par)
		}
	}
	if s.below != nil {
		s.occupy(p, parent, -1)
	}
	return true
}

// occupy adds delta (+1 or -1) to the weight of member p and each of its ancestors below the
// root, linking a path into below when it gains its first member and unlinking it when it
// loses its last.
func (s *primSet) occupy(p uint64, parent func(uint64) uint64, delta int) {
	for c, par := p, parent(p); par != 0; c, par = par, parent(par) {
		w := s.weight[c] + delta
		switch {
		case w <= 0:
			delete(s.weight, c)
			delete(s.below[par], c)
			if len(s.below[par]) == 0 {
				delete(s.below, par)
			}
		case w == 1:
			s.weight[c] = w
			kids := s.below[par]
			if kids == nil {
				kids = map[uint64]struct{}{}
				s.below[par] = kids
			}
			kids[c] = struct{}{}
		default:
			s.weight[c] = w
		}
	}
}

// under lists the members strictly below path root, by path components (a member under a
// path that is not itself a member counts), in no particular order.
func (s *primSet) under(root uint64, parent func(uint64) uint64) []uint64 {
	if s.below == nil {
		s.below, s.weight = map[uint64]map[uint64]struct{}{}, map[uint64]int{}
		for q := range s.all() {
			s.occupy(q, parent, 1)
		}
	}
	var out []uint64
	var todo []uint64
	for c := range s.below[root] {
		todo = append(todo, c)
	}
	for len(todo) > 0 {
		c := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if s.has(c) {
			out = append(out, c)
		}
		for k := range s.below[c] {
			todo = append(todo, k)
		}
	}
	return out
}

func (s *primSet) link(p, par uint64) {
	kids := s.children[par]
	if kids == nil {
		kids = map[uint64]struct{}{}
		s.children[par] = kids
	}
	kids[p] = struct{}{}
}

// all yields the members (in id order while the set is a bitset).
func (s *primSet) all() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		if s.sparse != nil {
			for p := range s.sparse {
				if !yield(p) {
					return
				}
			}
			return
		}
		for w, word := range s.bits {
			for word != 0 {
				b := uint64(bits.TrailingZeros64(word))
				if !yield(s.tag | (uint64(w)*64 + b)) {
					return
				}
				word &^= 1 << b
			}
		}
	}
}

// childSet is the set of member children of p (read-only; the index is built on first use).
func (s *primSet) childSet(p uint64, parent func(uint64) uint64) map[uint64]struct{} {
	if s.children == nil {
		s.children = map[uint64]map[uint64]struct{}{}
		for q := range s.all() {
			s.link(q, parent(q))
		}
	}
	return s.children[p]
}

// childrenOf lists the member children of p, sorted (building the index on first use).
func (s *primSet) childrenOf(p uint64, parent func(uint64) uint64) []uint64 {
	kids := s.childSet(p, parent)
	out := make([]uint64, 0, len(kids))
	for c := range kids {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// childrenLocked is the set of held children of prim p (read-only).
func (s *Stage) childrenLocked(p uint64) map[uint64]struct{} {
	return s.prims.childSet(p, s.dict.Parent)
}
