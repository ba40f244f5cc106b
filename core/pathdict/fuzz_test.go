package pathdict

import (
	"errors"
	"strings"
	"testing"
)

// FuzzPathDictionary interns arbitrary strings as tokens and paths and checks the round-trip
// invariants: interning is idempotent, accepted paths format to a canonical string that
// interns back to the same id, component tokens rebuild the path, parents agree, and path
// lists hold exactly what they were made of until their last reference goes.
func FuzzPathDictionary(f *testing.F) {
	for _, seed := range [][2]string{
		{"/World/A", "/World/B"}, {"/", "/a/"}, {"", "/a//b"}, {"World", "/x\x00y"},
		{"//", "///"}, {"/a/b/c/d/e/f/g/h", "/ü/日本/\xff\xfe"}, {"/a/./..", "/ a / b "},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		d := New()
		for _, s := range []string{a, b} {
			checkToken(t, d, s)
			checkPath(t, d, s)
		}
		pa, errA := d.InternPath(a)
		pb, errB := d.InternPath(b)
		if errA != nil || errB != nil {
			if _, err := d.CreateListFromStrings([]string{a, b}); err == nil {
				t.Fatalf("a list of %q, %q was created though one is not a valid path", a, b)
			}
			return
		}
		id, err := d.CreateListFromStrings([]string{a, b, a})
		if err != nil {
			t.Fatalf("list of valid paths: %v", err)
		}
		other, err := d.CreateList([]Path{pa, pb, pa})
		if err != nil || other == id {
			t.Fatalf("lists are never deduplicated: %d vs %d (%v)", id, other, err)
		}
		got, err := d.ListPaths(id)
		if err != nil || len(got) != 3 || got[0] != pa || got[1] != pb || got[2] != pa {
			t.Fatalf("list holds %v, want [%d %d %d] (%v)", got, pa, pb, pa, err)
		}
		if err := d.AddRef(id); err != nil {
			t.Fatal(err)
		}
		for want := 1; want >= 0; want-- {
			if left, err := d.Release(id); err != nil || left != want {
				t.Fatalf("release left %d refs (%v), want %d", left, err, want)
			}
		}
		if _, err := d.ListPaths(id); err == nil {
			t.Fatalf("list %d still readable after its last reference", id)
		}
		if _, err := d.Release(id); err == nil {
			t.Fatalf("release of an erased list succeeded")
		}
	})
}

func checkToken(t *testing.T, d *Dictionary, s string) {
	t.Helper()
	tok, err := d.InternToken(s)
	valid := s != "" && !strings.Contains(s, "\x00")
	if (err == nil) != valid {
		t.Fatalf("InternToken(%q): err %v, valid %v", s, err, valid)
	}
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("InternToken(%q) error %T is not a *pathdict.Error", s, err)
		}
		return
	}
	if tok == 0 {
		t.Fatalf("InternToken(%q) minted 0", s)
	}
	if again, _ := d.InternToken(s); again != tok {
		t.Fatalf("InternToken(%q) is not idempotent: %d then %d", s, tok, again)
	}
	if str, err := d.TokenString(tok); err != nil || str != s {
		t.Fatalf("TokenString(%d) = %q, %v; want %q", tok, str, err, s)
	}
}

// wellFormed is the path grammar, independently of ParsePath: "/", or "/" and components
// joined by single "/", none empty, "." or "..", and no NUL anywhere.
func wellFormed(s string) bool {
	if s == "/" {
		return true
	}
	if !strings.HasPrefix(s, "/") || strings.Contains(s, "\x00") {
		return false
	}
	for _, c := range strings.Split(s[1:], "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

func checkPath(t *testing.T, d *Dictionary, s string) {
	t.Helper()
	p, err := d.InternPath(s)
	if (err == nil) != wellFormed(s) {
		t.Fatalf("InternPath(%q): err %v, well-formed %v", s, err, wellFormed(s))
	}
	if err != nil {
		if !strings.Contains(err.Error(), quote(s)) && s != "" && !strings.Contains(s, "\x00") {
			t.Fatalf("InternPath(%q): the error %q does not name the path", s, err)
		}
		return
	}
	if p == 0 || !d.ValidPath(p) {
		t.Fatalf("InternPath(%q) = %d is not a valid path id", s, p)
	}
	str, err := d.PathString(p)
	if err != nil || str == "" || str[0] != '/' {
		t.Fatalf("PathString(%d) = %q, %v", p, str, err)
	}
	if again, err := d.InternPath(str); err != nil || again != p {
		t.Fatalf("InternPath(PathString(InternPath(%q))) = %d, %v; want %d", s, again, err, p)
	}
	toks, err := d.Tokens(p)
	if err != nil {
		t.Fatal(err)
	}
	if (p == d.Root()) != (len(toks) == 0) || (p == d.Root()) != (str == "/") {
		t.Fatalf("%q: root %v but %d components, string %q", s, p == d.Root(), len(toks), str)
	}
	parts := make([]string, len(toks))
	for i, tok := range toks {
		if parts[i], err = d.TokenString(tok); err != nil || parts[i] == "" || strings.Contains(parts[i], "/") {
			t.Fatalf("%q: component %d is %q (%v)", s, i, parts[i], err)
		}
	}
	if len(toks) > 0 && "/"+strings.Join(parts, "/") != str {
		t.Fatalf("%q: components %q do not spell %q", s, parts, str)
	}
	if rebuilt, err := d.PathFromTokens(toks); err != nil || rebuilt != p {
		t.Fatalf("PathFromTokens(Tokens(%d)) = %d, %v", p, rebuilt, err)
	}
	if len(toks) > 0 {
		parent, err := d.PathFromTokens(toks[:len(toks)-1])
		if err != nil || d.Parent(p) != parent {
			t.Fatalf("Parent(%q) = %d, want %d (%v)", s, d.Parent(p), parent, err)
		}
	}
}
