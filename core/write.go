package core

import (
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/dlpack"
)

// Prim modes (spec §3.8).
const (
	PrimModeUpsert int32 = 0
	PrimModeInsert int32 = 1
)

// WriteRequest is one write_attribute call.
type WriteRequest struct {
	Query     uint64
	AttrToken uint64 // 0: intern AttrName
	AttrName  string
	Ordinal   uint64
	Tensors   []dlpack.Tensor
	// Count addresses the leading Count query prims; 0 means the whole query.
	Count       uint32
	IndexMap    []uint32
	HasIndexMap bool
	Mask        []uint64
	HasMask     bool
	Semantic    int32
	IsArray     bool
	PrimMode    int32
	// Device is the requested placement (zero value: follow the source tensor); Sync is the
	// caller's CUDA work to wait for before the payload is read (placement.go).
	Device column.Placement
	Sync   CudaSync
}

// preparedWrite is a validated write whose payload is already copied into engine memory, so
// the caller's tensor may be freed as soon as the enqueue returns.
type preparedWrite struct {
	attr     uint64
	schema   column.Schema
	rows     int64 // payload rows
	count    uint32
	indexMap []uint32
	mask     []uint64
	primMode int32
	ordinal  uint64
	payload  buffer.Buffer
	place    column.Placement // where the payload (and the column) lives
}

// resolveAttribute returns the token for a token-or-string attribute argument.
func (s *Stage) resolveAttribute(tok uint64, name, arg string) (uint64, error) {
	if tok != 0 {
		if _, err := s.dict.TokenString(tok); err != nil {
			return 0, status.Errorf(status.InvalidArgument, "%s: token %d is not a token of the path dictionary", arg, tok)
		}
		return tok, nil
	}
	t, err := s.dict.InternToken(name)
	if err != nil {
		return 0, status.Errorf(status.InvalidArgument, "%s: %v", arg, err)
	}
	return t, nil
}

// prepareWrite validates everything that does not depend on stage state and copies the payload.
func (s *Stage) prepareWrite(req WriteRequest) (*preparedWrite, error) {
	attr, err := s.resolveAttribute(req.AttrToken, req.AttrName, "attribute")
	if err != nil {
		return nil, err
	}
	name := s.tokenName(attr)
	if derivedBuiltins[name] {
		return nil, status.Errorf(status.NotSupported, "attribute %q is a derived built-in and cannot be written", name)
	}
	if req.PrimMode != PrimModeUpsert && req.PrimMode != PrimModeInsert {
		return nil, status.Errorf(status.InvalidArgument, "prim_mode %d is not UPSERT (0) or INSERT (1)", req.PrimMode)
	}
	if name == BuiltinSchemas && !req.IsArray {
		return nil, status.Errorf(status.InvalidArgument, "attribute %q requires is_array=True", name)
	}
	if req.IsArray {
		return nil, status.Errorf(status.NotSupported, "attribute %q: ragged array writes (is_array=True) are not implemented yet", name)
	}
	if req.HasIndexMap && req.HasMask {
		return nil, status.Errorf(status.InvalidArgument, "index_map and mask are mutually exclusive")
	}
	if (req.HasIndexMap || req.HasMask) && req.Count == 0 {
		return nil, status.Errorf(status.InvalidArgument, "count must be non-zero when index_map or mask is supplied")
	}
	if req.HasIndexMap && len(req.IndexMap) < int(req.Count) {
		return nil, status.Errorf(status.InvalidArgument, "index_map has %d entries, fewer than count %d", len(req.IndexMap), req.Count)
	}
	if req.HasMask && len(req.Mask)*64 < int(req.Count) {
		return nil, status.Errorf(status.InvalidArgument, "mask has %d words, fewer than ceil(count/64) for count %d", len(req.Mask), req.Count)
	}
	if len(req.Tensors) != 1 {
		return nil, status.Errorf(status.InvalidArgument, "tensors: a fixed-size write takes exactly 1 tensor, got %d", len(req.Tensors))
	}
	t := req.Tensors[0]
	if err := checkDevice(t, "tensors[0]"); err != nil {
		return nil, err
	}
	place, err := resolvePlacement(t, req.Device, "tensors[0]")
	if err != nil {
		return nil, err
	}
	dt, rows, err := foldFixed(t, "tensors[0]")
	if err != nil {
		return nil, err
	}
	if err := checkSemanticLayout(req.Semantic, dt, req.IsArray); err != nil {
		return nil, err
	}
	if req.HasIndexMap {
		for i, v := range req.IndexMap[:req.Count] {
			if int64(v) >= rows {
				return nil, status.Errorf(status.InvalidArgument, "index_map[%d] = %d is not below the payload's %d rows", i, v, rows)
			}
		}
	}
	payload, err := copyIn(t, place, req.Sync, "tensors[0]")
	if err != nil {
		return nil, err
	}
	w := &preparedWrite{
		place:    place,
		attr:     attr,
		schema:   column.Schema{IsArray: req.IsArray, DType: dt, Semantic: req.Semantic},
		rows:     rows,
		count:    req.Count,
		primMode: req.PrimMode,
		ordinal:  req.Ordinal,
		payload:  payload,
	}
	if req.HasIndexMap {
		w.indexMap = req.IndexMap[:req.Count]
	}
	if req.HasMask {
		w.mask = req.Mask
	}
	return w, nil
}

// targets resolves which prims the write touches and which payload row each takes.
func (w *preparedWrite) targets(paths []uint64) ([]uint64, []int32, error) {
	logical := len(paths)
	if w.count > 0 {
		if int(w.count) > len(paths) {
			return nil, nil, status.Errorf(status.InvalidArgument, "count %d exceeds the query's %d prims", w.count, len(paths))
		}
		logical = int(w.count)
	}
	if logical == 0 {
		return nil, nil, nil
	}
	if w.indexMap == nil && w.rows != int64(logical) {
		return nil, nil, status.Errorf(status.InvalidArgument,
			"tensors[0]: %d payload rows do not match the %d prims written (rows are the leading dimension; a flat (N*L,) tensor is not re-read as N rows of L lanes)",
			w.rows, logical)
	}
	if w.indexMap == nil && w.mask == nil {
		return paths[:logical], nil, nil
	}
	out := make([]uint64, 0, logical)
	src := make([]int32, 0, logical)
	for i := 0; i < logical; i++ {
		if w.mask != nil && w.mask[i/64]&(1<<(uint(i)%64)) == 0 {
			continue
		}
		out = append(out, paths[i])
		if w.indexMap != nil {
			src = append(src, int32(w.indexMap[i]))
		} else {
			src = append(src, int32(i))
		}
	}
	return out, src, nil
}

// checkSchemaLocked verifies the write matches an existing column's schema and role.
func (s *Stage) checkSchemaLocked(w *preparedWrite) error {
	c, ok := s.columns[w.attr]
	if !ok {
		return nil
	}
	if c.Schema.IsArray != w.schema.IsArray || c.Schema.DType != w.schema.DType {
		return status.Errorf(status.InvalidArgument,
			"attribute %q exists as %s (is_array=%v); writing %s (is_array=%v) would change its schema: delete the attribute first",
			s.tokenName(w.attr), c.Schema.DType, c.Schema.IsArray, w.schema.DType, w.schema.IsArray)
	}
	if w.schema.Semantic != SemanticNone && w.schema.Semantic != c.Schema.Semantic {
		return status.Errorf(status.InvalidArgument, "attribute %q has semantic %d; a write with semantic %d cannot change its role",
			s.tokenName(w.attr), c.Schema.Semantic, w.schema.Semantic)
	}
	return checkPlacement(s.tokenName(w.attr), c.Placement(), w.place)
}

func (s *Stage) checkInsertLocked(w *preparedWrite, targets []uint64) error {
	if w.primMode != PrimModeInsert {
		return nil
	}
	for _, p := range targets {
		if _, ok := s.prims[p]; ok {
			return status.Errorf(status.PrimNotFound, "INSERT: prim %s already exists (INSERT only creates prims); nothing was written", s.pathName(p))
		}
	}
	return nil
}

func (s *Stage) checkAdmission(floor uint64, w *preparedWrite) error {
	if w.ordinal <= floor {
		return status.Errorf(status.WriteFloorViolation, "ordinal %d is at or below the write floor %d of attribute %q",
			w.ordinal, floor, s.tokenName(w.attr))
	}
	return nil
}

// WriteAttribute validates and copies the payload, then enqueues the write at its ordinal.
func (s *Stage) WriteAttribute(req WriteRequest) (uint64, error) {
	w, err := s.prepareWrite(req)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.unlockAndStart()
	id, err := s.enqueueWriteLocked(req.Query, w)
	if err != nil {
		w.payload.Release()
	}
	return id, err
}

func (s *Stage) enqueueWriteLocked(qh uint64, w *preparedWrite) (uint64, error) {
	q, err := s.queryLocked(qh)
	if err != nil {
		return 0, err
	}
	if err := s.checkAdmission(s.requested.effective(w.attr), w); err != nil {
		return 0, err
	}
	if err := s.checkSchemaLocked(w); err != nil {
		return 0, err
	}
	if q.Producer == nil || q.Producer.Done() {
		targets, _, err := w.targets(q.Paths)
		if err != nil {
			return 0, err
		}
		if err := s.checkInsertLocked(w, targets); err != nil {
			return 0, err
		}
	}
	op := s.enqueueLocked(opSpec{
		inputs: []*sched.Op{q.Producer}, mutation: true, ordinal: w.ordinal,
		run: func(op *sched.Op) error { return s.applyWrite(op, q, w) },
	})
	q.addUserLocked(op)
	return op.ID, nil
}

// applyWrite runs on a worker: it re-checks admission against the applied floors, creates prims
// and the column as needed, and stages the payload as a delta at the write's ordinal.
func (s *Stage) applyWrite(op *sched.Op, q *Query, w *preparedWrite) error {
	staged := false
	defer func() {
		if !staged {
			w.payload.Release()
		}
	}()
	s.mu.Lock()
	if err := s.checkLiveLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	targets, src, err := w.targets(q.Paths)
	if err == nil {
		err = s.checkAdmission(s.floors.effective(w.attr), w)
	}
	if err == nil {
		err = s.checkSchemaLocked(w)
	}
	if err == nil {
		err = s.checkInsertLocked(w, targets)
	}
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if len(targets) == 0 {
		s.mu.Unlock()
		return nil
	}
	c, ok := s.columns[w.attr]
	if !ok {
		var store column.Storage
		if store, err = newStorage(w.place); err == nil {
			c, err = column.NewPlaced(w.attr, w.schema, store)
		}
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.columns[w.attr] = c
	}
	s.mu.Unlock()
	staged = true
	if c.Stage(w.ordinal, op.ID, targets, src, w.payload) {
		// New rows mean possibly new prims; existing rows' prims are already recorded.
		s.mu.Lock()
		for _, p := range targets {
			s.prims[p] = struct{}{}
		}
		s.mu.Unlock()
	}
	return nil
}
