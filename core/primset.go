package core

import "slices"

// primSet is the set of prims that exist in a stage. Path ids are dense process-wide indices,
// so a stage holding a large share of them keeps one bit per id; a sparse set (few prims with
// large ids) falls back to a map. The parent -> children index that usd-children reads need
// is built on first use and maintained from then on, so stages that never read usd-children
// do not pay for it.
type primSet struct {
	n        int
	bits     []uint64            // bitset over path ids, while dense
	sparse   map[uint64]struct{} // once too sparse for bits
	children map[uint64]map[uint64]struct{}
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
	w := p / 64
	return w < uint64(len(s.bits)) && s.bits[w]&(1<<(p%64)) != 0
}

// add inserts p; it reports whether p was new. parent gives a prim's parent path.
func (s *primSet) add(p uint64, parent func(uint64) uint64) bool {
	if s.has(p) {
		return false
	}
	s.n++
	switch {
	case s.sparse != nil:
		s.sparse[p] = struct{}{}
	case bitsWorthIt(p, s.n):
		if w := p / 64; w >= uint64(len(s.bits)) {
			s.bits = append(s.bits, make([]uint64, w+1-uint64(len(s.bits))+uint64(len(s.bits))/4)...)
		}
		s.bits[p/64] |= 1 << (p % 64)
	default:
		s.sparse = make(map[uint64]struct{}, s.n)
		s.forEachBit(func(q uint64) { s.sparse[q] = struct{}{} })
		s.sparse[p] = struct{}{}
		s.bits = nil
	}
	if s.children != nil {
		s.link(p, parent(p))
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
		s.bits[p/64] &^= 1 << (p % 64)
	}
	if s.children != nil {
		par := parent(p)
		delete(s.children[par], p)
		if len(s.children[par]) == 0 {
			delete(s.children, par)
		}
	}
	return true
}

func (s *primSet) link(p, par uint64) {
	kids := s.children[par]
	if kids == nil {
		kids = map[uint64]struct{}{}
		s.children[par] = kids
	}
	kids[p] = struct{}{}
}

func (s *primSet) forEachBit(fn func(uint64)) {
	for w, word := range s.bits {
		for word != 0 {
			b := uint64(0)
			for word&(1<<b) == 0 {
				b++
			}
			fn(uint64(w)*64 + b)
			word &^= 1 << b
		}
	}
}

func (s *primSet) forEach(fn func(uint64)) {
	if s.sparse != nil {
		for p := range s.sparse {
			fn(p)
		}
		return
	}
	s.forEachBit(fn)
}

// childrenOf lists the member children of p, sorted (building the index on first use).
func (s *primSet) childrenOf(p uint64, parent func(uint64) uint64) []uint64 {
	if s.children == nil {
		s.children = map[uint64]map[uint64]struct{}{}
		s.forEach(func(q uint64) { s.link(q, parent(q)) })
	}
	out := make([]uint64, 0, len(s.children[p]))
	for c := range s.children[p] {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}
