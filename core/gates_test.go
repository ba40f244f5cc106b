package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// scopedGate enables g for the test and resets it afterwards (gates are process-wide).
func scopedGate(t *testing.T, g *Gate) *Gate {
	t.Helper()
	g.Reset()
	g.Enable()
	t.Cleanup(g.Reset)
	return g
}

func (f *fixture) poll(op uint64) WaitResult {
	f.t.Helper()
	res, err := f.s.WaitOp(op, 0)
	require.NoError(f.t, err)
	return res
}

func TestWriteGateHoldsWritesWithoutBlockingTheCaller(t *testing.T) {
	f := newFixture(t)
	g := scopedGate(t, WriteGate)
	first, err := f.write(4, []float32{1, 2, 3})
	require.NoError(t, err, "the enqueue returns although the gate holds the op")
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	assert.Equal(t, 1, g.EnteredCount())

	res := f.poll(first)
	assert.Equal(t, status.Timeout, res.Status)
	assert.Equal(t, first, res.LowestPending)

	// A same-ordinal write is ordered after the held one: its chain's lowest pending op is first.
	second, err := f.write(4, []float32{4, 5, 6})
	require.NoError(t, err)
	res = f.poll(second)
	assert.Equal(t, status.Timeout, res.Status)
	assert.Equal(t, first, res.LowestPending)

	g.Release()
	f.wait(second)
	f.wait(first)
	f.seal(4)
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{4, 5, 6}}, got, "same ordinal: submission order")
}

func TestUnrelatedOpsRunWhileAWriteIsHeld(t *testing.T) {
	f := newFixture(t)
	op, _ := f.write(1, []float32{1, 2, 3})
	f.wait(op)
	f.seal(1)
	g := scopedGate(t, WriteGate)
	held, err := f.write(2, []float32{7, 8, 9})
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))

	// A read overlapping the held write succeeds with the sealed values.
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got)
	assert.Equal(t, status.Timeout, f.poll(held).Status)
	g.Release()
	f.wait(held)
}

func TestFailNextFailsTheNextMatchingOp(t *testing.T) {
	f := newFixture(t)
	WriteGate.Reset()
	t.Cleanup(WriteGate.Reset)
	WriteGate.FailNext()
	assert.True(t, WriteGate.Active())
	failed, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	res := f.wait(failed)
	assert.Equal(t, []uint64{failed}, res.ErrorOpIDs)
	assert.Contains(t, f.s.LastOpError(failed), "fail_next")
	assert.False(t, WriteGate.Active(), "fail_next is consumed")
	assert.Equal(t, 1, WriteGate.EnteredCount())

	ok, err := f.write(1, []float32{4, 5, 6})
	require.NoError(t, err)
	assert.Empty(t, f.wait(ok).ErrorOpIDs)
}

func TestFailNextAppliesWhenAHeldOpIsReleased(t *testing.T) {
	f := newFixture(t)
	g := scopedGate(t, WriteGate)
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	g.FailNext()
	g.Release()
	res := f.wait(op)
	assert.Equal(t, []uint64{op}, res.ErrorOpIDs)
	o, err := f.s.lookupOp(op)
	require.NoError(t, err)
	assert.Equal(t, status.OpFailed, status.CodeOf(o.Err()))
}

func TestQueryGateHoldsReads(t *testing.T) {
	f := newFixture(t)
	op, _ := f.write(1, []float32{1, 2, 3})
	f.wait(op)
	f.seal(1)
	g := scopedGate(t, QueryGate)
	h, readOp, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: 1})
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	_, err = f.s.FetchReadNext(h, 0)
	assert.Equal(t, status.Timeout, status.CodeOf(err))
	assert.Equal(t, status.Timeout, f.poll(readOp).Status)

	// Writes are not held by the query gate.
	w, err := f.write(2, []float32{4, 5, 6})
	require.NoError(t, err)
	f.wait(w)

	g.Release()
	f.wait(readOp)
	grp, err := f.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(t, err)
	require.NoError(t, f.s.ReleaseGroup(grp.ID))
	_, err = f.s.ReleaseRead(h)
	require.NoError(t, err)
}

func TestDestroyFailsHeldOpsInsteadOfHanging(t *testing.T) {
	s := NewStage("gated", Config{})
	list, err := s.Dictionary().CreateListFromStrings([]string{"/G/a"})
	require.NoError(t, err)
	q, err := s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = s.Dictionary().Release(list)
	g := scopedGate(t, WriteGate)
	id, err := s.WriteAttribute(WriteRequest{Query: q, AttrName: "x", Ordinal: 1,
		Tensors: nil})
	assert.Error(t, err, "a malformed write is rejected at enqueue even with the gate on")
	assert.Zero(t, id)
	vals := []float32{1}
	id, err = s.WriteAttribute(WriteRequest{Query: q, AttrName: "x", Ordinal: 1, Tensors: []tensor.Tensor{f32Tensor(vals)}})
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	op, err := s.lookupOp(id)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { s.Destroy(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Destroy hangs on an op held by a gate")
	}
	require.True(t, op.Done())
	assert.Contains(t, status.MessageOf(op.Err()), "destroyed")
}

// A waiter blocked in WaitOp when Destroy abandons the held op learns why from the wait itself
// (Destroy forgets every op, so nothing could be asked afterwards).
func TestAWaiterOfAnAbandonedOpIsToldTheStageWasDestroyed(t *testing.T) {
	s := NewStage("doomed", Config{})
	list, err := s.Dictionary().CreateListFromStrings([]string{"/G/a"})
	require.NoError(t, err)
	q, err := s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = s.Dictionary().Release(list)
	g := scopedGate(t, WriteGate)
	vals := []float32{1}
	id, err := s.WriteAttribute(WriteRequest{Query: q, AttrName: "x", Ordinal: 1, Tensors: []tensor.Tensor{f32Tensor(vals)}})
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	waited := make(chan WaitResult, 1)
	go func() {
		res, err := s.WaitOp(id, TimeoutInfinite)
		assert.NoError(t, err)
		waited <- res
	}()
	time.Sleep(20 * time.Millisecond) // let the waiter block
	s.Destroy()
	select {
	case res := <-waited:
		assert.Equal(t, []uint64{id}, res.ErrorOpIDs)
		assert.Contains(t, res.Message, "was abandoned")
		assert.Contains(t, res.Message, fmt.Sprintf(`stage %d "doomed" was destroyed`, s.ID))
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken by Destroy")
	}
}

func TestGateCountsAndReset(t *testing.T) {
	g := newGate("test")
	assert.False(t, g.Active())
	assert.False(t, g.WaitUntilEntered(1, 10*time.Millisecond))
	g.Enable()
	assert.True(t, g.Active())
	done := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { done <- g.pass(1, nil, "") }()
	}
	require.True(t, g.WaitUntilEntered(2, 5*time.Second))
	assert.Equal(t, 2, g.EnteredCount())
	g.Reset()
	assert.NoError(t, <-done)
	assert.NoError(t, <-done)
	assert.Zero(t, g.EnteredCount())
	assert.False(t, g.Active())
	assert.NoError(t, g.pass(2, nil, ""), "a released gate lets ops through without counting them")
	assert.Zero(t, g.EnteredCount())
	assert.Equal(t, WriteGate, GateByName("write"))
	assert.Equal(t, QueryGate, GateByName("query"))
	assert.Nil(t, GateByName("other"))
}
