package core

import (
	"sync"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// MapRequest is one map_attribute call. DType zero means "use the existing column's schema".
type MapRequest struct {
	Query        uint64
	AttrToken    uint64
	AttrName     string
	Ordinal      uint64
	PrimMode     int32
	DType        tensor.DType
	Semantic     int32
	ElementSizes []uint64 // per query prim: a ragged (array) map; nil: fixed
	// AttributeMode FORCE lets setup tolerate prims of another schema and makes each commit
	// replace their schema (it needs a DType).
	AttributeMode int32
	// Device is where the session stages and whose copy its commits make current (zero: host
	// staging, commits follow the column); Avail is recorded once per accepted commit.
	Device column.Placement
	Avail  Availability
}

// Map is a map session: writable buffers for the query's prims, committed at its ordinal.
// Setting it up changes nothing in the stage; each commit is checked and applied like a write
// when it executes. A commit that fails there makes the session terminal: nothing of it can be
// committed any more, and the final unmap returns that failure without writing.
type Map struct {
	Handle uint64
	Op     *sched.Op
	q      *Query
	w      *preparedWrite // attribute, schema, ordinal, prim mode, placement of the session
	event  *eventRecord   // the placed session's availability event (nil: none)

	mu        sync.Mutex
	groups    []*MapGroup
	next      int
	unmapping bool
	failed    error // the commit failure that made the session terminal
}

// MapGroup is one writable group of a map session; its staging buffer starts with the current
// committed values (beyond the reference, whose staging is uninitialised).
type MapGroup struct {
	Group
	m         *Map
	prims     []uint64
	staging   buffer.Buffer
	rowOff    []int64
	rowLen    []int64
	committed bool
}

// MaxElementSize bounds one prim's element count in a ragged map (element_sizes entries).
const MaxElementSize = 1 << 40

// MapAttribute enqueues a map session of attr over the query's prims at ordinal.
func (s *Stage) MapAttribute(req MapRequest) (uint64, uint64, error) {
	attr, err := s.resolveAttribute(req.AttrToken, req.AttrName, "attribute")
	if err != nil {
		return 0, 0, err
	}
	name := s.tokenName(attr)
	if err := checkNotDerived("", name); err != nil {
		return 0, 0, err
	}
	if req.PrimMode != PrimModeUpsert && req.PrimMode != PrimModeInsert {
		return 0, 0, status.Errorf(status.InvalidArgument, "prim_mode %d is not UPSERT (0) or INSERT (1)", req.PrimMode)
	}
	if err := checkAttributeMode(req.AttributeMode, "attribute_mode"); err != nil {
		return 0, 0, err
	}
	if _, reserved := recordedBuiltins[name]; reserved && req.DType == (tensor.DType{}) {
		req.DType = pathIDType // the one kind a reserved name has: token ids
	}
	if req.AttributeMode == AttributeModeForce && req.DType == (tensor.DType{}) {
		return 0, 0, status.Errorf(status.InvalidArgument, "map_attribute: attribute_mode FORCE requires dtype")
	}
	w := &preparedWrite{attr: attr, ordinal: req.Ordinal, primMode: req.PrimMode, mode: req.AttributeMode, opName: "map_attribute",
		schema: column.Schema{IsArray: req.ElementSizes != nil, DType: req.DType, Semantic: storedSemantic(req.Semantic)}}
	if req.DType != (tensor.DType{}) {
		if err := checkDType(req.DType, "dtype"); err != nil {
			return 0, 0, err
		}
		if err := checkSemanticLayout("", req.Semantic, req.DType, w.schema.IsArray); err != nil {
			return 0, 0, err
		}
		if err := checkReservedAttribute("", name, w.schema, req.AttributeMode == AttributeModeForce); err != nil {
			return 0, 0, err
		}
	}
	if w.place, err = readPlacement(req.Device); err != nil {
		return 0, 0, err
	}
	if w.place.IsCUDA() && req.ElementSizes != nil {
		return 0, 0, status.Errorf(status.NotSupported,
			"placement: %s: array attributes (element_sizes) cannot be mapped on a CUDA device; map them without a placement or on the host", w.place)
	}
	event, err := resolveAvailability(req.Avail, w.place)
	if err != nil {
		return 0, 0, err
	}
	var sizes []int64
	if req.ElementSizes != nil {
		sizes = make([]int64, len(req.ElementSizes))
	}
	for i, n := range req.ElementSizes {
		if n > MaxElementSize {
			return 0, 0, status.Errorf(status.InvalidArgument, "element_sizes[%d] = %d is out of range (at most %d elements per prim)", i, n, MaxElementSize)
		}
		sizes[i] = int64(n)
	}
	s.mu.Lock()
	defer s.unlockAndStart()
	q, err := s.queryLocked(req.Query)
	if err != nil {
		return 0, 0, err
	}
	if err := s.checkAdmission(s.requested.effective(attr), req.Ordinal, attr); err != nil {
		return 0, 0, err
	}
	if (q.Producer == nil || q.Producer.Done()) && sizes != nil && len(sizes) != len(q.Paths) {
		return 0, 0, status.Errorf(status.InvalidArgument, "element_sizes has %d entries for a query of %d prims", len(sizes), len(q.Paths))
	}
	m := &Map{Handle: newHandle(), q: q, w: w, event: event}
	// The setup records the session's event only when it is cancelled before it ran.
	m.Op = s.enqueueLocked(opSpec{inputs: []*sched.Op{q.Producer}, mutation: true, ordinal: req.Ordinal,
		fp: mapFootprint(w), event: event, run: func(op *sched.Op) error { return s.prepareMap(op, m, sizes) }})
	q.addUserLocked(m.Op)
	s.maps[m.Handle] = m
	return m.Handle, m.Op.ID, nil
}

// mapFootprint is what a map setup or commit touches for conflict ordering: the attribute,
// in the session's schema when it is given and the session does not FORCE; INSERT sessions
// are barriers.
func mapFootprint(w *preparedWrite) *footprint {
	sc := w.schema
	if w.mode == AttributeModeForce {
		sc = column.Schema{}
	}
	return &footprint{barrier: w.primMode == PrimModeInsert, attrs: []uint64{w.attr}, schemas: []column.Schema{sc}}
}

// prepareMap resolves the session's schema and allocates its buffers, filled with the current
// committed values. The setup is admitted like a write at the session's ordinal.
func (s *Stage) prepareMap(op *sched.Op, m *Map, sizes []int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return err
	}
	injectFault(faultMapPrepare)
	w, prims := m.w, m.q.Paths
	if sizes != nil && len(sizes) != len(prims) {
		return status.Errorf(status.InvalidArgument, "element_sizes has %d entries for a query of %d prims", len(sizes), len(prims))
	}
	if w.schema.DType == (tensor.DType{}) {
		var found []*column.Column
		for _, c := range s.columns[w.attr] {
			hit := false
			c.Committed(prims, func(int, []byte) { hit = true })
			if hit {
				found = append(found, c)
			}
		}
		if len(found) != 1 {
			return status.Errorf(status.InvalidArgument, "dtype is required: attribute %q has %d schemas on the mapped prims (exactly one is needed to map without a dtype)",
				s.tokenName(w.attr), len(found))
		}
		if found[0].Schema.IsArray != (sizes != nil) {
			return status.Errorf(status.InvalidArgument, "attribute %q is_array=%v: element_sizes must be given exactly for array attributes", s.tokenName(w.attr), found[0].Schema.IsArray)
		}
		semantic := w.schema.Semantic
		w.schema = found[0].Schema
		if semantic != SemanticNone {
			w.schema.Semantic = semantic
		}
	}
	if err := s.admitCellsLocked(w.opName, "", w.attr, prims, w.ordinal, op.ID); err != nil {
		return err
	}
	var col *column.Column
	var err error
	if w.mode == AttributeModeForce {
		col = s.exactColumnLocked(w.attr, w.schema) // prims of other schemas start from zeros
	} else {
		col, err = s.columnForWriteLocked(w, prims, op.ID)
	}
	if err == nil {
		err = s.checkInsertLocked(w, prims)
	}
	if err != nil {
		return err
	}
	g, err := s.newMapGroupLocked(m, col, prims, sizes)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groups = append(m.groups, g)
	return nil
}

func (s *Stage) newMapGroupLocked(m *Map, col *column.Column, prims []uint64, sizes []int64) (*MapGroup, error) {
	w := m.w
	elem := int64(w.schema.DType.ElemBytes())
	g := &MapGroup{m: m, prims: prims}
	total := int64(len(prims)) * elem
	if sizes != nil {
		total = 0
		for _, n := range sizes {
			g.rowOff = append(g.rowOff, total)
			g.rowLen = append(g.rowLen, n)
			total += n * elem
		}
	}
	staging, err := buffer.New(int(total))
	if err != nil {
		return nil, err
	}
	g.staging = staging
	if col != nil {
		dst := staging.Bytes()
		col.Committed(prims, func(k int, v []byte) {
			if sizes == nil {
				copy(dst[int64(k)*elem:int64(k+1)*elem], v)
			} else {
				copy(dst[g.rowOff[k]:g.rowOff[k]+g.rowLen[k]*elem], v)
			}
		})
	}
	if w.place.IsCUDA() {
		// a CUDA session stages on its device (prefilled like host staging)
		if g.staging, err = cuda.Move(staging, w.place); err != nil {
			staging.Release()
			return nil, err
		}
		staging = g.staging
	}
	if err := s.dict.AddRef(m.q.List); err != nil {
		staging.Release()
		return nil, status.Errorf(status.Internal, "query path list: %v", err)
	}
	g.Group = Group{ID: newHandle(), Attribute: w.attr, Ordinal: w.ordinal, IsArray: w.schema.IsArray,
		Semantic: w.schema.Semantic, PrimList: m.q.List, PrimCount: uint32(len(prims)),
		FloorOrdinal: s.floors.effective(w.attr), dict: s.dict, staged: true}
	if sizes == nil {
		g.Tensors = []TensorView{{Buffer: staging.Retain(), DType: w.schema.DType, Rows: int64(len(prims)),
			DeviceType: staging.DeviceType(), DeviceID: staging.DeviceID()}}
	} else {
		for k := range prims {
			g.Tensors = append(g.Tensors, TensorView{Buffer: staging.Retain(), ByteOffset: int(g.rowOff[k]),
				DType: w.schema.DType, Rows: g.rowLen[k], DeviceType: tensor.DeviceCPU})
		}
	}
	return g, nil
}

func (s *Stage) mapLocked(h uint64) (*Map, error) {
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	if h == 0 {
		return nil, status.Errorf(status.InvalidArgument, "map handle 0 is no map session (a rejected map_attribute leaves handle 0)")
	}
	m, ok := s.maps[h]
	if !ok || m.unmapping {
		return nil, status.Errorf(status.InvalidHandle, "map handle %d is not valid on stage %d (unmapped, from another stage, or never created)", h, s.ID)
	}
	return m, nil
}

// FetchMapNext waits for the map session, then hands out its next group (END_OF_ITERATION after
// the last).
func (s *Stage) FetchMapNext(h, timeoutNs uint64) (*MapGroup, error) {
	m, err := locked(s, func() (*Map, error) { return s.mapLocked(h) })
	if err != nil {
		return nil, err
	}
	if err := awaitOp(m.Op, timeoutNs, "map", h); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next >= len(m.groups) {
		return nil, status.Errorf(status.EndOfIteration, "map %d has no more groups", h)
	}
	g := m.groups[m.next]
	m.next++
	return g, nil
}

// UnmapGroup enqueues the commit of one fetched group at the map's ordinal (no completion
// sync).
func (s *Stage) UnmapGroup(h, groupID uint64) (uint64, error) {
	return s.UnmapGroupWithSync(h, groupID, CudaSync{})
}

// UnmapGroupWithSync enqueues the commit of one fetched group at the map's ordinal. sync is
// the caller's write_done_sync: the buffers of this build's sessions are host memory, so a
// non-zero sync is accepted here and fails the commit when it executes (making the session
// terminal). A session has one group (all the query's prims), so after its commit the only
// call left is the final unmap.
func (s *Stage) UnmapGroupWithSync(h, groupID uint64, sync CudaSync) (uint64, error) {
	s.mu.Lock()
	defer s.unlockAndStart()
	m, err := s.mapLocked(h)
	if err != nil {
		return 0, err
	}
	g, err := m.takeFetched(groupID)
	if err != nil {
		return 0, err
	}
	return s.enqueueCommitLocked(m, []*MapGroup{g}, false, sync), nil
}

// terminal is the commit failure that made the session terminal (nil while it is usable).
func (m *Map) terminal() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed
}

// fail makes the session terminal with err (the first failure is the one remembered).
func (m *Map) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failed == nil {
		m.failed = err
	}
}

// takeFetched marks fetched group id committed and returns it (INVALID_HANDLE when it is not
// a fetched, uncommitted group of m).
func (m *Map) takeFetched(id uint64) (*MapGroup, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups[:m.next] {
		if g.ID == id && !g.committed {
			g.committed = true
			return g, nil
		}
	}
	return nil, status.Errorf(status.InvalidHandle, "map group %d is not a fetched, uncommitted group of map %d", id, m.Handle)
}

// takeUncommitted marks every group not committed yet committed and returns them.
func (m *Map) takeUncommitted() []*MapGroup {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*MapGroup
	for _, g := range m.groups {
		if !g.committed {
			g.committed = true
			out = append(out, g)
		}
	}
	return out
}

// takeGroups empties the session's group list and returns what it held.
func (m *Map) takeGroups() []*MapGroup {
	m.mu.Lock()
	defer m.mu.Unlock()
	groups := m.groups
	m.groups = nil
	return groups
}

// UnmapAttribute enqueues the commit of every group not yet committed and ends the session
// (no completion sync).
func (s *Stage) UnmapAttribute(h uint64) (uint64, error) {
	return s.UnmapAttributeWithSync(h, CudaSync{})
}

// UnmapAttributeWithSync enqueues the final unmap: it commits the groups no earlier
// unmap_group committed and ends the session. Once accepted it consumes the handle, whatever
// happens when it executes. With nothing left to commit it only closes the session (sync is
// not looked at); a terminal session closes with its remembered failure, writing nothing.
func (s *Stage) UnmapAttributeWithSync(h uint64, sync CudaSync) (uint64, error) {
	s.mu.Lock()
	defer s.unlockAndStart()
	m, err := s.mapLocked(h)
	if err != nil {
		return 0, err
	}
	m.unmapping = true
	return s.enqueueCommitLocked(m, nil, true, sync), nil
}

// enqueueCommitLocked queues a mutation at the map's ordinal committing groups (all remaining
// ones when final) and, when final, ending the session. It runs after the floor advances to
// its ordinal enqueued before it (which then fail it), and after the session's earlier
// commits (same ordinal: submission order), so it knows whether one of them failed.
func (s *Stage) enqueueCommitLocked(m *Map, groups []*MapGroup, final bool, sync CudaSync) uint64 {
	deps := append(s.advancesOverLocked(m.w.ordinal), m.Op)
	commit := func(op *sched.Op) error {
		if final {
			groups = append(groups, m.takeUncommitted()...)
			defer s.endMap(m)
		}
		if err := m.Op.Err(); err != nil {
			return err
		}
		if err := m.terminal(); err != nil {
			return err
		}
		if len(groups) == 0 {
			return nil // nothing left: the final unmap only closes the session
		}
		name := "unmap_group"
		if final {
			name = "unmap_attribute"
		}
		err := s.commitMapGroups(op, m, groups, sync, name)
		if err != nil {
			m.fail(err)
		}
		return err
	}
	// A placed session records its event once per accepted commit, after it ran (whatever its
	// outcome); a refused record fails the commit op but leaves the session as the commit did.
	op := s.enqueueLocked(opSpec{deps: deps, mutation: true, ordinal: m.w.ordinal,
		writes: []uint64{m.w.attr}, fp: mapFootprint(m.w), event: m.event, run: func(op *sched.Op) error {
			err := commit(op)
			if rerr := m.event.record(); err == nil {
				err = rerr
			}
			return err
		}})

	m.q.addUserLocked(op)
	return op.ID
}

// commitMapGroups commits groups in order; the first failure stops (earlier groups stay).
func (s *Stage) commitMapGroups(op *sched.Op, m *Map, groups []*MapGroup, sync CudaSync, opName string) error {
	if m.w.place.IsCUDA() && !sync.IsZero() {
		// the caller's kernel filled the device staging: wait for it before reading
		dev, err := cuda.Get(int(m.w.place.DeviceID))
		if err == nil {
			err = dev.SyncForeign(sync.Stream, sync.Event)
		}
		if err != nil {
			return status.Errorf(status.OpFailed, "map %d: write_done_sync: %s", m.Handle, status.MessageOf(err))
		}
	} else if !sync.IsZero() {
		return status.Errorf(status.OpFailed,
			"CUDA completion sync is only supported for GPU mapped tensors: map %d stages in host memory, so write_done_sync {stream %#x, event %#x} cannot be waited for; pass a zero sync",
			m.Handle, sync.Stream, sync.Event)
	}
	for _, g := range groups {
		if err := s.commitMapGroup(op, m, g, opName); err != nil {
			return err
		}
	}
	return nil
}

// commitMapGroup writes a group's buffer (copied, so views the caller still holds cannot change
// committed data) at the map's ordinal, under the same checks as a write.
func (s *Stage) commitMapGroup(op *sched.Op, m *Map, g *MapGroup, opName string) error {
	payload, err := cuda.Duplicate(g.staging)
	if err != nil {
		return err
	}
	w := *m.w
	w.payload, w.rowOff, w.rowLen, w.count, w.indexMap, w.mask = payload, g.rowOff, g.rowLen, 0, nil, nil
	w.opName = opName
	w.rows = int64(len(g.prims))
	if w.schema.IsArray {
		w.rows = int64(len(g.rowOff))
	}
	err = s.applyWrite(op, m.q, &w)
	if w.payload.Valid() { // not staged: the commit failed or had no prims
		w.payload.Release()
	}
	return err
}

func (s *Stage) endMap(m *Map) {
	_, _ = locked(s, func() (struct{}, error) {
		if s.maps != nil {
			delete(s.maps, m.Handle)
		}
		return struct{}{}, nil
	})
	for _, g := range m.takeGroups() {
		s.forgetGroup(g.ID)
		g.release()
		g.staging.Release()
	}
}

func (s *Stage) forgetGroup(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.groups != nil {
		delete(s.groups, id)
	}
}

// RegisterMapGroup makes a fetched map group exportable (ExportGroupTensor) until its map ends.
func (s *Stage) RegisterMapGroup(g *MapGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.groups != nil {
		s.groups[g.ID] = &g.Group
	}
}
