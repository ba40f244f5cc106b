package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
)

func TestDetachedOpIsForgottenWhenItCompletes(t *testing.T) {
	f := newFixture(t)
	g := scopedGate(t, WriteGate)
	base := f.s.Diagnostics().Ops
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	require.NoError(t, f.s.DetachOp(op))
	assert.Equal(t, base+1, f.s.Diagnostics().Ops, "a pending detached op stays tracked")
	res, err := f.s.WaitOp(op, 0)
	require.NoError(t, err, "a pending detached op can still be polled")
	assert.Equal(t, status.Timeout, res.Status)

	g.Release()
	f.seal(1) // the advance runs after the write (and stays tracked: it was not detached)
	assert.Equal(t, base+1, f.s.Diagnostics().Ops, "the write is forgotten once it completed")
	_, err = f.s.WaitOp(op, 0)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got, "detaching does not cancel the op")
}

func TestDetachingACompletedOpForgetsItAtOnce(t *testing.T) {
	f := newFixture(t)
	base := f.s.Diagnostics().Ops
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	f.wait(op)
	require.NoError(t, f.s.DetachOp(op))
	assert.Equal(t, base, f.s.Diagnostics().Ops)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(f.s.DetachOp(op)), "a forgotten id is unknown")
	assert.Equal(t, status.InvalidHandle, status.CodeOf(f.s.ReleaseOp(op)))
}

func TestReleasingADetachedPendingOpIsHarmless(t *testing.T) {
	f := newFixture(t)
	g := scopedGate(t, WriteGate)
	base := f.s.Diagnostics().Ops
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	require.NoError(t, f.s.DetachOp(op))
	require.NoError(t, f.s.ReleaseOp(op))
	later, err := f.write(2, []float32{4, 5, 6})
	require.NoError(t, err)
	g.Release()
	f.wait(later)
	require.NoError(t, f.s.ReleaseOp(later))
	assert.Equal(t, base, f.s.Diagnostics().Ops)
}

func TestSourcesDoneReportsFinishedLargeWrites(t *testing.T) {
	f, vals := newWideFixture(t, Config{}, DeferCopyBytes)
	g := scopedGate(t, WriteGate)
	big, err := f.writeWide(1, vals)
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	require.NoError(t, f.s.ReleaseOp(big), "the caller lets go of the op id while it is pending")
	assert.Empty(t, f.s.TakeSourcesDone(), "the pending write still reads its source")
	g.Release()
	f.seal(1)
	assert.Equal(t, []uint64{big}, f.s.TakeSourcesDone())
	assert.Empty(t, f.s.TakeSourcesDone(), "each id is reported once")
}

func TestSourcesDoneSkipsSmallWrites(t *testing.T) {
	f := newFixture(t)
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	f.wait(op)
	assert.Empty(t, f.s.TakeSourcesDone(), "a small write copied its source at enqueue")
}

func TestSourcesDoneCountsLargeWritesThatFailed(t *testing.T) {
	f, vals := newWideFixture(t, Config{}, DeferCopyBytes)
	WriteGate.Reset()
	t.Cleanup(WriteGate.Reset)
	WriteGate.FailNext()
	failed, err := f.writeWide(1, vals)
	require.NoError(t, err)
	res, err := f.s.WaitOp(failed, TimeoutInfinite)
	require.NoError(t, err)
	require.NotEmpty(t, res.ErrorOpIDs)
	ok, err := f.writeWide(2, vals)
	require.NoError(t, err)
	f.wait(ok)
	assert.ElementsMatch(t, []uint64{failed, ok}, f.s.TakeSourcesDone(),
		"a large write failed before it ran no longer needs its source either")
}
