package core

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// hierStage is a stage with helpers to author prims and matrices by path.
type hierStage struct {
	t testing.TB
	s *Stage
}

func newHierStage(t testing.TB) *hierStage {
	s := NewStage("hierarchy", Config{})
	t.Cleanup(s.Destroy)
	return &hierStage{t: t, s: s}
}

func (h *hierStage) query(paths ...string) uint64 {
	h.t.Helper()
	list, err := h.s.Dictionary().CreateListFromStrings(paths)
	require.NoError(h.t, err)
	q, err := h.s.QueryFromPathList(list)
	require.NoError(h.t, err)
	_, err = h.s.Dictionary().Release(list)
	require.NoError(h.t, err)
	return q
}

func (h *hierStage) list(paths ...string) pathdict.ListID {
	h.t.Helper()
	list, err := h.s.Dictionary().CreateListFromStrings(paths)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _, _ = h.s.Dictionary().Release(list) })
	return list
}

func (h *hierStage) wait(op uint64) error {
	h.t.Helper()
	res, err := h.s.WaitOp(op, TimeoutInfinite)
	require.NoError(h.t, err)
	if len(res.ErrorOpIDs) > 0 {
		return status.Errorf(status.OpFailed, "%s", h.s.LastOpError(res.ErrorOpIDs[0]))
	}
	return nil
}

// writeRows writes one row per path of attr with the given element dtype (rows of lanes
// values each, taken from the raw bytes of vals) at ordinal and waits.
func (h *hierStage) writeRows(paths []string, attr string, ordinal uint64, dt tensor.DType, data unsafe.Pointer, lanes int64) {
	h.t.Helper()
	shape := []int64{int64(len(paths))}
	if lanes > 1 {
		shape = append(shape, lanes)
	}
	op, err := h.s.WriteAttribute(WriteRequest{Query: h.query(paths...), AttrName: attr, Ordinal: ordinal,
		Tensors: []tensor.Tensor{{Data: data, DeviceType: tensor.DeviceCPU, DType: dt, Shape: shape}}})
	require.NoError(h.t, err)
	require.NoError(h.t, h.wait(op))
}

var (
	f64 = tensor.DType{Code: tensor.CodeFloat, Bits: 64, Lanes: 1}
	f32 = tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}
	b8  = tensor.DType{Code: tensor.CodeBool, Bits: 8, Lanes: 1}
)

func (h *hierStage) touch(ordinal uint64, paths ...string) {
	vals := make([]float32, len(paths))
	h.writeRows(paths, "temperature", ordinal, f32, unsafe.Pointer(&vals[0]), 1)
}

func (h *hierStage) matrices(paths []string, attr string, ordinal uint64, ms ...mat4) {
	flat := make([]float64, 0, 16*len(ms))
	for _, m := range ms {
		flat = append(flat, m[:]...)
	}
	h.writeRows(paths, attr, ordinal, f64, unsafe.Pointer(&flat[0]), 16)
}

func (h *hierStage) seal(ordinal uint64) {
	h.t.Helper()
	op, err := h.s.AdvanceWriteFloor(ordinal, ScopeAll, nil)
	require.NoError(h.t, err)
	require.NoError(h.t, h.wait(op))
}

func (h *hierStage) relations(relation int32, paths ...string) ([]status.Code, [][]string) {
	h.t.Helper()
	hh, op, err := h.s.GetHierarchy(h.list(paths...), 7, relation)
	require.NoError(h.t, err)
	require.NoError(h.t, h.wait(op))
	res, err := h.s.FetchHierarchyResult(hh, TimeoutInfinite)
	require.NoError(h.t, err)
	assert.Equal(h.t, uint64(7), res.Ordinal)
	require.Len(h.t, res.Items, len(paths))
	codes := make([]status.Code, len(paths))
	names := make([][]string, len(paths))
	for i, it := range res.Items {
		codes[i] = it.Status
		names[i] = []string{}
		for _, p := range it.Paths {
			names[i] = append(names[i], h.s.pathName(p))
		}
	}
	_, err = h.s.ReleaseHierarchy(hh)
	require.NoError(h.t, err)
	return codes, names
}

func TestHierarchyRelations(t *testing.T) {
	h := newHierStage(t)
	// /X/Y/Z is authored without its ancestors: its parent still comes from the path.
	h.touch(1, "/World", "/World/B", "/World/A", "/World/A/C", "/Top", "/X/Y/Z")
	in := []string{"/World", "/World/A", "/World/A/C", "/Top", "/Missing", "/X/Y/Z"}
	ok, nf := status.OK, status.NotFound
	wantCodes := []status.Code{ok, ok, ok, ok, nf, ok}

	codes, got := h.relations(RelationParent, in...)
	assert.Equal(t, wantCodes, codes)
	assert.Equal(t, [][]string{{}, {"/World"}, {"/World/A"}, {}, {}, {"/X/Y"}}, got,
		"top-level prims have no parent (not the pseudo-root)")

	codes, got = h.relations(RelationChildren, in...)
	assert.Equal(t, wantCodes, codes)
	assert.Equal(t, [][]string{{"/World/A", "/World/B"}, {"/World/A/C"}, {}, {}, {}, {}}, got,
		"children are the held prims below, sorted by path")

	codes, got = h.relations(RelationSiblings, in...)
	assert.Equal(t, wantCodes, codes)
	assert.Equal(t, [][]string{{}, {"/World/B"}, {}, {}, {}, {}}, got,
		"a top-level prim has no siblings (the pseudo-root is no parent)")
}

func TestHierarchyFollowsWholePrimDeletes(t *testing.T) {
	h := newHierStage(t)
	h.touch(1, "/W", "/W/A", "/W/B")
	op, err := h.s.DeleteAttributes(DeleteRequest{Query: h.query("/W/A"), Ordinal: 2})
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	codes, got := h.relations(RelationChildren, "/W", "/W/A")
	assert.Equal(t, []status.Code{status.OK, status.NotFound}, codes)
	assert.Equal(t, [][]string{{"/W/B"}, {}}, got)
}

func TestHierarchyArgumentsAndHandles(t *testing.T) {
	h := newHierStage(t)
	h.touch(1, "/A")
	list := h.list("/A")
	_, _, err := h.s.GetHierarchy(list, 1, 3)
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "relation 3")
	_, _, err = h.s.GetHierarchy(pathdict.ListID(1<<40), 1, RelationParent)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))

	hh, _, err := h.s.GetHierarchy(list, 1, RelationParent)
	require.NoError(t, err)
	other := newHierStage(t)
	_, err = other.s.FetchHierarchyResult(hh, 0)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "a handle of another stage")
	op, err := h.s.ReleaseHierarchy(hh)
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	_, err = h.s.FetchHierarchyResult(hh, 0)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
	_, err = h.s.ReleaseHierarchy(hh)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "double release")

	hh, _, err = h.s.GetHierarchy(list, 1, RelationParent)
	require.NoError(t, err)
	h.s.Destroy()
	hierMu.Lock()
	_, kept := hierarchies[hh]
	hierMu.Unlock()
	assert.False(t, kept, "destroy drops the stage's hierarchy handles")
}

func translate(x, y, z float64) mat4 {
	m := identity
	m[12], m[13], m[14] = x, y, z
	return m
}

func scale(k float64) mat4 {
	m := identity
	m[0], m[5], m[10] = k, k, k
	return m
}

// readMatrices reads attr (float64x16) at the given prims: path → matrix, for prims with a value.
func (h *hierStage) readMatrices(attr string, paths ...string) map[string]mat4 {
	h.t.Helper()
	q := h.query(paths...)
	tok, err := h.s.Dictionary().InternToken(attr)
	require.NoError(h.t, err)
	rh, op, err := h.s.ReadAttributes(q, []uint64{tok}, OrdinalRange{End: 1000})
	require.NoError(h.t, err)
	require.NoError(h.t, h.wait(op))
	out := map[string]mat4{}
	for {
		g, err := h.s.FetchReadNext(rh, TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		require.NoError(h.t, err)
		tv := g.Tensors[0]
		rb := int(tv.DType.ElemBytes())
		data := unsafe.Slice((*byte)(unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)), int(tv.Rows)*rb)
		for k := 0; k < int(g.PrimCount); k++ {
			qi := k
			if g.PrimIndexMap != nil {
				qi = int(g.PrimIndexMap[k])
			}
			row := k
			if g.DataIndexMap != nil {
				row = int(g.DataIndexMap[k])
			}
			out[paths[qi]] = readMatrix(data[row*rb:(row+1)*rb], tv.DType.Bits)
		}
		require.NoError(h.t, h.s.ReleaseGroup(g.ID))
	}
	_, err = h.s.ReleaseRead(rh)
	require.NoError(h.t, err)
	return out
}

func TestComputeHierarchyWorldMatrices(t *testing.T) {
	h := newHierStage(t)
	all := []string{"/W", "/W/A", "/W/A/B", "/W/R", "/W/A/N"}
	// /W/A/N has no local transform: its world is its parent's.
	h.matrices([]string{"/W", "/W/A", "/W/A/B", "/W/R"}, AttrXform, 1,
		translate(1, 2, 3), mul(scale(2), translate(10, 0, 0)), translate(0, 1, 0), translate(5, 5, 5))
	flags := []bool{true}
	h.writeRows([]string{"/W/R"}, AttrResetXformStack, 1, b8, unsafe.Pointer(&flags[0]), 1)
	zero := make([]mat4, len(all)-1)
	// Every prim but /W/A/N carries a world matrix to update.
	h.matrices([]string{"/W", "/W/A", "/W/A/B", "/W/R"}, AttrWorldMatrix, 1, zero...)

	// The inputs are committed, not sealed: the computation reads the newest committed values.
	op, err := h.s.ComputeHierarchy(ModelCPUIncremental, 1, 2)
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	h.seal(2)
	got := h.readMatrices(AttrWorldMatrix, all...)

	wantA := mul(mul(scale(2), translate(10, 0, 0)), translate(1, 2, 3))
	assert.Equal(t, translate(1, 2, 3), got["/W"])
	assert.Equal(t, mat4{2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 11, 2, 3, 1}, got["/W/A"])
	assert.Equal(t, wantA, got["/W/A"])
	// B = T(0,1,0) * A: the translation (0,1,0) is scaled by A's 2 and moved by A's translation.
	assert.Equal(t, mat4{2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 11, 4, 3, 1}, got["/W/A/B"])
	assert.Equal(t, translate(5, 5, 5), got["/W/R"], "resetXformStack: world = local")
	_, has := got["/W/A/N"]
	assert.False(t, has, "a prim without omni:fabric:worldMatrix does not get one")

	// An input committed after input_ordinal is read too (input_ordinal selects no snapshot).
	h.matrices([]string{"/W"}, AttrXform, 10, translate(100, 0, 0))
	op, err = h.s.ComputeHierarchy(ModelRuntimeDefault, 5, 11)
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	op, err = h.s.AdvanceWriteFloor(11, ScopeInclude, []uint64{h.token(AttrWorldMatrix)})
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	assert.Equal(t, translate(100, 0, 0), h.readMatrices(AttrWorldMatrix, "/W")["/W"])
}

func (h *hierStage) token(name string) uint64 {
	tok, err := h.s.Dictionary().InternToken(name)
	require.NoError(h.t, err)
	return tok
}

func TestComputeHierarchyFloat32WorldAndNoCreation(t *testing.T) {
	h := newHierStage(t)
	h.matrices([]string{"/P", "/P/C"}, AttrXform, 1, translate(1, 0, 0), translate(0, 2, 0))
	h.seal(1)
	op, err := h.s.ComputeHierarchy(ModelCPUIncremental, 1, 2)
	require.NoError(t, err)
	require.NoError(t, h.wait(op), "no world-matrix column: nothing to do")
	h.seal(2)
	assert.Empty(t, h.s.columns[h.token(AttrWorldMatrix)], "compute never creates omni:fabric:worldMatrix")

	zeros := make([]float32, 16)
	h.writeRows([]string{"/P/C"}, AttrWorldMatrix, 3, f32, unsafe.Pointer(&zeros[0]), 16)
	h.seal(3)
	op, err = h.s.ComputeHierarchy(ModelCPUIncremental, 3, 4)
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	h.seal(4)
	got := h.readMatrices(AttrWorldMatrix, "/P/C")
	assert.Equal(t, translate(1, 2, 0), got["/P/C"])
}

func TestComputeHierarchyModelsAndAdmission(t *testing.T) {
	h := newHierStage(t)
	var listed []string
	for _, m := range HierarchyModels() {
		listed = append(listed, fmt.Sprintf("%d %s", m.ID, m.Name))
		assert.NotEmpty(t, m.Description)
	}
	assert.Equal(t, []string{"1 cpu-incremental", "2 gpu-incremental", "3 gpu-global", "4 runtime-default"}, listed,
		"the four descriptors of the API (the GPU ones are not in this build)")

	for _, m := range []int32{ModelGPUIncremental, ModelGPUGlobal} {
		_, err := h.s.ComputeHierarchy(m, 1, 2)
		assert.Equal(t, status.NotSupported, status.CodeOf(err))
		assert.Contains(t, status.MessageOf(err), "GPU hierarchy models are not in this build")
	}
	for _, m := range []int32{ModelInvalid, 9, -1} {
		_, err := h.s.ComputeHierarchy(m, 1, 2)
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err), "model %d", m)
	}
	h.seal(5)
	op, err := h.s.ComputeHierarchy(ModelCPUIncremental, 5, 5)
	require.NoError(t, err, "the output ordinal is not subject to the write floor")
	require.NoError(t, h.wait(op))
}

func TestComputeHierarchyRejectsWrongSchemas(t *testing.T) {
	h := newHierStage(t)
	vals := make([]float32, 2)
	h.writeRows([]string{"/P", "/P/C"}, AttrWorldMatrix, 1, f32, unsafe.Pointer(&vals[0]), 1)
	h.seal(1)
	op, err := h.s.ComputeHierarchy(ModelCPUIncremental, 1, 2)
	require.NoError(t, err)
	err = h.wait(op)
	require.Error(t, err)
	assert.Contains(t, status.MessageOf(err), "writes float64x16 or float32x16")
}

// compute_hierarchy records a change only for the world-matrix rows whose value it changes.
func TestComputeHierarchyRecordsOnlyChangedRows(t *testing.T) {
	h := newHierStage(t)
	c := &cstage{t: t, s: h.s}
	prims := []string{"/P", "/Q"}
	h.matrices(prims, AttrXform, 1, translate(1, 0, 0), translate(2, 0, 0))
	h.matrices(prims, AttrWorldMatrix, 1, mat4{}, mat4{})
	op, err := h.s.ComputeHierarchy(ModelCPUIncremental, 1, 2)
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	h.seal(2)
	assert.Equal(t, map[string][]int32{"/P": {0}, "/Q": {0}}, c.changes(prims, AttrWorldMatrix, 2, 2))
	h.matrices([]string{"/Q"}, AttrXform, 3, translate(7, 0, 0))
	op, err = h.s.ComputeHierarchy(ModelCPUIncremental, 3, 4)
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	op, err = h.s.ComputeHierarchy(ModelCPUIncremental, 4, 5)
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	h.seal(5)
	assert.Equal(t, map[string][]int32{"/Q": {0}}, c.changes(prims, AttrWorldMatrix, 4, 5), "only /Q changed")
	assert.Empty(t, c.changes(prims, AttrWorldMatrix, 5, 5), "nothing changed")
	assert.Equal(t, translate(7, 0, 0), h.readMatrices(AttrWorldMatrix, "/Q")["/Q"])
}

// The output ordinal of compute_hierarchy is not subject to the write floor: with the floor
// at 3, compute_hierarchy(1, 1) records the changed rows at the sealed ordinal 1, where they
// are folded in at once (a latest read sees them; readers that consumed ordinal 1 before did
// not).
func TestComputeHierarchyAtASealedOutputOrdinal(t *testing.T) {
	h := newHierStage(t)
	c := &cstage{t: t, s: h.s}
	h.matrices([]string{"/P"}, AttrWorldMatrix, 1, mat4{})
	h.seal(3)
	h.matrices([]string{"/P"}, AttrXform, 4, translate(0, 0, 9))
	for _, in := range []uint64{1, 3} {
		op, err := h.s.ComputeHierarchy(ModelCPUIncremental, in, 1)
		require.NoError(t, err, "input %d", in)
		require.NoError(t, h.wait(op))
	}
	assert.Equal(t, translate(0, 0, 9), h.readMatrices(AttrWorldMatrix, "/P")["/P"])
	assert.Equal(t, map[string][]int32{"/P": {0}}, c.changes([]string{"/P"}, AttrWorldMatrix, 1, 1))
	assert.Equal(t, uint64(3), h.s.GlobalFloor(), "the floor did not move")
}

// A floor advance covering the world matrices runs the runtime-default model first when the
// hierarchy's inputs changed since the last computation, recording the rows it changes at the
// advance's ordinal. An advance that does not cover the world matrices, or finds nothing
// changed, computes nothing; a direct write of the world matrix is not overwritten.
func TestFloorAdvanceComputesAPendingHierarchy(t *testing.T) {
	h := newHierStage(t)
	c := &cstage{t: t, s: h.s}
	prims := []string{"/W", "/W/A", "/V"}
	h.matrices(prims, AttrXform, 1, translate(1, 0, 0), translate(0, 1, 0), translate(0, 0, 1))
	h.matrices(prims, AttrWorldMatrix, 1, mat4{}, mat4{}, mat4{})
	h.seal(1)
	got := h.readMatrices(AttrWorldMatrix, prims...)
	assert.Equal(t, mul(translate(0, 1, 0), translate(1, 0, 0)), got["/W/A"], "computed by the advance")
	assert.Equal(t, map[string][]int32{"/W": {0}, "/W/A": {0}, "/V": {0}}, c.changes(prims, AttrWorldMatrix, 1, 1))

	h.matrices([]string{"/W"}, AttrXform, 2, translate(5, 0, 0))
	op, err := h.s.AdvanceWriteFloor(2, ScopeInclude, []uint64{h.token(AttrXform)})
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	assert.Equal(t, translate(1, 0, 0), h.readMatrices(AttrWorldMatrix, "/W")["/W"], "the advance did not cover the world matrices")
	h.seal(2)
	assert.Equal(t, map[string][]int32{"/W": {0}, "/W/A": {0}}, c.changes(prims, AttrWorldMatrix, 2, 2),
		"/W and its child changed at the advance's ordinal, /V did not")
	assert.Equal(t, mul(translate(0, 1, 0), translate(5, 0, 0)), h.readMatrices(AttrWorldMatrix, "/W/A")["/W/A"])

	h.seal(3)
	assert.Empty(t, c.changes(prims, AttrWorldMatrix, 3, 3), "nothing pending: nothing computed")
	h.matrices([]string{"/V"}, AttrWorldMatrix, 4, scale(3))
	h.seal(4)
	assert.Equal(t, scale(3), h.readMatrices(AttrWorldMatrix, "/V")["/V"], "a direct write is what counts")
}

// A stage whose runtime-default model is not in this build refuses compute_hierarchy with
// RUNTIME_DEFAULT, and its floor advances leave the world matrices alone.
func TestRuntimeDefaultGPUModelIsNotSupported(t *testing.T) {
	s := NewStage("gpu-default", Config{HierarchyModel: ModelGPUGlobal})
	t.Cleanup(s.Destroy)
	h := &hierStage{t: t, s: s}
	_, err := s.ComputeHierarchy(ModelRuntimeDefault, 1, 2)
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
	h.matrices([]string{"/P"}, AttrXform, 1, translate(1, 0, 0))
	h.matrices([]string{"/P"}, AttrWorldMatrix, 1, mat4{})
	h.seal(1)
	assert.Equal(t, mat4{}, h.readMatrices(AttrWorldMatrix, "/P")["/P"])
	op, err := s.ComputeHierarchy(ModelCPUIncremental, 1, 2)
	require.NoError(t, err, "the CPU model itself still runs")
	require.NoError(t, h.wait(op))
}

// get_hierarchy's ordinal selects nothing and comes back as given.
func TestGetHierarchyReturnsTheOrdinalGiven(t *testing.T) {
	h := newHierStage(t)
	h.touch(1, "/A")
	hh, op, err := h.s.GetHierarchy(h.list("/A", "/Missing"), 99, RelationParent)
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	res, err := h.s.FetchHierarchyResult(hh, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(99), res.Ordinal)
	assert.Equal(t, []HierarchyItem{{Status: status.OK}, {Status: status.NotFound}}, res.Items,
		"a top-level prim's PARENT is empty; a missing prim is NOT_FOUND without failing the batch")
}

// A delete of a hierarchy input is a change of it: the next floor advance over the world
// matrices computes again (the deleted local transform no longer applies).
func TestFloorAdvanceComputesAfterAnInputDelete(t *testing.T) {
	h := newHierStage(t)
	c := &cstage{t: t, s: h.s}
	prims := []string{"/W", "/W/A"}
	h.matrices(prims, AttrXform, 1, translate(1, 0, 0), translate(0, 1, 0))
	h.matrices(prims, AttrWorldMatrix, 1, mat4{}, mat4{})
	h.seal(1)
	require.Equal(t, mul(translate(0, 1, 0), translate(1, 0, 0)), h.readMatrices(AttrWorldMatrix, "/W/A")["/W/A"])
	op, err := h.s.DeleteAttributes(DeleteRequest{Query: c.query("/W/A"), Tokens: []uint64{h.token(AttrXform)}, Ordinal: 2})
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	h.seal(2)
	assert.Equal(t, translate(1, 0, 0), h.readMatrices(AttrWorldMatrix, "/W/A")["/W/A"], "recomputed without the deleted local transform")
}
