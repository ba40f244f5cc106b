package pathdict

import "hash/maphash"

// tokenIndex finds a token by its string: an open-addressing hash table of token indices
// (0: an empty slot), probed linearly from the string's hash and confirmed against the token
// table's text. 4 bytes a slot and no pointers, so a scene of many unique prim names (the
// "M123" of every mesh) costs a few bytes per token here, and the GC does not scan it.
type tokenIndex struct {
	seed  maphash.Seed
	slots []uint32 // a power of two long
	used  int
}

// minSlots is the size of a new index.
const minSlots = 64

func newTokenIndex() tokenIndex {
	return tokenIndex{seed: maphash.MakeSeed(), slots: make([]uint32, minSlots)}
}

// find returns the index of the token whose text is s (0 if none).
func (x *tokenIndex) find(s string, text *tokenTable) uint32 {
	mask := uint64(len(x.slots) - 1)
	for i := maphash.String(x.seed, s) & mask; ; i = (i + 1) & mask {
		t := x.slots[i]
		if t == 0 || text.text(t) == s {
			return t
		}
	}
}

// add records token index t, whose text is s and which find does not know yet.
func (x *tokenIndex) add(s string, t uint32, text *tokenTable) {
	if (x.used+1)*4 > len(x.slots)*3 { // keep the load at most 3/4
		x.grow(text)
	}
	x.insert(s, t)
	x.used++
}

func (x *tokenIndex) insert(s string, t uint32) {
	mask := uint64(len(x.slots) - 1)
	i := maphash.String(x.seed, s) & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = t
}

// grow doubles the table, placing every token again by the hash of its text.
func (x *tokenIndex) grow(text *tokenTable) {
	old := x.slots
	x.slots = make([]uint32, 2*len(old))
	for _, t := range old {
		if t != 0 {
			x.insert(text.text(t), t)
		}
	}
}
