package pathdict

import (
	"fmt"
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

// The token index probes past slots other strings hold: strings whose hashes share a slot, and
// every string again once the index has grown, find their own token.
func TestTokenIndexFindsEveryTokenAcrossCollisionsAndGrowth(t *testing.T) {
	d := New()
	// Two strings whose hashes land in one slot of the new index.
	mask := uint64(len(d.tokenIDs.slots) - 1)
	home := maphash.String(d.tokenIDs.seed, "s0") & mask
	other := ""
	for i := 1; other == ""; i++ {
		if s := fmt.Sprintf("s%d", i); maphash.String(d.tokenIDs.seed, s)&mask == home {
			other = s
		}
	}
	first, err := d.InternToken("s0")
	require.NoError(t, err)
	second, err := d.InternToken(other)
	require.NoError(t, err)
	assert.NotEqual(t, first, second)
	want := map[string]Token{"s0": first, other: second}
	for i := range 5000 { // grows the index several times
		s := fmt.Sprintf("t%d", i)
		tok, err := d.InternToken(s)
		require.NoError(t, err)
		want[s] = tok
	}
	for s, tok := range want {
		got, err := d.InternToken(s)
		require.NoError(t, err)
		assert.Equal(t, tok, got, s)
		text, err := d.TokenString(tok)
		require.NoError(t, err)
		assert.Equal(t, s, text)
	}
	assert.Equal(t, len(want), d.tokenIDs.used)
	_, found := d.lookupToken("absent")
	assert.False(t, found)
}
