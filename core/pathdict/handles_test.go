package pathdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each dictionary refuses the tokens, paths and lists of every other one, even where the same
// strings were interned in the same order (the reference would mint equal numbers).
func TestHandlesOfAnotherDictionaryAreRefused(t *testing.T) {
	a, b := New(), New()
	tokA, err := a.InternToken("World")
	require.NoError(t, err)
	tokB, err := b.InternToken("World")
	require.NoError(t, err)
	assert.NotEqual(t, tokA, tokB)
	pathA, err := a.InternPath("/World")
	require.NoError(t, err)
	pathB, err := b.InternPath("/World")
	require.NoError(t, err)
	assert.NotEqual(t, pathA, pathB)
	assert.NotEqual(t, a.Root(), b.Root())
	listA, err := a.CreateList([]Path{pathA})
	require.NoError(t, err)

	const other = "of another stage's path dictionary"
	_, err = b.TokenString(tokA)
	assert.ErrorContains(t, err, "Token "+itoa(tokA)+" was not found (it is a token "+other+")")
	_, err = b.PathString(pathA)
	assert.ErrorContains(t, err, "Prim path handle was not found in this dictionary: "+itoa(pathA)+" (it is a path "+other+")")
	_, err = b.PathFromTokens([]Token{tokA})
	assert.ErrorContains(t, err, "tokens[0]: Token "+itoa(tokA)+" was not found")
	_, err = b.CreateList([]Path{pathB, pathA})
	assert.ErrorContains(t, err, "paths[1]: Prim path handle was not found in this dictionary: "+itoa(pathA))
	assert.False(t, b.ValidPath(pathA))
	assert.Zero(t, b.Parent(pathA))

	for name, op := range map[string]func() error{
		"ListPaths": func() error { _, err := b.ListPaths(listA); return err },
		"AddRef":    func() error { return b.AddRef(listA) },
		"Release":   func() error { _, err := b.Release(listA); return err },
	} {
		assert.ErrorContains(t, op(), "Path list handle was not found: "+itoa(listA)+" (it is a path list "+other+")", name)
	}
	// The refusals changed nothing: the list is still A's, with one reference.
	left, err := a.Release(listA)
	require.NoError(t, err)
	assert.Zero(t, left)
}

// A token is never taken for a path or a list, a path never for a token or a list.
func TestHandleKindsDoNotMix(t *testing.T) {
	d := New()
	for range 8 { // enough tokens and paths that every small index is taken in each kind
		_, err := d.InternPath("/a/b/c/d")
		require.NoError(t, err)
	}
	tok, err := d.InternToken("a")
	require.NoError(t, err)
	path, err := d.InternPath("/a")
	require.NoError(t, err)
	list, err := d.CreateList([]Path{path})
	require.NoError(t, err)
	assert.Equal(t, tok&IndexMask, uint64(1), "the first token and the root path share an index")

	_, err = d.CreateList([]Path{tok})
	assert.ErrorContains(t, err, "paths[0]: Prim path handle was not found in this dictionary: "+itoa(tok)+" (it is a token handle, not a path)")
	_, err = d.CreateList([]Path{list})
	assert.ErrorContains(t, err, "(it is a path list handle, not a path)")
	_, err = d.PathString(tok)
	assert.ErrorContains(t, err, "(it is a token handle, not a path)")
	_, err = d.TokenString(path)
	assert.ErrorContains(t, err, "Token "+itoa(path)+" was not found (it is a path handle, not a token)")
	_, err = d.PathFromTokens([]Token{path})
	assert.ErrorContains(t, err, "tokens[0]: Token "+itoa(path)+" was not found (it is a path handle")
	_, err = d.ListPaths(path)
	assert.ErrorContains(t, err, "Path list handle was not found: "+itoa(path)+" (it is a path handle, not a path list)")
	assert.False(t, d.ValidPath(tok))

	// A handle that no dictionary could have made gets the plain message.
	_, err = d.TokenString(12345)
	assert.EqualError(t, err, "Token 12345 was not found")
}

func TestHandlesStayPositiveAsInt64(t *testing.T) {
	d := New()
	l, err := d.CreateList(nil)
	require.NoError(t, err)
	p, err := d.InternPath("/x")
	require.NoError(t, err)
	for _, h := range []uint64{l, p, d.Root()} {
		assert.Less(t, h, uint64(1)<<63)
	}
}
