package pathdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokensAreIdempotentAndRejectEmptyOrNUL(t *testing.T) {
	d := New()
	a, err := d.InternToken("temperature")
	require.NoError(t, err)
	b, err := d.InternToken("temperature")
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.NotZero(t, a)
	s, err := d.TokenString(a)
	require.NoError(t, err)
	assert.Equal(t, "temperature", s)

	_, err = d.InternToken("")
	assert.ErrorContains(t, err, "must be non-empty")
	_, err = d.InternToken("a\x00b")
	assert.ErrorContains(t, err, "Token string contains embedded NUL")
	_, err = d.TokenString(0)
	assert.Error(t, err)
	_, err = d.TokenString(9999)
	assert.Error(t, err)
}

func TestPathsInternEquivalentStringsToOneHandle(t *testing.T) {
	d := New()
	a, err := d.InternPath("/World/A")
	require.NoError(t, err)
	b, err := d.InternPath("/World/A")
	require.NoError(t, err)
	assert.Equal(t, a, b)
	root, err := d.InternPath("/")
	require.NoError(t, err)
	assert.Equal(t, d.Root(), root)
	s, err := d.PathString(root)
	require.NoError(t, err)
	assert.Equal(t, "/", s)
	s, err = d.PathString(a)
	require.NoError(t, err)
	assert.Equal(t, "/World/A", s)

	world, err := d.InternPath("/World")
	require.NoError(t, err)
	assert.Equal(t, world, d.Parent(a))
	assert.Equal(t, d.Root(), d.Parent(world))

	toks, err := d.Tokens(a)
	require.NoError(t, err)
	fromToks, err := d.PathFromTokens(toks)
	require.NoError(t, err)
	assert.Equal(t, a, fromToks)
	rootToks, err := d.Tokens(d.Root())
	require.NoError(t, err)
	assert.Empty(t, rootToks)
}

func TestPathStringErrors(t *testing.T) {
	d := New()
	for _, bad := range []string{"", "/a\x00b", "World", "/a//b"} {
		_, err := d.InternPath(bad)
		assert.Error(t, err, "path %q", bad)
	}
	// One path, one spelling: empty components (leading, doubled, trailing "/") and relative
	// steps are malformed, never another spelling of a path (nor of the root).
	for bad, why := range map[string]string{
		"//": "component 0 is empty", "///": "component 0 is empty", "/a//b": "component 1 is empty",
		"/a/": "component 1 is empty", "/World/A/": "component 2 is empty", "//a": "component 0 is empty",
		"/a/./b": `component 1 is "."`, "/..": `component 0 is ".."`, "/a/b/..": `component 2 is ".."`,
	} {
		_, err := d.InternPath(bad)
		assert.ErrorContains(t, err, `Path string "`+bad+`": `+why, "path %q", bad)
		_, err = d.CreateListFromStrings([]string{"/ok", bad})
		assert.ErrorContains(t, err, `paths[1]: Path string "`+bad+`"`, "list with %q", bad)
	}
	for _, good := range []string{"/", "/a", "/a/b", "/.a", "/a./b..", "/ a /b c"} {
		_, err := d.InternPath(good)
		assert.NoError(t, err, "path %q", good)
	}
	_, err := d.InternPath("")
	assert.ErrorContains(t, err, "Path string must be non-empty")
	_, err = d.InternPath("/x\x00")
	assert.ErrorContains(t, err, "Path string contains embedded NUL")
	_, err = d.PathString(0)
	assert.Error(t, err)
	_, err = d.PathString(12345)
	assert.Error(t, err)
}

func TestPathFromTokensRejectsTokensThatAreNotComponents(t *testing.T) {
	d := New()
	ab, err := d.InternPath("/a/b")
	require.NoError(t, err)
	for _, s := range []string{"a/b", ".", ".."} {
		tok, err := d.InternToken(s) // a fine token, but not a path component
		require.NoError(t, err)
		_, err = d.PathFromTokens([]Token{tok})
		assert.ErrorContains(t, err, "tokens[0]: token \""+s+"\" cannot be a path component", "token %q", s)
	}
	a, _ := d.InternToken("a")
	b, _ := d.InternToken("b")
	p, err := d.PathFromTokens([]Token{a, b})
	require.NoError(t, err)
	assert.Equal(t, ab, p)
}

func TestPathListsAreRefcountedAndNeverDeduplicated(t *testing.T) {
	d := New()
	a, _ := d.InternPath("/A")
	b, _ := d.InternPath("/B")
	l1, err := d.CreateList([]Path{a, b})
	require.NoError(t, err)
	l2, err := d.CreateList([]Path{a, b})
	require.NoError(t, err)
	assert.NotEqual(t, l1, l2)

	paths, err := d.ListPaths(l1)
	require.NoError(t, err)
	assert.Equal(t, []Path{a, b}, paths)

	require.NoError(t, d.AddRef(l1))
	left, err := d.Release(l1)
	require.NoError(t, err)
	assert.Equal(t, 1, left)
	left, err = d.Release(l1)
	require.NoError(t, err)
	assert.Equal(t, 0, left)
	_, err = d.ListPaths(l1)
	assert.ErrorContains(t, err, "Path list handle was not found")
	_, err = d.Release(l1)
	assert.Error(t, err)
	assert.Error(t, d.AddRef(l1))

	assert.NoError(t, d.AddRef(0))
	_, err = d.Release(0)
	assert.NoError(t, err)

	empty, err := d.CreateList(nil)
	require.NoError(t, err)
	paths, err = d.ListPaths(empty)
	require.NoError(t, err)
	assert.Empty(t, paths)

	_, err = d.CreateList([]Path{a, 777})
	assert.Error(t, err)
}

func TestListFromStrings(t *testing.T) {
	d := New()
	l, err := d.CreateListFromStrings([]string{"/World/A", "/World/B"})
	require.NoError(t, err)
	paths, err := d.ListPaths(l)
	require.NoError(t, err)
	require.Len(t, paths, 2)
	s, _ := d.PathString(paths[1])
	assert.Equal(t, "/World/B", s)
	_, err = d.CreateListFromStrings([]string{"/ok", ""})
	assert.Error(t, err)
}
