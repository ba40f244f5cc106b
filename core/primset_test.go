package core

import (
	"slices"
	"testing"

	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrimSetBitsThenSparseWithChildrenOnDemand(t *testing.T) {
	parent := func(p uint64) uint64 { return p / 10 }
	var s primSet
	for p := uint64(10); p < 40; p++ {
		assert.True(t, s.add(p, parent))
	}
	assert.False(t, s.add(12, parent))
	assert.NotNil(t, s.bits)
	assert.Nil(t, s.children, "no parent index until asked")
	assert.Equal(t, []uint64{20, 21, 22, 23, 24, 25, 26, 27, 28, 29}, s.childrenOf(2, parent))
	assert.True(t, s.remove(25, parent))
	assert.False(t, s.remove(25, parent))
	assert.Equal(t, []uint64{20, 21, 22, 23, 24, 26, 27, 28, 29}, s.childrenOf(2, parent))
	big := uint64(1) << 50
	assert.True(t, s.add(big, parent)) // far away: switch to a map
	assert.NotNil(t, s.sparse)
	assert.Nil(t, s.bits)
	assert.True(t, s.has(big))
	assert.True(t, s.has(10))
	assert.False(t, s.has(25))
	assert.Equal(t, 30, s.len())
	assert.Equal(t, []uint64{big}, s.childrenOf(big/10, parent))
}

// The paths of one dictionary carry its tag in their high bits; the set stays a bitset over the
// index, and a path with another tag (never a stage's own) moves it to a map, losing nothing.
func TestPrimSetKeepsADictionarysPathsAsBits(t *testing.T) {
	d := pathdict.New()
	var s primSet
	var paths []uint64
	for _, str := range []string{"/a", "/a/b", "/c", "/c/d/e"} {
		p, err := d.InternPath(str)
		require.NoError(t, err)
		paths = append(paths, p)
		assert.True(t, s.add(p, d.Parent))
	}
	assert.NotNil(t, s.bits)
	assert.Less(t, len(s.bits), 2, "bits cover the indices, not the tagged values")
	assert.ElementsMatch(t, paths, slices.Collect(s.all()))
	assert.Equal(t, []uint64{paths[1]}, s.childrenOf(paths[0], d.Parent))
	other, err := pathdict.New().InternPath("/a")
	require.NoError(t, err)
	assert.False(t, s.has(other))
	assert.True(t, s.add(other, d.Parent))
	assert.NotNil(t, s.sparse)
	assert.ElementsMatch(t, append(paths, other), slices.Collect(s.all()))
}

// under walks the path index: it finds members below paths that are not members themselves,
// and stays right as members come and go after the index was built (compared with a scan of
// every member).
func TestPrimSetUnderFollowsAddsAndRemoves(t *testing.T) {
	// Decimal digits are path components: 1 is the root, 12 is /2, 123 is /2/3.
	parent := func(p uint64) uint64 { return p / 10 }
	isUnder := func(p, anc uint64) bool {
		for ; p != 0; p = parent(p) {
			if p == anc {
				return true
			}
		}
		return false
	}
	var s primSet
	scan := func(root uint64) []uint64 {
		var out []uint64
		for p := range s.all() {
			if p != root && isUnder(p, root) {
				out = append(out, p)
			}
		}
		slices.Sort(out)
		return out
	}
	walk := func(root uint64) []uint64 {
		out := s.under(root, parent)
		slices.Sort(out)
		return out
	}
	for _, p := range []uint64{12, 1234, 12345, 1235, 13, 1311} {
		s.add(p, parent)
	}
	assert.Equal(t, []uint64{1234, 1235, 12345}, walk(12), "1234 and 1235 sit below 123, which is no member")
	assert.Equal(t, []uint64{1311}, walk(13))
	s.add(123, parent)
	s.add(1236, parent)
	assert.True(t, s.remove(1234, parent))
	assert.True(t, s.remove(1311, parent))
	assert.Equal(t, []uint64{123, 1235, 1236, 12345}, walk(12))
	assert.Empty(t, walk(13))
	assert.True(t, s.remove(12345, parent))
	assert.Empty(t, walk(1234), "nothing is left below 1234")
	for _, root := range []uint64{1, 12, 123, 13, 1234} {
		assert.Equal(t, scan(root), walk(root), "below %d", root)
	}
	assert.Empty(t, s.below[131], "emptied paths leave the index")
}
