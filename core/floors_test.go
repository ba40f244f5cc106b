package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// floorsOf returns the requested (admission at enqueue) and applied effective floors of attr.
func (f *fixture) floorsOf(attr uint64) (requested, applied uint64) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	return f.s.requested.effective(attr), f.s.floors.effective(attr)
}

// holdAdvances submits a write of the fixture attribute at ordinal whose query is held by the
// query gate: a floor advance at or above ordinal waits for it until the returned release.
func (f *fixture) holdAdvances(t *testing.T, ordinal uint64) (release func()) {
	t.Helper()
	gate := scopedGate(t, QueryGate)
	q, _, err := f.s.Query([]Predicate{{Attr: f.attr, Op: OpHas}}, nil)
	require.NoError(t, err)
	op, err := f.s.WriteAttribute(WriteRequest{Query: q, AttrToken: f.attr, Ordinal: ordinal,
		Tensors: []tensor.Tensor{f32Tensor([]float32{7, 8, 9})}})
	require.NoError(t, err)
	return func() {
		gate.Release()
		f.wait(op)
		rel, err := f.s.ReleaseQuery(q)
		require.NoError(t, err)
		f.wait(rel)
	}
}

func (f *fixture) writeAttr(attr, ordinal uint64) (uint64, error) {
	return f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: attr, Ordinal: ordinal,
		Tensors: []tensor.Tensor{f32Tensor([]float32{4, 5, 6})}})
}

// An EXCLUDE advance counts an attribute as known when a write submitted before it creates the
// attribute, whether that write runs before or after the advance: the floors checked at
// enqueue and the floors applied agree, and so do the two execution orders.
func TestExcludeCountsAttributesInSubmissionOrder(t *testing.T) {
	for _, writeFirst := range []bool{true, false} {
		name := map[bool]string{true: "write runs first", false: "advance runs first"}[writeFirst]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			a, b := f.attr, f.token("fresh")
			op, err := f.write(1, []float32{1, 2, 3}) // a is known; b has no column yet
			require.NoError(t, err)
			f.wait(op)
			release := func() {}
			if writeFirst {
				release = f.holdAdvances(t, 3)
			}
			gate := scopedGate(t, WriteGate)
			writeB, err := f.writeAttr(b, 10) // above the advance: it does not wait for it
			require.NoError(t, err)
			adv, err := f.s.AdvanceWriteFloor(5, ScopeExclude, []uint64{a})
			require.NoError(t, err)

			requested, _ := f.floorsOf(b)
			assert.Equal(t, uint64(5), requested, "b counts as known at enqueue: its write was submitted first")
			_, err = f.writeAttr(b, 4)
			assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "a write of b at 4 is rejected at enqueue")

			if writeFirst {
				gate.Release()
				f.wait(writeB)
				assert.Equal(t, status.Timeout, f.poll(adv).Status, "the advance is still held")
				release()
				f.wait(adv)
			} else {
				f.wait(adv)
				assert.Equal(t, status.Timeout, f.poll(writeB).Status, "the write is still held")
				gate.Release()
				f.wait(writeB)
			}
			requested, applied := f.floorsOf(b)
			assert.Equal(t, uint64(5), applied, "the advance raised b")
			assert.Equal(t, requested, applied, "enqueue and execution agree")
			reqA, appliedA := f.floorsOf(a)
			assert.Equal(t, []uint64{0, 0}, []uint64{reqA, appliedA}, "the listed attribute is not raised")
		})
	}
}

// An attribute first written after an EXCLUDE advance was submitted is not raised by it, even
// when that write runs before the advance.
func TestExcludeIgnoresAttributesWrittenAfterIt(t *testing.T) {
	f := newFixture(t)
	a, c := f.attr, f.token("later")
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	f.wait(op)
	release := f.holdAdvances(t, 3)
	adv, err := f.s.AdvanceWriteFloor(5, ScopeExclude, []uint64{a})
	require.NoError(t, err)
	writeC, err := f.writeAttr(c, 10)
	require.NoError(t, err)
	f.wait(writeC)
	assert.Equal(t, status.Timeout, f.poll(adv).Status, "the advance runs after the write of c")
	release()
	f.wait(adv)
	requested, applied := f.floorsOf(c)
	assert.Equal(t, []uint64{0, 0}, []uint64{requested, applied})
	_, err = f.writeAttr(c, 4)
	assert.NoError(t, err, "c's floor was not raised")
}
