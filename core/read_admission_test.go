package core

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Read admission: latest(N) is the snapshot at N, a range selects the changes in [s, e]. Per
// requested attribute, in request order: an unsealed selected change at or before e is
// WRITE_FLOOR_VIOLATION; else a change after e on a selected key is OUT_OF_RANGE (ours: only a
// sealed one, and a snapshot inside the history window is served the state at N instead;
// parity, a window of 0: any, as the reference), never when e is UINT64_MAX; else the data.

// readResult is what a read gave: a failure code, or each group's values (in prim order),
// ordinal and delete flag.
type readResult struct {
	code     status.Code
	values   [][]float32
	ordinals []uint64
	deletes  []bool
}

func (r readResult) String() string {
	if r.code != status.OK {
		return r.code.String()
	}
	return fmt.Sprintf("groups %v ordinals %v deletes %v", r.values, r.ordinals, r.deletes)
}

func failed(c status.Code) readResult { return readResult{code: c} }

var noGroups = readResult{}

// valuesAt is one value group of vals at ordinal.
func valuesAt(ordinal uint64, vals ...float32) readResult {
	return readResult{values: [][]float32{vals}, ordinals: []uint64{ordinal}, deletes: []bool{false}}
}

// groupValues returns a fixed float32 group's values in prim order.
func groupValues(g *Group) []float32 {
	if g.IsDelete {
		return nil
	}
	tv := g.Tensors[0]
	all := unsafe.Slice((*float32)(unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)), int(tv.Rows))
	out := make([]float32, g.PrimCount)
	for k := range out {
		row := k
		if g.DataIndexMap != nil {
			row = int(g.DataIndexMap[k])
		}
		out[k] = all[row]
	}
	return out
}

// readVia reads attrs through query q and releases everything.
func (f *fixture) readVia(q uint64, attrs []uint64, rng OrdinalRange) readResult {
	f.t.Helper()
	h, op, err := f.s.ReadAttributes(q, attrs, rng)
	if err != nil {
		require.Zero(f.t, h, "a read refused at enqueue has no handle")
		require.Zero(f.t, op, "nor an op id")
		return failed(status.CodeOf(err))
	}
	var res readResult
	for {
		g, err := f.s.FetchReadNext(h, TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		if err != nil {
			res = failed(status.CodeOf(err))
			break
		}
		res.values = append(res.values, groupValues(g))
		res.ordinals = append(res.ordinals, g.Ordinal)
		res.deletes = append(res.deletes, g.IsDelete)
		require.NoError(f.t, f.s.ReleaseGroup(g.ID))
	}
	f.wait(op)
	rel, err := f.s.ReleaseRead(h)
	require.NoError(f.t, err)
	f.wait(rel)
	return res
}

func (f *fixture) read(rng OrdinalRange) readResult {
	f.t.Helper()
	return f.readVia(f.query, []uint64{f.attr}, rng)
}

func latestAt(n uint64) OrdinalRange   { return OrdinalRange{End: n} }
func between(s, e uint64) OrdinalRange { return OrdinalRange{Start: s, End: e, HasStart: true} }
func parityConfig() Config             { return Config{History: &History{}} }
func modeName(parity bool) string      { return map[bool]string{false: "window", true: "parity"}[parity] }
func configFor(parity bool) Config     { return map[bool]Config{false: {}, true: parityConfig()}[parity] }
func pick(parity bool, ours, ref readResult) readResult {
	if parity {
		return ref
	}
	return ours
}

// The worked table: attribute y on /A,/B written at 5, floor advanced to 5, written at 7
// (first column: 7 not sealed yet), then the floor advanced to 7 (second column). Each cell
// holds the reference's answer (parity, window 0) and ours (the default window): a snapshot
// is the state at N (nothing existed before 5), and a range ending at N selects its changed
// keys in the state at N, sealed changes after it notwithstanding.
func TestReadAdmissionWorkedTable(t *testing.T) {
	oor, wfv := failed(status.OutOfRange), failed(status.WriteFloorViolation)
	at5, at7 := valuesAt(5, 5, 50), valuesAt(7, 7, 70)
	type cell struct{ ref, ours readResult }
	rows := []struct {
		rng             OrdinalRange
		unsealed, after cell // floor 5 (7 unsealed) / floor 7 (after sealing 7)
	}{
		{latestAt(0), cell{oor, noGroups}, cell{oor, noGroups}},
		{latestAt(4), cell{oor, noGroups}, cell{oor, noGroups}},
		{latestAt(5), cell{oor, at5}, cell{oor, at5}},
		{latestAt(6), cell{oor, at5}, cell{oor, at5}},
		{latestAt(7), cell{wfv, wfv}, cell{at7, at7}},
		{latestAt(column.Current), cell{wfv, wfv}, cell{at7, at7}},
		{between(5, 5), cell{oor, at5}, cell{oor, at5}},
		{between(5, 6), cell{oor, at5}, cell{oor, at5}},
		{between(6, 7), cell{wfv, wfv}, cell{at7, at7}},
		{between(1, 4), cell{noGroups, noGroups}, cell{noGroups, noGroups}},
		{between(8, 9), cell{noGroups, noGroups}, cell{noGroups, noGroups}},
	}
	for _, parity := range []bool{false, true} {
		t.Run(modeName(parity), func(t *testing.T) {
			f := newFixtureConfig(t, configFor(parity), "/A", "/B")
			f.wait(must(f.write(5, []float32{5, 50})))
			f.seal(5)
			f.wait(must(f.write(7, []float32{7, 70})))
			for _, r := range rows {
				want := pick(parity, r.unsealed.ours, r.unsealed.ref)
				assert.Equal(t, want, f.read(r.rng), "floor 5 (7 unsealed): %+v", r.rng)
			}
			f.seal(7)
			for _, r := range rows {
				want := pick(parity, r.after.ours, r.after.ref)
				assert.Equal(t, want, f.read(r.rng), "floor 7 (7 sealed): %+v", r.rng)
			}
		})
	}
}

func must(op uint64, err error) uint64 {
	if err != nil {
		panic(err)
	}
	return op
}

// An attribute first written at 7: under parity a snapshot before it is OUT_OF_RANGE (a
// change after N on a queried path, though nothing existed at N). Ours returns the state at
// N, in which the attribute does not exist yet, before and after 7 is sealed.
func TestSnapshotBeforeAnAttributeExisted(t *testing.T) {
	for _, parity := range []bool{false, true} {
		t.Run(modeName(parity), func(t *testing.T) {
			f := newFixtureConfig(t, configFor(parity), "/A", "/B")
			f.seal(5)
			f.wait(must(f.write(7, []float32{7, 70})))
			for _, n := range []uint64{0, 5} {
				assert.Equal(t, pick(parity, noGroups, failed(status.OutOfRange)), f.read(latestAt(n)), "latest(%d), 7 unsealed", n)
			}
			f.seal(7)
			for _, n := range []uint64{0, 5} {
				assert.Equal(t, pick(parity, noGroups, failed(status.OutOfRange)), f.read(latestAt(n)), "latest(%d), 7 sealed", n)
			}
		})
	}
}

// A multi-attribute read where one attribute is fine and another has an unsealed change at or
// before the end fails as a whole; attributes are checked in request order, so the first that
// fails decides the status.
func TestMultiAttributeReadFailsAsAWholeInRequestOrder(t *testing.T) {
	for _, parity := range []bool{false, true} {
		t.Run(modeName(parity), func(t *testing.T) {
			f := newFixtureConfig(t, configFor(parity), "/A", "/B")
			fine, pending, later := f.token("fine"), f.token("pending"), f.token("later")
			write := func(attr, ordinal uint64) {
				f.wait(must(f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: attr, Ordinal: ordinal,
					Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2})}})))
			}
			write(fine, 2)
			write(later, 1)
			write(later, 3)
			f.seal(3)
			write(pending, 4)
			assert.Equal(t, valuesAt(2, 1, 2), f.readVia(f.query, []uint64{fine}, latestAt(column.Current)))
			assert.Equal(t, failed(status.WriteFloorViolation), f.readVia(f.query, []uint64{fine, pending}, latestAt(column.Current)))
			assert.Equal(t, failed(status.WriteFloorViolation), f.readVia(f.query, []uint64{pending, fine}, latestAt(column.Current)))
			// At 2, "later" changed (sealed) at 3 and "pending" has an unsealed change at 4:
			// under parity only the first failing attribute counts; the window serves both
			// attributes' state at 2 ("later" as written at 1).
			atTwo := readResult{values: [][]float32{{1, 2}, {1, 2}}, ordinals: []uint64{2, 1}, deletes: []bool{false, false}}
			assert.Equal(t, pick(parity, atTwo, failed(status.OutOfRange)), f.readVia(f.query, []uint64{fine, later, pending}, latestAt(2)))
			assert.Equal(t, failed(status.WriteFloorViolation), f.readVia(f.query, []uint64{fine, pending, later}, latestAt(5)))
			assert.Equal(t, pick(parity, valuesAt(2, 1, 2), failed(status.OutOfRange)),
				f.readVia(f.query, []uint64{pending, fine}, latestAt(2)), "pending's change at 4 comes after 2, unsealed")
		})
	}
}

// Within one attribute, WRITE_FLOOR_VIOLATION wins over OUT_OF_RANGE whichever of the
// attribute's columns (one per schema) holds the offending key. (Ours counts only sealed later
// changes, which lie at or below the floor, so the two meet only under parity.)
func TestUnsealedChangeWinsOverLaterChangeAcrossColumns(t *testing.T) {
	for _, parity := range []bool{false, true} {
		t.Run(modeName(parity), func(t *testing.T) {
			f := newFixtureConfig(t, configFor(parity), "/A", "/B")
			d := f.s.Dictionary()
			query := func(path string) uint64 {
				list, err := d.CreateListFromStrings([]string{path})
				require.NoError(t, err)
				q, err := f.s.QueryFromPathList(list)
				require.NoError(t, err)
				_, _ = d.Release(list)
				return q
			}
			qa, qb := query("/A"), query("/B")
			// /A carries y as float32 (the first column): 1 at 2 (sealed), 2 at 6 (unsealed);
			// /B as int32 (the second column): 9 at 5 (unsealed).
			f.wait(must(f.s.WriteAttribute(WriteRequest{Query: qa, AttrToken: f.attr, Ordinal: 2, Tensors: []tensor.Tensor{f32Tensor([]float32{1})}})))
			f.seal(2)
			f.wait(must(f.s.WriteAttribute(WriteRequest{Query: qa, AttrToken: f.attr, Ordinal: 6, Tensors: []tensor.Tensor{f32Tensor([]float32{2})}})))
			ints := []int32{9}
			f.wait(must(f.s.WriteAttribute(WriteRequest{Query: qb, AttrToken: f.attr, Ordinal: 5, Tensors: []tensor.Tensor{{
				Data: unsafe.Pointer(&ints[0]), DeviceType: tensor.DeviceCPU,
				DType: tensor.DType{Code: tensor.CodeInt, Bits: 32, Lanes: 1}, Shape: []int64{1}}}})))
			require.Len(t, f.s.columns[f.attr], 2)
			assert.Equal(t, pick(parity, valuesAt(2, 1), failed(status.OutOfRange)), f.readVia(qa, []uint64{f.attr}, latestAt(5)))
			assert.Equal(t, failed(status.WriteFloorViolation), f.readVia(qb, []uint64{f.attr}, latestAt(5)))
			assert.Equal(t, failed(status.WriteFloorViolation), f.read(latestAt(5)), "whichever column comes first")
			assert.Equal(t, pick(parity, valuesAt(2, 1), failed(status.OutOfRange)), f.read(latestAt(4)))
			assert.Equal(t, failed(status.WriteFloorViolation), f.read(between(2, 5)))
		})
	}
}

// The same precedence inside one column: a key with a later change listed before a key with
// an unsealed change at or before the end still gives WRITE_FLOOR_VIOLATION.
func TestUnsealedChangeWinsWithinAColumn(t *testing.T) {
	for _, parity := range []bool{false, true} {
		t.Run(modeName(parity), func(t *testing.T) {
			f := newFixtureConfig(t, configFor(parity), "/A", "/B")
			f.wait(must(f.write(2, []float32{1, 2})))
			f.seal(2)
			one := func(ordinal uint64, prim uint32, v float32) {
				mask := []uint64{1 << prim}
				f.wait(must(f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: ordinal,
					Tensors: []tensor.Tensor{f32Tensor([]float32{v, v})}, Count: 2, Mask: mask, HasMask: true})))
			}
			one(6, 0, 60) // /A, after the end
			one(5, 1, 50) // /B, at the end
			assert.Equal(t, failed(status.WriteFloorViolation), f.read(latestAt(5)))
			assert.Equal(t, failed(status.WriteFloorViolation), f.read(between(2, 5)))
			assert.Equal(t, pick(parity, valuesAt(2, 1, 2), failed(status.OutOfRange)), f.read(latestAt(4)))
		})
	}
}

// Keys outside the query never veto a read, and an attribute none of the queried prims has
// gives no groups (also at 0).
func TestOnlySelectedKeysDecide(t *testing.T) {
	f := newFixture(t, "/A", "/B")
	d := f.s.Dictionary()
	list, err := d.CreateListFromStrings([]string{"/C"})
	require.NoError(t, err)
	qc, err := f.s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = d.Release(list)
	f.wait(must(f.write(2, []float32{1, 2})))
	f.seal(2)
	f.wait(must(f.write(3, []float32{3, 4})))
	for _, n := range []uint64{0, 1, 2, 3, column.Current} {
		assert.Equal(t, noGroups, f.readVia(qc, []uint64{f.attr}, latestAt(n)), "latest(%d) over /C", n)
		assert.Equal(t, noGroups, f.readVia(f.query, []uint64{f.token("nobody")}, latestAt(n)), "latest(%d) of an unknown attribute", n)
	}
	assert.Equal(t, noGroups, f.readVia(qc, []uint64{f.attr}, between(0, 9)))
	// A range selects only keys with a change inside it: a key changed before it, whatever
	// came after, takes no part.
	f.seal(3)
	f.wait(must(f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 4,
		Tensors: []tensor.Tensor{f32Tensor([]float32{5})}, Count: 1, IndexMap: []uint32{0}, HasIndexMap: true})))
	f.seal(4)
	assert.Equal(t, valuesAt(3, 3, 4), f.read(between(3, 3)), "/A changed at 3 and again at 4: the state at 3 is in the window")
	assert.Equal(t, valuesAt(4, 5), f.read(between(4, 4)), "only /A changed at 4")
	assert.Equal(t, valuesAt(4, 5, 4), f.read(between(3, column.Current)), "no change comes after the end UINT64_MAX")
}

// The group ordinal is a hint; ours is the newest sealed change at or before the end among the
// group's rows (not the column's newest).
func TestGroupOrdinalIsTheNewestSealedChangeOfItsRows(t *testing.T) {
	f := newFixture(t, "/A", "/B", "/C")
	d := f.s.Dictionary()
	list, err := d.CreateListFromStrings([]string{"/A"})
	require.NoError(t, err)
	qa, err := f.s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = d.Release(list)
	f.wait(must(f.write(2, []float32{1, 2, 3})))
	write := func(ordinal uint64, prims string, v float32) {
		l, err := d.CreateListFromStrings([]string{prims})
		require.NoError(t, err)
		q, err := f.s.QueryFromPathList(l)
		require.NoError(t, err)
		_, _ = d.Release(l)
		f.wait(must(f.s.WriteAttribute(WriteRequest{Query: q, AttrToken: f.attr, Ordinal: ordinal,
			Tensors: []tensor.Tensor{f32Tensor([]float32{v})}})))
	}
	write(3, "/B", 20)
	write(4, "/C", 30)
	f.seal(4)
	write(5, "/A", 10) // unsealed
	assert.Equal(t, valuesAt(2, 1), f.readVia(qa, []uint64{f.attr}, latestAt(4)), "/A last changed at 2")
	assert.Equal(t, valuesAt(4, 1, 20, 30), f.read(latestAt(4)))
	assert.Equal(t, valuesAt(2, 1), f.readVia(qa, []uint64{f.attr}, latestAt(4)), "cached, still 2")
	f.seal(5)
	assert.Equal(t, valuesAt(5, 10), f.readVia(qa, []uint64{f.attr}, latestAt(5)), "recomputed after the fold")
	assert.Equal(t, valuesAt(5, 10, 20, 30), f.read(latestAt(5)))
	// Derived built-ins carry the requested end.
	paths := f.readVia(f.query, []uint64{f.token(BuiltinPath)}, latestAt(3))
	assert.Equal(t, []uint64{3}, paths.ordinals, "usd-path at 3")
}

// Derived built-ins reflect the current committed state at any ordinal, are never
// floor-gated, and give no groups for a range; usd-active is not supported.
func TestDerivedBuiltinsAtAnyOrdinal(t *testing.T) {
	for _, parity := range []bool{false, true} {
		t.Run(modeName(parity), func(t *testing.T) {
			f := newFixtureConfig(t, configFor(parity), "/A", "/B")
			f.wait(must(f.write(7, []float32{1, 2}))) // the prims exist, nothing sealed
			for _, n := range []uint64{0, 3, 7, column.Current} {
				h, op, err := f.s.ReadAttributes(f.query, []uint64{f.token(BuiltinPath)}, latestAt(n))
				require.NoError(t, err)
				f.wait(op)
				g, err := f.s.FetchReadNext(h, TimeoutInfinite)
				require.NoError(t, err, "latest(%d)", n)
				assert.Equal(t, n, g.Ordinal)
				assert.Equal(t, uint32(2), g.PrimCount)
				require.NoError(t, f.s.ReleaseGroup(g.ID))
				_, err = f.s.ReleaseRead(h)
				require.NoError(t, err)
			}
			assert.Equal(t, noGroups, f.readVia(f.query, []uint64{f.token(BuiltinPath), f.token(BuiltinParent)}, between(0, 9)))
			_, _, err := f.s.ReadAttributes(f.query, []uint64{f.token(BuiltinActive)}, latestAt(1))
			assert.Equal(t, status.NotSupported, status.CodeOf(err))
		})
	}
}

// Replay: once e is at or below the floor, no later mutation changes what a successful repeat
// of the read returns; a repeat may fail with OUT_OF_RANGE once a later change is sealed.
func TestSuccessfulRepeatAtOrBelowTheFloorReplays(t *testing.T) {
	for _, parity := range []bool{false, true} {
		t.Run(modeName(parity), func(t *testing.T) {
			f := newFixtureConfig(t, configFor(parity), "/A", "/B")
			f.wait(must(f.write(3, []float32{1, 2})))
			f.seal(5)
			first := f.read(latestAt(4))
			require.Equal(t, valuesAt(3, 1, 2), first)
			f.wait(must(f.write(6, []float32{7, 8})))
			f.wait(must(f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 8})))
			mh, mop, err := f.s.MapAttribute(MapRequest{Query: f.query, AttrToken: f.attr, Ordinal: 9})
			require.NoError(t, err)
			f.wait(mop)
			f.wait(must(f.s.UnmapAttribute(mh)))
			again := f.read(latestAt(4))
			if parity {
				assert.Equal(t, failed(status.OutOfRange), again)
			} else {
				assert.Equal(t, first, again, "unsealed later changes leave the state at 4 alone")
			}
			f.seal(9)
			assert.Equal(t, pick(parity, first, failed(status.OutOfRange)), f.read(latestAt(4)),
				"parity: the state at 4 is gone once 6 is sealed; the window keeps it")
		})
	}
}

// A deleted key is absent from a snapshot at or after its tombstone and present before it
// (under parity only while the tombstone is not sealed); a range over the tombstone returns a
// tombstone group.
func TestSnapshotAroundADelete(t *testing.T) {
	for _, parity := range []bool{false, true} {
		t.Run(modeName(parity), func(t *testing.T) {
			f := newFixtureConfig(t, configFor(parity), "/A", "/B")
			f.wait(must(f.write(2, []float32{1, 2})))
			f.seal(2)
			f.wait(must(f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 4})))
			assert.Equal(t, pick(parity, valuesAt(2, 1, 2), failed(status.OutOfRange)), f.read(latestAt(3)))
			assert.Equal(t, failed(status.WriteFloorViolation), f.read(latestAt(4)))
			f.seal(4)
			assert.Equal(t, noGroups, f.read(latestAt(4)))
			assert.Equal(t, pick(parity, valuesAt(2, 1, 2), failed(status.OutOfRange)), f.read(latestAt(3)))
			assert.Equal(t, readResult{values: [][]float32{nil}, ordinals: []uint64{4}, deletes: []bool{true}}, f.read(between(3, 4)))
		})
	}
}

// A read over a resolved query is refused at enqueue (no op id, no handle); over a pending
// query it is accepted, and the fetch returns the typed status once the query completed.
func TestWhereReadAdmissionFailuresSurface(t *testing.T) {
	f := newFixtureConfig(t, parityConfig(), "/A", "/B") // OUT_OF_RANGE needs the reference's answer
	f.wait(must(f.write(2, []float32{1, 2})))
	f.seal(2)
	f.wait(must(f.write(3, []float32{3, 4})))
	f.seal(3)
	h, op, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, latestAt(2))
	assert.Equal(t, status.OutOfRange, status.CodeOf(err))
	assert.Zero(t, h)
	assert.Zero(t, op)

	g := scopedGate(t, QueryGate)
	pq, pqOp, err := f.s.Query([]Predicate{{Attr: f.attr, Op: OpHas}}, nil)
	require.NoError(t, err)
	h, op, err = f.s.ReadAttributes(pq, []uint64{f.attr}, latestAt(2))
	require.NoError(t, err, "validated once the query is resolved")
	require.NotZero(t, h)
	require.NotZero(t, op)
	_, err = f.s.FetchReadNext(h, 0)
	assert.Equal(t, status.Timeout, status.CodeOf(err))
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	g.Release()
	f.wait(pqOp)
	for i := 0; i < 2; i++ {
		_, err = f.s.FetchReadNext(h, TimeoutInfinite)
		assert.Equal(t, status.OutOfRange, status.CodeOf(err), "repeatably")
	}
	res, err := f.s.WaitOp(op, TimeoutInfinite)
	require.NoError(t, err)
	assert.Equal(t, []uint64{op}, res.ErrorOpIDs)
	_, err = f.s.ReleaseRead(h)
	require.NoError(t, err)
}

// Retention: change records older than the frontier are dropped, but each key keeps its latest
// dropped change, so a snapshot before that change still fails, and a group whose rows changed
// only in dropped records takes its ordinal from them.
func TestDroppedHistoryStillVetoesOlderSnapshots(t *testing.T) {
	f := newFixtureConfig(t, parityConfig(), "/A", "/B") // no versions: the records decide
	d := f.s.Dictionary()
	list, err := d.CreateListFromStrings([]string{"/B"})
	require.NoError(t, err)
	qb, err := f.s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = d.Release(list)
	f.wait(must(f.write(1, []float32{1, 2})))
	f.seal(1)
	require.Len(t, f.s.columns[f.attr], 1)
	f.s.columns[f.attr][0].SetRetention(2)
	f.wait(must(f.s.WriteAttribute(WriteRequest{Query: qb, AttrToken: f.attr, Ordinal: 2,
		Tensors: []tensor.Tensor{f32Tensor([]float32{20})}})))
	f.seal(2)
	for o := uint64(3); o <= 6; o++ { // /A only
		f.wait(must(f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: o,
			Tensors: []tensor.Tensor{f32Tensor([]float32{float32(o)})}, Count: 1, IndexMap: []uint32{0}, HasIndexMap: true})))
		f.seal(o)
	}
	require.Equal(t, uint64(5), f.s.columns[f.attr][0].Frontier(), "the records of 1 to 4 were dropped")
	assert.Equal(t, failed(status.OutOfRange), f.readVia(qb, []uint64{f.attr}, latestAt(1)), "/B changed at 2 (dropped)")
	assert.Equal(t, valuesAt(2, 20), f.readVia(qb, []uint64{f.attr}, latestAt(2)), "/B's newest change is a dropped one")
	assert.Equal(t, valuesAt(2, 20), f.readVia(qb, []uint64{f.attr}, latestAt(5)))
	assert.Equal(t, failed(status.OutOfRange), f.read(latestAt(4)), "/A changed at 5")
	assert.Equal(t, valuesAt(6, 6, 20), f.read(latestAt(6)))
	assert.Equal(t, valuesAt(2, 20), f.readVia(qb, []uint64{f.attr}, between(2, 3)), "/B's marker (2) is a change in range")
	assert.Equal(t, failed(status.OutOfRange), f.read(between(5, 5)), "at the frontier: /A changed at 5 and 6")
	assert.Equal(t, valuesAt(6, 6), f.read(between(6, 6)))
	assert.Equal(t, noGroups, f.readVia(qb, []uint64{f.attr}, between(1, 1)),
		"below the frontier /B's change at 1 is merged into its marker: the range selects nothing")
}
