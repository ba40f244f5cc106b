package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
