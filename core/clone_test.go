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
