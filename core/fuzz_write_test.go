package core

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// fuzzBytes hands out fuzz input bytes as small decisions (0 once exhausted).
type fuzzBytes struct{ b []byte }

func (r *fuzzBytes) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *fuzzBytes) intn(n int) int { return int(r.byte()) % n }

func (r *fuzzBytes) u16() uint16 { return uint16(r.byte()) | uint16(r.byte())<<8 }

func (r *fuzzBytes) pick(vals ...int64) int64 { return vals[r.intn(len(vals))] }

// fuzzTensor is a tensor over Go memory whose every addressed byte lies inside mem.
type fuzzTensor struct {
	t   tensor.Tensor
	mem []byte
}

// maxFuzzBytes bounds the memory one fuzz tensor may address.
const maxFuzzBytes = 1 << 16

// forgedRows is the row count a forged payload claims: terabytes no copy may touch.
const forgedRows = 1 << 40

// newFuzzTensor decodes a dtype, shape, strides and device and backs them with memory large
// enough for every element the strides reach; ok=false when that would be too large.
func newFuzzTensor(r *fuzzBytes) (fuzzTensor, bool) {
	dt := tensor.DType{
		Code:  uint8(r.pick(0, 1, 2, 4, 6, 2, 3, 5, int64(r.byte()))),
		Bits:  uint8(r.pick(8, 16, 32, 64, 0, 12, 128, int64(r.byte()))),
		Lanes: uint16(r.pick(1, 2, 3, 4, 16, 255, 256, 0, int64(r.u16()))),
	}
	ndim := r.intn(5)
	shape := make([]int64, ndim)
	for i := range shape {
		shape[i] = r.pick(0, 1, 2, 3, 4, 3, 4, 85, 256)
	}
	var strides []int64
	if r.intn(3) == 0 {
		strides = make([]int64, ndim)
		for i := range strides {
			strides[i] = int64(r.intn(7)) - 3
		}
	}
	elem := int64(dt.Bits) / 8 * int64(dt.Lanes)
	if dt.Bits%8 != 0 || elem == 0 {
		elem = 1 // the engine rejects it before touching data; keep the memory non-empty
	}
	// Lowest and highest element offsets the strides reach.
	lo, hi, count := int64(0), int64(0), int64(1)
	for i, d := range shape {
		count *= d
		step := int64(1)
		if strides != nil {
			step = strides[i]
		} else {
			for _, inner := range shape[i+1:] {
				step *= inner
			}
		}
		if d > 0 {
			lo += min(0, (d-1)*step)
			hi += max(0, (d-1)*step)
		}
	}
	size := (hi - lo + 1) * elem
	if size > maxFuzzBytes || count*elem > maxFuzzBytes {
		return fuzzTensor{}, false
	}
	mem := make([]byte, size)
	for i := range mem {
		mem[i] = byte(i*131 + int(r.byte()))
	}
	t := tensor.Tensor{Data: unsafe.Pointer(&mem[-lo*elem]), DType: dt, Shape: shape, Strides: strides,
		DeviceType: int32(r.pick(int64(tensor.DeviceCPU), int64(tensor.DeviceCPU), int64(tensor.DeviceCPU),
			int64(tensor.DeviceCUDAHost), int64(tensor.DeviceCUDA), 7))}
	return fuzzTensor{t: t, mem: mem}, true
}

// compactRows walks the tensor element by element (independently of dlpack.CopyCompact)
// and returns its bytes in row-major order.
func (f fuzzTensor) compactRows() []byte {
	t := f.t
	elem := int64(t.DType.Bits) / 8 * int64(t.DType.Lanes)
	var out []byte
	idx := make([]int64, len(t.Shape))
	total := t.NumElements()
	for n := int64(0); n < total; n++ {
		rem := n
		for i := len(t.Shape) - 1; i >= 0; i-- {
			idx[i] = rem % t.Shape[i]
			rem /= t.Shape[i]
		}
		off := int64(0)
		for i := range idx {
			step := int64(1)
			if t.Strides != nil {
				step = t.Strides[i]
			} else {
				for _, inner := range t.Shape[i+1:] {
					step *= inner
				}
			}
			off += idx[i] * step
		}
		out = append(out, unsafe.Slice((*byte)(unsafe.Add(t.Data, off*elem)), elem)...)
	}
	return out
}

// fuzzStage is a small stage with a sealed float32 attribute on three of four prims.
type fuzzStage struct {
	s       *Stage
	prims   []uint64
	queries []uint64 // [A B C D], [], [B B A]
	paths   [][]uint64
	base    uint64 // the sealed attribute's token
	newAttr uint64 // a token with no column
}

func newFuzzStage(t *testing.T) *fuzzStage {
	t.Helper()
	f := &fuzzStage{s: NewStage("fuzz", Config{Workers: 1})}
	d := f.s.Dictionary()
	for _, p := range []string{"/fz/A", "/fz/B", "/fz/C", "/fz/D"} {
		id, err := d.InternPath(p)
		if err != nil {
			t.Fatal(err)
		}
		f.prims = append(f.prims, id)
	}
	a, b, c, dd := f.prims[0], f.prims[1], f.prims[2], f.prims[3]
	for _, paths := range [][]uint64{{a, b, c, dd}, {}, {b, b, a}} {
		list, err := d.CreateList(paths)
		if err != nil {
			t.Fatal(err)
		}
		q, err := f.s.QueryFromPathList(list)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = d.Release(list)
		f.queries = append(f.queries, q)
		f.paths = append(f.paths, paths)
	}
	f.base, _ = d.InternToken("fz:x")
	f.newAttr, _ = d.InternToken("fz:new")
	vals := []float32{1, 2, 3}
	baseList, err := d.CreateList([]uint64{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	baseQ, err := f.s.QueryFromPathList(baseList)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = d.Release(baseList)
	op, err := f.s.WriteAttribute(WriteRequest{Query: baseQ, AttrToken: f.base, Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor(vals)}})
	if err != nil {
		t.Fatal(err)
	}
	f.mustWait(t, op)
	op, err = f.s.AdvanceWriteFloor(1, ScopeAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.mustWait(t, op)
	if op, err = f.s.ReleaseQuery(baseQ); err != nil {
		t.Fatal(err)
	}
	f.mustWait(t, op)
	return f
}

func (f *fuzzStage) mustWait(t *testing.T, op uint64) {
	t.Helper()
	res, err := f.s.WaitOp(op, TimeoutInfinite)
	if err != nil || res.Status != status.OK || len(res.ErrorOpIDs) > 0 {
		t.Fatalf("op %d: %v %+v %s", op, err, res, f.s.LastOpError(op))
	}
	if err := f.s.ReleaseOp(op); err != nil {
		t.Fatal(err)
	}
}

// readRows reads attr over [A B C D] (sealed values) as prim -> row bytes.
func (f *fuzzStage) readRows(t *testing.T, attr uint64) map[uint64]string {
	t.Helper()
	h, op, err := f.s.ReadAttributes(f.queries[0], []uint64{attr}, OrdinalRange{End: 1 << 62})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	f.mustWait(t, op)
	out := map[uint64]string{}
	for {
		g, err := f.s.FetchReadNext(h, TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		for k := 0; k < int(g.PrimCount); k++ {
			idx := k
			if g.PrimIndexMap != nil {
				idx = int(g.PrimIndexMap[k])
			}
			var row []byte
			if g.IsArray { // one tensor per local prim: its elements
				tv := g.Tensors[k]
				row = tv.Buffer.Bytes()[tv.ByteOffset : tv.ByteOffset+int(tv.Rows)*tv.DType.ElemBytes()]
			} else {
				tv := g.Tensors[0]
				rb, r := tv.DType.ElemBytes(), k
				if g.DataIndexMap != nil {
					r = int(g.DataIndexMap[k])
				}
				row = tv.Buffer.Bytes()[tv.ByteOffset+r*rb : tv.ByteOffset+(r+1)*rb]
			}
			out[f.paths[0][idx]] = string(bytes.Clone(row))
		}
		if err := f.s.ReleaseGroup(g.ID); err != nil {
			t.Fatal(err)
		}
	}
	rel, err := f.s.ReleaseRead(h)
	if err != nil {
		t.Fatal(err)
	}
	f.mustWait(t, rel)
	return out
}

func f32Bytes(vals ...float32) string {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], *(*uint32)(unsafe.Pointer(&v)))
	}
	return string(b)
}

// FuzzWriteAttribute throws arbitrary write requests (dtypes, lanes, shapes, strides incl.
// negative and zero, devices, counts, index maps, masks, prim modes, semantics, attributes,
// ordinals, queries) at a stage. It must never panic; a rejected write must leave the stage
// exactly as it was (values, live objects, buffers); an accepted one must succeed and read
// back, once sealed, as the spec's addressing rules say.
func FuzzWriteAttribute(f *testing.F) {
	// Forged (4,) float32 payloads claiming forgedRows rows over query [A B C D]: one with
	// index_map [3 2 1 0] (reads real rows only: accepted, and only those rows are copied),
	// one without (rejected: its rows do not match the prims written).
	forged := []byte{0, 2, 1, 1, 0, 2, 0, 0, 2, 0, 2, 0, 0, 0, 1, 4, 1}
	forged = append(forged, make([]byte, 16)...) // the payload bytes
	forged = append(forged, 0, 6)                // CPU, count 4
	f.Add(append(append([]byte(nil), forged...), 0, 4, 3, 2, 1, 0, 1, 3))
	f.Add(append(append([]byte(nil), forged...), 1, 1, 3))
	f.Add([]byte{})
	f.Add([]byte{0, 2, 0, 1, 2, 2, 4, 3, 0, 0, 0, 0, 0, 0, 0, 0})       // float32, (4,3)-ish
	f.Add([]byte{2, 2, 0, 1, 3, 0, 2, 1, 1, 0, 1, 3, 0, 1, 2, 0, 1, 1}) // strided
	f.Add(bytes.Repeat([]byte{7, 3, 1}, 20))
	f.Add(bytes.Repeat([]byte{255, 128, 0, 64}, 16))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzBytes{b: data}
		fs := newFuzzStage(t)
		defer fs.s.Destroy()
		liveBefore := buffer.LiveCount()
		diagBefore := fs.s.Diagnostics()
		baseBefore := fs.readRows(t, fs.base)

		qi := r.intn(4)
		req := WriteRequest{Ordinal: uint64(r.intn(4)), Semantic: int32(r.intn(18)) - 1,
			IsArray: r.intn(8) == 0, PrimMode: int32(r.pick(0, 0, 0, 1, 2))}
		req.Query = 1 << 60 // not a handle
		var paths []uint64
		if qi < 3 {
			req.Query, paths = fs.queries[qi], fs.paths[qi]
		}
		switch r.intn(6) {
		case 0, 1:
			req.AttrToken = fs.base
		case 2:
			req.AttrToken = fs.newAttr
		case 3:
			req.AttrName = "usd-path"
		case 4:
			req.AttrName = ""
		case 5:
			req.AttrToken = 1 << 40
		}
		var tensors []fuzzTensor
		for i := r.pick(1, 1, 1, 1, 0, 2); i > 0; i-- {
			ft, ok := newFuzzTensor(r)
			if !ok {
				return
			}
			tensors = append(tensors, ft)
			req.Tensors = append(req.Tensors, ft.t)
		}
		req.Count = uint32(r.pick(0, 0, 0, 1, 2, 3, 4, 5, 1<<31))
		if r.intn(3) == 0 {
			req.HasIndexMap = true
			req.IndexMap = make([]uint32, r.intn(7))
			for i := range req.IndexMap {
				req.IndexMap[i] = uint32(r.pick(0, 1, 2, 3, 4, 1<<32-1))
			}
		}
		if r.intn(3) == 0 {
			req.HasMask = true
			req.Mask = make([]uint64, r.intn(3))
			for i := range req.Mask {
				req.Mask[i] = uint64(r.byte()) | uint64(r.byte())<<56
			}
		}
		// A forged fixed payload claims forgedRows rows over the memory of its real ones
		// (decided last, so older corpus entries decode as before). Only an index map that
		// reads real rows may be accepted; a write that reads a row the producer lied about
		// cannot be checked (the engine cannot know), so it is not made.
		claimedRows := int64(-1)
		if r.intn(4) == 3 && !req.IsArray && len(tensors) == 1 && len(tensors[0].t.Shape) > 0 {
			realRows := tensors[0].t.Shape[0]
			if req.HasIndexMap {
				for _, v := range req.IndexMap[:min(int(req.Count), len(req.IndexMap))] {
					if int64(v) >= realRows {
						return
					}
				}
			}
			claimedRows = forgedRows
			req.Tensors[0].Shape = append([]int64{claimedRows}, tensors[0].t.Shape[1:]...)
		}

		op, err := fs.s.WriteAttribute(req)
		for _, ft := range tensors {
			_ = ft.mem[0] // the engine copied the payload before returning
		}
		if err != nil {
			switch status.CodeOf(err) {
			case status.InvalidArgument, status.InvalidHandle, status.NotSupported,
				status.WriteFloorViolation, status.PrimNotFound:
			default:
				t.Fatalf("write %+v rejected with unexpected %v", req, err)
			}
			if op != 0 {
				t.Fatalf("rejected write returned op %d", op)
			}
			if got := fs.s.Diagnostics(); got != diagBefore {
				t.Fatalf("rejected write changed live objects: %+v -> %+v", diagBefore, got)
			}
			if got := buffer.LiveCount(); got != liveBefore {
				t.Fatalf("rejected write leaked buffers: %d -> %d", liveBefore, got)
			}
			if got := fs.readRows(t, fs.base); !mapsEqual(got, baseBefore) {
				t.Fatalf("rejected write changed the stage: %x -> %x", baseBefore, got)
			}
			return
		}

		// Accepted: only a well-formed request may get here.
		t0 := tensors[0].t
		for _, ft := range tensors {
			if ft.t.DeviceType != tensor.DeviceCPU && ft.t.DeviceType != tensor.DeviceCUDAHost {
				t.Fatalf("write from device %d accepted: %+v", ft.t.DeviceType, req)
			}
		}
		if req.Ordinal <= 1 || qi == 3 || (!req.IsArray && (len(tensors) != 1 || len(t0.Shape) == 0)) {
			t.Fatalf("malformed write accepted: %+v", req)
		}
		fs.mustWait(t, op)
		seal, err := fs.s.AdvanceWriteFloor(req.Ordinal, ScopeAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		fs.mustWait(t, seal)

		nrows, rowData, ok := expectedRows(tensors, req, len(paths))
		if claimedRows >= 0 {
			nrows = claimedRows // the rows the engine was told of
		}
		if !ok {
			t.Fatalf("write accepted though its payload does not split into rows: %+v", req)
		}
		targets, ok := planTargets(paths, int(min(nrows, 1<<40)), req)
		if !ok {
			t.Fatalf("write accepted though its addressing is invalid: %+v (rows %d)", req, nrows)
		}
		attr := req.AttrToken
		want := map[uint64]string{}
		if attr == fs.base {
			want = baseBefore
			// A prim that carries the float32 attribute cannot take another schema.
			changed := req.IsArray || tensors[0].t.DType.Code != tensor.CodeFloat || tensors[0].t.DType.Bits != 32 ||
				int(tensors[0].t.DType.Lanes)*int(t0.NumElements()/max(1, t0.Rows())) != 1
			for _, tg := range targets {
				if _, carried := baseBefore[tg.prim]; carried && changed {
					t.Fatalf("a schema change onto a prim that carries the attribute was accepted: %+v", req)
				}
			}
		}
		for _, tg := range targets {
			want[tg.prim] = string(rowData(tg.row))
		}
		if got := fs.readRows(t, attr); !mapsEqual(got, want) {
			t.Fatalf("write %+v read back %x, want %x", req, got, want)
		}
	})
}

// expectedRows splits an accepted payload into source rows per the spec (§1.4, §3.8), from a
// walk of the source memory: fixed rows are the leading dimension; ragged writes take one row
// per tensor, or (one tensor) uniform rows: max(index_map)+1 of them, else one per logical
// element. It returns the row count and row i's bytes (rows are not materialized: an index
// map may name billions of empty ones); ok=false when a packed payload does not split evenly
// into whole elements.
func expectedRows(tensors []fuzzTensor, req WriteRequest, queryPrims int) (int64, func(int) []byte, bool) {
	if req.IsArray && len(tensors) > 1 {
		return int64(len(tensors)), func(i int) []byte { return tensors[i].compactRows() }, true
	}
	payload := tensors[0].compactRows()
	n := int64(0)
	if req.IsArray {
		logical := queryPrims
		if req.Count > 0 {
			logical = int(req.Count)
		}
		n = int64(logical)
		if req.HasIndexMap {
			n = 0
			for _, v := range req.IndexMap[:req.Count] {
				n = max(n, int64(v)+1)
			}
		}
		if logical == 0 || logical > queryPrims {
			return 0, nil, true // nothing written (or refused by addressing)
		}
		elem := int64(tensors[0].t.DType.ElemBytes())
		if n == 0 || int64(len(payload))%n != 0 || (int64(len(payload))/n)%elem != 0 {
			return 0, nil, false
		}
	} else {
		n = tensors[0].t.Shape[0]
	}
	width := int64(0)
	if n > 0 {
		width = int64(len(payload)) / n
	}
	return n, func(i int) []byte { return payload[int64(i)*width : int64(i+1)*width] }, true
}

func mapsEqual(a, b map[uint64]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestFuzzHelpersSpellBaseValues(t *testing.T) {
	fs := newFuzzStage(t)
	defer fs.s.Destroy()
	got := fs.readRows(t, fs.base)
	want := map[uint64]string{fs.prims[0]: f32Bytes(1), fs.prims[1]: f32Bytes(2), fs.prims[2]: f32Bytes(3)}
	if !mapsEqual(got, want) {
		t.Fatalf("base values %x, want %x", got, want)
	}
}
