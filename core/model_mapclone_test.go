package core

// Map sessions and clones in the randomized model-based test (model_driver_test.go).
//
// A map session is opened at an ordinal (with the attribute's schema, another one, or none:
// "the schema the prims carry"), its group is fetched and checked against the committed values
// the model predicts, some rows are changed, and it is committed with unmap_group or
// unmap_attribute (or never fetched, committing the buffers as they started), or left open to
// the end of the run, when Destroy discards it. Setups and commits that must fail (a schema
// conflict, INSERT onto existing prims, an ordinal sealed in between) are checked to fail.
// Writes overlapping an open session are accepted; the later (ordinal, submission) wins.
//
// A clone copies a subtree onto fresh targets, onto existing prims (an existing target root
// is refused: nothing is cloned; an existing prim below an absent root is merged into, unless
// it carries a cloned attribute in another schema), onto targets nested in each other, onto no
// target at all (only admission is checked), or from a missing source; invalid target lists
// are refused at enqueue. Every settled clone's report (fetch_clone_result) is checked: the
// model's counts for a success, the op's own code for a failure.
//
// The model decides every op's outcome when it is enqueued, so ops that could change it are
// settled first and later mutations touching the prims a setup or clone reads wait for it.

import (
	"maps"
	"slices"
	"strconv"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// mapSession is an open map session of the driver.
type mapSession struct {
	handle        uint64
	q             modelQuery
	attr, ordinal uint64
	insert        bool
	setup         mapSetup
	group         *MapGroup
	rows          [][]byte // the buffer contents to commit (as fetched, then edited)
	committed     bool     // the group was committed by unmap_group
	// commitFails: the codes the unmap_group commit fails with (a failure makes the session
	// terminal: the final unmap returns it)
	commitFails map[status.Code]bool
}

// mapOpen enqueues a map session over a random query.
func (d *driver) mapOpen() {
	if len(d.queries) == 0 || len(d.maps) >= 3 {
		return
	}
	q := d.queries[d.rng.Intn(len(d.queries))]
	ai := d.rng.Intn(len(modelAttrs))
	attr := d.attrs[ai]
	dt := modelAttrs[ai].dtype
	switch d.rng.Intn(8) {
	case 0:
		dt = tensor.DType{} // the schema the prims carry
	case 1:
		dt = otherDType
	}
	insert := d.rng.Intn(6) == 0
	ordinal := d.ordinalNear(d.m.effective(attr), d.rng.Intn(10)-1)
	// The setup reads the prims' schemas, values and existence: settle what could change them.
	d.settleOps(d.m.pendingTouching(q.paths, false))
	mode := PrimModeUpsert
	if insert {
		mode = PrimModeInsert
	}
	h, op, err := d.s.MapAttribute(MapRequest{Query: q.handle, AttrToken: attr, Ordinal: ordinal, PrimMode: mode, DType: dt})
	d.trace("map attr %d ordinal %d paths %v dtype %s insert %v -> handle %d op %d err %v", attr, ordinal, q.paths, dt, insert, h, op, err)
	if ordinal <= d.m.effective(attr) {
		if status.CodeOf(err) != status.WriteFloorViolation {
			d.failf("map at %d (floor %d): want WRITE_FLOOR_VIOLATION, got %v", ordinal, d.m.effective(attr), err)
		}
		d.counts["rejected"]++
		return
	}
	require.NoError(d.t, err)
	sess := &mapSession{handle: h, q: q, attr: attr, ordinal: ordinal, insert: insert,
		setup: d.m.planMap(attr, dt, ordinal, q.paths, insert)}
	sess.rows = sess.setup.prefill
	p := &mPending{locked: q.paths}
	if len(sess.setup.errs) > 0 {
		p.fails = sess.setup.errs
		d.counts["map setups failing"]++
	}
	d.m.pending[op] = p
	d.maps = append(d.maps, sess)
	d.counts["map sessions"]++
}

// mapStep advances a random open session: fetch its group, or commit.
func (d *driver) mapStep() {
	if len(d.maps) == 0 {
		return
	}
	sess := d.maps[d.rng.Intn(len(d.maps))]
	switch {
	case sess.group == nil && d.rng.Intn(4) != 0:
		d.mapFetch(sess)
	case sess.group != nil && !sess.committed && d.rng.Intn(2) == 0:
		d.mapCommit(sess, false) // unmap_group
	default:
		d.mapCommit(sess, true) // unmap_attribute
	}
}

// mapFetch fetches a session's group, checks its layout and starting values, and edits rows.
func (d *driver) mapFetch(sess *mapSession) {
	g, err := d.s.FetchMapNext(sess.handle, 0)
	if status.CodeOf(err) == status.Timeout {
		d.openGate()
		g, err = d.s.FetchMapNext(sess.handle, TimeoutInfinite)
	}
	d.trace("fetch map %d -> err %v", sess.handle, err)
	if len(sess.setup.errs) > 0 {
		if err == nil || !sess.setup.errs[status.CodeOf(err)] {
			d.failf("map %d: want the setup to fail with one of %v, got %v", sess.handle, sess.setup.errs, err)
		}
		d.mapCommit(sess, true) // the failed session is ended by an unmap, which fails too
		return
	}
	require.NoError(d.t, err)
	n := len(sess.q.paths)
	dt := sess.setup.dt
	if g.Attribute != sess.attr || g.Ordinal != sess.ordinal || g.IsArray || g.IsDelete ||
		int(g.PrimCount) != n || g.PrimOffset != 0 || g.PrimIndexMap != nil || g.DataIndexMap != nil ||
		len(g.Tensors) != 1 || g.Tensors[0].DType != dt || g.Tensors[0].Rows != int64(n) {
		d.failf("map group of attr %d ordinal %d, %d prims, %d tensors: want %d rows of %s at ordinal %d, no index maps", g.Attribute, g.Ordinal, g.PrimCount, len(g.Tensors), n, dt, sess.ordinal)
	}
	if g.FloorOrdinal > d.m.effective(sess.attr) {
		d.failf("map group floor %d above the requested floor %d", g.FloorOrdinal, d.m.effective(sess.attr))
	}
	listPaths, err := d.s.Dictionary().ListPaths(g.PrimList)
	require.NoError(d.t, err)
	if !slices.Equal(sess.q.paths, listPaths[:n]) {
		d.failf("map group lists %v, want the query's prims %v", listPaths, sess.q.paths)
	}
	rowBytes := dt.ElemBytes()
	buf := g.Tensors[0].Buffer.Bytes()[g.Tensors[0].ByteOffset:]
	sess.rows = make([][]byte, n)
	for i := range n {
		row := buf[i*rowBytes : (i+1)*rowBytes]
		if !slices.Equal(row, sess.setup.prefill[i]) {
			d.failf("map buffer row %d (prim %d) starts as %v, want the committed value %v", i, sess.q.paths[i], row, sess.setup.prefill[i])
		}
		if d.rng.Intn(2) == 0 {
			d.rng.Read(row)
		}
		sess.rows[i] = slices.Clone(row)
	}
	_, err = d.s.FetchMapNext(sess.handle, 0)
	require.Equal(d.t, status.EndOfIteration, status.CodeOf(err), "one group per session")
	sess.group = g
	d.counts["map groups checked"]++
}

// mapCommit commits a session's group (unmap_group) or ends the session (unmap_attribute,
// committing the group unless unmap_group already did).
func (d *driver) mapCommit(sess *mapSession, final bool) {
	// The commit re-checks the floor, the schemas and (INSERT) the prims when it runs: settle
	// the ops that could change them.
	d.settleOps(d.m.pendingTouching(sess.q.paths, false))
	var targets []mTarget
	if !sess.committed {
		for i, p := range sess.q.paths {
			targets = append(targets, mTarget{p, i})
		}
	}
	errs := sess.setup.errs
	if len(errs) == 0 && (!final || !sess.committed) {
		enqueueErrs, runErrs := d.m.writeErrors(sess.attr, sess.setup.dt, sess.ordinal, targets, true, sess.insert)
		errs = enqueueErrs // a commit is accepted at enqueue: every refusal comes from its op
		for c := range runErrs {
			errs[c] = true
		}
	}
	if final && len(sess.commitFails) > 0 {
		errs = sess.commitFails // terminal: the remembered failure, nothing written
	}
	var op uint64
	var err error
	if final {
		op, err = d.s.UnmapAttribute(sess.handle)
		d.maps = slices.DeleteFunc(d.maps, func(s *mapSession) bool { return s == sess })
	} else {
		op, err = d.s.UnmapGroup(sess.handle, sess.group.ID)
		sess.committed, sess.commitFails = true, errs
	}
	d.trace("unmap %d final %v paths %v -> op %d err %v (want failure %v)", sess.handle, final, sess.q.paths, op, err, errs)
	require.NoError(d.t, err)
	if len(errs) > 0 {
		d.m.pending[op] = &mPending{fails: errs}
		if len(sess.setup.errs) == 0 {
			d.counts["map commits failing"]++
		}
	} else {
		p := d.m.acceptWrite(op, sess.attr, sess.setup.dt, sess.ordinal, targets, sess.rows)
		if sess.insert {
			p.locked = sess.q.paths // its prim check must not race a write creating them
		}
		if len(targets) > 0 {
			d.counts["map commits"]++
		}
	}
	if final {
		// The session is gone: its handle and its group are invalid.
		_, err := d.s.FetchMapNext(sess.handle, 0)
		require.Equal(d.t, status.InvalidHandle, status.CodeOf(err), "fetch after unmap_attribute")
		_, err = d.s.UnmapAttribute(sess.handle)
		require.Equal(d.t, status.InvalidHandle, status.CodeOf(err), "second unmap_attribute")
	} else {
		_, err := d.s.UnmapGroup(sess.handle, sess.group.ID)
		require.Equal(d.t, status.InvalidHandle, status.CodeOf(err), "second unmap_group")
	}
}

// pathString names a prim path of the dictionary.
func (d *driver) pathString(p uint64) string {
	s, err := d.s.Dictionary().PathString(p)
	require.NoError(d.t, err)
	return s
}

func (d *driver) addPrim(p uint64) {
	if !slices.Contains(d.prims, p) {
		d.prims = append(d.prims, p)
	}
}

// rebase is the copy of p (inside src) under dst; it grows the universe.
func (d *driver) rebase(p, src, dst uint64) uint64 {
	out, err := d.s.rebase(p, src, dst)
	require.NoError(d.t, err)
	d.addPrim(out)
	return out
}

// clone enqueues a clone of a random source onto one or two targets.
func (d *driver) clone() {
	src := d.prims[d.rng.Intn(len(d.prims))]
	if d.rng.Intn(4) != 0 {
		// Mostly a prim that exists (else the clone fails with NOT_FOUND).
		var held []uint64
		for _, p := range d.prims {
			if d.m.prims[p] {
				held = append(held, p)
			}
		}
		if len(held) > 0 {
			src = held[d.rng.Intn(len(held))]
		}
	}
	var dsts []uint64
	invalid := false
	n := 1 + d.rng.Intn(2)
	if d.rng.Intn(10) == 0 {
		n = 0 // zero targets: admission only
	}
	for i := n; i > 0; i-- {
		var dst uint64
		switch r := d.rng.Intn(20); {
		case r < 12 && len(d.prims) < maxModelPrims: // a fresh target
			d.fresh++
			p, err := d.s.Dictionary().InternPath("/model/k" + strconv.Itoa(d.fresh))
			require.NoError(d.t, err)
			dst = p
		case r < 15: // a path not held with held prims below it: the clone merges into them
			if roots := d.mergeRoots(); len(roots) > 0 {
				dst = roots[d.rng.Intn(len(roots))]
			} else {
				dst = d.prims[d.rng.Intn(len(d.prims))]
			}
		case r < 17 || (r < 19 && len(dsts) == 0): // any path of the universe: refused if it exists
			dst = d.prims[d.rng.Intn(len(d.prims))]
		case r < 19: // nested in the first target
			p, err := d.s.Dictionary().InternPath(d.pathString(dsts[0]) + "/a")
			require.NoError(d.t, err)
			dst = p
		case len(dsts) > 0 && d.rng.Intn(2) == 0: // a duplicate target: refused at enqueue
			dst, invalid = dsts[0], true
		default: // the source or a path inside it: refused at enqueue
			p, err := d.s.Dictionary().InternPath(d.pathString(src) + "/a")
			require.NoError(d.t, err)
			dst, invalid = []uint64{src, p}[d.rng.Intn(2)], true
		}
		dsts = append(dsts, dst)
	}
	for i, dst := range dsts {
		// Refused at enqueue: a target named twice, or one inside the source subtree.
		invalid = invalid || slices.Contains(dsts[:i], dst) || d.s.isUnder(dst, src)
	}
	ordinal := d.ordinalNear(d.floorOf(), d.rng.Intn(8)-2)
	names := make([]string, len(dsts))
	for i, p := range dsts {
		names[i] = d.pathString(p)
	}
	if invalid {
		op, err := d.s.Clone(d.pathString(src), names, ordinal)
		d.trace("clone %d -> %v at %d: op %d err %v (invalid)", src, dsts, ordinal, op, err)
		if status.CodeOf(err) != status.InvalidArgument {
			d.failf("clone of %d onto %v: want INVALID_ARGUMENT at enqueue, got op %d err %v", src, dsts, op, err)
		}
		d.counts["rejected"]++
		return
	}
	// The clone reads the source subtree and the targets' prims when it runs: settle the ops
	// touching them (and the floor advances its admission would depend on).
	region := append([]uint64{src}, dsts...)
	d.settleOps(d.m.pendingInRegion(region))
	for _, p := range dsts {
		d.addPrim(p)
	}
	outcome := d.m.planClone(src, dsts, ordinal, d.rebase)
	op, err := d.s.Clone(d.pathString(src), names, ordinal)
	d.trace("clone %d -> %v at %d: op %d err %v (want failure %v)", src, dsts, ordinal, op, err, outcome.errs)
	require.NoError(d.t, err)
	if len(outcome.errs) > 0 {
		d.m.pending[op] = &mPending{fails: outcome.errs, roots: region}
		d.counts["clones failing"]++
		return
	}
	d.m.acceptClone(op, outcome, ordinal, region)
	d.clones[op] = d.cloneReport(outcome, dsts, ordinal)
	d.counts["clones"]++
	if len(dsts) == 0 {
		d.counts["clones without targets"]++
	}
	for _, row := range outcome.mapped {
		for _, p := range row[1:] {
			if d.m.prims[p] {
				d.counts["clones merging"]++
			}
		}
	}
}

// mergeRoots lists the universe paths that are not held but have held prims below them.
func (d *driver) mergeRoots() []uint64 {
	var out []uint64
	for _, r := range d.prims {
		if d.m.prims[r] {
			continue
		}
		for p := range d.m.prims {
			if p != r && d.s.isUnder(p, r) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// cloneReport is the report of a clone that will succeed: every target's hierarchy subtree
// counts the prims held once the clone is done (those held now and the copies) that reach
// the target through held parents.
func (d *driver) cloneReport(outcome cloneOutcome, dsts []uint64, ordinal uint64) CloneReport {
	held := maps.Clone(d.m.prims)
	for _, row := range outcome.mapped {
		for _, p := range row {
			held[p] = true
		}
	}
	r := CloneReport{Ordinal: ordinal, TargetCount: uint64(len(dsts)), SourcePrimCount: uint64(len(outcome.subtree))}
	for _, dst := range dsts {
		for p := range held {
			attached := held[p] && d.s.isUnder(p, dst)
			for q := p; attached && q != dst; q = d.s.Dictionary().Parent(q) {
				attached = held[q]
			}
			if attached {
				r.PrimsCloned++
			}
		}
	}
	return r
}

// checkCloneReport checks fetch_clone_result of a finished op: a succeeding clone's report,
// a failing clone's own code, INVALID_HANDLE for any other op.
func (d *driver) checkCloneReport(op uint64, fails map[status.Code]bool) {
	d.t.Helper()
	got, err := d.s.FetchCloneResult(op, 0)
	want, succeeds := d.clones[op]
	delete(d.clones, op)
	rec, _ := locked(d.s, func() (*cloneRecord, error) { return d.s.clones[op], nil })
	switch {
	case succeeds:
		if err != nil || got != want {
			d.failf("clone op %d: report %+v (%v), want %+v", op, got, err, want)
		}
	case rec != nil:
		if !fails[status.CodeOf(err)] {
			d.failf("failed clone op %d: fetch_clone_result returned %v, want one of %v", op, err, fails)
		}
	case status.CodeOf(err) != status.InvalidHandle:
		d.failf("op %d is no clone: fetch_clone_result returned %v, want INVALID_HANDLE", op, err)
	}
}
