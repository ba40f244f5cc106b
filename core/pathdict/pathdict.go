// Package pathdict is the process-wide path dictionary (spec §1.2, §3.2): interned tokens,
// interned prim paths (sequences of component tokens) and refcounted, never-deduplicated path
// lists. All ids are uint64 with 0 invalid. It is shared by every stage and safe for concurrent
// use.
package pathdict

import (
	"strings"
	"sync"
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

type pathEntry struct {
	parent Path  // 0 for the root
	last   Token // last component; 0 for the root
	depth  int
}

type pathList struct {
	paths []Path
	refs  int
}

// Dictionary interns tokens and paths and owns path lists.
type Dictionary struct {
	mu       sync.RWMutex
	tokenIDs map[string]Token
	tokens   []string // index = token id (0 unused)
	pathIDs  map[[2]uint64]Path
	paths    []pathEntry // index = path id; id 1 is the root "/"
	listMu   sync.Mutex
	lists    map[ListID]*pathList
	nextList ListID
}

// Root is the id of the absolute root path "/" (zero components).
const Root Path = 1

// New returns an empty dictionary holding only the root path.
func New() *Dictionary {
	return &Dictionary{
		tokenIDs: map[string]Token{},
		tokens:   []string{""},
		pathIDs:  map[[2]uint64]Path{},
		paths:    []pathEntry{{}, {}},
		lists:    map[ListID]*pathList{},
	}
}

var global = New()

// Global is the process-wide dictionary shared by all stages.
func Global() *Dictionary { return global }

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
	t, ok := d.tokenIDs[s]
	return t, ok
}

func (d *Dictionary) internTokenLocked(s string) Token {
	if t, ok := d.tokenIDs[s]; ok {
		return t
	}
	s = strings.Clone(s)
	t := Token(len(d.tokens))
	d.tokens = append(d.tokens, s)
	d.tokenIDs[s] = t
	return t
}

// TokenString returns the string of a token.
func (d *Dictionary) TokenString(t Token) (string, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if t == 0 || t >= Token(len(d.tokens)) {
		return "", errorf("Token " + itoa(t) + " was not found")
	}
	return d.tokens[t], nil
}

// ParsePath splits an absolute prim path string into its components: "/" is the root (no
// components); otherwise "/" followed by components separated by single "/", each non-empty
// and neither "." nor ".." (so "//", "/a//b", "/a/" and "/a/../b" are malformed: one path has
// one spelling).
func ParsePath(s string) ([]string, error) {
	if err := checkString(s, "Path"); err != nil {
		return nil, err
	}
	if s[0] != '/' {
		return nil, errorf("Path string must be absolute (start with '/'): " + quote(s))
	}
	if s == "/" {
		return nil, nil
	}
	comps := strings.Split(s[1:], "/")
	for i, c := range comps {
		if err := checkComponent(c); err != nil {
			return nil, errorf("Path string " + quote(s) + ": component " + itoa(uint64(i)) + " " + err.Error())
		}
	}
	return comps, nil
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
	comps, err := ParsePath(s)
	if err != nil {
		return 0, err
	}
	if len(comps) == 0 {
		return Root, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := Root
	for _, c := range comps {
		p = d.childLocked(p, d.internTokenLocked(c))
	}
	return p, nil
}

func (d *Dictionary) childLocked(parent Path, last Token) Path {
	key := [2]uint64{parent, last}
	if p, ok := d.pathIDs[key]; ok {
		return p
	}
	p := Path(len(d.paths))
	d.paths = append(d.paths, pathEntry{parent: parent, last: last, depth: d.paths[parent].depth + 1})
	d.pathIDs[key] = p
	return p
}

// PathFromTokens interns the path whose components are toks (empty = root). Each token must
// be a valid component (ParsePath): a token "a/b" would otherwise make a second handle for the
// path spelled "/a/b".
func (d *Dictionary) PathFromTokens(toks []Token) (Path, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := Root
	for i, t := range toks {
		if t == 0 || t >= Token(len(d.tokens)) {
			return 0, errorf("Token " + itoa(t) + " was not found")
		}
		if err := checkComponent(d.tokens[t]); err != nil {
			return 0, errorf("tokens[" + itoa(uint64(i)) + "]: token " + quote(d.tokens[t]) + " cannot be a path component: it " + err.Error())
		}
		p = d.childLocked(p, t)
	}
	return p, nil
}

func (d *Dictionary) validPathLocked(p Path) bool { return p != 0 && p < Path(len(d.paths)) }

// ValidPath reports whether p is a path id of this dictionary.
func (d *Dictionary) ValidPath(p Path) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.validPathLocked(p)
}

// Parent returns the parent of p (0 for the root or an unknown path).
func (d *Dictionary) Parent(p Path) Path {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !d.validPathLocked(p) {
		return 0
	}
	return d.paths[p].parent
}

// Tokens returns the component tokens of p (empty for the root).
func (d *Dictionary) Tokens(p Path) ([]Token, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !d.validPathLocked(p) {
		return nil, pathNotFound(p)
	}
	toks := make([]Token, d.paths[p].depth)
	for i := len(toks) - 1; i >= 0; i-- {
		toks[i] = d.paths[p].last
		p = d.paths[p].parent
	}
	return toks, nil
}

// PathString formats p as "/a/b" ("/" for the root).
func (d *Dictionary) PathString(p Path) (string, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !d.validPathLocked(p) {
		return "", pathNotFound(p)
	}
	if p == Root {
		return "/", nil
	}
	parts := make([]string, d.paths[p].depth)
	for i := len(parts) - 1; i >= 0; i-- {
		parts[i] = d.tokens[d.paths[p].last]
		p = d.paths[p].parent
	}
	return "/" + strings.Join(parts, "/"), nil
}

// CreateList makes a new list (refcount 1) holding a copy of paths, each of which must be valid.
func (d *Dictionary) CreateList(paths []Path) (ListID, error) {
	if err := d.checkPaths(paths); err != nil {
		return 0, err
	}
	d.listMu.Lock()
	defer d.listMu.Unlock()
	d.nextList++
	id := d.nextList
	d.lists[id] = &pathList{paths: append([]Path(nil), paths...), refs: 1}
	return id, nil
}

func (d *Dictionary) checkPaths(paths []Path) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for i, p := range paths {
		if !d.validPathLocked(p) {
			return errorf("paths[" + itoa(uint64(i)) + "]: " + pathNotFound(p).Error())
		}
	}
	return nil
}

// CreateListFromStrings interns each path string and makes a new list.
func (d *Dictionary) CreateListFromStrings(strs []string) (ListID, error) {
	paths := make([]Path, len(strs))
	for i, s := range strs {
		p, err := d.InternPath(s)
		if err != nil {
			return 0, errorf("paths[" + itoa(uint64(i)) + "]: " + err.Error())
		}
		paths[i] = p
	}
	return d.CreateList(paths)
}

func pathNotFound(p Path) error {
	return errorf("Prim path handle was not found in this dictionary: " + itoa(p))
}

func listNotFound(id ListID) error { return errorf("Path list handle was not found: " + itoa(id)) }

// AddRef adds a reference to a list; 0 is a no-op.
func (d *Dictionary) AddRef(id ListID) error {
	if id == 0 {
		return nil
	}
	d.listMu.Lock()
	defer d.listMu.Unlock()
	l, ok := d.lists[id]
	if !ok {
		return listNotFound(id)
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
		return 0, listNotFound(id)
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
		return nil, listNotFound(id)
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
