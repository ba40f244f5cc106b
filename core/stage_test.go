package core

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

func f32Tensor(vals []float32, shape ...int64) tensor.Tensor {
	if len(shape) == 0 {
		shape = []int64{int64(len(vals))}
	}
	return tensor.Tensor{Data: unsafe.Pointer(&vals[0]), DeviceType: tensor.DeviceCPU,
		DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}, Shape: shape}
}

type fixture struct {
	t     testing.TB
	s     *Stage
	query uint64
	attr  uint64
}

func newFixture(t testing.TB, paths ...string) *fixture {
	t.Helper()
	return newFixtureConfig(t, Config{}, paths...)
}

// newPolicyFixture is newFixture on a stage with the given ordinal admission policy.
func newPolicyFixture(t testing.TB, policy AdmissionPolicy, paths ...string) *fixture {
	t.Helper()
	return newFixtureConfig(t, Config{Admission: policy}, paths...)
}

// newFixtureConfig is newFixture on a stage made with cfg.
func newFixtureConfig(t testing.TB, cfg Config, paths ...string) *fixture {
	t.Helper()
	s := NewStage("test", cfg)
	t.Cleanup(s.Destroy)
	if len(paths) == 0 {
		paths = []string{"/World/A", "/World/B", "/World/C"}
	}
	list, err := s.Dictionary().CreateListFromStrings(paths)
	require.NoError(t, err)
	q, err := s.QueryFromPathList(list)
	require.NoError(t, err)
	_, err = s.Dictionary().Release(list)
	require.NoError(t, err)
	attr, err := s.Dictionary().InternToken("temperature")
	require.NoError(t, err)
	return &fixture{t: t, s: s, query: q, attr: attr}
}

func (f *fixture) write(ordinal uint64, vals []float32, shape ...int64) (uint64, error) {
	return f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: ordinal,
		Tensors: []tensor.Tensor{f32Tensor(vals, shape...)}})
}

func (f *fixture) wait(op uint64) WaitResult {
	f.t.Helper()
	res, err := f.s.WaitOp(op, TimeoutInfinite)
	require.NoError(f.t, err)
	require.Equal(f.t, status.OK, res.Status)
	return res
}

func (f *fixture) seal(ordinal uint64) {
	f.t.Helper()
	op, err := f.s.AdvanceWriteFloor(ordinal, ScopeAll, nil)
	require.NoError(f.t, err)
	f.wait(op)
}

// readAll returns the float32 values per group (in prim order) of a snapshot read at 100
// (every test's ordinals are below it).
func (f *fixture) readAll() ([][]float32, error) { return f.readAt(100) }

// readAt returns the float32 values per group (in prim order) of the snapshot at end.
func (f *fixture) readAt(end uint64) ([][]float32, error) {
	h, op, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: end})
	if err != nil {
		return nil, err
	}
	f.wait(op)
	var out [][]float32
	for {
		g, err := f.s.FetchReadNext(h, TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		if err != nil {
			return nil, err
		}
		tv := g.Tensors[0]
		all := unsafe.Slice((*float32)(unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)), int(tv.Rows))
		vals := make([]float32, g.PrimCount)
		for k := range vals {
			row := k
			if g.DataIndexMap != nil {
				row = int(g.DataIndexMap[k])
			}
			vals[k] = all[row]
		}
		out = append(out, vals)
		require.NoError(f.t, f.s.ReleaseGroup(g.ID))
	}
	_, err = f.s.ReleaseRead(h)
	require.NoError(f.t, err)
	return out, nil
}

func TestWriteSealRead(t *testing.T) {
	f := newFixture(t)
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	res := f.wait(op)
	assert.Empty(t, res.ErrorOpIDs)

	_, err = f.readAll()
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "unsealed data is not readable")

	f.seal(1)
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got)
}

func TestWriteAtOrBelowFloorIsRejectedAtEnqueue(t *testing.T) {
	f := newFixture(t)
	f.seal(5)
	for _, o := range []uint64{0, 3, 5} {
		id, err := f.write(o, []float32{1, 2, 3})
		assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "ordinal %d", o)
		assert.Zero(t, id)
	}
	id, err := f.write(6, []float32{1, 2, 3})
	require.NoError(t, err)
	assert.NotZero(t, id)
}

func TestFloorAdvanceIsMonotonic(t *testing.T) {
	f := newFixture(t)
	op, _ := f.write(1, []float32{1, 2, 3})
	f.wait(op)
	f.seal(5)
	f.seal(3)
	assert.Equal(t, uint64(5), f.s.GlobalFloor())
}

func TestPendingFloorAdvanceRejectsLowerWritesAndOrdersReads(t *testing.T) {
	f := newFixture(t)
	_, err := f.write(2, []float32{1, 2, 3})
	require.NoError(t, err)
	adv, err := f.s.AdvanceWriteFloor(2, ScopeAll, nil)
	require.NoError(t, err)
	_, err = f.write(2, []float32{4, 5, 6})
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "ordinal 2 is already requested sealed")
	// No waits: the read is ordered after the advance, which is ordered after the write.
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got)
	f.wait(adv)
}

func TestSealedValueServedWhileProducerRunsAhead(t *testing.T) {
	f := newFixture(t)
	op, _ := f.write(1, []float32{1, 2, 3})
	f.wait(op)
	f.seal(1)
	op, _ = f.write(2, []float32{7, 8, 9})
	f.wait(op)
	got, err := f.readAt(1)
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got, "the sealed version, not the unsealed one")
	_, err = f.readAt(2)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(err), "the state at 2 is not sealed yet")
}

func TestRowCountMustMatchQuery(t *testing.T) {
	f := newFixture(t)
	_, err := f.write(1, []float32{1, 2})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	// A flat (N*L,) tensor is not re-read as N rows of L lanes.
	_, err = f.write(1, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
}

func TestTrailingDimsFoldIntoLanes(t *testing.T) {
	f := newFixture(t)
	op, err := f.write(1, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 3, 3)
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)
	h, rop, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: 1})
	require.NoError(t, err)
	f.wait(rop)
	g, err := f.s.FetchReadNext(h, 0)
	require.NoError(t, err)
	assert.Equal(t, tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 3}, g.Tensors[0].DType)
	assert.Equal(t, int64(3), g.Tensors[0].Rows)
	require.NoError(t, f.s.ReleaseGroup(g.ID))
	assert.Equal(t, status.InvalidHandle, status.CodeOf(f.s.ReleaseGroup(g.ID)), "double release")
	// A different lane count on the existing column is a schema change.
	_, err = f.write(2, []float32{1, 2, 3})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
}

func TestOverWideRowIsNotSupported(t *testing.T) {
	f := newFixture(t, "/A")
	vals := make([]float32, 256)
	_, err := f.write(1, vals, 1, 256)
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
}

func TestSparseWritesKeepUntouchedPrims(t *testing.T) {
	f := newFixture(t, "/A", "/B", "/C", "/D")
	op, _ := f.write(1, []float32{1, 2, 3, 40})
	f.wait(op)
	// index_map gathers: A=222, B=333, C=111; D untouched.
	vals := []float32{111, 222, 333}
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 2,
		Tensors: []tensor.Tensor{f32Tensor(vals)}, Count: 3, IndexMap: []uint32{1, 2, 0}, HasIndexMap: true})
	require.NoError(t, err)
	f.wait(op)
	// mask bit 3 only: D=99.
	op, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 3,
		Tensors: []tensor.Tensor{f32Tensor([]float32{0, 0, 0, 99})}, Count: 4, Mask: []uint64{0b1000}, HasMask: true})
	require.NoError(t, err)
	f.wait(op)
	f.seal(3)
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{222, 333, 111, 99}}, got)

	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 4,
		Tensors: []tensor.Tensor{f32Tensor(vals)}, Count: 3, IndexMap: []uint32{0, 3, 0}, HasIndexMap: true})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, err.Error(), "index_map")
	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 4,
		Tensors: []tensor.Tensor{f32Tensor(vals)}, Count: 5})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err), "count beyond the query")
}

// The rules of sparse addressing are malformed-request errors, found before the stage is
// consulted (even an attribute that does not exist is not looked at): the Python package raises
// them as ValueError. What depends on the stage (count beyond the query, an index past the
// payload) is a plain INVALID_ARGUMENT.
func TestSparseAddressingRulesAreMalformedRequests(t *testing.T) {
	f := newFixture(t, "/A", "/B", "/C")
	vals := []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}
	for name, tc := range map[string]struct {
		req  WriteRequest
		want string
	}{
		"index_map and mask": {WriteRequest{Count: 3, IndexMap: []uint32{0, 1, 2}, HasIndexMap: true, Mask: []uint64{7}, HasMask: true},
			"index_map and mask are mutually exclusive"},
		"mask without count":      {WriteRequest{Mask: []uint64{7}, HasMask: true}, "count must be non-zero when index_map or mask is supplied"},
		"index_map without count": {WriteRequest{IndexMap: []uint32{}, HasIndexMap: true}, "count must be non-zero"},
		"short index_map":         {WriteRequest{Count: 3, IndexMap: []uint32{0}, HasIndexMap: true}, "index_map has 1 entries, fewer than count 3"},
		"short mask":              {WriteRequest{Count: 65, Mask: []uint64{1}, HasMask: true}, "mask has 1 words"},
	} {
		req := tc.req
		req.Query, req.AttrToken, req.Ordinal, req.Tensors = f.query, 1<<40, 1, vals // the token names nothing
		_, err := f.s.WriteAttribute(req)
		assert.True(t, status.IsMalformed(err), "%s: %v", name, err)
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err), name)
		assert.Contains(t, status.MessageOf(err), tc.want, name)
		_, err = f.s.WriteAttributes(f.query, 1, PrimModeUpsert, []WriteRequest{req})
		assert.True(t, status.IsMalformed(err), "%s in a batch: %v", name, err)
		assert.True(t, strings.HasPrefix(status.MessageOf(err), "writes[0]: "), "%s: %v", name, err)
	}
	_, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1, Tensors: vals, Count: 4})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err), "count beyond the query")
	assert.False(t, status.IsMalformed(err), "depends on the query's prims")
	assert.Equal(t, 0, f.s.Diagnostics().Ops, "nothing was queued")
}

func TestInsertOntoExistingPrimWritesNothing(t *testing.T) {
	f := newFixture(t)
	op, _ := f.write(1, []float32{1, 2, 3})
	f.wait(op)
	_, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: "other", Ordinal: 2,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}, PrimMode: PrimModeInsert})
	assert.Equal(t, status.PrimNotFound, status.CodeOf(err))
}

func TestDerivedBuiltinsAndArraysRejected(t *testing.T) {
	f := newFixture(t)
	_, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: "usd-path", Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: "", Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
}

func TestReleasedAndForeignHandles(t *testing.T) {
	f := newFixture(t)
	other := newFixture(t)
	_, err := f.s.WriteAttribute(WriteRequest{Query: other.query, AttrToken: f.attr, Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "query of another stage")
	rel, err := f.s.ReleaseQuery(f.query)
	require.NoError(t, err)
	f.wait(rel)
	_, err = f.write(1, []float32{1, 2, 3})
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
	_, err = f.s.WaitOp(9999, 0)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
	require.NoError(t, f.s.ReleaseOp(rel))
	_, err = f.s.WaitOp(rel, 0)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "released op id")
}

func TestSameOrdinalWritesApplyInSubmissionOrder(t *testing.T) {
	f := newFixture(t)
	var last uint64
	for i := 0; i < 20; i++ {
		v := float32(i)
		op, err := f.write(7, []float32{v, v, v})
		require.NoError(t, err)
		last = op
	}
	f.wait(last)
	f.seal(7)
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{19, 19, 19}}, got)
}

func TestDestroyedStageRejectsCalls(t *testing.T) {
	f := newFixture(t)
	f.s.Destroy()
	_, err := f.write(1, []float32{1, 2, 3})
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
	_, err = Lookup(f.s.ID)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
}
