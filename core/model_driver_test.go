package core

// Randomized model-based test: random op sequences against a Stage and the model of
// model_test.go, compared after every step. Ops: writes (dense, count, index map, mask;
// UPSERT and INSERT; sometimes of a second schema, which opens a second column where no
// target carries the attribute), attribute and whole-prim deletes, floor advances, map
// sessions (model_mapclone_test.go), clones of subtrees, latest and range reads, floor
// queries, polls, waits and query churn. The stage's worker slots can be held by the test (a
// "gate"), so ops queue up and then run in whatever order the scheduler picks: writes at
// different ordinals apply out of order, reads find writes not yet applied, polls see TIMEOUT.
// Seeds are fixed; OVSTAGE_MODEL_SEEDS and OVSTAGE_MODEL_STEPS scale the run, and
// OVSTAGE_MODEL_TRACE logs every step (to replay a failing seed: -run TestModelRandomOps/seedN).

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

type modelAttr struct {
	name  string
	dtype tensor.DType
}

var modelAttrs = []modelAttr{
	{"model:a", tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}},
	{"model:b", tensor.DType{Code: tensor.CodeInt, Bits: 16, Lanes: 3}},
	{"model:c", tensor.DType{Code: tensor.CodeUInt, Bits: 8, Lanes: 4}},
}

// otherDType is the schema of "second schema" writes and maps.
var otherDType = tensor.DType{Code: tensor.CodeInt, Bits: 32, Lanes: 1}

// modelPaths is the initial prim universe: a few subtrees (for clones) and leaves. Clones onto
// fresh targets add their copies' paths.
var modelPaths = []string{"/model/p0", "/model/p0/a", "/model/p0/a/b", "/model/p1", "/model/p1/a",
	"/model/p2", "/model/p3", "/model/p4"}

// maxModelPrims bounds the universe clones grow (queries should keep hitting the same prims).
const maxModelPrims = 36

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
	maps    []*mapSession
	gated   bool
	gate    chan struct{}
	maxOrd  uint64
	step    int
	fresh   int    // clone target names used
	parity  bool   // the stage reads with column.ReferenceParity
	window  uint64 // the stage's history window (0 under parity)
	// clones are the expected reports of the clones that will succeed (by op id)
	clones map[uint64]CloneReport
	// counters for the report
	counts map[string]int
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

// settle checks a finished op's outcome against the model (success, or a failure with one of
// the codes the model decided), releases its id and tells the model.
func (d *driver) settle(op uint64, res WaitResult) {
	d.t.Helper()
	var fails map[status.Code]bool
	if p := d.m.pending[op]; p != nil {
		fails = p.fails
	}
	if len(fails) == 0 && len(res.ErrorOpIDs) > 0 {
		d.failf("op %d failed: %s", res.ErrorOpIDs[0], d.s.LastOpError(res.ErrorOpIDs[0]))
	}
	if len(fails) > 0 {
		sop, err := d.s.lookupOp(op)
		require.NoError(d.t, err)
		code := status.CodeOf(sop.Err())
		if !fails[code] {
			d.failf("op %d: want a failure with one of %v, got %v (%s)", op, fails, code, d.s.LastOpError(op))
		}
		if !slices.Contains(res.ErrorOpIDs, op) {
			d.failf("op %d failed, but wait_op lists %v", op, res.ErrorOpIDs)
		}
		d.counts["failed ops: "+code.String()]++
	}
	d.checkCloneReport(op, fails)
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
			d.counts["poll timeouts"]++
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

// settleOps waits for ops (still pending in the model).
func (d *driver) settleOps(ops []uint64) {
	d.t.Helper()
	for _, op := range ops {
		if _, ok := d.m.pending[op]; ok {
			d.wait(op)
		}
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
func (d *driver) payload(dt tensor.DType, rows int) (tensor.Tensor, [][]byte, []byte) {
	rowBytes := dt.ElemBytes()
	want := make([][]byte, rows)
	for r := range want {
		want[r] = make([]byte, rowBytes)
		d.rng.Read(want[r])
	}
	t := tensor.Tensor{DeviceType: tensor.DeviceCPU, DType: dt, Shape: []int64{int64(rows)}}
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
	if d.rng.Intn(10) == 0 {
		// A second schema: refused where a target carries the attribute in another column,
		// a second column of the name elsewhere.
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
	prims := make([]uint64, len(targets))
	for i, t := range targets {
		prims[i] = t.prim
	}
	// A map setup, an INSERT commit or a clone reading or creating these prims runs first.
	d.settleOps(d.m.pendingTouching(prims, true))
	if insert && ok {
		d.settleOps(d.m.pendingTouching(prims, false))
	}
	if insert {
		req.PrimMode = PrimModeInsert
	}
	tn, want, mem := d.payload(dt, rows)
	req.Tensors = []tensor.Tensor{tn}
	enqueueErrs, runErrs := d.m.writeErrors(attr, dt, ordinal, targets, ok, insert)
	op, err := d.s.WriteAttribute(req)
	runtime.KeepAlive(mem)
	d.trace("write attr %d ordinal %d paths %v count %d map %v mask %v insert %v rows %d dtype %s -> op %d err %v (targets %v)",
		attr, ordinal, q.paths, req.Count, req.IndexMap, req.Mask, insert, rows, dt, op, err, targets)
	if len(enqueueErrs) > 0 && err == nil && enqueueErrs[status.WriteFloorViolation] {
		// A floor refusal whose layout error (named first) depended on pending ops is
		// reported by the op when it runs.
		fails := maps.Clone(enqueueErrs)
		maps.Copy(fails, runErrs)
		d.m.pending[op] = &mPending{fails: fails}
		d.counts["floor refusals reported when run"]++
		if insert {
			d.wait(op)
		}
		return
	}
	if len(enqueueErrs) > 0 {
		if err == nil || !(enqueueErrs[status.CodeOf(err)] || runErrs[status.CodeOf(err)]) {
			d.failf("write %+v: want one of %v (or %v), got op %d err %v", req, enqueueErrs, runErrs, op, err)
		}
		d.counts["rejected"]++
		return
	}
	if err != nil {
		if !runErrs[status.CodeOf(err)] {
			d.failf("write %+v rejected: %v", req, err)
		}
		d.counts["rejected"]++
		return
	}
	if len(runErrs) > 0 {
		// Refused when it runs: a schema or INSERT conflict found behind a pending op, or an
		// ordinal conflict (always reported by the op).
		d.m.pending[op] = &mPending{fails: runErrs}
		d.counts["writes failing when run"]++
		if insert {
			d.wait(op)
		}
		return
	}
	d.counts["accepted"]++
	if dt == otherDType {
		d.counts["second-schema writes"]++
	}
	d.m.acceptWrite(op, attr, dt, ordinal, targets, want)
	if insert {
		d.wait(op) // nothing enqueued later may race the INSERT's prim check
	}
}

// deleteAttrs deletes some attributes (or whole prims) after settling every pending op, and
// waits for it: a delete racing writes to its keys is not decided by the model.
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
		if err == nil {
			// Nothing is pending, so a refusal is known at enqueue; but either channel is fine.
			d.m.pending[op] = &mPending{fails: errs}
			d.wait(op)
			d.counts["deletes failing when run"]++
			return
		}
		if !errs[status.CodeOf(err)] {
			d.failf("delete %v at %d: want one of %v, got op %d err %v", attrs, ordinal, errs, op, err)
		}
		d.counts["rejected"]++
		return
	}
	if err != nil {
		d.failf("delete %v at %d rejected: %v", attrs, ordinal, err)
	}
	d.counts["deletes"]++
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

// read runs a snapshot or range read over query q and compares it with the model.
func (d *driver) read(q modelQuery, attrs []uint64, span mSpan) {
	d.t.Helper()
	if d.m.uncertainChanges(q.paths, attrs) > 5 {
		d.flush()
	}
	exp := d.m.expectRead(q.paths, attrs, span, d.parity, d.window)
	d.counts["reads"]++
	d.trace("read %v paths %v span %+v gated %v", attrs, q.paths, span, d.gated)
	rng := OrdinalRange{Start: span.start, End: span.end, HasStart: span.isRange}
	h, rop, err := d.s.ReadAttributes(q.handle, attrs, rng)
	if err != nil {
		d.checkReadFailure(exp, err)
		return
	}
	values, tombs := map[mKey]string{}, map[mCell]int{}
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
		d.collect(g, exp, values, tombs)
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
	for c := range tombs {
		// A read naming an attribute twice returns its groups twice.
		n := 0
		for _, a := range attrs {
			if a == c.attr {
				n++
			}
		}
		if tombs[c]%n == 0 {
			tombs[c] /= n
		}
	}
	if want, decided := exp.failure(); decided && want != "" {
		d.failf("read %v (span %+v) over %v succeeded, want %s", attrs, span, q.paths, want)
	}
	if problem := exp.check(values, tombs); problem != "" {
		d.failf("read %v (span %+v) over %v: %s", attrs, span, q.paths, problem)
	}
}

func (d *driver) checkReadFailure(exp readExpectation, err error) {
	d.t.Helper()
	d.counts["read failures: "+status.CodeOf(err).String()]++
	got := outError(status.CodeOf(err))
	if want, decided := exp.failure(); decided {
		if got != want {
			d.failf("read failed with %v, want %q", err, want)
		}
		return
	}
	for _, options := range exp.outcomes {
		if options[got] {
			return
		}
	}
	d.failf("read failed with %v, which no selected key can cause", err)
}

func (d *driver) collect(g *Group, exp readExpectation, values map[mKey]string, tombs map[mCell]int) {
	d.t.Helper()
	if g.IsArray || (g.IsDelete && len(g.Tensors) != 0) || (!g.IsDelete && len(g.Tensors) != 1) {
		d.failf("unexpected group shape %+v", g)
	}
	if g.FloorOrdinal != exp.floors[g.Attribute] {
		d.failf("group floor %d, want %d", g.FloorOrdinal, exp.floors[g.Attribute])
	}
	var dt tensor.DType
	listPaths, err := d.s.Dictionary().ListPaths(g.PrimList)
	require.NoError(d.t, err)
	groupPrims := make([]uint64, g.PrimCount)
	for k := range groupPrims {
		idx := int(g.PrimOffset) + k
		if g.PrimIndexMap != nil {
			idx = int(g.PrimIndexMap[k])
		}
		groupPrims[k] = listPaths[idx]
	}
	// A group's ordinal is the newest sealed change among its keys. A tombstone group has no
	// tensor naming its column: its ordinal must be that of one of the name's columns.
	ordinals := map[tensor.DType]uint64{}
	for k, top := range exp.sealedTop {
		if k.attr == g.Attribute && slices.Contains(groupPrims, k.prim) {
			ordinals[k.dt] = max(ordinals[k.dt], top)
		}
	}
	if g.IsDelete {
		found := false
		for _, o := range ordinals {
			found = found || o == g.Ordinal
		}
		if !found {
			d.failf("tombstone group ordinal %d is no column's newest sealed change of its keys %v", g.Ordinal, ordinals)
		}
	} else {
		dt = g.Tensors[0].DType
		if want := ordinals[dt]; g.Ordinal != want {
			d.failf("group ordinal %d, want %d (column %s)", g.Ordinal, want, dt)
		}
	}
	seen := map[uint64]bool{}
	for k := 0; k < int(g.PrimCount); k++ {
		idx := int(g.PrimOffset) + k
		if g.PrimIndexMap != nil {
			idx = int(g.PrimIndexMap[k])
		}
		prim := listPaths[idx]
		if g.IsDelete {
			if !seen[prim] { // a query may name a prim twice
				tombs[mCell{g.Attribute, prim}]++
			}
			seen[prim] = true
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
		key := mKey{g.Attribute, prim, dt}
		v := outValue(string(bytes.Clone(data[row*rowBytes : (row+1)*rowBytes])))
		if old, dup := values[key]; dup && old != v {
			d.failf("key %s read back twice with different values", keyString(key))
		}
		values[key] = v
	}
}

func keyString(k mKey) string { return fmt.Sprintf("(attr %d, prim %d, %s)", k.attr, k.prim, k.dt) }

func quote(v string) string { return strconv.Quote(v) }

func optionsString(options map[string]bool) string {
	var out []string
	for o := range options {
		out = append(out, strconv.Quote(o))
	}
	slices.Sort(out)
	return "{" + strings.Join(out, ", ") + "}"
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
	// Ordinals near the floor or near some change.
	ordinals := []uint64{d.floorOf(attrs...)}
	for _, changes := range d.m.hist {
		for _, c := range changes {
			ordinals = append(ordinals, c.ordinal)
		}
	}
	slices.Sort(ordinals)
	near := uint64(max(0, int64(ordinals[d.rng.Intn(len(ordinals))])+int64(d.rng.Intn(5))-2))
	if d.rng.Intn(2) == 0 {
		end := near // a snapshot: mostly near a change, sometimes current or far ahead
		switch d.rng.Intn(6) {
		case 0:
			end = column.Current
		case 1:
			end = d.rng.Uint64()
		}
		d.read(q, attrs, mSpan{end: end})
		return
	}
	start := near
	end := start + uint64(d.rng.Intn(13))
	if d.rng.Intn(8) == 0 {
		end = column.Current
	}
	d.read(q, attrs, mSpan{start: start, end: end, isRange: true})
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
	if d.window > 0 {
		d.checkOldestPreserved()
	}
}

// checkOldestPreserved compares the retention frontier with the model's window frontier.
func (d *driver) checkOldestPreserved() {
	h, op, err := d.s.GetOldestPreservedOrdinal()
	require.NoError(d.t, err)
	got, err := d.s.FetchOrdinal(h, TimeoutInfinite)
	require.NoError(d.t, err)
	if want := d.m.oldestPreserved(d.window); got != want {
		d.failf("oldest preserved ordinal: got %d, want %d (window %d)", got, want, d.window)
	}
	d.counts["oldest preserved checks"]++
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
	for _, sess := range d.maps {
		if sess.q.handle == q.handle {
			return // an open map session commits through its query
		}
	}
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
		case r < 32:
			d.write()
		case r < 37:
			d.deleteAttrs()
		case r < 46:
			d.advance()
		case r < 56:
			d.randomRead()
		case r < 58:
			d.checkFloor()
		case r < 61:
			d.pollAll()
		case r < 64:
			d.waitOne()
		case r < 68:
			d.newQuery()
		case r < 70:
			d.releaseQuery()
		case r < 75:
			d.mapOpen()
		case r < 80:
			d.mapStep()
		case r < 84:
			d.clone()
		case r < 92:
			d.closeGate()
		default:
			d.openGate()
		}
	}
	// End the map sessions, except some left open for Destroy to discard; then seal everything
	// and compare the whole stage.
	d.openGate()
	open := 0
	for len(d.maps) > 0 {
		sess := d.maps[0]
		if d.rng.Intn(3) == 0 {
			d.maps = d.maps[1:]
			open++
			d.counts["map sessions left open"]++
			continue
		}
		d.mapCommit(sess, true)
	}
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
	d.read(all, d.attrs, mSpan{end: column.Current})
	for _, q := range d.queries {
		op, err := d.s.ReleaseQuery(q.handle)
		require.NoError(d.t, err)
		d.m.pending[op] = &mPending{}
	}
	d.flush()
	diag := d.s.Diagnostics()
	require.Equal(d.t, Diagnostics{Columns: diag.Columns, Maps: open, VersionBytes: diag.VersionBytes}, diag,
		"nothing but columns (and their versions) and the sessions left open is left")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// internModel interns the model's prim paths and attribute names in a stage's dictionary.
func internModel(t *testing.T, dict *pathdict.Dictionary) (prims, attrs []uint64) {
	prims = make([]uint64, len(modelPaths))
	for i, path := range modelPaths {
		p, err := dict.InternPath(path)
		require.NoError(t, err)
		prims[i] = p
	}
	attrs = make([]uint64, len(modelAttrs))
	for i, a := range modelAttrs {
		tok, err := dict.InternToken(a.name)
		require.NoError(t, err)
		attrs[i] = tok
	}
	return prims, attrs
}

// TestModelRandomOps runs the model test under each ordinal admission policy: FLOOR_ONLY (only
// the floors refuse ordinals), NONDECREASING (the default) and STRICTLY_INCREASING.
func TestModelRandomOps(t *testing.T) {
	for _, policy := range []AdmissionPolicy{AdmissionFloorOnly, AdmissionNondecreasing, AdmissionStrictlyIncreasing} {
		t.Run(policy.String(), func(t *testing.T) { runModel(t, policy) })
	}
}

func runModel(t *testing.T, policy AdmissionPolicy) {
	seeds := envInt("OVSTAGE_MODEL_SEEDS", 32)
	steps := envInt("OVSTAGE_MODEL_STEPS", 1000)
	if policy != AdmissionFloorOnly {
		seeds = max(1, seeds/2)
	}
	if testing.Short() {
		seeds, steps = 4, 200
	}
	total := map[string]int{}
	for seed := 1; seed <= seeds; seed++ {
		t.Run("seed"+strconv.Itoa(seed), func(t *testing.T) {
			liveBefore := buffer.LiveCount()
			parity := seed%4 == 0 // every fourth seed answers reads as the reference
			cfg := Config{Workers: modelWorkers, Admission: policy}
			window := uint64(DefaultHistoryOrdinals)
			switch {
			case parity:
				window = 0
			case seed%4 == 1:
				window = 2 // a short window: reads below its frontier and at its boundary
			}
			cfg.History = &History{Ordinals: window}
			s := NewStage("model", cfg)
			prims, attrs := internModel(t, s.Dictionary())
			d := &driver{t: t, rng: rand.New(rand.NewSource(int64(seed))), s: s, parity: parity, window: window,
				m: newGoModel(policy, s.isUnder), prims: prims, attrs: attrs, counts: map[string]int{},
				clones: map[uint64]CloneReport{}}
			defer func() {
				d.openGate()
				s.Destroy()
			}()
			d.newQuery()
			d.run(steps)
			d.openGate()
			s.Destroy()
			require.Equal(t, liveBefore, buffer.LiveCount(), "every buffer is freed by Destroy")
			for k, v := range d.counts {
				total[k] += v
			}
		})
	}
	t.Logf("model test (%s): %d seeds x %d steps: %v", policy, seeds, steps, total)
}
