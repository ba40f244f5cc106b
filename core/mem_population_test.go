package core

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// A population-shaped load (tests/bench/bench_population.py's scene): meshes under xform
// groups, 26 columns of small values each, scalars, tuples, a matrix and short ragged arrays,
// every column written once for all its prims at one ordinal, then sealed.

type memColumn struct {
	name    string
	dt      tensor.DType
	isArray bool
	rowLen  func(i int) int // elements per row (array columns)
	xforms  bool            // also on the xform prims (not only the meshes)
}

func memColumns() []memColumn {
	u64 := tensor.DType{Code: tensor.CodeUInt, Bits: 64, Lanes: 1}
	u8 := tensor.DType{Code: tensor.CodeUInt, Bits: 8, Lanes: 1}
	f32 := tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}
	f32x3 := tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 3}
	f32x2 := tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 2}
	f64x3 := tensor.DType{Code: tensor.CodeFloat, Bits: 64, Lanes: 3}
	f64x16 := tensor.DType{Code: tensor.CodeFloat, Bits: 64, Lanes: 16}
	fixed := func(n int) func(int) int { return func(int) int { return n } }
	varying := func(i int) int {
		if i < 0 {
			return -1
		}
		return i % 3
	}
	cols := []memColumn{
		{name: "omni:xform", dt: f64x16, xforms: true},
		{name: "omni:resetXformStack", dt: u8, xforms: true},
		{name: "xformOp:translate", dt: f64x3, xforms: false},
		{name: "primvars:temperature", dt: f32},
		{name: "points", dt: f32x3, isArray: true, rowLen: fixed(8)},
		{name: "extent", dt: f32x3, isArray: true, rowLen: fixed(2)},
		{name: "primvars:displayColor", dt: f32x3, isArray: true, rowLen: fixed(1)},
		{name: "primvars:st", dt: f32x2, isArray: true, rowLen: fixed(8)},
		{name: "xformOpOrder", dt: u64, isArray: true, rowLen: fixed(1), xforms: true},
		{name: "usd-schemas", dt: u64, isArray: true, rowLen: varying, xforms: true},
		{name: "usd-ancestor-types", dt: u64, isArray: true, rowLen: fixed(2), xforms: true},
		{name: "doubleSided", dt: u8},
	}
	for i := len(cols); i < 26; i++ {
		cols = append(cols, memColumn{name: fmt.Sprint("token", i), dt: u64, xforms: i%2 == 0})
	}
	return cols
}

// memFigures are the engine's memory beyond the payload, per stored value.
type memFigures struct {
	values, payload int64
	heap, buffers   int64 // Go heap in use, C buffer payload bytes (growth)
}

func (f memFigures) String() string {
	return fmt.Sprintf("%d values, payload %.1f MB (%.1f B/value): Go heap +%.1f MB (%.1f B/value), "+
		"C buffers +%.1f MB (%.2fx payload); engine total / payload %.2f",
		f.values, float64(f.payload)/1e6, float64(f.payload)/float64(f.values),
		float64(f.heap)/1e6, float64(f.heap)/float64(f.values),
		float64(f.buffers)/1e6, float64(f.buffers)/float64(f.payload),
		float64(f.heap+f.buffers)/float64(f.payload))
}

// populateShaped writes the load over meshes meshes and returns the figures with the writes
// pending (what population leaves) and after the floor sealed them.
func populateShaped(t testing.TB, s *Stage, meshes int, profile string) (pending, sealed memFigures) {
	const group = 1000
	var all, only []string
	all = append(all, "/World")
	for i := range meshes {
		if i%group == 0 {
			all = append(all, fmt.Sprintf("/World/G%d", i/group))
		}
		p := fmt.Sprintf("/World/G%d/M%d", i/group, i)
		all = append(all, p)
		only = append(only, p)
	}
	cols := memColumns()
	heap0, buf0 := heapInUse(), buffer.LiveBytes()
	qAll, qOnly := pathListQuery(t, s, all), pathListQuery(t, s, only)
	var f memFigures
	keep := make([][]byte, 0, 2*len(cols)) // payload sources stay alive until the ops ran
	var ops []uint64
	for _, c := range cols {
		q, n := qOnly, len(only)
		if c.xforms {
			q, n = qAll, len(all)
		}
		req := WriteRequest{Query: q, AttrName: c.name, Ordinal: 1, IsArray: c.isArray}
		eb := c.dt.ElemBytes()
		if !c.isArray {
			data := make([]byte, n*eb)
			keep = append(keep, data)
			req.Tensors = []tensor.Tensor{{Data: unsafe.Pointer(&data[0]), DeviceType: tensor.DeviceCPU, DType: c.dt,
				Shape: []int64{int64(n)}}}
			f.values += int64(n)
			f.payload += int64(len(data))
		} else if k := c.rowLen(-1); k >= 0 {
			// uniform rows travel packed, as population sends them
			data := make([]byte, max(1, n*k*eb))
			keep = append(keep, data)
			req.Tensors = []tensor.Tensor{{Data: unsafe.Pointer(&data[0]), DeviceType: tensor.DeviceCPU, DType: c.dt,
				Shape: []int64{int64(n * k)}}}
			f.values += int64(n)
			f.payload += int64(n * k * eb)
		} else {
			req.Tensors = make([]tensor.Tensor, n)
			for i := range n {
				k := c.rowLen(i)
				data := make([]byte, max(1, k*eb))
				keep = append(keep, data)
				req.Tensors[i] = tensor.Tensor{Data: unsafe.Pointer(&data[0]), DeviceType: tensor.DeviceCPU,
					DType: c.dt, Shape: []int64{int64(k)}}
				f.payload += int64(k * eb)
			}
			f.values += int64(n)
		}
		id, err := s.WriteAttribute(req)
		require.NoError(t, err, c.name)
		ops = append(ops, id)
	}
	for _, id := range ops {
		res, err := s.WaitOp(id, TimeoutInfinite)
		require.NoError(t, err)
		require.Empty(t, res.ErrorOpIDs)
		require.NoError(t, s.ReleaseOp(id))
	}
	keep = nil
	runtime.KeepAlive(keep)
	buffer.Trim()
	pending = f
	pending.heap, pending.buffers = int64(heapInUse())-int64(heap0), buffer.LiveBytes()-buf0
	adv, err := s.AdvanceWriteFloor(1, ScopeAll, nil)
	require.NoError(t, err)
	_, _ = s.WaitOp(adv, TimeoutInfinite)
	require.NoError(t, s.ReleaseOp(adv))
	buffer.Trim()
	f.heap, f.buffers = int64(heapInUse())-int64(heap0), buffer.LiveBytes()-buf0
	if profile != "" {
		out, err := os.Create(profile)
		require.NoError(t, err)
		require.NoError(t, pprof.WriteHeapProfile(out))
		require.NoError(t, out.Close())
	}
	return pending, f
}

// TestPopulationShapedMemoryReport prints the engine's memory per stored value for the
// population-shaped load (OVSTAGE_MEM_PRIMS meshes, default 20,000; OVSTAGE_MEM_PROFILE=file
// writes a heap profile after the seal).
func TestPopulationShapedMemoryReport(t *testing.T) {
	n := 20_000
	if v := os.Getenv("OVSTAGE_MEM_PRIMS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	if os.Getenv("OVSTAGE_MEM_PROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	s := NewStage("mem-population", Config{})
	t.Cleanup(s.Destroy)
	pending, sealed := populateShaped(t, s, n, os.Getenv("OVSTAGE_MEM_PROFILE"))
	t.Logf("pending: %v", pending)
	t.Logf("sealed:  %v", sealed)
}
