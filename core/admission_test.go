package core

import (
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Helpers for tests that name prims and attributes freely.

func (f *fixture) queryOf(paths ...string) uint64 {
	f.t.Helper()
	list, err := f.s.Dictionary().CreateListFromStrings(paths)
	require.NoError(f.t, err)
	q, err := f.s.QueryFromPathList(list)
	require.NoError(f.t, err)
	_, err = f.s.Dictionary().Release(list)
	require.NoError(f.t, err)
	return q
}

// writeF32 enqueues a float32 write of attr over q (one value per prim).
func (f *fixture) writeF32(q uint64, attr string, ordinal uint64, vals ...float32) (uint64, error) {
	return f.s.WriteAttribute(WriteRequest{Query: q, AttrName: attr, Ordinal: ordinal, Tensors: []tensor.Tensor{f32Tensor(vals)}})
}

// outcome waits for op and returns its own failure (nil on success).
func (f *fixture) outcome(op uint64) error {
	f.t.Helper()
	res, err := f.s.WaitOp(op, TimeoutInfinite)
	require.NoError(f.t, err)
	require.Equal(f.t, status.OK, res.Status)
	return f.s.OpError(op)
}

// mustSucceed enqueues through fn and waits for a successful completion.
func (f *fixture) mustSucceed(op uint64, err error) {
	f.t.Helper()
	require.NoError(f.t, err)
	require.NoError(f.t, f.outcome(op))
}

// latestF32 reads attr over q after sealing up to floor: prim path -> float32 value.
func (f *fixture) latestF32(q uint64, attr string, floor uint64) map[string]float32 {
	f.t.Helper()
	f.seal(floor)
	h, op, err := f.s.ReadAttributes(q, []uint64{f.token(attr)}, OrdinalRange{End: floor})
	require.NoError(f.t, err)
	f.wait(op)
	out := map[string]float32{}
	for {
		g, err := f.s.FetchReadNext(h, TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		require.NoError(f.t, err)
		paths, err := f.s.Dictionary().ListPaths(g.PrimList)
		require.NoError(f.t, err)
		vals := tensorF32(g.Tensors[0])
		for k := 0; k < int(g.PrimCount); k++ {
			idx := int(g.PrimOffset) + k
			if g.PrimIndexMap != nil {
				idx = int(g.PrimIndexMap[k])
			}
			row := k
			if g.DataIndexMap != nil {
				row = int(g.DataIndexMap[k])
			}
			out[f.pathString(paths[idx])] = vals[row]
		}
		require.NoError(f.t, f.s.ReleaseGroup(g.ID))
	}
	_, err = f.s.ReleaseRead(h)
	require.NoError(f.t, err)
	return out
}

func (f *fixture) pathString(p uint64) string {
	f.t.Helper()
	s, err := f.s.Dictionary().PathString(p)
	require.NoError(f.t, err)
	return s
}

// holdWorkers occupies every worker slot of the stage until release (idempotent: defer it, so
// a failing test never leaves the stage wedged): ops enqueued meanwhile queue up.
func holdWorkers(s *Stage) (release func()) {
	gate := make(chan struct{})
	entered := make(chan struct{}, s.pool.Workers())
	for i := 0; i < s.pool.Workers(); i++ {
		s.pool.Go(sched.NewOp(0, nil, nil), func() error {
			entered <- struct{}{}
			<-gate
			return nil
		}, nil)
	}
	for i := 0; i < s.pool.Workers(); i++ {
		<-entered
	}
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

var allPolicies = []AdmissionPolicy{AdmissionFloorOnly, AdmissionNondecreasing, AdmissionStrictlyIncreasing}

func TestAdmissionPolicyValues(t *testing.T) {
	assert.Equal(t, AdmissionNondecreasing, AdmissionDefault.Resolve(), "DEFAULT resolves to NONDECREASING")
	assert.Equal(t, AdmissionNondecreasing, NewStage("zero", Config{}).AdmissionPolicy(), "the zero Config is the 0.3.0 default")
	for _, p := range allPolicies {
		assert.Equal(t, p, p.Resolve())
		assert.NoError(t, CheckAdmissionPolicy(p, "policy"))
	}
	for _, bad := range []AdmissionPolicy{-1, 4, 99} {
		err := CheckAdmissionPolicy(bad, "runtime_default_ordinal_admission_policy")
		require.Equal(t, status.InvalidArgument, status.CodeOf(err))
		assert.ErrorContains(t, err, "runtime_default_ordinal_admission_policy")
		assert.ErrorContains(t, err, "FLOOR_ONLY=1")
		_, err = OpenStage("bad", Config{Admission: bad})
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err), "OpenStage validates the config")
	}
	assert.Panics(t, func() { NewStage("bad", Config{Admission: 7}) }, "NewStage takes valid configs only")
}

// The decision table: an existing retained change of the cell at r = 5, a new write at o,
// both above every floor. Refusals happen when the write runs: it is accepted at enqueue,
// then fails with WRITE_FLOOR_VIOLATION and the ordinal-conflict message.
func TestWriteAdmissionDecisionTable(t *testing.T) {
	const r = 5
	admitted := map[AdmissionPolicy][3]bool{ // o < r, o == r, o > r
		AdmissionFloorOnly:          {true, true, true},
		AdmissionNondecreasing:      {false, true, true},
		AdmissionStrictlyIncreasing: {false, false, true},
	}
	for _, policy := range allPolicies {
		for i, o := range []uint64{r - 2, r, r + 2} {
			f := newPolicyFixture(t, policy)
			q := f.queryOf("/W/A")
			f.mustSucceed(f.writeF32(q, "x", r, 1))
			op, err := f.writeF32(q, "x", o, 2)
			require.NoError(t, err, "%s o=%d: accepted at enqueue", policy, o)
			got := f.outcome(op)
			if admitted[policy][i] {
				assert.NoError(t, got, "%s o=%d", policy, o)
				continue
			}
			require.Equal(t, status.WriteFloorViolation, status.CodeOf(got), "%s o=%d", policy, o)
			assert.True(t, strings.HasPrefix(status.MessageOf(got), `write_attribute: ordinal conflict for requested attribute "x" on prim /W/A`), status.MessageOf(got))
			res, err := f.s.WaitOp(op, TimeoutInfinite)
			require.NoError(t, err)
			assert.Equal(t, []uint64{op}, res.ErrorOpIDs, "wait_op lists the refused op")
			assert.Equal(t, map[string]float32{"/W/A": 1}, f.latestF32(q, "x", 20), "a refused write changes nothing")
		}
	}
}

// Cells that do not intersect may share or reverse ordinals under every policy: another
// attribute of the same prim, or the same attribute of another prim.
func TestDisjointCellsAreIndependent(t *testing.T) {
	for _, policy := range allPolicies {
		f := newPolicyFixture(t, policy)
		a, b := f.queryOf("/W/A"), f.queryOf("/W/B")
		f.mustSucceed(f.writeF32(a, "x", 5, 1))
		f.mustSucceed(f.writeF32(a, "x2", 2, 2))
		f.mustSucceed(f.writeF32(b, "x", 2, 3))
		assert.Equal(t, map[string]float32{"/W/A": 1, "/W/B": 3}, f.latestF32(f.queryOf("/W/A", "/W/B"), "x", 20), policy)
	}
}

// The ordinal a failed write would have used stays free when the write published nothing: a
// corrected retry at the same ordinal is admitted, even under STRICTLY_INCREASING.
func TestFailedWriteFreesItsOrdinal(t *testing.T) {
	for _, policy := range allPolicies {
		f := newPolicyFixture(t, policy)
		q := f.queryOf("/W/A")
		f.mustSucceed(f.writeF32(q, "x", 3, 1))
		// A batch whose second entry is refused when it runs (INSERT onto an existing prim is
		// checked for the whole batch first): nothing is applied.
		op, err := f.s.WriteAttributes(q, 6, PrimModeInsert, []WriteRequest{
			{AttrName: "y", Tensors: []tensor.Tensor{f32Tensor([]float32{5})}},
			{AttrName: "x", Tensors: []tensor.Tensor{f32Tensor([]float32{5})}}})
		if err == nil {
			require.Equal(t, status.PrimNotFound, status.CodeOf(f.outcome(op)), policy)
		} else {
			require.Equal(t, status.PrimNotFound, status.CodeOf(err), policy)
		}
		f.mustSucceed(f.writeF32(q, "x", 6, 2))
		f.mustSucceed(f.writeF32(q, "y", 6, 3))
		assert.Equal(t, map[string]float32{"/W/A": 2}, f.latestF32(q, "x", 20), policy)
	}
}

// A batch that completed some entries before failing has published them: under
// STRICTLY_INCREASING the same ordinal is refused for those cells, NONDECREASING allows it.
// (Every refusal the stage can foresee is checked for the whole batch first; here the second
// entry fails on an injected internal fault.)
func TestPartiallyAppliedBatchKeepsItsOrdinal(t *testing.T) {
	for _, policy := range []AdmissionPolicy{AdmissionNondecreasing, AdmissionStrictlyIncreasing} {
		f := newPolicyFixture(t, policy)
		q := f.queryOf("/W/A")
		calls := 0
		hook := func(at faultSite) {
			if at == faultWriteApply {
				if calls++; calls == 2 {
					panic("injected fault in the second entry")
				}
			}
		}
		faultHook.Store(&hook)
		t.Cleanup(func() { faultHook.Store(nil) })
		op, err := f.s.WriteAttributes(q, 4, PrimModeUpsert, []WriteRequest{
			{AttrName: "x", Tensors: []tensor.Tensor{f32Tensor([]float32{5})}},
			{AttrName: "z", Tensors: []tensor.Tensor{f32Tensor([]float32{5})}}})
		require.NoError(t, err)
		require.Equal(t, status.Internal, status.CodeOf(f.outcome(op)), policy)
		faultHook.Store(nil)
		retry, err := f.writeF32(q, "x", 4, 6)
		require.NoError(t, err)
		got := f.outcome(retry)
		if policy == AdmissionStrictlyIncreasing {
			assert.Equal(t, status.WriteFloorViolation, status.CodeOf(got), "entry 0 completed at 4: redo it at a newer ordinal")
		} else {
			assert.NoError(t, got)
		}
		f.mustSucceed(f.writeF32(q, "z", 4, 7)) // entry 1 published nothing
	}
}

func i32Tensor(vals []int32) tensor.Tensor {
	return tensor.Tensor{Data: unsafe.Pointer(&vals[0]), DeviceType: tensor.DeviceCPU,
		DType: tensor.DType{Code: tensor.CodeInt, Bits: 32, Lanes: 1}, Shape: []int64{int64(len(vals))}}
}

// Deletes: the deleted cells' history decides; a conflict with an applied change is refused
// at enqueue (status WRITE_FLOOR_VIOLATION, no op), one with a change still pending when the
// delete runs.
func TestDeleteAdmission(t *testing.T) {
	for _, policy := range allPolicies {
		f := newPolicyFixture(t, policy)
		q := f.queryOf("/D/A")
		x := f.token("x")
		f.mustSucceed(f.writeF32(q, "x", 5, 1))
		for _, o := range []uint64{3, 5} {
			op, err := f.s.DeleteAttributes(DeleteRequest{Query: q, Tokens: []uint64{x}, Ordinal: o})
			refused := (policy == AdmissionNondecreasing && o < 5) || (policy == AdmissionStrictlyIncreasing && o <= 5)
			if refused {
				require.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "%s delete at %d", policy, o)
				assert.Zero(t, op)
				assert.ErrorContains(t, err, `delete_attributes: ordinal conflict for requested attribute "x" on prim /D/A`)
				continue
			}
			f.mustSucceed(op, err)
		}
	}
	// Behind a pending change: the delete waits for it and then fails.
	f := newPolicyFixture(t, AdmissionNondecreasing)
	q := f.queryOf("/D/B")
	release := holdWorkers(f.s)
	defer release()
	w, err := f.writeF32(q, "x", 5, 1)
	require.NoError(t, err)
	del, err := f.s.DeleteAttributes(DeleteRequest{Query: q, Names: []string{"x"}, Tokens: []uint64{0}, Ordinal: 3})
	require.NoError(t, err, "the conflicting change is not applied yet")
	release()
	require.NoError(t, f.outcome(w))
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(f.outcome(del)))
}

// A whole-prim delete checks every cell of the prims and their lifecycles; a write of a new
// attribute at an ordinal below a whole-prim delete meets the prim's deletion.
func TestPrimLifecycleAdmission(t *testing.T) {
	f := newPolicyFixture(t, AdmissionNondecreasing)
	q := f.queryOf("/L/A")
	f.mustSucceed(f.writeF32(q, "x", 6, 1))
	_, err := f.s.DeleteAttributes(DeleteRequest{Query: q, Ordinal: 4})
	require.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "older than a change of one of the prim's cells")
	assert.ErrorContains(t, err, "delete_attributes: ordinal conflict for prim /L/A")
	f.mustSucceed(f.s.DeleteAttributes(DeleteRequest{Query: q, Ordinal: 8}))
	op, err := f.writeF32(q, "y", 7, 2)
	require.NoError(t, err)
	got := f.outcome(op)
	require.Equal(t, status.WriteFloorViolation, status.CodeOf(got), "a new attribute below the prim's deletion")
	assert.Contains(t, status.MessageOf(got), "retained deletion at ordinal 8")
	f.mustSucceed(f.writeF32(q, "y", 8, 3)) // equal is fine under NONDECREASING: the prim is back
	assert.True(t, f.held("/L/A"))
	// An attribute delete naming a cell that has no value is a change of that cell too.
	b := f.queryOf("/L/B")
	f.mustSucceed(f.writeF32(b, "other", 1, 0))
	f.mustSucceed(f.s.DeleteAttributes(DeleteRequest{Query: b, Names: []string{"z"}, Tokens: []uint64{0}, Ordinal: 9}))
	op, err = f.writeF32(b, "z", 5, 1)
	require.NoError(t, err)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(f.outcome(op)), "below a delete of the cell")
}

// Under FLOOR_ONLY a lower-ordinal write that runs after a higher-ordinal delete ends as if it
// had run first: the delete covers it (last writer wins by ordinal, tombstones included).
func TestFloorOnlyLowerWriteEndsUnderALaterDelete(t *testing.T) {
	t.Run("attribute delete of a new attribute", func(t *testing.T) {
		f := newPolicyFixture(t, AdmissionFloorOnly)
		q := f.queryOf("/F/A")
		f.mustSucceed(f.writeF32(q, "other", 1, 0))
		f.mustSucceed(f.s.DeleteAttributes(DeleteRequest{Query: q, Names: []string{"x"}, Tokens: []uint64{0}, Ordinal: 5}))
		f.mustSucceed(f.writeF32(q, "x", 3, 7))
		assert.Empty(t, f.latestF32(q, "x", 20), "the delete at 5 wins over the write at 3")
		h, op, err := f.s.ReadAttributes(q, []uint64{f.token("x")}, OrdinalRange{Start: 3, End: 5, HasStart: true})
		require.NoError(t, err)
		f.wait(op)
		g, err := f.s.FetchReadNext(h, TimeoutInfinite)
		require.NoError(t, err)
		assert.True(t, g.IsDelete, "the change range ends in the tombstone")
		require.NoError(t, f.s.ReleaseGroup(g.ID))
	})
	t.Run("whole-prim delete", func(t *testing.T) {
		f := newPolicyFixture(t, AdmissionFloorOnly)
		q := f.queryOf("/F/B")
		f.mustSucceed(f.writeF32(q, "x", 1, 1))
		f.mustSucceed(f.s.DeleteAttributes(DeleteRequest{Query: q, Ordinal: 5}))
		f.mustSucceed(f.writeF32(q, "y", 3, 2))
		assert.Empty(t, f.latestF32(q, "y", 5))
		assert.False(t, f.held("/F/B"), "the write at 3 does not bring back a prim deleted at 5")
		f.mustSucceed(f.writeF32(q, "y", 6, 3))
		assert.True(t, f.held("/F/B"), "a write at 6 does")
	})
	t.Run("concurrent: the write submitted after the delete", func(t *testing.T) {
		for round := 0; round < 20; round++ {
			f := newPolicyFixture(t, AdmissionFloorOnly)
			q := f.queryOf("/F/C")
			f.mustSucceed(f.writeF32(q, "other", 1, 0))
			release := holdWorkers(f.s)
			defer release()
			del, err := f.s.DeleteAttributes(DeleteRequest{Query: q, Names: []string{"x"}, Tokens: []uint64{0}, Ordinal: 5})
			require.NoError(t, err)
			w, err := f.writeF32(q, "x", 3, 7)
			require.NoError(t, err)
			release()
			require.NoError(t, f.outcome(del))
			require.NoError(t, f.outcome(w))
			require.Empty(t, f.latestF32(q, "x", 20), "round %d", round)
		}
	})
	t.Run("a higher-ordinal write submitted earlier survives a lower whole-prim delete", func(t *testing.T) {
		f := newPolicyFixture(t, AdmissionFloorOnly)
		q := f.queryOf("/F/D")
		f.mustSucceed(f.writeF32(q, "x", 5, 1))
		f.mustSucceed(f.s.DeleteAttributes(DeleteRequest{Query: q, Ordinal: 3}))
		assert.True(t, f.held("/F/D"), "in ordinal order the prim is written again at 5")
		assert.Equal(t, map[string]float32{"/F/D": 1}, f.latestF32(q, "x", 20))
	})
}

// Enqueue-time checks look past nothing: a schema change behind a pending lower-ordinal delete
// of the attribute is accepted (the delete makes it valid) and waits for the delete; an
// INSERT behind a pending whole-prim delete likewise.
func TestEnqueueChecksRespectPendingDeletes(t *testing.T) {
	t.Run("schema change", func(t *testing.T) {
		f := newPolicyFixture(t, AdmissionNondecreasing)
		q := f.queryOf("/E/A")
		f.mustSucceed(f.writeF32(q, "x", 1, 1))
		release := holdWorkers(f.s)
		defer release()
		del, err := f.s.DeleteAttributes(DeleteRequest{Query: q, Names: []string{"x"}, Tokens: []uint64{0}, Ordinal: 2})
		require.NoError(t, err)
		w, err := f.s.WriteAttribute(WriteRequest{Query: q, AttrName: "x", Ordinal: 3, Tensors: []tensor.Tensor{i32Tensor([]int32{42})}})
		require.NoError(t, err, "not refused at enqueue: the pending delete at 2 frees the schema")
		release()
		require.NoError(t, f.outcome(del))
		require.NoError(t, f.outcome(w))
		// Without the delete the same change is refused synchronously.
		_, err = f.writeF32(q, "x", 4, 1)
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	})
	t.Run("INSERT", func(t *testing.T) {
		f := newPolicyFixture(t, AdmissionNondecreasing)
		q := f.queryOf("/E/B")
		f.mustSucceed(f.writeF32(q, "x", 1, 1))
		release := holdWorkers(f.s)
		defer release()
		del, err := f.s.DeleteAttributes(DeleteRequest{Query: q, Ordinal: 2})
		require.NoError(t, err)
		w, err := f.s.WriteAttribute(WriteRequest{Query: q, AttrName: "y", Ordinal: 3, PrimMode: PrimModeInsert,
			Tensors: []tensor.Tensor{f32Tensor([]float32{5})}})
		require.NoError(t, err, "not refused at enqueue: the pending whole-prim delete removes the prim")
		release()
		require.NoError(t, f.outcome(del))
		require.NoError(t, f.outcome(w))
		assert.Equal(t, map[string]float32{"/E/B": 5}, f.latestF32(q, "y", 3))
		_, err = f.s.WriteAttribute(WriteRequest{Query: q, AttrName: "z", Ordinal: 4, PrimMode: PrimModeInsert,
			Tensors: []tensor.Tensor{f32Tensor([]float32{5})}})
		assert.Equal(t, status.PrimNotFound, status.CodeOf(err), "with nothing pending INSERT is refused at enqueue")
	})
}

// Under NONDECREASING a lower-ordinal write submitted after a pending higher one waits for it:
// its refusal does not depend on which ran first.
func TestLowerWriteWaitsForAPendingHigherOne(t *testing.T) {
	for round := 0; round < 20; round++ {
		f := newPolicyFixture(t, AdmissionNondecreasing)
		q := f.queryOf("/O/A")
		release := holdWorkers(f.s)
		defer release()
		hi, err := f.writeF32(q, "x", 5, 1)
		require.NoError(t, err)
		lo, err := f.writeF32(q, "x", 3, 2)
		require.NoError(t, err)
		release()
		require.NoError(t, f.outcome(hi))
		require.Equal(t, status.WriteFloorViolation, status.CodeOf(f.outcome(lo)), "round %d", round)
	}
}
