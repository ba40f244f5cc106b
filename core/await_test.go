package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
)

func TestAwaitHandleWaitsForAHeldReadWithoutHandingOutItsGroups(t *testing.T) {
	f := newFixture(t)
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)
	g := scopedGate(t, QueryGate)
	h, _, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: 1})
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))

	ready, err := f.s.AwaitHandle(HandleRead, h, 0)
	require.NoError(t, err)
	assert.False(t, ready, "a poll of a held read")
	start := time.Now()
	ready, err = f.s.AwaitHandle(HandleRead, h, uint64(20*time.Millisecond))
	require.NoError(t, err)
	assert.False(t, ready)
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "the timeout is honoured")

	g.Release()
	ready, err = f.s.AwaitHandle(HandleRead, h, TimeoutInfinite)
	require.NoError(t, err)
	assert.True(t, ready)
	ready, err = f.s.AwaitHandle(HandleRead, h, 0)
	require.NoError(t, err)
	assert.True(t, ready, "waiting consumed nothing: still ready")
	group, err := f.s.FetchReadNext(h, 0)
	require.NoError(t, err, "the first group is still there after the waits")
	assert.Equal(t, 3, int(group.Tensors[0].Rows))
	require.NoError(t, f.s.ReleaseGroup(group.ID))
	_, err = f.s.FetchReadNext(h, 0)
	assert.Equal(t, status.EndOfIteration, status.CodeOf(err))
	_, err = f.s.ReleaseRead(h)
	require.NoError(t, err)
}

func TestAwaitHandleWaitsForAnOrdinalQueryBehindAHeldWrite(t *testing.T) {
	f := newFixture(t)
	g := scopedGate(t, WriteGate)
	_, err := f.write(5, []float32{1, 2, 3})
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	_, err = f.s.AdvanceWriteFloor(5, ScopeAll, nil)
	require.NoError(t, err)
	h, _, err := f.s.GetAttributeWriteFloor(0)
	require.NoError(t, err)

	ready, err := f.s.AwaitHandle(HandleOrdinalQuery, h, uint64(10*time.Millisecond))
	require.NoError(t, err)
	assert.False(t, ready, "the floor query runs after the advance, which waits for the write")
	g.Release()
	ready, err = f.s.AwaitHandle(HandleOrdinalQuery, h, TimeoutInfinite)
	require.NoError(t, err)
	assert.True(t, ready)
	floor, err := f.s.FetchOrdinal(h, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), floor)
}

func TestAwaitHandleOfQueriesAndBadArguments(t *testing.T) {
	f := newFixture(t)
	ready, err := f.s.AwaitHandle(HandleQuery, f.query, 0)
	require.NoError(t, err)
	assert.True(t, ready, "a path-list query is resolved at creation")

	_, err = f.s.AwaitHandle(HandleRead, 987654, 0)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
	_, err = f.s.AwaitHandle(HandleKind("group"), f.query, 0)
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), `"group"`)
}
