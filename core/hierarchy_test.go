package core

import (
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
	assert.Equal(t, [][]string{{"/Top"}, {"/World/B"}, {}, {"/World"}, {}, {}}, got)
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
	h.seal(1)

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

	// Unsealed xform changes are not read: the sealed value is.
	h.matrices([]string{"/W"}, AttrWorldMatrix, 3, mat4{})
	h.seal(3)
	require.Equal(t, mat4{}, h.readMatrices(AttrWorldMatrix, "/W")["/W"])
	h.matrices([]string{"/W"}, AttrXform, 10, translate(100, 0, 0))
	op, err = h.s.ComputeHierarchy(ModelRuntimeDefault, 10, 11)
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	op, err = h.s.AdvanceWriteFloor(11, ScopeInclude, []uint64{h.token(AttrWorldMatrix)})
	require.NoError(t, err)
	require.NoError(t, h.wait(op))
	assert.Equal(t, translate(1, 2, 3), h.readMatrices(AttrWorldMatrix, "/W")["/W"])
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
	models := HierarchyModels()
	require.Len(t, models, 1)
	assert.Equal(t, ModelCPUIncremental, models[0].ID)
	assert.Equal(t, "CPU_INCREMENTAL", models[0].Name)

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
	_, err := h.s.ComputeHierarchy(ModelCPUIncremental, 5, 5)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), AttrWorldMatrix)
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
