package core

import (
	"fmt"
	"sync"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// TensorView is one tensor of a group: Rows values of DType in Buffer at ByteOffset.
type TensorView struct {
	Buffer     buffer.Buffer // one reference held by the group
	ByteOffset int
	DType      tensor.DType
	Rows       int64
	DeviceType int32
	DeviceID   int32
}

// Group is a read group: one attribute's values for some of the query's prims.
type Group struct {
	ID        uint64
	Attribute uint64
	Ordinal   uint64
	IsDelete  bool
	IsArray   bool
	Semantic  int32
	// PrimList is borrowed by the user; the group holds a reference.
	PrimList     pathdict.ListID
	PrimOffset   uint32
	PrimCount    uint32
	PrimIndexMap []uint32 // nil: local prim k is list entry PrimOffset+k
	Tensors      []TensorView
	DataIndexMap []uint32 // nil: logical element k uses row k
	FloorOrdinal uint64
	LayoutGen    uint64

	dict      *pathdict.Dictionary
	once      sync.Once
	onRelease func()
	// staged: a map group, whose tensors are writable staging (not sealed data).
	staged bool
}

// SetOnRelease registers cleanup for resources the boundary attached to the group.
func (g *Group) SetOnRelease(fn func()) { g.onRelease = fn }

func (g *Group) release() {
	g.once.Do(func() {
		if g.onRelease != nil {
			g.onRelease()
		}
		for _, t := range g.Tensors {
			t.Buffer.Release()
		}
		if g.PrimList != 0 {
			_, _ = g.dict.Release(g.PrimList)
		}
	})
}

// Read is a read handle: its op produces groups that fetches hand out one by one.
type Read struct {
	Handle uint64
	Op     *sched.Op

	mu        sync.Mutex
	groups    []*Group
	next      int
	releasing bool
}

func (r *Read) setGroups(groups []*Group) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.groups = groups
}

// nextGroup hands out the next unfetched group (nil after the last).
func (r *Read) nextGroup() *Group {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next >= len(r.groups) {
		return nil
	}
	g := r.groups[r.next]
	r.groups[r.next] = nil
	r.next++
	return g
}

func (r *Read) releaseUnfetched() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.groups[r.next:] {
		g.release()
	}
	r.groups, r.next = nil, 0
}

// OrdinalRange selects what a read returns: without a start, the snapshot at End (End =
// column.Current: current values); with one, the changes in [Start, End].
type OrdinalRange struct {
	Start, End uint64
	HasStart   bool
}

// ReadAttributes enqueues a read of attrs over the query's prims. A read sees the floors asked
// for by advances enqueued before it. When nothing it depends on is pending, it runs on the
// caller's thread, so admission failures come back in the enqueue result (op id 0, handle 0);
// otherwise the fetch returns them once the read ran.
func (s *Stage) ReadAttributes(qh uint64, attrs []uint64, rng OrdinalRange) (uint64, uint64, error) {
	return s.ReadAttributesPlaced(qh, attrs, rng, column.Placement{}, Availability{})
}

// ReadAttributesPlaced is ReadAttributes serving the copies on device (zero: each column's
// current copy; availability.go), recording avail's event before the groups are handed out.
func (s *Stage) ReadAttributesPlaced(qh uint64, attrs []uint64, rng OrdinalRange, device column.Placement,
	avail Availability) (uint64, uint64, error) {
	place, err := readPlacement(device)
	if err != nil {
		return 0, 0, err
	}
	event, err := resolveAvailability(avail, place)
	if err != nil {
		return 0, 0, err
	}
	collect := func(q *Query) ([]*Group, error) {
		groups, err := s.collectGroupsLocked(q, attrs, rng)
		if err == nil {
			err = placeGroups(groups, place)
		}
		if rerr := event.record(); err == nil && rerr != nil {
			for _, g := range groups {
				g.release()
			}
			err = rerr
		}
		if err != nil {
			return nil, err
		}
		return groups, nil
	}
	if rng.HasStart && rng.Start > rng.End {
		return 0, 0, status.Errorf(status.InvalidArgument, "ordinal range start %d is after end %d", rng.Start, rng.End)
	}
	for i, a := range attrs {
		if !s.validToken(a) {
			return 0, 0, InvalidToken(fmt.Sprintf("attrs[%d]", i), a)
		}
		if s.tokenName(a) == BuiltinActive {
			return 0, 0, status.Errorf(status.NotSupported, "attrs[%d]: %q is not supported", i, BuiltinActive)
		}
	}
	attrs = append([]uint64(nil), attrs...)
	s.mu.Lock()
	defer s.unlockAndStart()
	q, err := s.queryLocked(qh)
	if err != nil {
		return 0, 0, err
	}
	if q.Producer != nil && q.Producer.Done() && q.Producer.Err() != nil {
		return 0, 0, status.Errorf(status.OpFailed, "query %d failed: %s", qh, status.Describe(q.Producer.Err()))
	}
	r := &Read{Handle: newHandle()}
	deps := s.pendingAdvancesLocked()
	// A ready read runs here (admission failures come back in the enqueue result), unless the
	// query test gate is armed: then it is an op like any other, held by the gate.
	if len(deps) == 0 && (q.Producer == nil || q.Producer.Done()) && !QueryGate.Active() {
		groups, err := collect(q)
		if err != nil {
			return 0, 0, err
		}
		r.groups = groups
		r.Op = s.registerDoneLocked()
	} else {
		r.Op = s.enqueueLocked(opSpec{deps: deps, inputs: []*sched.Op{q.Producer}, gate: QueryGate, event: event, run: func(*sched.Op) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := s.checkLiveLocked(); err != nil {
				return err
			}
			groups, err := collect(q)
			if err != nil {
				return err
			}
			r.setGroups(groups)
			return nil
		}})
		q.addUserLocked(r.Op)
	}
	s.reads[r.Handle] = r
	return r.Handle, r.Op.ID, nil
}

// collectGroupsLocked builds the groups of a read, attribute by attribute in request order,
// failing with the first attribute that fails admission. On failure nothing is held.
func (s *Stage) collectGroupsLocked(q *Query, attrs []uint64, rng OrdinalRange) ([]*Group, error) {
	injectFault(faultReadCollect)
	var groups []*Group
	for _, a := range attrs {
		name := s.tokenName(a)
		column := s.canonicalAttr(a) // an alias reads its storage column (aliases.go)
		var (
			gs  []*Group
			err error
		)
		switch {
		case isDerived(name):
			// Derived built-ins show the current committed state at any ordinal, never
			// floor-gated; they keep no change stream, so ranges select nothing.
			if !rng.HasStart {
				gs, err = s.derivedGroupsLocked(q, a, name, rng.End)
			}
		case rng.HasStart:
			gs, err = s.rangeGroupsLocked(q, column, name, s.bounds(rng))
		default:
			gs, err = s.snapshotGroupsLocked(q, column, name, s.bounds(rng))
		}
		for _, g := range gs {
			g.Attribute = a // reported under the name it was asked by
		}
		groups = append(groups, gs...)
		if err != nil {
			for _, g := range groups {
				g.release()
			}
			return nil, err
		}
	}
	return groups, nil
}

// bounds is what a read asks of each column, under the stage's read admission.
func (s *Stage) bounds(rng OrdinalRange) column.Bounds {
	return column.Bounds{Start: rng.Start, End: rng.End, Admission: s.readAdmission}
}

func (s *Stage) describer(name string) func(uint64) string {
	return func(p uint64) string { return "prim " + s.pathName(p) + " attribute \"" + name + "\"" }
}

// admission keeps the first failure of each kind over an attribute's columns: an unsealed
// selected change (WRITE_FLOOR_VIOLATION) wins over a change after the end (OUT_OF_RANGE).
type admission struct{ unsealed, later error }

func (v *admission) add(err error) {
	if status.CodeOf(err) == status.WriteFloorViolation {
		if v.unsealed == nil {
			v.unsealed = err
		}
	} else if v.later == nil {
		v.later = err
	}
}

func (v *admission) err() error {
	if v.unsealed != nil {
		return v.unsealed
	}
	return v.later
}

// snapshotGroupsLocked returns attribute a at b.End: one group per column with returned keys.
func (s *Stage) snapshotGroupsLocked(q *Query, a uint64, name string, b column.Bounds) ([]*Group, error) {
	var groups []*Group
	var failed admission
	for _, c := range s.columns[a] {
		cache, sel, snap, err := c.ReadSnapshot(q.Paths, q.selections[c], b, s.describer(name))
		q.selections[c] = cache
		if err != nil {
			failed.add(err)
			continue
		}
		if sel.Count == 0 || failed.err() != nil {
			snap.Release()
			continue
		}
		g, err := s.valueGroupLocked(q, a, c, sel.QueryIdx, sel.Count, snap, sel.Rows)
		if err != nil {
			return groups, err
		}
		groups = append(groups, g)
	}
	return groups, failed.err()
}

// rangeGroupsLocked returns the keys of attribute a that changed in [b.Start, b.End]: per
// column a value group and a tombstone group.
func (s *Stage) rangeGroupsLocked(q *Query, a uint64, name string, b column.Bounds) ([]*Group, error) {
	var groups []*Group
	var failed admission
	for _, c := range s.columns[a] {
		sel, err := c.SelectRange(q.Paths, b, s.describer(name))
		if err != nil {
			failed.add(err)
			continue
		}
		if failed.err() != nil {
			if len(sel.ValueRows) > 0 {
				sel.Values.Release()
			}
			continue
		}
		if len(sel.ValueRows) > 0 {
			g, err := s.valueGroupLocked(q, a, c, sel.ValueQueryIdx, len(sel.ValueRows), sel.Values, sel.ValueRows)
			if err != nil {
				return groups, err
			}
			groups = append(groups, g)
		}
		if len(sel.TombQueryIdx) > 0 {
			g, err := s.newGroupLocked(q, a, sel.TombOrdinal, sel.TombQueryIdx)
			if err != nil {
				return groups, err
			}
			g.IsDelete, g.IsArray, g.Semantic = true, c.Schema.IsArray, c.Schema.Semantic
			g.LayoutGen = 0
			groups = append(groups, g)
		}
	}
	return groups, failed.err()
}

// newGroupLocked starts a group over the query's prims queryIdx (nil: all of them, in order),
// holding a reference to the query's path list.
func (s *Stage) newGroupLocked(q *Query, a, ordinal uint64, queryIdx []uint32) (*Group, error) {
	if err := s.dict.AddRef(q.List); err != nil {
		return nil, status.Errorf(status.Internal, "query path list: %v", err)
	}
	count := len(q.Paths)
	if queryIdx != nil {
		count = len(queryIdx)
	}
	return &Group{ID: newHandle(), Attribute: a, Ordinal: ordinal, PrimList: q.List,
		PrimCount: uint32(count), PrimIndexMap: queryIdx, FloorOrdinal: s.floors.effective(a),
		dict: s.dict}, nil
}

// valueGroupLocked makes the group of a snapshot: a fixed column gives one tensor (row k when
// the snapshot is dense, else rows[k] through a data index map), an array column one tensor
// per local prim. It takes over snap's references.
func (s *Stage) valueGroupLocked(q *Query, a uint64, c *column.Column, queryIdx []uint32, count int,
	snap column.Snapshot, rows []int32) (*Group, error) {
	if queryIdx == nil && count != len(q.Paths) {
		snap.Release()
		return nil, status.Errorf(status.Internal, "selection of %d prims without an index map over a %d-prim query", count, len(q.Paths))
	}
	g, err := s.newGroupLocked(q, a, snap.Ordinal, queryIdx)
	if err != nil {
		snap.Release()
		return nil, err
	}
	g.IsArray, g.Semantic, g.LayoutGen = c.Schema.IsArray, c.Schema.Semantic, snap.Layout
	for _, v := range snap.Views {
		g.Tensors = append(g.Tensors, TensorView{Buffer: v.Buffer, ByteOffset: int(v.ByteOffset),
			DType: c.Schema.DType, Rows: v.Rows, DeviceType: v.Buffer.DeviceType(), DeviceID: v.Buffer.DeviceID()})
	}
	if !c.Schema.IsArray && !snap.Dense {
		g.DataIndexMap = make([]uint32, len(rows))
		for k, r := range rows {
			g.DataIndexMap[k] = uint32(r)
		}
	}
	return g, nil
}

func (s *Stage) readLocked(h uint64) (*Read, error) {
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	r, ok := s.reads[h]
	if !ok || r.releasing {
		return nil, status.Errorf(status.InvalidHandle, "read handle %d is not valid on stage %d (released, from another stage, or never created)", h, s.ID)
	}
	return r, nil
}

// FetchReadNext waits up to timeoutNs for the read, then hands out its next group (registered
// until ReleaseGroup). It returns END_OF_ITERATION after the last group and the read op's own
// status when the read failed.
func (s *Stage) FetchReadNext(h, timeoutNs uint64) (*Group, error) {
	r, err := locked(s, func() (*Read, error) { return s.readLocked(h) })
	if err != nil {
		return nil, err
	}
	if err := awaitOp(r.Op, timeoutNs, "read", h); err != nil {
		return nil, err
	}
	g := r.nextGroup()
	if g == nil {
		return nil, status.Errorf(status.EndOfIteration, "read %d has no more groups", h)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		g.release()
		return nil, err
	}
	s.groups[g.ID] = g
	return g, nil
}

// ReadGroupsLeft is how many groups a read that already succeeded still hands out; false while
// its op runs, after it failed, or for a handle that is not valid (fetches report those).
func (s *Stage) ReadGroupsLeft(h uint64) (int, bool) {
	r, err := locked(s, func() (*Read, error) { return s.readLocked(h) })
	if err != nil || !r.Op.Done() || r.Op.Err() != nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.groups) - r.next, true
}

// Group returns a fetched, unreleased group.
func (s *Stage) Group(id uint64) (*Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	g, ok := s.groups[id]
	if !ok {
		return nil, status.Errorf(status.InvalidHandle, "read group %d is not valid on stage %d (already released, or never fetched)", id, s.ID)
	}
	return g, nil
}

// ReleaseGroup releases a fetched group (synchronously). Exports made from it stay valid.
func (s *Stage) ReleaseGroup(id uint64) error {
	g, err := locked(s, func() (*Group, error) {
		if err := s.checkLiveLocked(); err != nil {
			return nil, err
		}
		g, ok := s.groups[id]
		if !ok {
			return nil, status.Errorf(status.InvalidHandle, "read group %d is not valid on stage %d (already released, or never fetched)", id, s.ID)
		}
		delete(s.groups, id)
		return g, nil
	})
	if err != nil {
		return err
	}
	g.release()
	return nil
}

// ReleaseRead releases a read handle after its op; fetched groups stay valid. The release of a
// read whose op already succeeded (every read that ran on the caller's thread) runs here, its
// op registered complete: no worker round trip on the hot read path.
func (s *Stage) ReleaseRead(h uint64) (uint64, error) {
	s.mu.Lock()
	r, err := s.readLocked(h)
	if err != nil {
		s.mu.Unlock()
		return 0, err
	}
	r.releasing = true
	if r.Op.Done() && r.Op.Err() == nil {
		delete(s.reads, h)
		op := s.registerDoneLocked()
		s.mu.Unlock()
		r.releaseUnfetched()
		return op.ID, nil
	}
	defer s.unlockAndStart()
	op := s.enqueueLocked(opSpec{deps: []*sched.Op{r.Op}, run: func(*sched.Op) error {
		r.releaseUnfetched()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.reads != nil {
			delete(s.reads, h)
		}
		return nil
	}})
	return op.ID, nil
}
