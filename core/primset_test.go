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
