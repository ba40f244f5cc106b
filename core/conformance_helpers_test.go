package core

// Helpers for the tests of clone merges, map sessions, the hierarchy and the reserved
// attributes: author rows of any layout by path, and look at the committed state and the
// change records through the stage's own calls.

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

var (
	dtU64   = tensor.DType{Code: tensor.CodeUInt, Bits: 64, Lanes: 1}
	dtU64x2 = tensor.DType{Code: tensor.CodeUInt, Bits: 64, Lanes: 2}
	dtF32   = tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}
	dtI32   = tensor.DType{Code: tensor.CodeInt, Bits: 32, Lanes: 1}
	dtU8    = tensor.DType{Code: tensor.CodeUInt, Bits: 8, Lanes: 1}
)

// cstage is a stage driven by path strings.
type cstage struct {
	t testing.TB
	s *Stage
}

func newCStage(t testing.TB) *cstage {
	s := NewStage("conformance", Config{})
	t.Cleanup(s.Destroy)
	return &cstage{t: t, s: s}
}

func (c *cstage) path(p string) uint64 {
	c.t.Helper()
	id, err := c.s.Dictionary().InternPath(p)
	require.NoError(c.t, err)
	return id
}

func (c *cstage) tok(name string) uint64 {
	c.t.Helper()
	id, err := c.s.Dictionary().InternToken(name)
	require.NoError(c.t, err)
	return id
}

// query is a path-list query over paths (released with the stage).
func (c *cstage) query(paths ...string) uint64 {
	c.t.Helper()
	return pathListQuery(c.t, c.s, paths)
}

// pathListQuery is a path-list query of s over paths (released with the stage).
func pathListQuery(t testing.TB, s *Stage, paths []string) uint64 {
	t.Helper()
	list, err := s.Dictionary().CreateListFromStrings(paths)
	require.NoError(t, err)
	q, err := s.QueryFromPathList(list)
	require.NoError(t, err)
	_, err = s.Dictionary().Release(list)
	require.NoError(t, err)
	return q
}

// outcome is an enqueue's error, or the op's own failure once it finished (nil: success).
func (c *cstage) outcome(op uint64, err error) error {
	c.t.Helper()
	if err != nil {
		return err
	}
	res, werr := c.s.WaitOp(op, TimeoutInfinite)
	require.NoError(c.t, werr)
	if len(res.ErrorOpIDs) == 0 {
		return nil
	}
	return c.s.OpError(op)
}

// ok requires an enqueue and its op to succeed.
func (c *cstage) ok(op uint64, err error) {
	c.t.Helper()
	require.NoError(c.t, c.outcome(op, err))
}

// fails returns a check that the enqueue or the op fails with code; the check returns the
// message: c.fails(status.OpFailed)(c.write(...)).
func (c *cstage) fails(code status.Code) func(op uint64, err error) string {
	return func(op uint64, err error) string {
		c.t.Helper()
		got := c.outcome(op, err)
		require.Error(c.t, got)
		require.Equal(c.t, code.String(), status.CodeOf(got).String(), "error: %v", got)
		return status.MessageOf(got)
	}
}

// find runs a filter query and lists the paths it selected, sorted.
func (c *cstage) find(preds ...Predicate) []string {
	c.t.Helper()
	qh, op, err := c.s.Query(preds, nil)
	c.ok(op, err)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	out := []string{}
	for _, id := range c.s.queries[qh].Paths {
		out = append(out, c.s.pathName(id))
	}
	slices.Sort(out)
	return out
}

func (c *cstage) seal(ordinal uint64) {
	c.t.Helper()
	c.ok(c.s.AdvanceWriteFloor(ordinal, ScopeAll, nil))
}

// rows is a payload of one tensor per row (array attributes).
func rowsTensors(dt tensor.DType, rows ...[]byte) []tensor.Tensor {
	out := make([]tensor.Tensor, len(rows))
	for i, r := range rows {
		data := r
		if len(data) == 0 {
			data = make([]byte, 1) // a valid address for an empty row
		}
		out[i] = tensor.Tensor{Data: unsafe.Pointer(&data[0]), DeviceType: tensor.DeviceCPU, DType: dt,
			Shape: []int64{int64(len(r) / dt.ElemBytes())}}
	}
	return out
}

// fixedTensor is one tensor of len(data)/rowBytes rows of dt.
func fixedTensor(dt tensor.DType, data []byte) tensor.Tensor {
	return tensor.Tensor{Data: unsafe.Pointer(&data[0]), DeviceType: tensor.DeviceCPU, DType: dt,
		Shape: []int64{int64(len(data) / dt.ElemBytes())}}
}

func u64s(vals ...uint64) []byte {
	out := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(out[8*i:], v)
	}
	return out
}

func f32s(vals ...float32) []byte {
	out := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

func i32s(vals ...int32) []byte {
	out := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
	}
	return out
}

func readU64s(b []byte) []uint64 {
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

// write enqueues a write of attr over paths (one fixed tensor, or one tensor per row).
func (c *cstage) write(paths []string, attr string, ordinal uint64, isArray bool, semantic int32, tensors ...tensor.Tensor) (uint64, error) {
	return c.s.WriteAttribute(WriteRequest{Query: c.query(paths...), AttrName: attr, Ordinal: ordinal,
		Tensors: tensors, IsArray: isArray, Semantic: semantic})
}

// cell is one committed value of an attribute on a prim: the column's schema and the bytes.
type cell struct {
	schema column.Schema
	value  []byte
}

// committed lists the columns in which prim carries attr, with their committed values.
func (c *cstage) committed(prim, attr string) []cell {
	c.t.Helper()
	p, a := c.path(prim), c.tok(attr)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var out []cell
	for _, col := range c.s.columns[a] {
		col.Committed([]uint64{p}, func(_ int, v []byte) {
			out = append(out, cell{col.Schema, slices.Clone(v)})
		})
	}
	return out
}

// value is prim's one committed value of attr (nil when it carries none); it fails when the
// prim carries attr in more than one column.
func (c *cstage) value(prim, attr string) []byte {
	c.t.Helper()
	cells := c.committed(prim, attr)
	require.LessOrEqual(c.t, len(cells), 1, "%s carries %s in %d columns", prim, attr, len(cells))
	if len(cells) == 0 {
		return nil
	}
	if cells[0].value == nil {
		return []byte{}
	}
	return cells[0].value
}

func (c *cstage) held(prim string) bool {
	p := c.path(prim)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.s.prims.has(p)
}

// changes reads the change records of attr over paths in [lo, hi] (a range read: seal to hi
// first) and returns, per prim, the semantics of the groups that list it.
func (c *cstage) changes(paths []string, attr string, lo, hi uint64) map[string][]int32 {
	c.t.Helper()
	h, op, err := c.s.ReadAttributes(c.query(paths...), []uint64{c.tok(attr)}, OrdinalRange{Start: lo, End: hi, HasStart: true})
	c.ok(op, err)
	out := map[string][]int32{}
	for {
		g, err := c.s.FetchReadNext(h, TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		require.NoError(c.t, err)
		listed, err := c.s.Dictionary().ListPaths(g.PrimList)
		require.NoError(c.t, err)
		for k := uint32(0); k < g.PrimCount; k++ {
			i := g.PrimOffset + k
			if g.PrimIndexMap != nil {
				i = g.PrimIndexMap[k]
			}
			name := c.s.pathName(listed[i])
			out[name] = append(out[name], g.Semantic)
		}
		require.NoError(c.t, c.s.ReleaseGroup(g.ID))
	}
	_, err = c.s.ReleaseRead(h)
	require.NoError(c.t, err)
	return out
}

// OpError is op id's own failure, with its status code; nil while the op is pending, when it
// succeeded, or when the id is unknown to the stage.
func (s *Stage) OpError(id uint64) error {
	s.mu.Lock()
	op, ok := s.ops[id]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return op.Err()
}
