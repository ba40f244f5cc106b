package core

// Map sessions: setup, commit and terminal failures.

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
)

// openMap maps attr (float32) over paths at ordinal and fetches its group.
func (c *cstage) openMap(paths []string, attr string, ordinal uint64, mode int32) (uint64, *MapGroup) {
	c.t.Helper()
	h, op, err := c.s.MapAttribute(MapRequest{Query: c.query(paths...), AttrName: attr, Ordinal: ordinal, PrimMode: mode, DType: dtF32})
	c.ok(op, err)
	g, err := c.s.FetchMapNext(h, TimeoutInfinite)
	require.NoError(c.t, err)
	return h, g
}

// fill writes vals into a fixed float32 map group's buffer.
func fill(g *MapGroup, vals ...float32) {
	tv := g.Tensors[0]
	copy(unsafe.Slice((*float32)(unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)), tv.Rows), vals)
}

// A successful setup prepares buffers and nothing else: no prim, no attribute, no record at
// the session's ordinal; the final unmap creates and records them.
func TestMapSetupHasNoStageEffect(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/Old"}, "x", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
	h, g := c.openMap([]string{"/N"}, "n", 2, PrimModeUpsert)
	assert.False(t, c.held("/N"), "no prim during setup")
	assert.Empty(t, c.s.columns[c.tok("n")], "no attribute during setup")
	inN := Predicate{Attr: c.tok(BuiltinPath), Op: OpIn, Values: []string{"/N"}}
	assert.Empty(t, c.find(inN))
	fill(g, 7)
	c.ok(c.s.UnmapAttribute(h))
	assert.Equal(t, []string{"/N"}, c.find(inN))
	assert.Equal(t, f32s(7), c.value("/N", "n"))
	c.seal(2)
	assert.Equal(t, map[string][]int32{"/N": {SemanticNone}}, c.changes([]string{"/N"}, "n", 2, 2))
}

// Every commit is checked again when it executes: the prim-creation policy, the schema the
// prims carry, the floors. A setup that succeeded is no promise.
func TestMapCommitsRevalidate(t *testing.T) {
	c := newCStage(t)
	// INSERT: a write created one of the prims after the setup.
	h, _ := c.openMap([]string{"/I1", "/I2"}, "x", 2, PrimModeInsert)
	c.ok(c.write([]string{"/I2"}, "y", 2, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
	c.fails(status.PrimNotFound)(c.s.UnmapAttribute(h))
	assert.False(t, c.held("/I1"))

	// The attribute appeared on a prim under another schema.
	h, _ = c.openMap([]string{"/S"}, "x", 2, PrimModeUpsert)
	c.ok(c.write([]string{"/S"}, "x", 2, false, SemanticNone, fixedTensor(dtI32, i32s(4))))
	c.fails(status.InvalidArgument)(c.s.UnmapAttribute(h))
	assert.Equal(t, i32s(4), c.value("/S", "x"))

	// The floor passed the session's ordinal.
	h, _ = c.openMap([]string{"/F"}, "x", 3, PrimModeUpsert)
	c.seal(3)
	c.fails(status.WriteFloorViolation)(c.s.UnmapAttribute(h))
	assert.Empty(t, c.committed("/F", "x"))
}

// A commit over prims whose values a read group still holds succeeds: the stage copies the
// held version before folding the commit in (copy-on-write), as for writes.
func TestMapCommitOverALiveReadGroupIsCopyOnWrite(t *testing.T) {
	c := newCStage(t)
	ab := []string{"/A", "/B"}
	c.ok(c.write(ab, "x", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2))))
	c.seal(1)
	rh, op, err := c.s.ReadAttributes(c.query(ab...), []uint64{c.tok("x")}, OrdinalRange{End: 1})
	c.ok(op, err)
	held, err := c.s.FetchReadNext(rh, TimeoutInfinite)
	require.NoError(t, err)
	view := held.Tensors[0]
	heldBytes := unsafe.Slice((*byte)(unsafe.Add(view.Buffer.Data(), view.ByteOffset)), 8)

	h, g := c.openMap(ab, "x", 2, PrimModeUpsert)
	fill(g, 10, 20)
	c.ok(c.s.UnmapAttribute(h))
	c.seal(2)
	assert.Equal(t, f32s(1, 2), heldBytes, "the live group still shows its version")
	assert.Equal(t, f32s(20), c.value("/B", "x"))
	require.NoError(t, c.s.ReleaseGroup(held.ID))
}

// A commit applies once: the final unmap commits only what unmap_group did not, so a write
// between them at the same ordinal is not overwritten again.
func TestMapCommitAppliesExactlyOnce(t *testing.T) {
	c := newCStage(t)
	h, g := c.openMap([]string{"/A"}, "x", 2, PrimModeUpsert)
	fill(g, 1)
	c.ok(c.s.UnmapGroup(h, g.ID))
	c.ok(c.write([]string{"/A"}, "x", 2, false, SemanticNone, fixedTensor(dtF32, f32s(5))))
	c.ok(c.s.UnmapAttribute(h))
	assert.Equal(t, f32s(5), c.value("/A", "x"))
	// With nothing left the final unmap only closes: no admission check (the floor passed the
	// ordinal), and a completion sync is not looked at.
	h, g = c.openMap([]string{"/B"}, "x", 3, PrimModeUpsert)
	c.ok(c.s.UnmapGroup(h, g.ID))
	c.seal(3)
	c.ok(c.s.UnmapAttributeWithSync(h, CudaSync{Stream: 7}))
	_, err := c.s.UnmapAttribute(h)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "the handle was consumed")
}

// An accepted commit that fails when it executes makes the session terminal: the final unmap
// is accepted, writes nothing and returns the remembered failure, and consumes the handle.
func TestMapTerminalAfterAFailedCommit(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/A"}, "x", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
	h, g := c.openMap([]string{"/A"}, "x", 2, PrimModeUpsert)
	fill(g, 9)
	c.seal(2)
	msg := c.fails(status.WriteFloorViolation)(c.s.UnmapGroup(h, g.ID))
	op, err := c.s.UnmapAttribute(h)
	require.NoError(t, err, "the final unmap is accepted")
	assert.Equal(t, msg, c.fails(status.WriteFloorViolation)(op, nil), "the remembered failure, same text")
	_, err = c.s.UnmapAttribute(h)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
	assert.Equal(t, f32s(1), c.value("/A", "x"))
}

// write_done_sync on a host session: a non-zero sync is accepted at enqueue and fails the
// commit when it executes (OP_FAILED), making the session terminal; a final unmap that still
// has data to commit fails the same way and consumes the handle.
func TestMapHostSessionRefusesACompletionSync(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/A"}, "x", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
	h, g := c.openMap([]string{"/A"}, "x", 2, PrimModeUpsert)
	fill(g, 9)
	op, err := c.s.UnmapGroupWithSync(h, g.ID, CudaSync{Event: 0x1234})
	require.NoError(t, err, "accepted at enqueue")
	msg := c.fails(status.OpFailed)(op, nil)
	assert.Contains(t, msg, "CUDA completion sync is only supported for GPU mapped tensors")
	msg2 := c.fails(status.OpFailed)(c.s.UnmapAttribute(h))
	assert.Equal(t, msg, msg2, "terminal: the final unmap returns the failure")
	assert.Equal(t, f32s(1), c.value("/A", "x"))

	h, g = c.openMap([]string{"/A"}, "x", 2, PrimModeUpsert)
	fill(g, 9)
	c.fails(status.OpFailed)(c.s.UnmapAttributeWithSync(h, CudaSync{Stream: 2}))
	_, err = c.s.UnmapAttribute(h)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "consumed although it failed")
	assert.Equal(t, f32s(1), c.value("/A", "x"))
}

// element_sizes must have one entry per query prim; unmapping handle 0 (what a rejected setup
// leaves) is INVALID_ARGUMENT, an unknown handle INVALID_HANDLE.
func TestMapArgumentRules(t *testing.T) {
	c := newCStage(t)
	_, _, err := c.s.MapAttribute(MapRequest{Query: c.query("/A", "/B"), AttrName: "r", Ordinal: 1, DType: dtF32, ElementSizes: []uint64{1}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "element_sizes has 1 entries for a query of 2 prims")
	_, err = c.s.UnmapAttribute(0)
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	_, err = c.s.UnmapGroupWithSync(0, 1, CudaSync{})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	_, err = c.s.UnmapAttribute(1 << 40)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
}
