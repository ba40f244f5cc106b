package pathdict

import "hash/maphash"

// tokenIndex finds a token by its string. It keys tokens by a 64-bit hash of the string and
// confirms the match against the token table, so the index holds no pointers (the GC does not
// scan it) and a lookup of a new token touches one slot instead of comparing against strings
// scattered over the heap. Two strings with one hash are rare; the later one goes to spill.
type tokenIndex struct {
	seed   maphash.Seed
	byHash map[uint64]Token
	spill  map[string]Token
}

func newTokenIndex() tokenIndex {
	return tokenIndex{seed: maphash.MakeSeed(), byHash: map[uint64]Token{}, spill: map[string]Token{}}
}

// find returns the token of s; tokens is the dictionary's token table.
func (x *tokenIndex) find(s string, tokens []tokenEntry) (Token, bool) {
	t, ok := x.byHash[maphash.String(x.seed, s)]
	if !ok {
		return 0, false
	}
	if tokens[t&indexMask].text == s {
		return t, true
	}
	t, ok = x.spill[s]
	return t, ok
}

// add records t as the token of s, which find does not know yet.
func (x *tokenIndex) add(s string, t Token) {
	h := maphash.String(x.seed, s)
	if _, taken := x.byHash[h]; taken {
		x.spill[s] = t
		return
	}
	x.byHash[h] = t
}
