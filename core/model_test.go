package core

// Randomized model-based test: random op sequences against a Stage and a tiny model of
// ordinals, the write floor, prims and latest reads (sealed-snapshot semantics), compared
// after every step. The stage's worker slots can be held by the test (a "gate"), so ops queue
// up and then run in whatever order the scheduler picks: writes at different ordinals apply
// out of order, reads find writes not yet applied, polls see TIMEOUT. Seeds are fixed;
// OVSTAGE_MODEL_SEEDS and OVSTAGE_MODEL_STEPS scale the run.

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/dlpack"
)

// ---- the model -------------------------------------------------------------------------

type mKey struct{ attr, prim uint64 }

type mChange struct {
	ordinal, seq, op uint64
	value            string // the row's bytes
}

type mPending struct {
	write  bool
	attr   uint64
	keys   []mKey
	schema dlpack.DType
}

type mTarget struct {
	prim uint64
	row  int
}

// goModel predicts admission and latest reads; see tests/python/model.py for the same model
// in Python and the reasoning behind "uncertain" keys.
type goModel struct {
	floor     uint64 // requested global floor
	hist      map[mKey][]mChange
	primsDone map[uint64]bool
	schemas   map[uint64]dlpack.DType
	pending   map[uint64]*mPending
	seq       uint64
}

func newGoModel() *goModel {
	return &goModel{hist: map[mKey][]mChange{}, primsDone: map[uint64]bool{},
		schemas: map[uint64]dlpack.DType{}, pending: map[uint64]*mPending{}}
}

// planTargets resolves count / index map / mask (spec §3.8); ok=false means INVALID_ARGUMENT.
func planTargets(paths []uint64, rows int, req WriteRequest) ([]mTarget, bool) {
	if req.HasIndexMap && req.HasMask {
		return nil, false
	}
	if (req.HasIndexMap || req.HasMask) && req.Count == 0 {
		return nil, false
	}
	if req.HasIndexMap && len(req.IndexMap) < int(req.Count) {
		return nil, false
	}
	if req.HasMask && len(req.Mask)*64 < int(req.Count) {
		return nil, false
	}
	logical := len(paths)
	if req.Count > 0 {
		logical = int(req.Count)
	}
	if req.HasIndexMap {
		for _, e := range req.IndexMap[:req.Count] {
			if int(e) >= rows {
				return nil, false
			}
		}
	}
	if logical > len(paths) {
		return nil, false
	}
	if logical == 0 {
		return nil, true
	}
	if !req.HasIndexMap && rows != logical {
		return nil, false
	}
	var out []mTarget
	for i := 0; i < logical; i++ {
		if req.HasMask && req.Mask[i/64]&(1<<(uint(i)%64)) == 0 {
			continue
		}
		row := i
		if req.HasIndexMap {
			row = int(req.IndexMap[i])
		}
		out = append(out, mTarget{paths[i], row})
	}
	return out, true
}

func (m *goModel) primsMaybe() map[uint64]bool {
	out := map[uint64]bool{}
	for _, p := range m.pending {
		for _, k := range p.keys {
			out[k.prim] = true
		}
	}
	return out
}

func (m *goModel) writeErrors(attr uint64, dt dlpack.DType, ordinal uint64, targets []mTarget, ok, insert bool) map[status.Code]bool {
	errs := map[status.Code]bool{}
	if ordinal <= m.floor {
		errs[status.WriteFloorViolation] = true
	}
	if known, exists := m.schemas[attr]; exists && known != dt {
		errs[status.InvalidArgument] = true
	}
	if !ok {
		errs[status.InvalidArgument] = true
	} else if insert {
		for _, t := range targets {
			if m.primsDone[t.prim] {
				errs[status.PrimNotFound] = true
			}
		}
	}
	return errs
}

func (m *goModel) schemaRacy(attr uint64, dt dlpack.DType) bool {
	for _, p := range m.pending {
		if p.write && p.attr == attr && p.schema != dt {
			return true
		}
	}
	return false
}

func (m *goModel) acceptWrite(op, attr uint64, dt dlpack.DType, ordinal uint64, targets []mTarget, rowsData [][]byte) {
	m.seq++
	p := &mPending{write: true, attr: attr, schema: dt}
	for i, t := range targets {
		k := mKey{attr, t.prim}
		// Later elements of one write win over earlier ones (a query may repeat a prim).
		m.hist[k] = append(m.hist[k], mChange{ordinal: ordinal, seq: m.seq<<20 | uint64(i), op: op,
			value: string(rowsData[t.row])})
		p.keys = append(p.keys, k)
	}
	m.pending[op] = p
}

func (m *goModel) finished(op uint64) {
	p, ok := m.pending[op]
	delete(m.pending, op)
	if !ok || !p.write || len(p.keys) == 0 {
		return
	}
	if _, exists := m.schemas[p.attr]; !exists {
		m.schemas[p.attr] = p.schema
	}
	for _, k := range p.keys {
		m.primsDone[k.prim] = true
	}
}

func (m *goModel) latest(k mKey) (mChange, bool) {
	var best mChange
	found := false
	for _, c := range m.hist[k] {
		if c.ordinal <= m.floor && (!found || c.ordinal > best.ordinal || (c.ordinal == best.ordinal && c.seq > best.seq)) {
			best, found = c, true
		}
	}
	return best, found
}

type readExpectation struct {
	values        map[mKey]string
	mustFail      []mKey
	uncertain     []mKey
	groupOrdinals map[uint64]uint64
}

func (m *goModel) expectRead(paths, attrs []uint64) readExpectation {
	exp := readExpectation{values: map[mKey]string{}, groupOrdinals: map[uint64]uint64{}}
	for _, a := range attrs {
		for k, changes := range m.hist {
			for _, c := range changes {
				if k.attr == a && c.ordinal <= m.floor {
					exp.groupOrdinals[a] = max(exp.groupOrdinals[a], c.ordinal)
				}
			}
		}
		for _, p := range paths {
			k := mKey{a, p}
			changes := m.hist[k]
			if len(changes) == 0 {
				continue
			}
			if c, ok := m.latest(k); ok {
				exp.values[k] = c.value
				continue
			}
			applied := false
			for _, c := range changes {
				if _, pending := m.pending[c.op]; !pending {
					applied = true
				}
			}
			if applied {
				exp.mustFail = append(exp.mustFail, k)
			} else {
				exp.uncertain = append(exp.uncertain, k)
			}
		}
	}
	return exp
}

// ---- the driver ------------------------------------------------------------------------

type modelAttr struct {
	name  string
	dtype dlpack.DType
}

var modelAttrs = []modelAttr{
	{"model:a", dlpack.DType{Code: dlpack.CodeFloat, Bits: 32, Lanes: 1}},
	{"model:b", dlpack.DType{Code: dlpack.CodeInt, Bits: 16, Lanes: 3}},
	{"model:c", dlpack.DType{Code: dlpack.CodeUInt, Bits: 8, Lanes: 4}},
}

// otherDType is the schema of "wrong schema" writes.
var otherDType = dlpack.DType{Code: dlpack.CodeInt, Bits: 32, Lanes: 1}

const modelWorkers = 3

type modelQuery struct {
	handle uint64
	paths  []uint64
}

type driver struct {
	t       *testing.T
	rng     *rand.Rand
	s       *Stage
	m       *goModel
	prims   []uint64
	attrs   []uint64
	queries []modelQuery
	gated   bool
	gate    chan struct{}
	maxOrd  uint64
	step    int
	// counters for the report
	accepted, rejected, reads, readFailures, timeouts int
}

// closeGate occupies every worker slot with a blocking op: ops enqueued afterwards queue up
// until openGate.
func (d *driver) closeGate() {
	if d.gated {
		return
	}
	d.gate = make(chan struct{})
	entered := make(chan struct{}, modelWorkers)
	for i := 0; i < modelWorkers; i++ {
		gate := d.gate
		d.s.pool.Go(sched.NewOp(0, nil, nil), func() error {
			entered <- struct{}{}
			<-gate
			return nil
		}, nil)
	}
	for i := 0; i < modelWorkers; i++ {
		<-entered
	}
	d.gated = true
}

func (d *driver) openGate() {
	if d.gated {
		close(d.gate)
		d.gated = false
	}
}

func (d *driver) failf(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("step %d: "+format, append([]any{d.step}, args...)...)
}

// settle records a finished op (it must have succeeded) and releases its id.
func (d *driver) settle(op uint64, res WaitResult) {
	d.t.Helper()
	if len(res.ErrorOpIDs) > 0 {
		d.failf("op %d failed: %s", res.ErrorOpIDs[0], d.s.LastOpError(res.ErrorOpIDs[0]))
	}
	require.NoError(d.t, d.s.ReleaseOp(op))
	d.m.finished(op)
}

func (d *driver) wait(op uint64) {
	d.t.Helper()
	d.openGate()
	res, err := d.s.WaitOp(op, TimeoutInfinite)
	require.NoError(d.t, err)
	require.Equal(d.t, status.OK, res.Status)
	d.settle(op, res)
}

func (d *driver) pollAll() {
	d.t.Helper()
	for _, op := range d.pendingOps() {
		res, err := d.s.WaitOp(op, 0)
		require.NoError(d.t, err)
		if res.Status == status.Timeout {
			d.timeouts++
			if res.LowestPending == 0 || res.LowestPending > op {
				d.failf("op %d: lowest pending %d is not in its chain", op, res.LowestPending)
			}
			continue
		}
		d.settle(op, res)
	}
}

func (d *driver) pendingOps() []uint64 {
	ops := make([]uint64, 0, len(d.m.pending))
	for op := range d.m.pending {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

func (d *driver) flush() {
	for _, op := range d.pendingOps() {
		d.wait(op)
	}
}

func (d *driver) newQuery() {
	n := d.rng.Intn(7)
	paths := make([]uint64, n)
	for i := range paths {
		paths[i] = d.prims[d.rng.Intn(len(d.prims))] // duplicates allowed
	}
	list, err := d.s.Dictionary().CreateList(paths)
	require.NoError(d.t, err)
	q, err := d.s.QueryFromPathList(list)
	require.NoError(d.t, err)
	_, err = d.s.Dictionary().Release(list) // the query keeps its own copy
	require.NoError(d.t, err)
	d.queries = append(d.queries, modelQuery{q, paths})
}

// payload builds rows of dt in Go memory in a random but equivalent layout: compact, with
// trailing dims to fold, strided, or with a negative stride. It returns the tensor, the
// expected row bytes and the memory to keep alive.
func (d *driver) payload(dt dlpack.DType, rows int) (dlpack.Tensor, [][]byte, []byte) {
	rowBytes := dt.ElemBytes()
	want := make([][]byte, rows)
	for r := range want {
		want[r] = make([]byte, rowBytes)
		d.rng.Read(want[r])
	}
	t := dlpack.Tensor{DeviceType: dlpack.DeviceCPU, DType: dt, Shape: []int64{int64(rows)}}
	layout := d.rng.Intn(4)
	if rows == 0 {
		layout = 0
	}
	var mem []byte
	switch layout {
	case 0, 1: // compact; layout 1 spells the lanes as a trailing dim to fold
		mem = make([]byte, max(1, rows*rowBytes))
		for r := range want {
			copy(mem[r*rowBytes:], want[r])
		}
		t.Data = unsafe.Pointer(&mem[0])
		if layout == 1 && dt.Lanes > 1 {
			t.Shape = []int64{int64(rows), int64(dt.Lanes)}
			t.DType.Lanes = 1
		}
	case 2: // every other row
		mem = make([]byte, 2*rows*rowBytes)
		for r := range want {
			copy(mem[2*r*rowBytes:], want[r])
		}
		t.Data = unsafe.Pointer(&mem[0])
		t.Strides = []int64{2}
	case 3: // rows stored backwards, data at the last one
		mem = make([]byte, rows*rowBytes)
		for r := range want {
			copy(mem[(rows-1-r)*rowBytes:], want[r])
		}
		t.Data = unsafe.Pointer(&mem[(rows-1)*rowBytes])
		t.Strides = []int64{-1}
	}
	return t, want, mem
}

func (d *driver) write() {
	if len(d.queries) == 0 {
		return
	}
	q := d.queries[d.rng.Intn(len(d.queries))]
	ai := d.rng.Intn(len(modelAttrs))
	attr, dt := d.attrs[ai], modelAttrs[ai].dtype
	if d.rng.Intn(10) == 0 {
		dt = otherDType
	}
	insert := d.rng.Intn(6) == 0
	ordinal := uint64(max(0, int64(d.m.floor)+int64(d.rng.Intn(8))-2))
	req := WriteRequest{Query: q.handle, AttrToken: attr, Ordinal: ordinal}
	n := len(q.paths)
	rows := n
	switch mode := d.rng.Intn(16); mode % 5 {
	case 1: // count
		req.Count = uint32(1 + d.rng.Intn(n+1))
		rows = int(req.Count)
	case 2: // index map
		rows = 1 + d.rng.Intn(6)
		req.IndexMap = make([]uint32, 1+d.rng.Intn(6))
		for i := range req.IndexMap {
			req.IndexMap[i] = uint32(d.rng.Intn(rows))
		}
		if d.rng.Intn(8) == 0 {
			req.IndexMap[len(req.IndexMap)-1] = uint32(rows) // out of the payload's rows
		}
		req.HasIndexMap, req.Count = true, uint32(1+d.rng.Intn(len(req.IndexMap)))
	case 3: // mask
		req.Count = uint32(max(1, min(1+d.rng.Intn(n+1), n)))
		req.Mask, req.HasMask = []uint64{d.rng.Uint64()}, true
		rows = int(req.Count)
	case 4: // a request the Python layer would refuse: map and mask, or a zero count
		if mode != 4 {
			break // dense
		}
		req.IndexMap, req.HasIndexMap = []uint32{0}, true
		req.Mask, req.HasMask = []uint64{1}, d.rng.Intn(2) == 0
		req.Count = uint32(d.rng.Intn(2))
	}
	if d.rng.Intn(8) == 0 {
		rows = max(0, rows+d.rng.Intn(3)-1)
	}
	targets, ok := planTargets(q.paths, rows, req)
	if d.m.schemaRacy(attr, dt) {
		d.flush()
	}
	if insert && ok {
		maybe := d.m.primsMaybe()
		for _, t := range targets {
			if maybe[t.prim] {
				d.flush()
				break
			}
		}
	}
	if insert {
		req.PrimMode = PrimModeInsert
	}
	tensor, want, mem := d.payload(dt, rows)
	req.Tensors = []dlpack.Tensor{tensor}
	errs := d.m.writeErrors(attr, dt, ordinal, targets, ok, insert)
	op, err := d.s.WriteAttribute(req)
	runtime.KeepAlive(mem)
	d.maxOrd = max(d.maxOrd, ordinal)
	if len(errs) > 0 {
		if err == nil || !errs[status.CodeOf(err)] {
			d.failf("write %+v: want one of %v, got op %d err %v", req, errs, op, err)
		}
		d.rejected++
		return
	}
	if err != nil {
		d.failf("write %+v rejected: %v", req, err)
	}
	d.accepted++
	d.m.acceptWrite(op, attr, dt, ordinal, targets, want)
	if insert {
		d.wait(op) // nothing enqueued later may race the INSERT's prim check
	}
}

func (d *driver) advance() {
	ordinal := uint64(max(0, int64(d.m.floor)+int64(d.rng.Intn(5))-1))
	op, err := d.s.AdvanceWriteFloor(ordinal, ScopeAll, nil)
	require.NoError(d.t, err)
	d.m.floor = max(d.m.floor, ordinal)
	d.maxOrd = max(d.maxOrd, ordinal)
	d.m.pending[op] = &mPending{}
}

// read runs a latest read over query q and compares it with the model.
func (d *driver) read(q modelQuery, attrs []uint64) {
	d.t.Helper()
	exp := d.m.expectRead(q.paths, attrs)
	d.reads++
	h, rop, err := d.s.ReadAttributes(q.handle, attrs, OrdinalRange{End: d.rng.Uint64()})
	if err != nil {
		d.checkReadFailure(exp, err)
		return
	}
	got := map[mKey]string{}
	var failure error
	for {
		g, err := d.s.FetchReadNext(h, 0)
		if status.CodeOf(err) == status.Timeout {
			// The read waits for a floor advance held behind the gate.
			if !d.gated {
				res, werr := d.s.WaitOp(rop, 0)
				require.NoError(d.t, werr)
				if res.Status == status.Timeout && res.LowestPending > rop {
					d.failf("read op %d: lowest pending %d is not in its chain", rop, res.LowestPending)
				}
			}
			d.openGate()
			g, err = d.s.FetchReadNext(h, TimeoutInfinite)
		}
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		if err != nil {
			failure = err
			break
		}
		d.collect(g, exp, got)
		require.NoError(d.t, d.s.ReleaseGroup(g.ID))
	}
	// The read op finished (it produced groups or a failure); its release may queue behind
	// the gate, so it is settled later like any pending op.
	res, err := d.s.WaitOp(rop, 0)
	require.NoError(d.t, err)
	require.Equal(d.t, status.OK, res.Status)
	require.NoError(d.t, d.s.ReleaseOp(rop))
	rel, err := d.s.ReleaseRead(h)
	require.NoError(d.t, err)
	d.m.pending[rel] = &mPending{}
	if failure != nil {
		d.checkReadFailure(exp, failure)
		return
	}
	if len(exp.mustFail) > 0 {
		d.failf("read succeeded though %v have no sealed value", exp.mustFail)
	}
	if len(got) != len(exp.values) {
		d.failf("read returned %d keys, want %d (%v vs %v)", len(got), len(exp.values), keysOf(got), keysOf(exp.values))
	}
	for k, v := range exp.values {
		if got[k] != v {
			d.failf("key %v: got %x, want %x", k, got[k], v)
		}
	}
}

func keysOf(m map[mKey]string) []mKey {
	out := make([]mKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].attr < out[j].attr || (out[i].attr == out[j].attr && out[i].prim < out[j].prim)
	})
	return out
}

func (d *driver) checkReadFailure(exp readExpectation, err error) {
	d.t.Helper()
	d.readFailures++
	if status.CodeOf(err) != status.WriteFloorViolation {
		d.failf("read failed with %v; only WRITE_FLOOR_VIOLATION is possible", err)
	}
	if len(exp.mustFail) == 0 && len(exp.uncertain) == 0 {
		d.failf("read failed with %v but every key is sealed", err)
	}
}

func (d *driver) collect(g *Group, exp readExpectation, got map[mKey]string) {
	d.t.Helper()
	if g.IsDelete || g.IsArray || len(g.Tensors) != 1 {
		d.failf("unexpected group shape %+v", g)
	}
	if g.Ordinal != exp.groupOrdinals[g.Attribute] {
		d.failf("group ordinal %d, want %d", g.Ordinal, exp.groupOrdinals[g.Attribute])
	}
	if g.FloorOrdinal != d.m.floor {
		d.failf("group floor %d, want %d", g.FloorOrdinal, d.m.floor)
	}
	listPaths, err := d.s.Dictionary().ListPaths(g.PrimList)
	require.NoError(d.t, err)
	tv := g.Tensors[0]
	rowBytes := tv.DType.ElemBytes()
	data := tv.Buffer.Bytes()[tv.ByteOffset:]
	for k := 0; k < int(g.PrimCount); k++ {
		idx := int(g.PrimOffset) + k
		if g.PrimIndexMap != nil {
			idx = int(g.PrimIndexMap[k])
		}
		row := k
		if g.DataIndexMap != nil {
			row = int(g.DataIndexMap[k])
		}
		if int64(row) >= tv.Rows {
			d.failf("row %d outside the tensor's %d rows", row, tv.Rows)
		}
		got[mKey{g.Attribute, listPaths[idx]}] = string(bytes.Clone(data[row*rowBytes : (row+1)*rowBytes]))
	}
}

func (d *driver) randomRead() {
	if len(d.queries) == 0 {
		return
	}
	q := d.queries[d.rng.Intn(len(d.queries))]
	var attrs []uint64
	for i := 0; i < 1+d.rng.Intn(3); i++ {
		attrs = append(attrs, d.attrs[d.rng.Intn(len(d.attrs))])
	}
	if d.rng.Intn(2) == 0 {
		d.pollAll()
	}
	d.read(q, attrs)
}

func (d *driver) releaseQuery() {
	if len(d.queries) < 2 {
		return
	}
	i := d.rng.Intn(len(d.queries))
	q := d.queries[i]
	d.queries = slices.Delete(d.queries, i, i+1)
	op, err := d.s.ReleaseQuery(q.handle)
	require.NoError(d.t, err)
	d.m.pending[op] = &mPending{}
	_, err = d.s.ReleaseQuery(q.handle)
	require.Equal(d.t, status.InvalidHandle, status.CodeOf(err), "second release of a query")
}

func (d *driver) waitOne() {
	ops := d.pendingOps()
	if len(ops) == 0 {
		return
	}
	d.wait(ops[d.rng.Intn(len(ops))])
}

func (d *driver) run(steps int) {
	for d.step = 0; d.step < steps; d.step++ {
		switch r := d.rng.Intn(100); {
		case r < 40:
			d.write()
		case r < 52:
			d.advance()
		case r < 64:
			d.randomRead()
		case r < 70:
			d.pollAll()
		case r < 76:
			d.waitOne()
		case r < 82:
			d.newQuery()
		case r < 85:
			d.releaseQuery()
		case r < 92:
			d.closeGate()
		default:
			d.openGate()
		}
	}
	// Seal everything and compare the whole stage.
	d.openGate()
	d.flush()
	op, err := d.s.AdvanceWriteFloor(d.maxOrd, ScopeAll, nil)
	require.NoError(d.t, err)
	d.m.floor = max(d.m.floor, d.maxOrd)
	d.m.pending[op] = &mPending{}
	d.wait(op)
	all := modelQuery{paths: d.prims}
	list, err := d.s.Dictionary().CreateList(d.prims)
	require.NoError(d.t, err)
	all.handle, err = d.s.QueryFromPathList(list)
	require.NoError(d.t, err)
	_, _ = d.s.Dictionary().Release(list)
	d.queries = append(d.queries, all)
	d.read(all, d.attrs)
	for _, q := range d.queries {
		op, err := d.s.ReleaseQuery(q.handle)
		require.NoError(d.t, err)
		d.m.pending[op] = &mPending{}
	}
	d.flush()
	diag := d.s.Diagnostics()
	require.Equal(d.t, Diagnostics{Columns: diag.Columns}, diag, "nothing but columns is left")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestModelRandomOps(t *testing.T) {
	seeds := envInt("OVSTAGE_MODEL_SEEDS", 32)
	steps := envInt("OVSTAGE_MODEL_STEPS", 1000)
	if testing.Short() {
		seeds, steps = 4, 200
	}
	dict := NewStage("model-dict", Config{}).Dictionary()
	prims := make([]uint64, 6)
	for i := range prims {
		p, err := dict.InternPath(fmt.Sprintf("/model/p%d", i))
		require.NoError(t, err)
		prims[i] = p
	}
	attrs := make([]uint64, len(modelAttrs))
	for i, a := range modelAttrs {
		tok, err := dict.InternToken(a.name)
		require.NoError(t, err)
		attrs[i] = tok
	}
	total := map[string]int{}
	for seed := 1; seed <= seeds; seed++ {
		t.Run("seed"+strconv.Itoa(seed), func(t *testing.T) {
			liveBefore := buffer.LiveCount()
			s := NewStage("model", Config{Workers: modelWorkers})
			d := &driver{t: t, rng: rand.New(rand.NewSource(int64(seed))), s: s, m: newGoModel(),
				prims: prims, attrs: attrs}
			defer func() {
				d.openGate()
				s.Destroy()
			}()
			d.newQuery()
			d.run(steps)
			d.openGate()
			s.Destroy()
			require.Equal(t, liveBefore, buffer.LiveCount(), "every buffer is freed by Destroy")
			total["accepted"] += d.accepted
			total["rejected"] += d.rejected
			total["reads"] += d.reads
			total["read failures"] += d.readFailures
			total["poll timeouts"] += d.timeouts
		})
	}
	t.Logf("model test: %d seeds x %d steps: %v", seeds, steps, total)
}
