package core

// The reference model of the randomized model-based test (model_driver_test.go runs it): a
// tiny, engine-independent account of ordinals, write floors (ALL/INCLUDE/EXCLUDE), prims,
// columns per (attribute, schema), deletes and tombstones, map commits and clones, and of what
// snapshot reads (latest(N): the state at N) and range reads (change membership) may return,
// under our read admission and under reference parity.
// tests/python/model.py is the same model in Python, with the reasoning spelled out.

import (
	"slices"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// mKey is one cell of one column: an attribute name on a prim, in the column of one storage
// schema. A name may have several columns (different prims, different schemas).
type mKey struct {
	attr, prim uint64
	dt         tensor.DType
}

// mCell is an attribute name on a prim, whatever its column.
type mCell struct{ attr, prim uint64 }

func (k mKey) cell() mCell { return mCell{k.attr, k.prim} }

// mChange is one accepted change of a key: a row value, or a tombstone.
type mChange struct {
	ordinal, seq, op uint64
	value            string // the row's bytes
	tomb             bool
}

// mPending is an accepted op the model has not seen finish. Every op's outcome is decided
// when it is enqueued (the driver settles or avoids the races that would leave it open), so
// fails is known up front; its changes are in hist from the start and count as applied once
// the op finishes.
type mPending struct {
	keys    []mKey               // cells it changes
	creates []uint64             // prims that exist once it finished (writes, commits, clones)
	fails   map[status.Code]bool // the codes it may fail with (nil: it succeeds)
	// Prims the op reads or creates while it runs (map setup, INSERT commits, clones): a
	// later mutation touching one of them waits for the op, so its outcome stays decided.
	locked []uint64
	roots  []uint64 // locked subtrees (clones)
}

type mTarget struct {
	prim uint64
	row  int
}

// mDelete is a finished delete in the lifecycle history (attrs nil: whole prims), or (create)
// the prims a clone created.
type mDelete struct {
	ordinal, seq uint64
	prims        []uint64
	attrs        []uint64
	create       bool
}

func (d mDelete) covers(attr, prim uint64) bool {
	return !d.create && slices.Contains(d.prims, prim) && (d.attrs == nil || slices.Contains(d.attrs, attr))
}

// goModel predicts admission, op outcomes and reads. Every op's outcome is a function of the
// ops submitted before it (conflict ordering), so the model decides it from the changes of
// the ops it accepted, applied or not.
type goModel struct {
	policy    AdmissionPolicy
	lifecycle []mDelete         // deletes and clone creations, in acceptance order
	global    uint64            // requested global floor G
	attrFloor map[uint64]uint64 // requested per-attribute floors F[a]
	hist      map[mKey][]mChange
	prims     map[uint64]bool // prims that exist (applied state)
	known     map[uint64]bool // attributes with a column (applied state)
	pending   map[uint64]*mPending
	seq       uint64
	// isUnder reports whether p is anc or below it (by path components).
	isUnder func(p, anc uint64) bool
}

func newGoModel(policy AdmissionPolicy, isUnder func(p, anc uint64) bool) *goModel {
	return &goModel{policy: policy, attrFloor: map[uint64]uint64{}, hist: map[mKey][]mChange{}, prims: map[uint64]bool{},
		known: map[uint64]bool{}, pending: map[uint64]*mPending{}, isUnder: isUnder}
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

func (m *goModel) nextSeq() uint64 { m.seq++; return m.seq << 20 }

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

// hasRow: an applied write gave the key a row in its column (deletes never create rows).
func (m *goModel) hasRow(k mKey) bool {
	for _, c := range m.appliedChanges(k) {
		if !c.tomb {
			return true
		}
	}
	return false
}

// live: the key's newest applied change is a write (the prim carries the attribute in that
// column).
func (m *goModel) live(k mKey) bool {
	c, ok := newest(m.appliedChanges(k))
	return ok && !c.tomb
}

// committed is the key's value in the applied state (what map buffers and clones copy);
// ok=false when the key has no live value.
func (m *goModel) committed(k mKey) (string, bool) {
	c, ok := newest(m.appliedChanges(k))
	if !ok || c.tomb {
		return "", false
	}
	return c.value, true
}

// keysOf lists the keys of a cell, one per column (schema) it ever had a change in.
func (m *goModel) keysOf(c mCell) []mKey {
	var out []mKey
	for k := range m.hist {
		if k.cell() == c {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, compareKeys)
	return out
}

// liveSchemas lists the schemas in which the cell is live.
func (m *goModel) liveSchemas(c mCell) []tensor.DType {
	var out []tensor.DType
	for _, k := range m.keysOf(c) {
		if m.live(k) {
			out = append(out, k.dt)
		}
	}
	return out
}

// orderedBefore: change c comes before (ordinal, seq) in (ordinal, submission) order.
func orderedBefore(c mChange, ordinal, seq uint64) bool {
	return c.ordinal < ordinal || (c.ordinal == ordinal && c.seq < seq)
}

// liveFrom: the key carries a value at some point from just before (ordinal, seq) on (its
// newest change before that is a value, or a later change is), counting every accepted change.
func (m *goModel) liveFrom(k mKey, ordinal, seq uint64) bool {
	var prior []mChange
	for _, c := range m.hist[k] {
		if orderedBefore(c, ordinal, seq) {
			prior = append(prior, c)
		} else if !c.tomb {
			return true
		}
	}
	c, ok := newest(prior)
	return ok && !c.tomb
}

// liveOtherSchema: a write of dt at (ordinal, seq) would overlap the cell's life in a column
// of another schema (the engine refuses the schema change).
func (m *goModel) liveOtherSchema(c mCell, dt tensor.DType, ordinal, seq uint64) bool {
	for _, k := range m.keysOf(c) {
		if k.dt != dt && m.liveFrom(k, ordinal, seq) {
			return true
		}
	}
	return false
}

// liveOtherSchemaNow: the cell now carries a value in a column of another schema than dt (a
// clone's merge checks the applied state).
func (m *goModel) liveOtherSchemaNow(c mCell, dt tensor.DType) bool {
	for _, k := range m.keysOf(c) {
		if k.dt != dt && m.live(k) {
			return true
		}
	}
	return false
}

// valueBefore: the key has a value change ordered before (ordinal, seq).
func (m *goModel) valueBefore(k mKey, ordinal, seq uint64) bool {
	for _, c := range m.hist[k] {
		if !c.tomb && orderedBefore(c, ordinal, seq) {
			return true
		}
	}
	return false
}

// blocks: under the policy, a retained change at r refuses a mutation at o.
func (m *goModel) blocks(r, o uint64) bool {
	switch m.policy {
	case AdmissionNondecreasing:
		return r > o
	case AdmissionStrictlyIncreasing:
		return r >= o
	}
	return false
}

// cellConflict: a change of the cell (any schema), or a delete naming it, blocks ordinal.
func (m *goModel) cellConflict(c mCell, ordinal uint64) bool {
	for _, k := range m.keysOf(c) {
		for _, ch := range m.hist[k] {
			if m.blocks(ch.ordinal, ordinal) {
				return true
			}
		}
	}
	for _, d := range m.lifecycle {
		if d.covers(c.attr, c.prim) && m.blocks(d.ordinal, ordinal) {
			return true
		}
	}
	return false
}

// primConflict: a change of any cell of prim, or a lifecycle event naming it, blocks ordinal.
func (m *goModel) primConflict(prim, ordinal uint64) bool {
	for k, changes := range m.hist {
		if k.prim != prim {
			continue
		}
		for _, ch := range changes {
			if m.blocks(ch.ordinal, ordinal) {
				return true
			}
		}
	}
	for _, d := range m.lifecycle {
		if slices.Contains(d.prims, prim) && m.blocks(d.ordinal, ordinal) {
			return true
		}
	}
	return false
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

// touches reports whether the pending op reads, changes or creates prim p.
func (p *mPending) touches(prim uint64, isUnder func(p, anc uint64) bool) bool {
	if slices.Contains(p.creates, prim) || slices.Contains(p.locked, prim) {
		return true
	}
	for _, k := range p.keys {
		if k.prim == prim {
			return true
		}
	}
	for _, r := range p.roots {
		if isUnder(prim, r) {
			return true
		}
	}
	return false
}

// pendingTouching lists pending ops that touch one of prims (locking ops only, when
// lockingOnly is set), in id order.
func (m *goModel) pendingTouching(prims []uint64, lockingOnly bool) []uint64 {
	var out []uint64
	for op, p := range m.pending {
		if lockingOnly && len(p.locked) == 0 && len(p.roots) == 0 {
			continue
		}
		for _, prim := range prims {
			if p.touches(prim, m.isUnder) {
				out = append(out, op)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// pendingInRegion lists pending ops that touch a prim at or below one of roots, or lock a
// subtree overlapping one of them.
func (m *goModel) pendingInRegion(roots []uint64) []uint64 {
	var out []uint64
	in := func(p uint64) bool {
		for _, r := range roots {
			if m.isUnder(p, r) {
				return true
			}
		}
		return false
	}
	for op, p := range m.pending {
		hit := slices.ContainsFunc(p.creates, in) || slices.ContainsFunc(p.locked, in)
		for _, k := range p.keys {
			hit = hit || in(k.prim)
		}
		for _, r := range p.roots {
			hit = hit || in(r) || slices.ContainsFunc(roots, func(x uint64) bool { return m.isUnder(x, r) })
		}
		if hit {
			out = append(out, op)
		}
	}
	slices.Sort(out)
	return out
}

// schemaRacy: a pending op may make some cell of attr live in a schema other than dt.
func (m *goModel) schemaRacy(attr uint64, dt tensor.DType) bool {
	for _, p := range m.pending {
		for _, k := range p.keys {
			if k.attr == attr && k.dt != dt {
				return true
			}
		}
	}
	return false
}

// planTargets resolves count / index map / mask; ok=false means INVALID_ARGUMENT.
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

// writeErrors: the codes a write (or map commit) may fail with; empty means it succeeds.
// Several may apply, and the engine may report any one of them. enqueue holds the ones that
// are always reported at enqueue (floors, bad requests); the others (schema, INSERT, ordinal
// admission) come at enqueue or from the op when it runs, depending on what is pending.
func (m *goModel) writeErrors(attr uint64, dt tensor.DType, ordinal uint64, targets []mTarget, ok, insert bool) (enqueue, run map[status.Code]bool) {
	enqueue, run = map[status.Code]bool{}, map[status.Code]bool{}
	if ordinal <= m.effective(attr) {
		enqueue[status.WriteFloorViolation] = true
	}
	if !ok {
		enqueue[status.InvalidArgument] = true
		return enqueue, run
	}
	seq := m.seq<<20 + 1<<20 // the seq the op will get
	for _, t := range targets {
		c := mCell{attr, t.prim}
		if m.cellConflict(c, ordinal) {
			run[status.WriteFloorViolation] = true
		}
		// A schema change is refused on a prim that carries the attribute in another column;
		// elsewhere the write goes to (or creates) the column of its own schema.
		if m.liveOtherSchema(c, dt, ordinal, seq) {
			run[status.InvalidArgument] = true
		}
		if insert && m.prims[t.prim] {
			run[status.PrimNotFound] = true
		}
	}
	return enqueue, run
}

// acceptWrite records a write or map commit that will succeed; rowsData[t.row] is the value
// of target t.
func (m *goModel) acceptWrite(op, attr uint64, dt tensor.DType, ordinal uint64, targets []mTarget, rowsData [][]byte) *mPending {
	seq := m.nextSeq()
	p := &mPending{}
	// FLOOR_ONLY: deletes ordered after the write that already ran cover its cells too; a
	// key with no value before such a delete gets its tombstone with the write, and a prim
	// deleted whole after it is not brought back.
	var retro []mChange
	var retroKeys []mKey
	done := map[mKey]bool{}
	for _, t := range targets {
		k := mKey{attr, t.prim, dt}
		if done[k] {
			continue
		}
		done[k] = true
		for _, d := range m.lifecycle {
			if d.ordinal > ordinal && d.covers(attr, t.prim) && !m.valueBefore(k, d.ordinal, d.seq) {
				retro = append(retro, mChange{ordinal: d.ordinal, seq: d.seq, op: op, tomb: true})
				retroKeys = append(retroKeys, k)
			}
		}
	}
	for i, t := range targets {
		k := mKey{attr, t.prim, dt}
		// Later elements of one write win over earlier ones (a query may repeat a prim).
		m.hist[k] = append(m.hist[k], mChange{ordinal: ordinal, seq: seq | uint64(i), op: op,
			value: string(rowsData[t.row])})
		p.keys = append(p.keys, k)
		gone := false
		for _, d := range m.lifecycle {
			gone = gone || (d.attrs == nil && !d.create && d.ordinal > ordinal && slices.Contains(d.prims, t.prim))
		}
		if !gone {
			p.creates = append(p.creates, t.prim)
		}
	}
	for i, c := range retro {
		m.hist[retroKeys[i]] = append(m.hist[retroKeys[i]], c)
	}
	m.pending[op] = p
	return p
}

// deleteErrors: a delete at or below the floor of an attribute it deletes (for a whole-prim
// delete: of an attribute the prims carry) is refused, and so is one the policy finds in
// conflict with the deleted cells (whole prims: every cell and the prims' lifecycles).
func (m *goModel) deleteErrors(paths, attrs []uint64, ordinal uint64) map[status.Code]bool {
	checked := attrs
	if len(attrs) == 0 {
		checked = m.liveAttrs(paths)
	}
	refused := map[status.Code]bool{status.WriteFloorViolation: true}
	if len(attrs) == 0 && ordinal <= m.global {
		return refused // ending prims changes their lifecycle, under the global floor
	}
	for _, a := range checked {
		if ordinal <= m.effective(a) {
			return refused
		}
	}
	for _, p := range paths {
		if len(attrs) == 0 && m.primConflict(p, ordinal) {
			return refused
		}
		for _, a := range attrs {
			if m.cellConflict(mCell{a, p}, ordinal) {
				return refused
			}
		}
	}
	return nil
}

// applyDelete records a finished delete (no op may be pending): a tombstone for every key of
// the deleted cells (whole prims: every cell of the prims) that has a value ordered before
// the delete, and the delete in the lifecycle history. A whole-prim delete also makes the
// prims stop existing, except those given a value or created at a later ordinal.
func (m *goModel) applyDelete(op uint64, paths, attrs []uint64, ordinal uint64) {
	whole := len(attrs) == 0
	seq := m.nextSeq()
	for k := range m.hist {
		if !slices.Contains(paths, k.prim) || (!whole && !slices.Contains(attrs, k.attr)) {
			continue
		}
		// A whole-prim delete leaves cells under their attribute's floor alone (sealed
		// history; the prims carry none of those attributes, or the floors refused it).
		if m.valueBefore(k, ordinal, seq) && ordinal > m.effective(k.attr) {
			m.hist[k] = append(m.hist[k], mChange{ordinal: ordinal, seq: seq, op: op, tomb: true})
		}
	}
	if len(paths) > 0 {
		var named []uint64
		if !whole {
			named = slices.Clone(attrs)
		}
		m.lifecycle = append(m.lifecycle, mDelete{ordinal: ordinal, seq: seq, prims: slices.Clone(paths), attrs: named})
	}
	if whole {
		for _, p := range paths {
			if !m.revivedAfter(p, ordinal) {
				delete(m.prims, p)
			}
		}
	}
}

// revivedAfter: prim has a value change, or a clone created it, at an ordinal above ordinal.
func (m *goModel) revivedAfter(prim, ordinal uint64) bool {
	for k, changes := range m.hist {
		if k.prim != prim {
			continue
		}
		for _, c := range changes {
			if !c.tomb && c.ordinal > ordinal {
				return true
			}
		}
	}
	for _, d := range m.lifecycle {
		if d.create && d.ordinal > ordinal && slices.Contains(d.prims, prim) {
			return true
		}
	}
	return false
}

// mapSetup is what a map session's setup decides: the schema it maps, the buffer rows it
// starts with (the committed values, zeros where there is none), or the codes it fails with.
type mapSetup struct {
	dt      tensor.DType
	prefill [][]byte
	errs    map[status.Code]bool
}

// planMap decides a map setup over paths; dt zero maps the one schema the prims carry attr in.
// Nothing touching paths may be pending.
func (m *goModel) planMap(attr uint64, dt tensor.DType, ordinal uint64, paths []uint64, insert bool) mapSetup {
	setup := mapSetup{dt: dt, errs: map[status.Code]bool{}}
	if dt == (tensor.DType{}) {
		var found []tensor.DType
		for _, p := range paths {
			for _, s := range m.liveSchemas(mCell{attr, p}) {
				if !slices.Contains(found, s) {
					found = append(found, s)
				}
			}
		}
		if len(found) != 1 {
			setup.errs[status.InvalidArgument] = true // "dtype is required"
			return setup
		}
		setup.dt = found[0]
	}
	seq := m.seq<<20 + 1<<20
	for _, p := range paths {
		if m.cellConflict(mCell{attr, p}, ordinal) {
			setup.errs[status.WriteFloorViolation] = true
		}
		if m.liveOtherSchema(mCell{attr, p}, setup.dt, ordinal, seq) {
			setup.errs[status.InvalidArgument] = true
		}
		if insert && m.prims[p] {
			setup.errs[status.PrimNotFound] = true
		}
	}
	for _, p := range paths {
		v, ok := m.committed(mKey{attr, p, setup.dt})
		if !ok {
			v = string(make([]byte, setup.dt.ElemBytes()))
		}
		setup.prefill = append(setup.prefill, []byte(v))
	}
	return setup
}

// cloneOutcome is what a clone decides: the target path of each subtree prim per target, the
// changes it copies, or the codes it fails with.
type cloneOutcome struct {
	subtree []uint64
	mapped  [][]uint64 // mapped[t][k]: target t's copy of subtree[k]
	errs    map[status.Code]bool
}

// planClone decides a clone of src onto dsts at ordinal. Nothing touching the source or the
// target subtrees may be pending, nor an advance the clone's admission would depend on.
func (m *goModel) planClone(src uint64, dsts []uint64, ordinal uint64, rebase func(p, src, dst uint64) uint64) cloneOutcome {
	out := cloneOutcome{errs: map[status.Code]bool{}}
	if !m.prims[src] {
		out.errs[status.NotFound] = true
		return out
	}
	out.subtree = []uint64{src}
	for p := range m.prims {
		if p != src && m.isUnder(p, src) {
			out.subtree = append(out.subtree, p)
		}
	}
	slices.Sort(out.subtree[1:])
	seen := map[uint64]bool{}
	for _, dst := range dsts {
		row := make([]uint64, len(out.subtree))
		for k, p := range out.subtree {
			row[k] = rebase(p, src, dst)
			switch {
			case k == 0 && m.prims[row[k]]:
				out.errs[status.PrimNotFound] = true // "already exists": nothing is cloned
			case m.prims[row[k]]:
				// An existing prim below an absent target root is merged into; it refuses a
				// cloned attribute it carries in another schema (nothing is cloned).
				for key := range m.hist {
					if key.prim == p && m.live(key) && m.liveOtherSchemaNow(mCell{key.attr, row[k]}, key.dt) {
						out.errs[status.OpFailed] = true
					}
				}
			}
			if seen[row[k]] {
				// One target lands on a prim another target's copy creates.
				out.errs[status.OpFailed] = true
			}
			seen[row[k]] = true
		}
		out.mapped = append(out.mapped, row)
	}
	// Admission: the global floor, and the floor of every attribute the subtree carries.
	if ordinal <= m.global {
		out.errs[status.WriteFloorViolation] = true
	}
	for k := range m.hist {
		if slices.Contains(out.subtree, k.prim) && m.live(k) && ordinal <= m.effective(k.attr) {
			out.errs[status.WriteFloorViolation] = true
		}
	}
	// The policy: the history of every cell of the prims it creates, and their lifecycles.
	for _, row := range out.mapped {
		for _, p := range row {
			if m.primConflict(p, ordinal) {
				out.errs[status.WriteFloorViolation] = true
			}
		}
	}
	return out
}

// acceptClone records a clone that will succeed: every live source key is copied, at ordinal,
// to each target's copy of its prim.
func (m *goModel) acceptClone(op uint64, c cloneOutcome, ordinal uint64, locked []uint64) *mPending {
	seq := m.nextSeq()
	p := &mPending{roots: locked}
	i := uint64(0)
	var keys []mKey
	for k := range m.hist {
		if slices.Contains(c.subtree, k.prim) && m.live(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		v, _ := m.committed(k)
		at := slices.Index(c.subtree, k.prim)
		for _, row := range c.mapped {
			dk := mKey{k.attr, row[at], k.dt}
			m.hist[dk] = append(m.hist[dk], mChange{ordinal: ordinal, seq: seq | i, op: op, value: v})
			p.keys = append(p.keys, dk)
			i++
		}
	}
	var created []uint64
	for _, row := range c.mapped {
		p.creates = append(p.creates, row...)
		created = append(created, row...)
	}
	m.lifecycle = append(m.lifecycle, mDelete{ordinal: ordinal, seq: seq, prims: created, create: true})
	m.pending[op] = p
	return p
}

func compareKeys(a, b mKey) int {
	switch {
	case a.attr != b.attr:
		return cmpU64(a.attr, b.attr)
	case a.prim != b.prim:
		return cmpU64(a.prim, b.prim)
	}
	return cmpU64(uint64(a.dt.Code)<<32|uint64(a.dt.Bits)<<16|uint64(a.dt.Lanes),
		uint64(b.dt.Code)<<32|uint64(b.dt.Bits)<<16|uint64(b.dt.Lanes))
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// finished records that op finished (with the outcome the model decided for it).
func (m *goModel) finished(op uint64) {
	p, ok := m.pending[op]
	delete(m.pending, op)
	if !ok || len(p.fails) > 0 {
		return
	}
	for _, k := range p.keys {
		m.known[k.attr] = true
	}
	for _, prim := range p.creates {
		m.prims[prim] = true
	}
}

// Read outcomes of one key.
const (
	outAbsent = "absent"
	outTomb   = "tomb"
)

func outValue(v string) string      { return "value:" + v }
func outError(c status.Code) string { return "error:" + c.String() }

// mSpan is what a read asks for: the snapshot at end, or (isRange) the changes in
// [start, end]. end = column.Current asks for current values.
type mSpan struct {
	start, end uint64
	isRange    bool
}

// keyOutcome is the outcome of a key when exactly applied of its changes were applied, under
// the read admission rules (ours, or parity: as the reference). A key is selected when it has
// a row (snapshot) or a change in the range. Then: an unsealed selected change at or before
// the end is WRITE_FLOOR_VIOLATION; else a change after the end (ours: a sealed one; never
// for current values) is OUT_OF_RANGE; else the sealed state, which is the state at the end.
//
// served: the read (a snapshot or a range) ends inside the history window (at or above its
// column's version frontier): a change after the end never refuses it, and the key shows its
// newest sealed change at or before the end.
func keyOutcome(applied []mChange, floor uint64, span mSpan, parity, served bool) string {
	hasRow, inRange, unsealedIn, after := false, false, false, false
	var sealed []mChange
	for _, c := range applied {
		hasRow = hasRow || !c.tomb
		if c.ordinal <= floor && (!served || c.ordinal <= span.end) {
			sealed = append(sealed, c)
		}
		if c.ordinal >= span.start && c.ordinal <= span.end {
			inRange = true
			unsealedIn = unsealedIn || c.ordinal > floor
		}
		after = after || (!served && span.end != column.Current && c.ordinal > span.end && (parity || c.ordinal <= floor))
	}
	top, anySealed := newest(sealed)
	switch {
	case !hasRow || (span.isRange && !inRange):
		return outAbsent
	case unsealedIn:
		return outError(status.WriteFloorViolation)
	case after:
		return outError(status.OutOfRange)
	case !anySealed || (top.tomb && !span.isRange):
		return outAbsent
	case top.tomb:
		return outTomb
	}
	return outValue(top.value)
}

// keyOutcomes enumerates the outcomes over every subset of the key's unfinished changes above
// the floor (those at or below it are applied before the read runs: it waits for the advances,
// which wait for them).
func (m *goModel) keyOutcomes(k mKey, floor uint64, span mSpan, parity, served bool) map[string]bool {
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
		out[keyOutcome(subset, floor, span, parity, served)] = true
	}
	return out
}

func (m *goModel) uncertainChanges(paths, attrs []uint64) int {
	most := 0
	for k, changes := range m.hist {
		if !slices.Contains(attrs, k.attr) || !slices.Contains(paths, k.prim) {
			continue
		}
		n := 0
		for _, c := range changes {
			if !m.applied(c) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

type readExpectation struct {
	attrs    []uint64 // in request order
	outcomes map[mKey]map[string]bool
	// sealedTop is each selected key's newest sealed change: a group's ordinal is the newest
	// of its keys'.
	sealedTop map[mKey]uint64
	floors    map[uint64]uint64
}

// versionFrontier is the oldest snapshot end the column of k (its attribute and type) serves
// with a window of keep ordinals: the newest sealed change of any of its keys that lies keep
// or more ordinals behind the floor (its prior state is no longer kept).
func (m *goModel) versionFrontier(k mKey, keep uint64) uint64 {
	floor := m.effective(k.attr)
	if floor < keep {
		return 0
	}
	frontier := uint64(0)
	for o, changes := range m.hist {
		if o.attr != k.attr || o.dt != k.dt {
			continue
		}
		for _, c := range changes {
			if c.ordinal <= floor-keep {
				frontier = max(frontier, c.ordinal)
			}
		}
	}
	return frontier
}

// oldestPreserved is what get_oldest_preserved_ordinal reports with a window of keep ordinals.
func (m *goModel) oldestPreserved(keep uint64) uint64 {
	frontier := uint64(0)
	for k := range m.hist {
		frontier = max(frontier, m.versionFrontier(k, keep))
	}
	return frontier
}

// expectRead is what a read may return; window is the stage's history window (0: none).
func (m *goModel) expectRead(paths, attrs []uint64, span mSpan, parity bool, window uint64) readExpectation {
	exp := readExpectation{attrs: attrs, outcomes: map[mKey]map[string]bool{}, sealedTop: map[mKey]uint64{},
		floors: map[uint64]uint64{}}
	for _, a := range attrs {
		floor := m.effective(a)
		exp.floors[a] = floor
		for k, changes := range m.hist {
			if k.attr != a || !slices.Contains(paths, k.prim) {
				continue
			}
			served := window > 0 && span.end != column.Current && span.end >= m.versionFrontier(k, window)
			exp.outcomes[k] = m.keyOutcomes(k, floor, span, parity, served)
			var sealed []mChange
			for _, c := range changes {
				if c.ordinal <= floor && c.ordinal <= span.end {
					sealed = append(sealed, c)
				}
			}
			if top, ok := newest(sealed); ok {
				exp.sealedTop[k] = top.ordinal
			}
		}
	}
	return exp
}

// failure is the read's outcome when every selected key's outcome is certain: the first
// attribute (in request order) with a failing key fails the read, WRITE_FLOOR_VIOLATION before
// OUT_OF_RANGE; "" for success. decided is false while some key's outcome is uncertain.
func (exp readExpectation) failure() (code string, decided bool) {
	for _, options := range exp.outcomes {
		if len(options) != 1 {
			return "", false
		}
	}
	for _, a := range exp.attrs {
		wfv, oor := false, false
		for k, options := range exp.outcomes {
			if k.attr == a {
				wfv = wfv || options[outError(status.WriteFloorViolation)]
				oor = oor || options[outError(status.OutOfRange)]
			}
		}
		switch {
		case wfv:
			return outError(status.WriteFloorViolation), true
		case oor:
			return outError(status.OutOfRange), true
		}
	}
	return "", true
}

// check compares what a read returned (values by key, tombstone groups by cell: a tombstone
// group has no tensor to name its column) with the expectation; it returns why the result is
// impossible, or "".
func (exp readExpectation) check(values map[mKey]string, tombs map[mCell]int) string {
	cells := map[mCell][]mKey{}
	for k := range exp.outcomes {
		cells[k.cell()] = append(cells[k.cell()], k)
	}
	for k, v := range values {
		options, ok := exp.outcomes[k]
		if !ok {
			return "a value for a key that was never written: " + keyString(k)
		}
		if !options[v] {
			return "key " + keyString(k) + ": got " + quote(v) + ", want one of " + optionsString(options)
		}
	}
	for c := range tombs {
		if len(cells[c]) == 0 {
			return "a tombstone group for a cell that was never written"
		}
	}
	for c, keys := range cells {
		// Keys without a value group took no part in the read (absent) or came back in one of
		// the cell's tombstone groups.
		mustTomb, canTomb := 0, 0
		for _, k := range keys {
			if _, ok := values[k]; ok {
				continue
			}
			options := exp.outcomes[k]
			if options[outTomb] {
				canTomb++
			}
			switch {
			case options[outAbsent]:
			case options[outTomb]:
				mustTomb++
			default:
				return "key " + keyString(k) + ": not returned, want one of " + optionsString(options)
			}
		}
		if n := tombs[c]; n < mustTomb || n > canTomb {
			return "cell of key " + keyString(keys[0]) + ": wrong number of tombstone groups"
		}
	}
	return ""
}
