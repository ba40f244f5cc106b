package core

import (
	"sync"
	"time"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/dlpack"
)

// TensorView is one tensor of a group: Rows values of DType in Buffer at ByteOffset.
type TensorView struct {
	Buffer     buffer.Buffer // one reference held by the group
	ByteOffset int
	DType      dlpack.DType
	Rows       int64
	DeviceType int32
	DeviceID   int32
}

// Group is a read group (spec §3.6): one attribute's values for some of the query's prims.
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

func (r *Read) releaseUnfetched() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.groups[r.next:] {
		g.release()
	}
	r.groups, r.next = nil, 0
}

// OrdinalRange selects what a read returns (spec §3.6).
type OrdinalRange struct {
	Start, End uint64
	HasStart   bool
}

// ReadAttributes enqueues a read of attrs over the query's prims. A read sees the floors asked
// for by advances enqueued before it. When nothing it depends on is pending, it runs on the
// caller's thread, so admission failures come back in the enqueue result (spec §1.10).
func (s *Stage) ReadAttributes(qh uint64, attrs []uint64, rng OrdinalRange) (uint64, uint64, error) {
	if rng.HasStart && rng.Start > rng.End {
		return 0, 0, status.Errorf(status.InvalidArgument, "ordinal range start %d is after end %d", rng.Start, rng.End)
	}
	if rng.HasStart {
		return 0, 0, status.Errorf(status.NotSupported, "ordinal range reads (OrdinalRange.between) are not implemented yet; use OrdinalRange.latest")
	}
	for i, a := range attrs {
		if _, err := s.dict.TokenString(a); err != nil {
			return 0, 0, status.Errorf(status.InvalidArgument, "attrs[%d]: token %d is not a token of the path dictionary", i, a)
		}
	}
	attrs = append([]uint64(nil), attrs...)
	s.mu.Lock()
	defer s.unlockAndStart()
	q, err := s.queryLocked(qh)
	if err != nil {
		return 0, 0, err
	}
	r := &Read{Handle: newHandle()}
	deps := s.pendingAdvancesLocked()
	if len(deps) == 0 && (q.Producer == nil || q.Producer.Done()) {
		groups, err := s.collectGroupsLocked(q, attrs)
		if err != nil {
			return 0, 0, err
		}
		r.groups = groups
		r.Op = s.registerDoneLocked()
	} else {
		r.Op = s.enqueueLocked(opSpec{deps: deps, inputs: []*sched.Op{q.Producer}, run: func(*sched.Op) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := s.checkLiveLocked(); err != nil {
				return err
			}
			groups, err := s.collectGroupsLocked(q, attrs)
			if err != nil {
				return err
			}
			r.mu.Lock()
			r.groups = groups
			r.mu.Unlock()
			return nil
		}})
		q.addUserLocked(r.Op)
	}
	s.reads[r.Handle] = r
	return r.Handle, r.Op.ID, nil
}

// collectGroupsLocked builds one group per attribute that some query prim carries. On failure
// nothing is held.
func (s *Stage) collectGroupsLocked(q *Query, attrs []uint64) ([]*Group, error) {
	var groups []*Group
	fail := func(err error) ([]*Group, error) {
		for _, g := range groups {
			g.release()
		}
		return nil, err
	}
	for _, a := range attrs {
		name := s.tokenName(a)
		if name == BuiltinActive {
			return fail(status.Errorf(status.NotSupported, "attribute %q is not supported", name))
		}
		c, ok := s.columns[a]
		if !ok {
			continue
		}
		sel := c.Select(q.Paths, q.selections[c])
		q.selections[c] = sel
		if sel.Count == 0 {
			continue
		}
		snap, err := c.Snapshot(sel, func(p uint64) string { return s.pathName(p) + " attribute \"" + name + "\"" })
		if err != nil {
			return fail(err)
		}
		if err := s.dict.AddRef(q.List); err != nil {
			snap.Buffer.Release()
			return fail(status.Errorf(status.Internal, "query path list: %v", err))
		}
		g := &Group{
			ID: newHandle(), Attribute: a, Ordinal: snap.Ordinal, IsArray: c.Schema.IsArray,
			Semantic: c.Schema.Semantic, PrimList: q.List, PrimCount: uint32(sel.Count),
			PrimIndexMap: sel.QueryIdx,
			Tensors: []TensorView{{Buffer: snap.Buffer, DType: c.Schema.DType, Rows: snap.Rows,
				DeviceType: snap.Buffer.DeviceType(), DeviceID: snap.Buffer.DeviceID()}},
			FloorOrdinal: s.floors.effective(a), LayoutGen: snap.LayoutGen, dict: s.dict,
		}
		if !sel.IdentityRows {
			g.DataIndexMap = make([]uint32, sel.Count)
			for k, r := range sel.Rows {
				g.DataIndexMap[k] = uint32(r)
			}
		}
		groups = append(groups, g)
	}
	return groups, nil
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
	s.mu.Lock()
	r, err := s.readLocked(h)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d := time.Duration(-1)
	if timeoutNs != TimeoutInfinite {
		d = time.Duration(min(timeoutNs, uint64(1<<62)))
	}
	if !r.Op.Wait(d) {
		return nil, status.Errorf(status.Timeout, "read %d is not finished", h)
	}
	if err := r.Op.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.next >= len(r.groups) {
		r.mu.Unlock()
		return nil, status.Errorf(status.EndOfIteration, "read %d has no more groups", h)
	}
	g := r.groups[r.next]
	r.groups[r.next] = nil
	r.next++
	r.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		g.release()
		return nil, err
	}
	s.groups[g.ID] = g
	return g, nil
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
	s.mu.Lock()
	if err := s.checkLiveLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	g, ok := s.groups[id]
	if !ok {
		s.mu.Unlock()
		return status.Errorf(status.InvalidHandle, "read group %d is not valid on stage %d (already released, or never fetched)", id, s.ID)
	}
	delete(s.groups, id)
	s.mu.Unlock()
	g.release()
	return nil
}

// ReleaseRead releases a read handle after its op; fetched groups stay valid.
func (s *Stage) ReleaseRead(h uint64) (uint64, error) {
	s.mu.Lock()
	defer s.unlockAndStart()
	r, err := s.readLocked(h)
	if err != nil {
		return 0, err
	}
	r.releasing = true
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
