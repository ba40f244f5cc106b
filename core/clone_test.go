package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/sched"
)

// holdMutation enqueues an ordinal-keyed mutation that runs until release is closed: a floor
// advance over its ordinal stays pending meanwhile.
func holdMutation(s *Stage, ordinal uint64, release chan struct{}) *sched.Op {
	s.mu.Lock()
	op := s.enqueueLocked(opSpec{mutation: true, ordinal: ordinal, async: true,
		run: func(*sched.Op) error { <-release; return nil }})
	s.unlockAndStart()
	return op
}

func (f *fixture) held(path string) bool {
	p, err := f.s.Dictionary().InternPath(path)
	require.NoError(f.t, err)
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	return f.s.prims.has(p)
}

// Clone admission always checks the global floor, also for a source that carries no
// attribute (found by the model test: such a clone created prims at a sealed ordinal).
func TestCloneOfAPrimWithoutAttributesChecksTheGlobalFloor(t *testing.T) {
	f := newFixture(t, "/W/A", "/W/B")
	op, _ := f.write(1, []float32{1, 2})
	f.wait(op)
	del, err := f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 2})
	require.NoError(t, err)
	f.wait(del)
	f.seal(5)
	require.True(t, f.held("/W/A"), "an attribute delete keeps the prim")
	cl, err := f.s.Clone("/W/A", []string{"/W/C"}, 3)
	require.NoError(t, err)
	require.Equal(t, []uint64{cl}, f.wait(cl).ErrorOpIDs)
	assert.Contains(t, f.s.LastOpError(cl), "WRITE_FLOOR_VIOLATION")
	assert.False(t, f.held("/W/C"), "nothing was cloned")
	cl, err = f.s.Clone("/W/A", []string{"/W/C"}, 6)
	require.NoError(t, err)
	require.Empty(t, f.wait(cl).ErrorOpIDs)
	assert.True(t, f.held("/W/C"))
}

// A target that is also the copy of a prim under another target of the same clone fails the
// whole clone before anything is created (found by the model test: the later target's copy
// silently won).
func TestCloneOntoAPrimAnotherTargetCreatesFails(t *testing.T) {
	f := newFixture(t, "/W/A", "/W/A/X")
	op, _ := f.write(1, []float32{1, 2})
	f.wait(op)
	cl, err := f.s.Clone("/W/A", []string{"/W/T", "/W/T/X"}, 2)
	require.NoError(t, err)
	require.Equal(t, []uint64{cl}, f.wait(cl).ErrorOpIDs)
	assert.Contains(t, f.s.LastOpError(cl), "/W/T/X")
	for _, p := range []string{"/W/T", "/W/T/X", "/W/T/X/X"} {
		assert.False(t, f.held(p), "%s was not cloned", p)
	}
	// Nested targets that do not collide are fine.
	cl, err = f.s.Clone("/W/A", []string{"/W/T", "/W/T/Y"}, 2)
	require.NoError(t, err)
	require.Empty(t, f.wait(cl).ErrorOpIDs)
	for _, p := range []string{"/W/T", "/W/T/X", "/W/T/Y", "/W/T/Y/X"} {
		assert.True(t, f.held(p), "%s was cloned", p)
	}
}

// A clone enqueued after a floor advance is admitted against that advance's floor, whatever
// the advance still waits for (found by the model test: the clone could run first and land
// at an ordinal the advance had already been asked to seal).
func TestCloneAfterAPendingAdvanceSeesItsFloor(t *testing.T) {
	f := newFixture(t, "/W/A")
	op, _ := f.write(1, []float32{1})
	f.wait(op)
	release := make(chan struct{})
	held := holdMutation(f.s, 1, release)
	adv, err := f.s.AdvanceWriteFloor(2, ScopeAll, nil)
	require.NoError(t, err)
	cl, err := f.s.Clone("/W/A", []string{"/W/B"}, 2)
	require.NoError(t, err)
	close(release)
	f.wait(adv)
	require.Equal(t, []uint64{cl}, f.wait(cl).ErrorOpIDs)
	assert.Contains(t, f.s.LastOpError(cl), "WRITE_FLOOR_VIOLATION")
	assert.False(t, f.held("/W/B"))
	assert.NoError(t, held.Err())
}
