package core

// Randomized model-based test: random op sequences against a Stage and a tiny model of
// ordinals, write floors (ALL/INCLUDE/EXCLUDE), prims, deletes and tombstones, latest reads
// (sealed-snapshot semantics) and range reads (change membership), compared after every step. The stage's worker slots can be held by the test (a "gate"), so ops queue
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

// mChange is one accepted change of a key: a row value, or a tombstone.
type mChange struct {
	ordinal, seq, op uint64
	value            string // the row's bytes
	tomb             bool
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

// goModel predicts admission and reads; see tests/python/model.py for the same model in
// Python and the reasoning behind rows, liveness and per-key outcome sets.
type goModel struct {
	global    uint64            // requested global floor G
	attrFloor map[uint64]uint64 // requested per-attribute floors F[a]
	hist      map[mKey][]mChange
	prims     map[uint64]bool // prims that exist (applied state)
	known     map[uint64]bool // attributes with a column (applied state)
	schemas   map[uint64]dlpack.DType
	pending   map[uint64]*mPending
	seq       uint64
}

func newGoModel() *goModel {
	return &goModel{attrFloor: map[uint64]uint64{}, hist: map[mKey][]mChange{}, prims: map[uint64]bool{},
		known: map[uint64]bool{}, schemas: map[uint64]dlpack.DType{}, pending: map[uint64]*mPending{}}
}

func (m *goModel) effective(a uint64) uint64 { return max(m.global, m.attrFloor[a]) }

func (m *goModel) advance(n uint64, scope Scope, listed []uint64) {
	raise := func(a uint64) { m.attrFloor[a] = max(m.attrFloor[a], n) }
	switch {
	case scope == ScopeInclude:
		for _, a := range listed {
			raise(a)
		}
	case scope == ScopeAll || len(listed) == 0:
		m.global = max(m.global, n)
		for a := range m.known {
			raise(a)
		}
	default:
		for a := range m.known {
			if !slices.Contains(listed, a) {
				raise(a)
			}
		}
	}
}

func (m *goModel) reportedGlobal() uint64 {
	if len(m.known) == 0 {
		return m.global
	}
	lowest := ^uint64(0)
	for a := range m.known {
		lowest = min(lowest, m.effective(a))
	}
	return lowest
}

func (m *goModel) applied(c mChange) bool { _, p := m.pending[c.op]; return !p }

func newest(cs []mChange) (mChange, bool) {
	var best mChange
	found := false
	for _, c := range cs {
		if !found || c.ordinal > best.ordinal || (c.ordinal == best.ordinal && c.seq > best.seq) {
			best, found = c, true
		}
	}
	return best, found
}

func (m *goModel) appliedChanges(k mKey) []mChange {
	var out []mChange
	for _, c := range m.hist[k] {
		if m.applied(c) {
			out = append(out, c)
		}
	}
	return out
}

func (m *goModel) hasRow(k mKey) bool {
	for _, c := range m.appliedChanges(k) {
		if !c.tomb {
			return true
		}
	}
	return false
}

// live: the key's newest applied change is a write (the prim carries the attribute).
func (m *goModel) live(k mKey) bool {
	c, ok := newest(m.appliedChanges(k))
	return ok && !c.tomb
}

func (m *goModel) liveAttrs(paths []uint64) []uint64 {
	var out []uint64
	for k := range m.hist {
		if slices.Contains(paths, k.prim) && m.live(k) && !slices.Contains(out, k.attr) {
			out = append(out, k.attr)
		}
	}
	slices.Sort(out)
	return out
}

func (m *goModel) hasPendingWrites() bool {
	for _, p := range m.pending {
		if p.write {
			return true
		}
	}
	return false
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

func (m *goModel) touchesPending(prims []uint64) bool {
	for _, p := range m.pending {
		for _, k := range p.keys {
			if slices.Contains(prims, k.prim) {
				return true
			}
		}
	}
	return false
}

func (m *goModel) writeErrors(attr uint64, dt dlpack.DType, ordinal uint64, targets []mTarget, ok, insert bool) map[status.Code]bool {
	errs := map[status.Code]bool{}
	if ordinal <= m.effective(attr) {
		errs[status.WriteFloorViolation] = true
	}
	if !ok {
		errs[status.InvalidArgument] = true
		return errs
	}
	if known, exists := m.schemas[attr]; exists && known != dt {
		for _, t := range targets {
			if m.live(mKey{attr, t.prim}) {
				errs[status.InvalidArgument] = true
			}
		}
	}
	if insert {
		for _, t := range targets {
			if m.prims[t.prim] {
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

// deleteErrors: a delete at or below the floor of an attribute it deletes (for a whole-prim
// delete: of an attribute the prims carry) is refused.
func (m *goModel) deleteErrors(paths, attrs []uint64, ordinal uint64) map[status.Code]bool {
	checked := attrs
	if len(attrs) == 0 {
		checked = m.liveAttrs(paths)
	}
	for _, a := range checked {
		if ordinal <= m.effective(a) {
			return map[status.Code]bool{status.WriteFloorViolation: true}
		}
	}
	return nil
}

// applyDelete records a finished delete (no write may be pending): tombstones for keys with
// rows; a whole-prim delete also makes the prims stop existing.
func (m *goModel) applyDelete(op uint64, paths, attrs []uint64, ordinal uint64) {
	whole := len(attrs) == 0
	if whole {
		attrs = m.liveAttrs(paths)
	}
	m.seq++
	for _, a := range attrs {
		for _, p := range paths {
			k := mKey{a, p}
			if m.hasRow(k) {
				if n := len(m.hist[k]); n > 0 && m.hist[k][n-1].op == op {
					continue // a prim listed twice
				}
				m.hist[k] = append(m.hist[k], mChange{ordinal: ordinal, seq: m.seq << 20, op: op, tomb: true})
			}
		}
	}
	if whole {
		for _, p := range paths {
			delete(m.prims, p)
		}
	}
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
	m.known[p.attr] = true
	for _, k := range p.keys {
		m.prims[k.prim] = true
	}
}

// Read outcomes of one key.
const (
	outAbsent = "absent"
	outTomb   = "tomb"
)

func outValue(v string) string      { return "value:" + v }
func outError(c status.Code) string { return "error:" + c.String() }

type mSpan struct{ start, end uint64 }

// keyOutcome is the outcome of a key when exactly applied of its changes were applied.
func keyOutcome(applied []mChange, floor uint64, span *mSpan) string {
	hasRow := false
	var sealed []mChange
	for _, c := range applied {
		hasRow = hasRow || !c.tomb
		if c.ordinal <= floor {
			sealed = append(sealed, c)
		}
	}
	if !hasRow {
		return outAbsent
	}
	top, anySealed := newest(sealed)
	if span == nil {
		switch {
		case !anySealed:
			return outError(status.WriteFloorViolation)
		case top.tomb:
			return outAbsent
		}
		return outValue(top.value)
	}
	inRange, above, after := false, false, false
	for _, c := range applied {
		if c.ordinal >= span.start && c.ordinal <= span.end {
			inRange = true
			above = above || c.ordinal > floor
		}
		after = after || c.ordinal > span.end
	}
	switch {
	case !inRange:
		return outAbsent
	case above:
		return outError(status.WriteFloorViolation)
	case after:
		return outError(status.OutOfRange)
	case top.tomb:
		return outTomb
	}
	return outValue(top.value)
}

// keyOutcomes enumerates the outcomes over every subset of the key's unfinished changes above
// the floor (those at or below it are applied before the read runs: it waits for the advances,
// which wait for them).
func (m *goModel) keyOutcomes(k mKey, floor uint64, span *mSpan) map[string]bool {
	var certain, maybe []mChange
	for _, c := range m.hist[k] {
		if m.applied(c) || c.ordinal <= floor {
			certain = append(certain, c)
		} else {
			maybe = append(maybe, c)
		}
	}
	out := map[string]bool{}
	for mask := 0; mask < 1<<len(maybe); mask++ {
		subset := append([]mChange(nil), certain...)
		for i, c := range maybe {
			if mask&(1<<i) != 0 {
				subset = append(subset, c)
			}
		}
		out[keyOutcome(subset, floor, span)] = true
	}
	return out
}

func (m *goModel) uncertainChanges(paths, attrs []uint64) int {
	most := 0
	for _, a := range attrs {
		for _, p := range paths {
			n := 0
			for _, c := range m.hist[mKey{a, p}] {
				if !m.applied(c) {
					n++
				}
			}
			most = max(most, n)
		}
	}
	return most
}

type readExpectation struct {
	outcomes      map[mKey]map[string]bool
	groupOrdinals map[uint64]uint64
	floors        map[uint64]uint64
}

func (m *goModel) expectRead(paths, attrs []uint64, span *mSpan) readExpectation {
	exp := readExpectation{outcomes: map[mKey]map[string]bool{}, groupOrdinals: map[uint64]uint64{},
		floors: map[uint64]uint64{}}
	for _, a := range attrs {
		floor := m.effective(a)
		exp.floors[a] = floor
		for k, changes := range m.hist {
			for _, c := range changes {
				if k.attr == a && c.ordinal <= floor {
					exp.groupOrdinals[a] = max(exp.groupOrdinals[a], c.ordinal)
				}
			}
		}
		for _, p := range paths {
			k := mKey{a, p}
			if _, ok := m.hist[k]; ok {
				exp.outcomes[k] = m.keyOutcomes(k, floor, span)
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
	accepted, rejected, deletes, reads, readFailures, timeouts int
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

// trace logs a step when OVSTAGE_MODEL_TRACE is set (to replay a failing seed).
func (d *driver) trace(format string, args ...any) {
	if os.Getenv("OVSTAGE_MODEL_TRACE") != "" {
		d.t.Logf("step %d: "+format, append([]any{d.step}, args...)...)
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

// floorOf is the highest effective floor of attrs (all attributes when empty).
func (d *driver) floorOf(attrs ...uint64) uint64 {
	if len(attrs) == 0 {
		attrs = d.attrs
	}
	floor := uint64(0)
	for _, a := range attrs {
		floor = max(floor, d.m.effective(a))
	}
	return floor
}

// ordinalNear is an ordinal delta away from floor (never negative); it raises maxOrd.
func (d *driver) ordinalNear(floor uint64, delta int) uint64 {
	o := uint64(max(0, int64(floor)+int64(delta)))
	d.maxOrd = max(d.maxOrd, o)
	return o
}

func (d *driver) write() {
	if len(d.queries) == 0 {
		return
	}
	q := d.queries[d.rng.Intn(len(d.queries))]
	ai := d.rng.Intn(len(modelAttrs))
	attr, dt := d.attrs[ai], modelAttrs[ai].dtype
	// A schema change is only tried where the attribute's column exists; it is refused when
	// a target carries the attribute and skipped otherwise (a second column is not modelled).
	changeSchema := d.rng.Intn(10) == 0
	if _, known := d.m.schemas[attr]; changeSchema && known {
		dt = otherDType
	}
	insert := d.rng.Intn(6) == 0
	ordinal := d.ordinalNear(d.m.effective(attr), d.rng.Intn(8)-2)
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
	if ok && dt != modelAttrs[ai].dtype && len(targets) > 0 {
		refused := false
		for _, t := range targets {
			refused = refused || d.m.live(mKey{attr, t.prim})
		}
		if !refused {
			return
		}
	}
	if insert && ok {
		prims := make([]uint64, len(targets))
		for i, t := range targets {
			prims[i] = t.prim
		}
		if d.m.touchesPending(prims) {
			d.flush()
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
	d.trace("write attr %d ordinal %d paths %v count %d map %v mask %v insert %v rows %d dtype %s -> op %d err %v (targets %v)",
		attr, ordinal, q.paths, req.Count, req.IndexMap, req.Mask, insert, rows, dt, op, err, targets)
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

// deleteAttrs deletes some attributes (or whole prims) after settling every pending write,
// and waits for it: a delete racing writes to its keys is not decided by the model.
func (d *driver) deleteAttrs() {
	if len(d.queries) == 0 {
		return
	}
	q := d.queries[d.rng.Intn(len(d.queries))]
	d.flush()
	var attrs []uint64
	for i := d.rng.Intn(3); i > 0; i-- {
		if a := d.attrs[d.rng.Intn(len(d.attrs))]; !slices.Contains(attrs, a) {
			attrs = append(attrs, a)
		}
	}
	ordinal := d.ordinalNear(d.floorOf(attrs...), d.rng.Intn(6)-1)
	errs := d.m.deleteErrors(q.paths, attrs, ordinal)
	op, err := d.s.DeleteAttributes(DeleteRequest{Query: q.handle, Tokens: attrs, Ordinal: ordinal})
	d.trace("delete %v paths %v ordinal %d -> op %d err %v", attrs, q.paths, ordinal, op, err)
	if len(errs) > 0 {
		if err == nil || !errs[status.CodeOf(err)] {
			d.failf("delete %v at %d: want one of %v, got op %d err %v", attrs, ordinal, errs, op, err)
		}
		d.rejected++
		return
	}
	if err != nil {
		d.failf("delete %v at %d rejected: %v", attrs, ordinal, err)
	}
	d.deletes++
	d.m.pending[op] = &mPending{}
	d.wait(op)
	d.m.applyDelete(op, q.paths, attrs, ordinal)
}

func (d *driver) advance() {
	scope := Scope(d.rng.Intn(4) % 3) // ALL twice as often
	var listed []uint64
	if scope != ScopeAll {
		for i := d.rng.Intn(3); i > 0; i-- {
			if a := d.attrs[d.rng.Intn(len(d.attrs))]; !slices.Contains(listed, a) {
				listed = append(listed, a)
			}
		}
	}
	if scope == ScopeExclude {
		// EXCLUDE raises the attributes known at submission, pending writes' included; the
		// model tracks applied columns only, so nothing may be pending.
		d.flush()
	}
	ordinal := d.ordinalNear(d.floorOf(listed...), d.rng.Intn(5)-1)
	op, err := d.s.AdvanceWriteFloor(ordinal, scope, listed)
	require.NoError(d.t, err)
	d.trace("advance %d scope %d listed %v -> op %d", ordinal, scope, listed, op)
	d.m.advance(ordinal, scope, listed)
	d.m.pending[op] = &mPending{}
	if scope == ScopeExclude {
		d.wait(op)
	}
}

// read runs a latest (span nil) or range read over query q and compares it with the model.
func (d *driver) read(q modelQuery, attrs []uint64, span *mSpan) {
	d.t.Helper()
	if d.m.uncertainChanges(q.paths, attrs) > 5 {
		d.flush()
	}
	exp := d.m.expectRead(q.paths, attrs, span)
	d.reads++
	d.trace("read %v paths %v span %v gated %v", attrs, q.paths, span, d.gated)
	rng := OrdinalRange{End: d.rng.Uint64()}
	if span != nil {
		rng = OrdinalRange{Start: span.start, End: span.end, HasStart: true}
	}
	h, rop, err := d.s.ReadAttributes(q.handle, attrs, rng)
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
	for k, options := range exp.outcomes {
		outcome, ok := got[k]
		if !ok {
			outcome = outAbsent
		}
		if !options[outcome] {
			d.failf("read %v (span %v) key %v: got %q, want one of %v", attrs, span, k, outcome, options)
		}
	}
	for k := range got {
		if _, ok := exp.outcomes[k]; !ok {
			d.failf("read returned key %v that was never written", k)
		}
	}
}

func (d *driver) checkReadFailure(exp readExpectation, err error) {
	d.t.Helper()
	d.readFailures++
	want := outError(status.CodeOf(err))
	for _, options := range exp.outcomes {
		if options[want] {
			return
		}
	}
	d.failf("read failed with %v, which no selected key can cause", err)
}

func (d *driver) collect(g *Group, exp readExpectation, got map[mKey]string) {
	d.t.Helper()
	if g.IsArray || (g.IsDelete && len(g.Tensors) != 0) || (!g.IsDelete && len(g.Tensors) != 1) {
		d.failf("unexpected group shape %+v", g)
	}
	if g.Ordinal != exp.groupOrdinals[g.Attribute] {
		d.failf("group ordinal %d, want %d", g.Ordinal, exp.groupOrdinals[g.Attribute])
	}
	if g.FloorOrdinal != exp.floors[g.Attribute] {
		d.failf("group floor %d, want %d", g.FloorOrdinal, exp.floors[g.Attribute])
	}
	listPaths, err := d.s.Dictionary().ListPaths(g.PrimList)
	require.NoError(d.t, err)
	for k := 0; k < int(g.PrimCount); k++ {
		idx := int(g.PrimOffset) + k
		if g.PrimIndexMap != nil {
			idx = int(g.PrimIndexMap[k])
		}
		key := mKey{g.Attribute, listPaths[idx]}
		if g.IsDelete {
			got[key] = outTomb
			continue
		}
		tv := g.Tensors[0]
		rowBytes := tv.DType.ElemBytes()
		data := tv.Buffer.Bytes()[tv.ByteOffset:]
		row := k
		if g.DataIndexMap != nil {
			row = int(g.DataIndexMap[k])
		}
		if int64(row) >= tv.Rows {
			d.failf("row %d outside the tensor's %d rows", row, tv.Rows)
		}
		got[key] = outValue(string(bytes.Clone(data[row*rowBytes : (row+1)*rowBytes])))
	}
}

func (d *driver) randomAttrs() []uint64 {
	var attrs []uint64
	for i := 0; i < 1+d.rng.Intn(3); i++ {
		attrs = append(attrs, d.attrs[d.rng.Intn(len(d.attrs))])
	}
	return attrs
}

func (d *driver) randomRead() {
	if len(d.queries) == 0 {
		return
	}
	q := d.queries[d.rng.Intn(len(d.queries))]
	attrs := d.randomAttrs()
	if d.rng.Intn(2) == 0 {
		d.pollAll()
	}
	if d.rng.Intn(2) == 0 {
		d.read(q, attrs, nil)
		return
	}
	// A range near an ordinal some change was made at.
	ordinals := []uint64{d.floorOf(attrs...)}
	for _, changes := range d.m.hist {
		for _, c := range changes {
			ordinals = append(ordinals, c.ordinal)
		}
	}
	slices.Sort(ordinals)
	start := uint64(max(0, int64(ordinals[d.rng.Intn(len(ordinals))])-int64(d.rng.Intn(4))))
	d.read(q, attrs, &mSpan{start, start + uint64(d.rng.Intn(13))})
}

// checkFloor compares an attribute's effective floor, or the reported global floor, with the
// model once nothing is pending.
func (d *driver) checkFloor() {
	d.openGate()
	d.flush()
	attr := uint64(0)
	want := d.m.reportedGlobal()
	if i := d.rng.Intn(len(d.attrs) + 1); i < len(d.attrs) {
		attr, want = d.attrs[i], d.m.effective(d.attrs[i])
	}
	h, op, err := d.s.GetAttributeWriteFloor(attr)
	require.NoError(d.t, err)
	got, err := d.s.FetchOrdinal(h, TimeoutInfinite)
	require.NoError(d.t, err)
	if got != want {
		d.failf("floor of attribute %d: got %d, want %d", attr, got, want)
	}
	d.m.pending[op] = &mPending{}
	d.wait(op)
	rel, err := d.s.ReleaseOrdinalQuery(h)
	require.NoError(d.t, err)
	d.m.pending[rel] = &mPending{}
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
		case r < 38:
			d.write()
		case r < 44:
			d.deleteAttrs()
		case r < 54:
			d.advance()
		case r < 66:
			d.randomRead()
		case r < 69:
			d.checkFloor()
		case r < 73:
			d.pollAll()
		case r < 77:
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
	d.m.advance(d.maxOrd, ScopeAll, nil)
	d.m.pending[op] = &mPending{}
	d.wait(op)
	all := modelQuery{paths: d.prims}
	list, err := d.s.Dictionary().CreateList(d.prims)
	require.NoError(d.t, err)
	all.handle, err = d.s.QueryFromPathList(list)
	require.NoError(d.t, err)
	_, _ = d.s.Dictionary().Release(list)
	d.queries = append(d.queries, all)
	d.read(all, d.attrs, nil)
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
			total["deletes"] += d.deletes
			total["reads"] += d.reads
			total["read failures"] += d.readFailures
			total["poll timeouts"] += d.timeouts
		})
	}
	t.Logf("model test: %d seeds x %d steps: %v", seeds, steps, total)
}
