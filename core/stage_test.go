package core

import (
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
	return newConfigFixture(t, Config{}, paths...)
}

// newPolicyFixture is newFixture on a stage with the given ordinal admission policy.
func newPolicyFixture(t testing.TB, policy AdmissionPolicy, paths ...string) *fixture {
	t.Helper()
	return newConfigFixture(t, Config{Admission: policy}, paths...)
}

func newConfigFixture(t testing.TB, cfg Config, paths ...string) *fixture {
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

// readAll returns the float32 values per group (in prim order) of a latest read.
func (f *fixture) readAll() ([][]float32, error) {
	h, op, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: 100})
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
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got, "the sealed version, not the unsealed one")
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
