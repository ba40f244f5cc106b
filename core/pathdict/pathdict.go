// Package pathdict is a stage's path dictionary: interned tokens, interned prim paths
// (sequences of component tokens) and refcounted, never-deduplicated path lists. Every stage
// owns one; it is safe for concurrent use.
//
// All handles are uint64 with 0 invalid. A handle carries the dictionary that minted it and its
// kind (see handles.go), so a token, path or list of one dictionary is refused by every other
// one, and a token is never taken for a path or a list (nor the other way round).
package pathdict

import (
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// Token, Path and ListID are the three handle kinds; 0 is invalid for each.
type (
	Token  = uint64
	Path   = uint64
	ListID = uint64
)

// Error is a path-dictionary failure (OVX_API_ERROR in the reference).
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

func errorf(msg string) error { return &Error{Message: msg} }

// The tables below hold indices (a handle without its tags) as uint32, so one prim path costs
// an 8-byte path entry, and a token a 16-byte entry, its text in one byte arena and a 4-byte
// index slot (docs/architecture.md "Memory": a scene of 100k meshes has a unique last token
// per prim). A dictionary holds at most maxEntries tokens, paths and bytes of token text.
const maxEntries = 1<<32 - 1

type pathEntry struct {
	parent uint32 // index of the parent path; 0 for the root
	last   uint32 // index of the last component's token; 0 for the root
}

// tokenEntry is one interned token and the first path made with it as last component. Most
// tokens end one path only (the "p7" of "/bench/p7"), so that child is found here, in a dense
// table, and only a token's later parents go through the pathIDs index.
type tokenEntry struct {
	off, n      uint32 // its text: tokenTable.bytes[off : off+n]
	firstParent uint32 // path index; 0 while no path ends in this token
	firstChild  uint32 // path index
}

// tokenTable is the interned tokens: an entry each (index 0 unused) and their text back to
// back in one arena, instead of a string header and a heap object per token. Bytes once
// appended are never written again, so a string made over them (text) stays valid when the
// arena grows: it keeps the old array alive.
type tokenTable struct {
	entries []tokenEntry
	bytes   []byte
}

// text is the string of token index i (no copy).
func (tt *tokenTable) text(i uint32) string {
	e := tt.entries[i]
	return unsafe.String(&tt.bytes[e.off], int(e.n))
}

// add appends a token whose text is s and returns its index.
func (tt *tokenTable) add(s string) uint32 {
	i := len(tt.entries)
	if i > maxEntries || uint64(len(tt.bytes))+uint64(len(s)) > maxEntries {
		panic("pathdict: the dictionary holds its most tokens (2^32-1, or 4 GiB of token text)")
	}
	tt.entries = append(tt.entries, tokenEntry{off: uint32(len(tt.bytes)), n: uint32(len(s))})
	tt.bytes = append(tt.bytes, s...)
	return uint32(i)
}

type pathList struct {
	paths []Path
	refs  int
}

// Dictionary interns tokens and paths and owns path lists.
type Dictionary struct {
	tags     tags // this dictionary's handle tags, fixed at New
	mu       sync.RWMutex
	tokenIDs tokenIndex
	tokens   tokenTable
	pathIDs  map[[2]uint32]uint32 // (parent, last) -> index of the paths not a token's first child
	paths    []pathEntry          // by path index; index 1 is the root "/"
	listMu   sync.Mutex
	lists    map[ListID]*pathList
	nextList uint64 // index of the last list made
}

// New returns an empty dictionary holding only the root path.
func New() *Dictionary {
	return &Dictionary{
		tags:     newTags(),
		tokenIDs: newTokenIndex(),
		tokens:   tokenTable{entries: []tokenEntry{{}}},
		pathIDs:  map[[2]uint32]uint32{},
		paths:    []pathEntry{{}, {}},
		lists:    map[ListID]*pathList{},
	}
}

// Root is the handle of the absolute root path "/" (zero components).
func (d *Dictionary) Root() Path { return d.tags.path | rootIndex }

func checkString(s, kind string) error {
	if s == "" {
		return errorf(kind + " string must be non-empty")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return errorf(kind + " string contains embedded NUL")
	}
	return nil
}

// InternToken returns the token for s, creating it if needed.
func (d *Dictionary) InternToken(s string) (Token, error) {
	if err := checkString(s, "Token"); err != nil {
		return 0, err
	}
	if t, ok := d.lookupToken(s); ok {
		return t, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.internTokenLocked(s), nil
}

func (d *Dictionary) lookupToken(s string) (Token, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	i := d.tokenIDs.find(s, &d.tokens)
	return d.tags.token | uint64(i), i != 0
}

func (d *Dictionary) internTokenLocked(s string) Token {
	i := d.tokenIDs.find(s, &d.tokens)
	if i == 0 {
		i = d.tokens.add(s)
		d.tokenIDs.add(s, i, &d.tokens)
	}
	return d.tags.token | uint64(i)
}

// TokenString returns the string of a token.
func (d *Dictionary) TokenString(t Token) (string, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	i, ok := d.tokenIndexLocked(t)
	if !ok {
		return "", d.notFound(t, kindToken)
	}
	return d.tokens.text(uint32(i)), nil
}

// tokenIndexLocked is the index of token t, if t is a token of this dictionary.
func (d *Dictionary) tokenIndexLocked(t Token) (uint64, bool) {
	i, ok := d.tags.index(t, d.tags.token)
	return i, ok && i != 0 && i < uint64(len(d.tokens.entries))
}

// pathIndexLocked is the index of path p, if p is a path of this dictionary.
func (d *Dictionary) pathIndexLocked(p Path) (uint64, bool) {
	i, ok := d.tags.index(p, d.tags.path)
	return i, ok && i != 0 && i < uint64(len(d.paths))
}

// ParsePath splits an absolute prim path string into its components: "/" is the root (no
// components); otherwise "/" followed by components separated by single "/", each non-empty
// and neither "." nor ".." (so "//", "/a//b", "/a/" and "/a/../b" are malformed: one path has
// one spelling).
func ParsePath(s string) ([]string, error) {
	if err := checkPathGrammar(s); err != nil {
		return nil, err
	}
	if s == "/" {
		return nil, nil
	}
	return strings.Split(s[1:], "/"), nil
}

// checkPathGrammar is ParsePath's grammar without building the components.
func checkPathGrammar(s string) error {
	if err := checkString(s, "Path"); err != nil {
		return err
	}
	if s[0] != '/' {
		return errorf("Path string must be absolute (start with '/'): " + quote(s))
	}
	if s == "/" {
		return nil
	}
	rest := s[1:]
	for i := uint64(0); ; i++ {
		c, more, found := strings.Cut(rest, "/")
		if err := checkComponent(c); err != nil {
			return errorf("Path string " + quote(s) + ": component " + itoa(i) + " " + err.Error())
		}
		if !found {
			return nil
		}
		rest = more
	}
}

// checkComponent rejects what cannot be one path component (the reason, for a message).
func checkComponent(c string) error {
	switch {
	case c == "":
		return errorf("is empty (a doubled, leading or trailing '/')")
	case c == "." || c == "..":
		return errorf("is " + quote(c) + " (paths are absolute: \".\" and \"..\" are not prim names)")
	case strings.IndexByte(c, '/') >= 0:
		return errorf("contains '/'")
	}
	return nil
}

// InternPath interns an absolute prim path string (see ParsePath for the grammar).
func (d *Dictionary) InternPath(s string) (Path, error) {
	if err := checkPathGrammar(s); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.internBelowLocked(d.Root(), s), nil
}

// internBelowLocked interns the components of the valid path string s below p ("/" adds none).
func (d *Dictionary) internBelowLocked(p Path, s string) Path {
	if s == "/" {
		return p
	}
	rest := s[1:]
	for {
		c, more, found := strings.Cut(rest, "/")
		p = d.childLocked(p, d.internTokenLocked(c))
		if !found {
			return p
		}
		rest = more
	}
}

// internLockHold is how many paths InternPaths interns per hold of the write lock: enough that
// locking costs nothing per path, few enough that readers are not held off for long.
const internLockHold = 4096

// InternPaths interns every path string of strs. Either all are valid and interned, or nothing
// is interned and the error names the index of the first bad one. Consecutive siblings (the
// usual shape of a batch) share the parent's walk, so a path costs one token and one child
// lookup however deep it is.
func (d *Dictionary) InternPaths(strs []string) ([]Path, int, error) {
	for i, s := range strs {
		if err := checkPathGrammar(s); err != nil {
			return nil, i, err
		}
	}
	out := make([]Path, len(strs))
	d.reserve(len(strs))
	var w siblingWalk
	for start := 0; start < len(strs); start += internLockHold {
		end := min(start+internLockHold, len(strs))
		d.internRunLocked(&w, strs[start:end], out[start:end])
	}
	return out, 0, nil
}

// reserve makes room for about n new paths at once, so a large batch does not pay for growing
// the path table step by step. It only does so when the batch is larger than the dictionary:
// what it may allocate in vain is bounded by the batch.
func (d *Dictionary) reserve(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n <= len(d.paths) {
		return
	}
	d.paths = slices.Grow(d.paths, n)
}

// siblingWalk remembers the parent of the last path InternPaths interned.
type siblingWalk struct {
	parentStr string
	parent    Path // 0 before the first path
}

// internRunLocked interns valid path strings into out under one hold of the write lock.
func (d *Dictionary) internRunLocked(w *siblingWalk, strs []string, out []Path) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, s := range strs {
		cut := strings.LastIndexByte(s, '/')
		if w.parent == 0 || s[:cut] != w.parentStr {
			w.parentStr, w.parent = s[:cut], d.Root()
			if cut > 0 {
				w.parent = d.internBelowLocked(w.parent, w.parentStr)
			}
		}
		if cut == len(s)-1 { // the root "/"
			out[i] = w.parent
			continue
		}
		out[i] = d.childLocked(w.parent, d.internTokenLocked(s[cut+1:]))
	}
}

func (d *Dictionary) childLocked(parent Path, last Token) Path {
	pi, li := uint32(parent&indexMask), uint32(last&indexMask)
	tok := &d.tokens.entries[li]
	if tok.firstParent == pi {
		return d.tags.path | uint64(tok.firstChild)
	}
	key := [2]uint32{pi, li}
	if tok.firstParent != 0 {
		if p, ok := d.pathIDs[key]; ok {
			return d.tags.path | uint64(p)
		}
	}
	i := len(d.paths)
	if i > maxEntries {
		panic("pathdict: the dictionary holds its most paths (2^32-1)")
	}
	d.paths = append(d.paths, pathEntry{parent: pi, last: li})
	if tok.firstParent == 0 {
		tok.firstParent, tok.firstChild = pi, uint32(i)
	} else {
		d.pathIDs[key] = uint32(i)
	}
	return d.tags.path | uint64(i)
}

// PathFromTokens interns the path whose components are toks (empty = root). Each token must
// be a valid component (ParsePath): a token "a/b" would otherwise make a second handle for the
// path spelled "/a/b".
func (d *Dictionary) PathFromTokens(toks []Token) (Path, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.Root()
	for i, t := range toks {
		ti, ok := d.tokenIndexLocked(t)
		if !ok {
			return 0, errorf("tokens[" + itoa(uint64(i)) + "]: " + d.notFound(t, kindToken).Error())
		}
		if text := d.tokens.text(uint32(ti)); checkComponent(text) != nil {
			return 0, errorf("tokens[" + itoa(uint64(i)) + "]: token " + quote(text) + " cannot be a path component: it " + checkComponent(text).Error())
		}
		p = d.childLocked(p, t)
	}
	return p, nil
}

// ValidPath reports whether p is a path of this dictionary.
func (d *Dictionary) ValidPath(p Path) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := d.pathIndexLocked(p)
	return ok
}

// Parent returns the parent of p (0 for the root or an unknown path).
func (d *Dictionary) Parent(p Path) Path {
	d.mu.RLock()
	defer d.mu.RUnlock()
	i, ok := d.pathIndexLocked(p)
	if !ok {
		return 0
	}
	if parent := d.paths[i].parent; parent != 0 {
		return d.tags.path | uint64(parent)
	}
	return 0
}

// Tokens returns the component tokens of p (empty for the root).
func (d *Dictionary) Tokens(p Path) ([]Token, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	i, ok := d.pathIndexLocked(p)
	if !ok {
		return nil, d.notFound(p, kindPath)
	}
	toks := make([]Token, d.depthLocked(uint32(i)))
	for k, j := len(toks)-1, uint32(i); k >= 0; k-- {
		toks[k] = d.tags.token | uint64(d.paths[j].last)
		j = d.paths[j].parent
	}
	return toks, nil
}

// PathString formats p as "/a/b" ("/" for the root).
func (d *Dictionary) PathString(p Path) (string, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	i, ok := d.pathIndexLocked(p)
	if !ok {
		return "", d.notFound(p, kindPath)
	}
	if i == rootIndex {
		return "/", nil
	}
	// One allocation: the length first, then the components from the last one back.
	n := 0
	for j := uint32(i); j != rootIndex; j = d.paths[j].parent {
		n += 1 + int(d.tokens.entries[d.paths[j].last].n)
	}
	buf := make([]byte, n)
	for j := uint32(i); j != rootIndex; j = d.paths[j].parent {
		text := d.tokens.text(d.paths[j].last)
		n -= len(text)
		copy(buf[n:], text)
		n--
		buf[n] = '/'
	}
	return unsafe.String(unsafe.SliceData(buf), len(buf)), nil
}

// depthLocked is the number of components of path index i.
func (d *Dictionary) depthLocked(i uint32) int {
	depth := 0
	for ; i != rootIndex; i = d.paths[i].parent {
		depth++
	}
	return depth
}

// CreateList makes a new list (refcount 1) holding a copy of paths, each of which must be valid.
func (d *Dictionary) CreateList(paths []Path) (ListID, error) {
	if err := d.checkPaths(paths); err != nil {
		return 0, err
	}
	return d.addList(append([]Path(nil), paths...))
}

// addList makes a list (refcount 1) that owns paths, all known to be valid.
func (d *Dictionary) addList(paths []Path) (ListID, error) {
	d.listMu.Lock()
	defer d.listMu.Unlock()
	if d.nextList == indexMask {
		return 0, errorf("the path dictionary has made its last path list handle")
	}
	d.nextList++
	id := d.tags.list | d.nextList
	d.lists[id] = &pathList{paths: paths, refs: 1}
	return id, nil
}

func (d *Dictionary) checkPaths(paths []Path) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for i, p := range paths {
		if _, ok := d.pathIndexLocked(p); !ok {
			return errorf("paths[" + itoa(uint64(i)) + "]: " + d.notFound(p, kindPath).Error())
		}
	}
	return nil
}

// CreateListFromStrings interns each path string and makes a new list.
func (d *Dictionary) CreateListFromStrings(strs []string) (ListID, error) {
	paths, bad, err := d.InternPaths(strs)
	if err != nil {
		return 0, errorf("paths[" + itoa(uint64(bad)) + "]: " + err.Error())
	}
	return d.addList(paths)
}

func (d *Dictionary) listNotFound(id ListID) error { return d.notFound(id, kindList) }

// AddRef adds a reference to a list; 0 is a no-op.
func (d *Dictionary) AddRef(id ListID) error {
	if id == 0 {
		return nil
	}
	d.listMu.Lock()
	defer d.listMu.Unlock()
	l, ok := d.lists[id]
	if !ok {
		return d.listNotFound(id)
	}
	l.refs++
	return nil
}

// Release drops a reference, erasing the list at zero; it returns the remaining count.
func (d *Dictionary) Release(id ListID) (int, error) {
	if id == 0 {
		return 0, nil
	}
	d.listMu.Lock()
	defer d.listMu.Unlock()
	l, ok := d.lists[id]
	if !ok {
		return 0, d.listNotFound(id)
	}
	l.refs--
	if l.refs == 0 {
		delete(d.lists, id)
	}
	return l.refs, nil
}

// ListPaths returns the paths of a list (shared slice: callers must not modify it).
func (d *Dictionary) ListPaths(id ListID) ([]Path, error) {
	d.listMu.Lock()
	defer d.listMu.Unlock()
	l, ok := d.lists[id]
	if !ok {
		return nil, d.listNotFound(id)
	}
	return l.paths, nil
}

// LiveLists is the number of path lists not yet erased (diagnostics).
func (d *Dictionary) LiveLists() int {
	d.listMu.Lock()
	defer d.listMu.Unlock()
	return len(d.lists)
}

func quote(s string) string { return "\"" + s + "\"" }

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
