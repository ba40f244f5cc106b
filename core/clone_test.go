package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
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

// cloneResult clones and waits; it returns the report, or the clone's own failure.
func (c *cstage) clone(source string, targets []string, ordinal uint64) (CloneReport, error) {
	c.t.Helper()
	op, err := c.s.Clone(source, targets, ordinal)
	if err != nil {
		return CloneReport{}, err
	}
	_, err = c.s.WaitOp(op, TimeoutInfinite)
	require.NoError(c.t, err)
	rep, err := c.s.FetchCloneResult(op, 0)
	require.NoError(c.t, c.s.ReleaseOp(op))
	return rep, err
}

// A clone with no target is allowed: only the global floor and the floors of the source's
// attributes are checked, and the report counts the source subtree.
func TestCloneWithoutTargets(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/S", "/S/A"}, "m", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2))))
	rep, err := c.clone("/S", nil, 2)
	require.NoError(t, err)
	assert.Equal(t, CloneReport{Ordinal: 2, TargetCount: 0, SourcePrimCount: 2, PrimsCloned: 0}, rep)
	rep, err = c.clone("/S/A", []string{}, 2)
	require.NoError(t, err)
	assert.Equal(t, CloneReport{Ordinal: 2, SourcePrimCount: 1}, rep, "a leaf source counts 1")
	c.ok(c.s.AdvanceWriteFloor(5, ScopeInclude, []uint64{c.tok("m")}))
	_, err = c.clone("/S", nil, 3)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "the floor of a source attribute")
	c.seal(7)
	_, err = c.clone("/S", nil, 6)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "the global floor")
	_, err = c.clone("/Missing", nil, 8)
	assert.Equal(t, status.NotFound, status.CodeOf(err))
	assert.Equal(t, 2, c.s.SubtreePrimCount(c.path("/")), "nothing was created")
}

// Target lists are checked at enqueue: an empty path, a path that is not a prim path and a
// duplicate are INVALID_ARGUMENT naming the path; no op is issued.
func TestCloneEnqueueRejections(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/S"}, "m", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
	for targets, want := range map[[2]string]string{
		{"/C1", ""}:      "target_paths[1]: Path string must be non-empty (not a valid prim path)",
		{"C2", "/C1"}:    "target_paths[0]: Path string must be absolute",
		{"/a//b", "/C"}:  "(not a valid prim path)",
		{"/C1", "/"}:     `target_paths[1] is "/", the pseudo-root`,
		{"/C3", "/C3"}:   "duplicate target path '/C3' (target_paths[0] and [1])",
		{"/C1", "/S/In"}: `target_paths[1]: "/S/In" is inside the source subtree "/S"`,
	} {
		op, err := c.s.Clone("/S", targets[:], 2)
		assert.Zero(t, op)
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err), "%v", targets)
		assert.Contains(t, status.MessageOf(err), want)
	}
	assert.False(t, c.held("/C1"))
}

// A clone accepted at enqueue that fails when it executes reports its own code through
// fetch_clone_result (wait_op lists it as failed); nothing is cloned.
func TestCloneExecutionFailureCodes(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/S", "/S/C", "/B", "/D"}, "m", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2, 3, 4))))
	_, err := c.clone("/Missing", []string{"/T"}, 2)
	assert.Equal(t, status.NotFound, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "source prim does not exist at '/Missing'")

	_, err = c.clone("/S", []string{"/T1", "/B", "/T2", "/D"}, 2)
	assert.Equal(t, status.PrimNotFound, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "target prim already exists at '/B', '/D'", "every existing target is named")
	for _, p := range []string{"/T", "/T1", "/T1/C", "/T2"} {
		assert.False(t, c.held(p), "%s: nothing was cloned", p)
	}

	c.seal(3)
	_, err = c.clone("/S", []string{"/T1"}, 3)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err))

	c.ok(c.write([]string{"/M/C"}, "m", 4, false, SemanticNone, fixedTensor(dtI32, i32s(7))))
	_, err = c.clone("/S", []string{"/M"}, 4)
	assert.Equal(t, status.OpFailed, status.CodeOf(err), "a merge conflict")
	assert.False(t, c.held("/M"))

	// INTERNAL: a failure inside the clone.
	armFault(t, faultCloneApply)
	_, err = c.clone("/S", []string{"/T1"}, 4)
	assert.Equal(t, status.Internal, status.CodeOf(err))
	rep, err := c.clone("/S", []string{"/T1"}, 4)
	require.NoError(t, err, "the stage is usable afterwards")
	assert.Equal(t, CloneReport{Ordinal: 4, TargetCount: 1, SourcePrimCount: 2, PrimsCloned: 2}, rep)
}

// fetch_clone_result: the report exists from the clone's completion until its op id is
// released; a pending clone is TIMEOUT; op 0, another kind of op and a released clone are
// INVALID_HANDLE.
func TestFetchCloneResultLifetime(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/S"}, "m", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
	release := make(chan struct{})
	held := holdMutation(c.s, 2, release) // a same-ordinal mutation submitted first: the clone waits
	op, err := c.s.Clone("/S", []string{"/T1", "/T2"}, 2)
	require.NoError(t, err)
	_, err = c.s.FetchCloneResult(op, 0)
	assert.Equal(t, status.Timeout, status.CodeOf(err))
	close(release)
	rep, err := c.s.FetchCloneResult(op, TimeoutInfinite)
	require.NoError(t, err)
	assert.Equal(t, CloneReport{Ordinal: 2, TargetCount: 2, SourcePrimCount: 1, PrimsCloned: 2}, rep)
	rep2, err := c.s.FetchCloneResult(op, 0)
	require.NoError(t, err, "fetching does not consume the report")
	assert.Equal(t, rep, rep2)
	require.NoError(t, held.Err())

	for _, id := range []uint64{0, held.ID, 1 << 40} {
		_, err = c.s.FetchCloneResult(id, 0)
		assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "op %d", id)
	}
	wop, err := c.write([]string{"/S"}, "m", 3, false, SemanticNone, fixedTensor(dtF32, f32s(2)))
	c.ok(wop, err)
	_, err = c.s.FetchCloneResult(wop, 0)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "a write is no clone")
	require.NoError(t, c.s.ReleaseOp(op))
	_, err = c.s.FetchCloneResult(op, 0)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "released")
	assert.Empty(t, c.s.clones, "the records of released ops are forgotten")

	// A detached clone's record goes with its op.
	op, err = c.s.Clone("/S", []string{"/T3"}, 4)
	require.NoError(t, err)
	require.NoError(t, c.s.DetachOp(op))
	require.Eventually(t, func() bool {
		n, _ := locked(c.s, func() (int, error) { return len(c.s.clones), nil })
		return n == 0
	}, 5*time.Second, time.Millisecond)
}

// Below an absent target root, a clone merges into the prims that exist: attributes only the
// existing prim has are kept, applied schemas and ancestor types become the union of both
// sets, an untyped source prim keeps the existing prim's type, and cloned values replace the
// existing ones.
func TestCloneMergesBelowAnAbsentTargetRoot(t *testing.T) {
	c := newCStage(t)
	tk := c.tok
	mesh, xform := tk("Mesh"), tk("Xform")
	src := []string{"/S", "/S/C", "/S/U"}
	c.ok(c.write(src, "a", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2, 3))))
	c.ok(c.write(src[:2], BuiltinPrimType, 1, false, SemanticNone, fixedTensor(dtU64, u64s(xform, mesh))))
	c.ok(c.write(src[1:2], BuiltinSchemas, 1, true, SemanticNone, rowsTensors(dtU64, u64s(tk("A"), tk("B")))...))
	c.ok(c.write(src[1:2], BuiltinAncestorTypes, 1, true, SemanticNone, rowsTensors(dtU64, u64s(tk("X")))...))
	// The existing prims below /T: /T/C (typed like its source), /T/U (typed, its source is
	// not), and /T/Z, which the source does not have.
	dst := []string{"/T/C", "/T/U", "/T/Z"}
	c.ok(c.write(dst, "a", 1, false, SemanticNone, fixedTensor(dtF32, f32s(20, 30, 40))))
	c.ok(c.write(dst, "keep", 1, false, SemanticNone, fixedTensor(dtI32, i32s(5, 6, 7))))
	c.ok(c.write(dst[:2], BuiltinPrimType, 1, false, SemanticNone, fixedTensor(dtU64, u64s(mesh, tk("Cube")))))
	c.ok(c.write(dst[:1], BuiltinSchemas, 1, true, SemanticNone, rowsTensors(dtU64, u64s(tk("B"), tk("C")))...))
	c.ok(c.write(dst[:1], BuiltinAncestorTypes, 1, true, SemanticNone, rowsTensors(dtU64, u64s(tk("Y")))...))

	rep, err := c.clone("/S", []string{"/T"}, 2)
	require.NoError(t, err)
	assert.Equal(t, CloneReport{Ordinal: 2, TargetCount: 1, SourcePrimCount: 3, PrimsCloned: 4}, rep,
		"/T's subtree: /T, the two merged prims and /T/Z, which was there")
	assert.Equal(t, f32s(2), c.value("/T/C", "a"), "the cloned value")
	assert.Equal(t, i32s(5), c.value("/T/C", "keep"), "an attribute the source lacks is kept")
	assert.Equal(t, []uint64{tk("B"), tk("C"), tk("A")}, readU64s(c.value("/T/C", BuiltinSchemas)), "the union of both sets")
	assert.Equal(t, []uint64{tk("Y"), tk("X")}, readU64s(c.value("/T/C", BuiltinAncestorTypes)))
	assert.Equal(t, []uint64{mesh}, readU64s(c.value("/T/C", BuiltinPrimType)))
	assert.Equal(t, []uint64{tk("Cube")}, readU64s(c.value("/T/U", BuiltinPrimType)), "an untyped source keeps the type")
	assert.Equal(t, f32s(3), c.value("/T/U", "a"))
	assert.Equal(t, f32s(40), c.value("/T/Z", "a"), "a prim the source lacks is untouched")
	assert.Equal(t, []uint64{xform}, readU64s(c.value("/T", BuiltinPrimType)), "the created root")
}

// Three situations abort a merging clone with OP_FAILED before any prim is created: the
// existing prim holds a cloned attribute under another type; its type differs from that of its
// typed source prim (an untyped existing prim differs too); it lacks a connection the source
// prim has without a value of that name. An existing prim with only the connection of a name
// whose value the source prim has fails too. The message names every conflict.
func TestCloneMergeConflictsCreateNothing(t *testing.T) {
	con := func(c *cstage, prims []string, name string, target string, ordinal uint64) {
		c.t.Helper()
		rows := make([][]byte, len(prims))
		for i := range rows {
			rows[i] = u64s(c.path(target), c.tok("out"))
		}
		c.ok(c.write(prims, name, ordinal, true, SemanticConnectionPathID, rowsTensors(dtU64x2, rows...)...))
	}
	for what, tc := range map[string]struct {
		existing func(c *cstage)
		want     []string
	}{
		"another type": {func(c *cstage) {
			c.ok(c.write([]string{"/T/C"}, "a", 1, false, SemanticNone, fixedTensor(dtI32, i32s(1))))
		}, []string{`/T/C holds "a" under another type`}},
		"another role": {func(c *cstage) {
			const point = 5 // the same storage under the POINT role
			c.ok(c.write([]string{"/T/C"}, "a", 1, false, point, fixedTensor(dtF32, f32s(1))))
		}, []string{`/T/C holds "a" under another type`}},
		"another prim type": {func(c *cstage) {
			c.ok(c.write([]string{"/T/C"}, BuiltinPrimType, 1, false, SemanticNone, fixedTensor(dtU64, u64s(c.tok("Cube")))))
		}, []string{"/T/C has another prim type than /S/C"}},
		"untyped existing prim": {func(c *cstage) {
			c.ok(c.write([]string{"/T/C"}, "other", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
		}, []string{"/T/C has another prim type than /S/C"}},
		"missing connection": {func(c *cstage) {
			c.ok(c.write([]string{"/T/C"}, BuiltinPrimType, 1, false, SemanticNone, fixedTensor(dtU64, u64s(c.tok("Mesh")))))
			c.ok(c.write([]string{"/T/C"}, "conOnly", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
		}, []string{`/T/C lacks the connection "conOnly"`}},
		"only the connection": {func(c *cstage) {
			c.ok(c.write([]string{"/T/C"}, BuiltinPrimType, 1, false, SemanticNone, fixedTensor(dtU64, u64s(c.tok("Mesh")))))
			con(c, []string{"/T/C"}, "conOnly", "/E", 1)
			con(c, []string{"/T/C"}, "a", "/E", 1)
		}, []string{`/T/C has only the connection of "a"`}},
		"several": {func(c *cstage) {
			c.ok(c.write([]string{"/T/C", "/T/C/D"}, "a", 1, false, SemanticNone, fixedTensor(dtI32, i32s(1, 2))))
		}, []string{`/T/C holds "a" under another type`, `/T/C/D holds "a" under another type`, "/T/C has another prim type"}},
	} {
		t.Run(what, func(t *testing.T) {
			c := newCStage(t)
			c.ok(c.write([]string{"/S", "/S/C", "/S/C/D"}, "a", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2, 3))))
			c.ok(c.write([]string{"/S/C"}, BuiltinPrimType, 1, false, SemanticNone, fixedTensor(dtU64, u64s(c.tok("Mesh")))))
			con(c, []string{"/S/C"}, "conOnly", "/S/C/D", 1)
			tc.existing(c)
			before := c.s.SubtreePrimCount(c.path("/T"))
			_, err := c.clone("/S", []string{"/T"}, 2)
			require.Equal(t, status.OpFailed, status.CodeOf(err), "%v", err)
			for _, w := range tc.want {
				assert.Contains(t, status.MessageOf(err), w)
			}
			assert.False(t, c.held("/T"), "nothing was created")
			assert.Equal(t, before, c.s.SubtreePrimCount(c.path("/T")))
		})
	}
}

// A name for which the source prim has a value and a connection: a fresh target receives
// both (the connection rebased) and the change feed shows the value only; a merge takes the
// connection over only into a prim that has that connection itself, and otherwise leaves it
// out and succeeds.
func TestCloneValueAndConnectionOfOneName(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/S", "/S/C"}, "in", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2))))
	c.ok(c.write([]string{"/S/C"}, "in", 1, true, SemanticConnectionPathID, rowsTensors(dtU64x2, u64s(c.path("/S"), c.tok("out")))...))
	// /T/C has the value and a connection of its own; /U/C the value only.
	for _, root := range []string{"/T", "/U"} {
		c.ok(c.write([]string{root + "/C"}, "in", 1, false, SemanticNone, fixedTensor(dtF32, f32s(9))))
	}
	c.ok(c.write([]string{"/T/C"}, "in", 1, true, SemanticConnectionPathID, rowsTensors(dtU64x2, u64s(c.path("/Elsewhere"), c.tok("x")))...))

	byChannel := func(prim string) map[bool][]byte {
		out := map[bool][]byte{}
		for _, cl := range c.committed(prim, "in") {
			out[isConnection(cl.schema)] = cl.value
		}
		return out
	}
	for _, root := range []string{"/F", "/T", "/U"} {
		_, err := c.clone("/S", []string{root}, 2)
		require.NoError(t, err, root)
	}
	rebased := u64s(c.path("/F"), c.tok("out"))
	assert.Equal(t, map[bool][]byte{false: f32s(2), true: rebased}, byChannel("/F/C"), "a fresh target receives both")
	assert.Equal(t, map[bool][]byte{false: f32s(2), true: u64s(c.path("/T"), c.tok("out"))}, byChannel("/T/C"),
		"the connection is taken over (rebased) by a prim that has one")
	assert.Equal(t, map[bool][]byte{false: f32s(2)}, byChannel("/U/C"), "left out elsewhere")
	c.seal(2)
	changed := c.changes([]string{"/F/C", "/T/C", "/U/C", "/F"}, "in", 2, 2)
	assert.Equal(t, map[string][]int32{"/F": {SemanticNone}, "/F/C": {SemanticNone}, "/T/C": {SemanticNone}, "/U/C": {SemanticNone}}, changed,
		"change tracking of such a name uses its value only")
}

// At the clone's ordinal a change is recorded for every column the clone produces: values,
// relationship targets, a connection without a value, the prim type, applied schemas and
// ancestor types, and one per typed variant of a name.
func TestCloneRecordsEveryProducedColumn(t *testing.T) {
	c := newCStage(t)
	src := []string{"/S", "/S/C"}
	c.ok(c.write(src, "a", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2))))
	c.ok(c.write(src[1:], "v", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
	c.ok(c.write(src[:1], "v", 1, false, SemanticNone, fixedTensor(dtI32, i32s(1)))) // typed differently on /S
	c.ok(c.write(src, "rel", 1, true, SemanticRelationshipPathID, rowsTensors(dtU64, u64s(c.path("/S/C")), u64s(c.path("/Out")))...))
	c.ok(c.write(src[1:], "con", 1, true, SemanticConnectionPathID, rowsTensors(dtU64x2, u64s(c.path("/S"), c.tok("o")))...))
	c.ok(c.write(src, BuiltinPrimType, 1, false, SemanticNone, fixedTensor(dtU64, u64s(c.tok("X"), c.tok("Y")))))
	c.ok(c.write(src, BuiltinSchemas, 1, true, SemanticNone, rowsTensors(dtU64, u64s(c.tok("A")), u64s())...))
	c.ok(c.write(src, BuiltinAncestorTypes, 1, true, SemanticNone, rowsTensors(dtU64, u64s(c.tok("B")), u64s(c.tok("B")))...))
	_, err := c.clone("/S", []string{"/T"}, 2)
	require.NoError(t, err)
	c.seal(2)
	tgt := []string{"/T", "/T/C"}
	both := map[string][]int32{"/T": {SemanticNone}, "/T/C": {SemanticNone}}
	for _, name := range []string{"a", BuiltinPrimType, BuiltinSchemas, BuiltinAncestorTypes} {
		assert.Equal(t, both, c.changes(tgt, name, 2, 2), name)
	}
	assert.Equal(t, both, c.changes(tgt, "v", 2, 2), "one record per typed variant (each prim in its own column)")
	assert.Len(t, c.s.columns[c.tok("v")], 2)
	assert.Equal(t, map[string][]int32{"/T": {SemanticRelationshipPathID}, "/T/C": {SemanticRelationshipPathID}}, c.changes(tgt, "rel", 2, 2))
	assert.Equal(t, map[string][]int32{"/T/C": {SemanticConnectionPathID}}, c.changes(tgt, "con", 2, 2), "a connection without a value")
	assert.Equal(t, []uint64{c.path("/T/C")}, readU64s(c.value("/T", "rel")), "relationship targets inside the source are rebased")
	assert.Equal(t, []uint64{c.path("/Out")}, readU64s(c.value("/T/C", "rel")), "outside paths are copied as they are")
}

// Target shapes: a target nested under another target of the same call is accepted and its
// prims count for both; a target that coincides with a prim another target's copy creates,
// and a property-path target for a source with children, fail with OP_FAILED and create
// nothing; a leaf source may go to a property path.
func TestCloneTargetShapes(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/S", "/S/Inner", "/L"}, "a", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2, 3))))
	rep, err := c.clone("/S", []string{"/W/T", "/W/T/N"}, 2)
	require.NoError(t, err)
	assert.Equal(t, CloneReport{Ordinal: 2, TargetCount: 2, SourcePrimCount: 2, PrimsCloned: 4 + 2}, rep,
		"/W/T holds itself, Inner, N and N/Inner; /W/T/N holds two of them again")
	_, err = c.clone("/S", []string{"/V/T", "/V/T/Inner"}, 2)
	assert.Equal(t, status.OpFailed, status.CodeOf(err))
	assert.False(t, c.held("/V/T"))
	_, err = c.clone("/S", []string{"/P/T.attr"}, 2)
	assert.Equal(t, status.OpFailed, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "'/P/T.attr' is a property path")
	assert.False(t, c.held("/P/T.attr"))
	rep, err = c.clone("/L", []string{"/P/L.attr"}, 2)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), rep.PrimsCloned)
	// A descendant below a prim the stage does not hold is copied but not attached to the
	// target's hierarchy: it is not counted.
	c.ok(c.write([]string{"/G", "/G/X/Y"}, "a", 3, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2))))
	rep, err = c.clone("/G", []string{"/H"}, 3)
	require.NoError(t, err)
	assert.True(t, c.held("/H/X/Y"))
	assert.Equal(t, CloneReport{Ordinal: 3, TargetCount: 1, SourcePrimCount: 2, PrimsCloned: 1}, rep)
}

// SubtreePrimCount is the number of prims the stage holds at root or below it.
func (s *Stage) SubtreePrimCount(root uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p := range s.prims.all() {
		if s.isUnder(p, root) {
			n++
		}
	}
	return n
}
