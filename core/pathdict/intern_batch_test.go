package pathdict

import (
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A batch gives each string the path InternPath gives it, whatever the order (siblings,
// cousins, the root, a deeper path after a shallower one, repeats).
func TestInternPathsMatchesInternPath(t *testing.T) {
	strs := []string{"/a/b", "/a/c", "/", "/a", "/x/b", "/a/b/c", "/a/c", "/b", "/x/b", "/a/b"}
	d := New()
	got, _, err := d.InternPaths(strs)
	require.NoError(t, err)
	for i, s := range strs {
		p, err := d.PathString(got[i])
		require.NoError(t, err)
		assert.Equal(t, s, p, "strs[%d]", i)
		again, err := d.InternPath(s)
		require.NoError(t, err)
		assert.Equal(t, again, got[i], "strs[%d] is one path", i)
	}
	assert.Equal(t, d.Parent(got[5]), got[0], "/a/b/c is below /a/b")
}

// A bad string anywhere interns nothing: the error names the first bad index.
func TestInternPathsIsAllOrNothing(t *testing.T) {
	d := New()
	_, bad, err := d.InternPaths([]string{"/new/a", "/new/b", "/new//c", "no"})
	require.Error(t, err)
	assert.Equal(t, 2, bad)
	_, err = d.CreateListFromStrings([]string{"/ok", "rel"})
	assert.EqualError(t, err, `paths[1]: Path string must be absolute (start with '/'): "rel"`)
	_, found := d.lookupToken("new")
	assert.False(t, found, "no component of the batch was interned")
	_, found = d.lookupToken("ok")
	assert.False(t, found)
}

// Two strings with one hash: the later one is kept in spill, and each finds its own token.
func TestTokenIndexKeepsStringsThatShareAHash(t *testing.T) {
	d := New()
	a, err := d.InternToken("a")
	require.NoError(t, err)
	// Make "b" collide with "a": its hash slot already names a's token.
	d.tokenIDs.byHash[maphash.String(d.tokenIDs.seed, "b")] = a
	b, err := d.InternToken("b")
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.Equal(t, map[string]Token{"b": b}, d.tokenIDs.spill)
	for s, want := range map[string]Token{"a": a, "b": b} {
		got, err := d.InternToken(s)
		require.NoError(t, err)
		assert.Equal(t, want, got, s)
	}
	_, found := d.lookupToken("c")
	assert.False(t, found)
}
