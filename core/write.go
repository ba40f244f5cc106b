package core

import (
	"fmt"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
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
	Tensors   []tensor.Tensor
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

// preparedWrite is a validated write. Its payload is copied into engine memory at enqueue, so
// the caller's tensors may be freed as soon as the enqueue returns, except for large host
// payloads (see DeferCopyBytes): those are copied by the op on a worker, and the caller keeps
// the source alive and unchanged until the op completes (the reference's contract for every
// write, spec §3.8).
type preparedWrite struct {
	label    string // argument name for messages ("writes[1]" in a batch)
	attr     uint64
	schema   column.Schema
	rows     int64   // payload source rows (array, packed: inferred when resolved)
	shape    []int64 // a fixed payload's source shape (for messages)
	count    uint32
	indexMap []uint32
	mask     []uint64
	primMode int32
	ordinal  uint64
	payload  buffer.Buffer
	// Array columns: byte offset and element count of each source row in payload. A packed
	// payload (one tensor of uniform rows) is split when the logical row count is known, into
	// rows of width bytes (widthElems elements) that are computed, not materialized.
	rowOff, rowLen    []int64
	packed, split     bool
	width, widthElems int64
	// size is the payload's byte size; src holds the tensors of a deferred copy (nil once
	// copied); delta is the storage of the staged delta (one allocation per write).
	size  int64
	src   []tensor.Tensor
	delta column.Delta
	// place is where the payload (and a column the write creates) lives; the zero value (map
	// commits, clones) adopts the existing column's placement, or the host (placement.go).
	place column.Placement
}

// resolveAttribute returns the token for a token-or-string attribute argument.
func (s *Stage) resolveAttribute(tok uint64, name, arg string) (uint64, error) {
	if tok != 0 || name == "" {
		if !s.validToken(tok) {
			return 0, InvalidToken(arg, tok)
		}
		return tok, nil
	}
	t, err := s.dict.InternToken(name)
	if err != nil {
		return 0, status.Errorf(status.InvalidArgument, "%s: %v", arg, err)
	}
	return t, nil
}

// InvalidToken is the error for an attribute argument arg holding token tok, which names no
// attribute: 0 (never a token) or a value the path dictionary never issued.
func InvalidToken(arg string, tok uint64) error {
	if tok == 0 {
		return status.Errorf(status.InvalidArgument, "%s: token 0 is not a valid token", arg)
	}
	return status.Errorf(status.InvalidArgument, "%s: token %d is not a token of the path dictionary", arg, tok)
}

// validToken reports whether tok is a token of the path dictionary (0 never is).
func (s *Stage) validToken(tok uint64) bool {
	if tok == 0 {
		return false
	}
	_, err := s.dict.TokenString(tok)
	return err == nil
}

// checkSparsity holds the rules of a write's sparse addressing (count, index_map, mask), checked
// first, from the request alone: they are malformed-request errors (status.Malformedf), which
// the Python package raises as ValueError.
func checkSparsity(req *WriteRequest, label string) error {
	if req.HasIndexMap && req.HasMask {
		return status.Malformedf("%sindex_map and mask are mutually exclusive", label)
	}
	if (req.HasIndexMap || req.HasMask) && req.Count == 0 {
		return status.Malformedf("%scount must be non-zero when index_map or mask is supplied", label)
	}
	if req.HasIndexMap && len(req.IndexMap) < int(req.Count) {
		return status.Malformedf("%sindex_map has %d entries, fewer than count %d", label, len(req.IndexMap), req.Count)
	}
	if req.HasMask && len(req.Mask)*64 < int(req.Count) {
		return status.Malformedf("%smask has %d words, fewer than ceil(count/64) for count %d", label, len(req.Mask), req.Count)
	}
	return nil
}

// prepareWrite validates everything that does not depend on stage state and copies the payload.
// queryPrims is the prim count of the write's query when it is already resolved (-1 if not).
func (s *Stage) prepareWrite(req WriteRequest, label string, queryPrims int) (*preparedWrite, error) {
	w := &preparedWrite{}
	if err := s.prepareWriteInto(w, &req, label, queryPrims); err != nil {
		return nil, err
	}
	return w, nil
}

// prepareWriteInto is prepareWrite into caller-provided zeroed storage. On failure nothing is
// held.
func (s *Stage) prepareWriteInto(w *preparedWrite, req *WriteRequest, label string, queryPrims int) error {
	if err := checkSparsity(req, label); err != nil {
		return err
	}
	attr, err := s.resolveAttribute(req.AttrToken, req.AttrName, label+"attribute")
	if err != nil {
		return err
	}
	name := s.tokenName(attr)
	if err := checkNotDerived(label, name); err != nil {
		return err
	}
	if req.PrimMode != PrimModeUpsert && req.PrimMode != PrimModeInsert {
		return status.Errorf(status.InvalidArgument, "prim_mode %d is not UPSERT (0) or INSERT (1)", req.PrimMode)
	}
	if len(req.Tensors) == 0 {
		return status.Errorf(status.InvalidArgument, "%stensors: at least one tensor is required", label)
	}
	// w is fresh (zero) storage: set fields one by one rather than copying a whole literal.
	w.label, w.attr, w.count, w.primMode, w.ordinal = label, attr, req.Count, req.PrimMode, req.Ordinal
	if w.place, err = resolvePlacement(req.Tensors[0], req.Device, label+"tensors[0]"); err != nil {
		return err
	}
	if req.HasIndexMap {
		w.indexMap = req.IndexMap[:req.Count]
	}
	if req.HasMask {
		w.mask = req.Mask
	}
	var dt tensor.DType
	if req.IsArray {
		dt, err = w.prepareArray(req.Tensors)
	} else {
		dt, err = w.prepareFixed(req.Tensors)
	}
	if err != nil {
		return err
	}
	w.schema = column.Schema{IsArray: req.IsArray, DType: dt, Semantic: storedSemantic(req.Semantic)}
	if err := checkSemanticLayout(label, req.Semantic, dt, req.IsArray); err != nil {
		return err
	}
	if err := checkReservedAttribute(label, name, w.schema, false); err != nil {
		return err
	}
	tensors := req.Tensors
	if w.indexMap != nil && !w.packed {
		used := int64(0)
		for i, v := range w.indexMap {
			if int64(v) >= w.rows {
				return status.Errorf(status.InvalidArgument, "%sindex_map[%d] = %d is not below the payload's %d rows", label, i, v, w.rows)
			}
			used = max(used, int64(v)+1)
		}
		tensors = w.referencedRows(tensors, used)
	}
	for _, t := range tensors {
		w.size += t.ByteSize()
	}
	// Rows are checked before anything is allocated or copied, wherever the query already
	// says how many prims the write addresses: a shape claiming more rows than exist would
	// otherwise be read in full.
	if err := w.checkRowsEarly(queryPrims); err != nil {
		return err
	}
	if needsGPU(tensors, w.place, req.Sync) {
		// a GPU is involved: copy now, device to device where possible (placement.go)
		return w.copyPayloadPlaced(tensors, req.Sync)
	}
	if deferCopy(tensors, w.size) {
		w.src = tensors
		return nil
	}
	return w.copyPayload(tensors, nil)
}

// referencedRows drops the source rows no index_map entry reads (the rows from used on), so
// they are never copied: one fixed tensor is cut to its leading used rows, per-row tensors to
// the first used.
func (w *preparedWrite) referencedRows(tensors []tensor.Tensor, used int64) []tensor.Tensor {
	if used >= w.rows {
		return tensors
	}
	w.rows = used
	if w.schema.IsArray {
		return tensors[:used]
	}
	t := tensors[0]
	t.Shape = append([]int64(nil), t.Shape...)
	t.Shape[0] = used
	return []tensor.Tensor{t}
}

func (w *preparedWrite) prepareFixed(tensors []tensor.Tensor) (tensor.DType, error) {
	if len(tensors) != 1 {
		return tensor.DType{}, status.Errorf(status.InvalidArgument, "%stensors: a fixed-size write (is_array=False) takes exactly 1 tensor, got %d", w.label, len(tensors))
	}
	name := w.label + "tensors[0]"
	if err := checkDevice(tensors[0], name); err != nil {
		return tensor.DType{}, err
	}
	dt, rows, err := foldFixed(tensors[0], name)
	w.rows, w.shape = rows, tensors[0].Shape
	return dt, err
}

// prepareArray validates ragged payloads: one tensor of packed uniform rows, or one tensor per
// source row. Lanes are taken literally as the element width; trailing dims never fold.
func (w *preparedWrite) prepareArray(tensors []tensor.Tensor) (tensor.DType, error) {
	dt := tensors[0].DType
	for i, t := range tensors {
		name := fmt.Sprintf("%stensors[%d]", w.label, i)
		if err := checkDevice(t, name); err != nil {
			return tensor.DType{}, err
		}
		if err := checkDType(t.DType, name); err != nil {
			return tensor.DType{}, err
		}
		if t.DType != dt {
			return tensor.DType{}, status.Errorf(status.InvalidArgument, "%s: dtype %s differs from tensors[0]'s %s (one element type per attribute)", name, t.DType, dt)
		}
	}
	if len(tensors) == 1 {
		w.packed = true
		return dt, nil
	}
	w.rows = int64(len(tensors))
	return dt, nil
}

// copyPayload copies every tensor back to back into one engine buffer (pool, if not nil,
// lends free worker slots to split large copies).
func (w *preparedWrite) copyPayload(tensors []tensor.Tensor, pool *sched.Pool) error {
	total := int64(0)
	for _, t := range tensors {
		total += t.ByteSize()
	}
	payload, err := buffer.NewUninit(int(total))
	if err != nil {
		return err
	}
	dst := payload.Bytes()
	off := int64(0)
	for _, t := range tensors {
		n := t.ByteSize()
		if err := copyTensor(dst[off:off+n], t, pool); err != nil {
			payload.Release()
			return err
		}
		if w.schema.IsArray && !w.packed {
			w.rowOff = append(w.rowOff, off)
			w.rowLen = append(w.rowLen, t.NumElements())
		}
		off += n
	}
	w.payload = payload
	return nil
}

// splitPacked divides a packed array payload into rows, once the logical row count is known.
func (w *preparedWrite) splitPacked(logical int) error {
	if !w.packed || w.split {
		return nil
	}
	rows := int64(logical)
	what := "the logical element count"
	if w.indexMap != nil {
		rows = 0
		for _, v := range w.indexMap {
			rows = max(rows, int64(v)+1)
		}
		what = "max(index_map)+1"
	}
	size := w.size
	elem := int64(w.schema.DType.ElemBytes())
	if rows == 0 || size%rows != 0 || (size/rows)%elem != 0 {
		return status.Errorf(status.InvalidArgument,
			"%stensors[0]: %d payload bytes do not split into %d (%s) uniform rows of whole %s elements",
			w.label, size, rows, what, w.schema.DType)
	}
	w.rows, w.split = rows, true
	w.width = size / rows
	w.widthElems = w.width / elem
	return nil
}

// logicalCount is the number of prims a write addresses in a query of n prims: count, or the
// whole query.
func (w *preparedWrite) logicalCount(n int) (int, error) {
	if w.count == 0 {
		return n, nil
	}
	if int(w.count) > n {
		return 0, status.Errorf(status.InvalidArgument, "%scount %d exceeds the query's %d prims", w.label, w.count, n)
	}
	return int(w.count), nil
}

// checkRows checks the payload's rows against the logical prims a write addresses (none:
// an empty target set skips the payload checks), splitting a packed payload into its rows.
func (w *preparedWrite) checkRows(logical int) error {
	if logical == 0 {
		return nil
	}
	if err := w.splitPacked(logical); err != nil {
		return err
	}
	if w.indexMap == nil && w.rows != int64(logical) {
		if w.schema.IsArray {
			return status.Errorf(status.InvalidArgument, "%stensors: %d per-row tensors do not match the %d prims written",
				w.label, w.rows, logical)
		}
		return status.Errorf(status.InvalidArgument,
			"%stensors[0]: shape %v has %d payload rows (the leading dimension; a flat (N*L,) tensor is not re-read as N rows of L lanes), which do not match the %d prims written",
			w.label, w.shape, w.rows, logical)
	}
	return nil
}

// checkRowsEarly is checkRows before the payload is copied, as far as the query is known:
// queryPrims is its prim count when resolved (else -1, and only a non-zero count is checked).
func (w *preparedWrite) checkRowsEarly(queryPrims int) error {
	logical := int(w.count)
	if queryPrims >= 0 {
		var err error
		if logical, err = w.logicalCount(queryPrims); err != nil {
			return err
		}
	}
	return w.checkRows(logical)
}

// targets resolves which prims the write touches and which payload row each takes.
func (w *preparedWrite) targets(paths []uint64) ([]uint64, []int32, error) {
	logical, err := w.logicalCount(len(paths))
	if err != nil {
		return nil, nil, err
	}
	if logical == 0 {
		return nil, nil, nil
	}
	if err := w.checkRows(logical); err != nil {
		return nil, nil, err
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

func sameStorage(a, b column.Schema) bool { return a.IsArray == b.IsArray && a.DType == b.DType }

// columnForWriteLocked finds the column a write goes to: the column of the attribute with the
// write's storage schema and role (semantic NONE matches any role). It returns nil when a new
// column is needed, and rejects a schema or role change on a prim that carries the attribute
// (spec §1.4: delete the attribute first). Columns are keyed by (storage, role) so a deleted
// attribute frees both.
func (s *Stage) columnForWriteLocked(w *preparedWrite, targets []uint64) (*column.Column, error) {
	cols := s.columns[w.attr]
	matches := func(c *column.Column) (storage, role bool) {
		return sameStorage(c.Schema, w.schema),
			w.schema.Semantic == SemanticNone || w.schema.Semantic == c.Schema.Semantic
	}
	if len(cols) == 1 && sameChannel(cols[0].Schema, w.schema) { // the common case needs no per-prim liveness checks
		if storage, role := matches(cols[0]); storage && role {
			return cols[0], s.checkPlacement(w, cols[0])
		}
	}
	var target *column.Column
	targetLive := false
	for _, c := range cols {
		if !sameChannel(c.Schema, w.schema) {
			continue // a connection and a value of one name live side by side
		}
		live := firstLive(c, targets)
		storage, role := matches(c)
		switch {
		case !storage && live != 0:
			return nil, status.Errorf(status.InvalidArgument,
				"%sattribute %q on %s is %s (is_array=%v); writing %s (is_array=%v) would change its schema: delete the attribute first",
				w.label, s.tokenName(w.attr), s.pathName(live), c.Schema.DType, c.Schema.IsArray, w.schema.DType, w.schema.IsArray)
		case storage && !role && live != 0:
			return nil, status.Errorf(status.InvalidArgument,
				"%sattribute %q on %s has semantic %d; a write with semantic %d cannot change its role: delete the attribute first",
				w.label, s.tokenName(w.attr), s.pathName(live), c.Schema.Semantic, w.schema.Semantic)
		case storage && role && (target == nil || (live != 0 && !targetLive)):
			target, targetLive = c, live != 0
		}
	}
	return target, s.checkPlacement(w, target)
}

// firstLive returns the first of prims that carries c's attribute (0 when none does).
func firstLive(c *column.Column, prims []uint64) uint64 {
	for _, p := range prims {
		if c.Live(p) {
			return p
		}
	}
	return 0
}

func (s *Stage) checkInsertLocked(w *preparedWrite, targets []uint64) error {
	if w.primMode != PrimModeInsert {
		return nil
	}
	for _, p := range targets {
		if s.prims.has(p) {
			return status.Errorf(status.PrimNotFound, "INSERT: prim %s already exists (INSERT only creates prims); nothing was written", s.pathName(p))
		}
	}
	return nil
}

// checkGlobalAdmission refuses an ordinal at or below the applied global floor (a clone of
// prims that carry no attribute is still a mutation at its ordinal).
func (s *Stage) checkGlobalAdmission(ordinal uint64) error {
	if ordinal <= s.floors.global {
		return status.Errorf(status.WriteFloorViolation, "ordinal %d is at or below the global write floor %d", ordinal, s.floors.global)
	}
	return nil
}

func (s *Stage) checkAdmission(floor, ordinal, attr uint64) error {
	if ordinal <= floor {
		return status.Errorf(status.WriteFloorViolation, "ordinal %d is at or below the write floor %d of attribute %q",
			ordinal, floor, s.tokenName(attr))
	}
	return nil
}

// WriteAttribute validates and copies the payload, then enqueues the write at its ordinal.
func (s *Stage) WriteAttribute(req WriteRequest) (uint64, error) {
	o := &writeOp{}
	if err := s.prepareWriteInto(&o.one, &req, "", s.resolvedPrims(req.Query)); err != nil {
		return 0, err
	}
	o.ws = o.oneList[:]
	o.oneList[0] = &o.one
	return s.enqueueWrites(req.Query, o)
}

// WriteAttributes enqueues a batch of writes of distinct attributes at one ordinal: the whole
// batch is validated before anything is queued, and one op covers it.
func (s *Stage) WriteAttributes(query, ordinal uint64, primMode int32, reqs []WriteRequest) (uint64, error) {
	if len(reqs) == 0 {
		return 0, status.Errorf(status.InvalidArgument, "writes must contain at least one entry")
	}
	o := &writeOp{ws: make([]*preparedWrite, 0, len(reqs))}
	seen := map[uint64]int{}
	prims := s.resolvedPrims(query)
	for i, req := range reqs {
		req.Ordinal, req.PrimMode = ordinal, primMode
		w, err := s.prepareWrite(req, fmt.Sprintf("writes[%d]: ", i), prims)
		if err != nil {
			o.releasePayloads()
			return 0, err
		}
		o.ws = append(o.ws, w)
		if j, dup := seen[w.attr]; dup {
			o.releasePayloads()
			return 0, status.Errorf(status.InvalidArgument, "writes[%d] and writes[%d] both write attribute %q; batch entries must name distinct attributes",
				j, i, s.tokenName(w.attr))
		}
		seen[w.attr] = i
	}
	return s.enqueueWrites(query, o)
}

// writeOp is one write or write batch: the op, its entries and (for a single write) their
// storage, allocated together.
type writeOp struct {
	stageOp
	q       *Query
	ws      []*preparedWrite
	one     preparedWrite
	oneList [1]*preparedWrite
	oneAttr [1]uint64
}

// Run applies the entries (on a worker, or inline when the op is ready at enqueue).
func (o *writeOp) Run(op *sched.Op) error { return o.s.applyWrites(op, o.q, o.ws) }

// Cleanup releases payloads that were not staged (failed entries, failed inputs, a failure
// injected by a test gate), then does the stage bookkeeping.
func (o *writeOp) Cleanup(op *sched.Op) {
	o.releasePayloads()
	o.stageOp.Cleanup(op)
}

func (o *writeOp) releasePayloads() {
	for _, w := range o.ws {
		if w.payload.Valid() {
			w.payload.Release()
			w.payload = buffer.Buffer{}
		}
		w.src = nil
	}
}

func (s *Stage) enqueueWrites(qh uint64, o *writeOp) (uint64, error) {
	s.mu.Lock()
	defer s.unlockAndStart()
	id, err := s.enqueueWritesLocked(qh, o)
	if err != nil {
		o.releasePayloads()
	}
	return id, err
}

func (s *Stage) enqueueWritesLocked(qh uint64, o *writeOp) (uint64, error) {
	q, err := s.queryLocked(qh)
	if err != nil {
		return 0, err
	}
	resolved := q.Producer == nil || q.Producer.Done()
	deferred := false
	for _, w := range o.ws {
		deferred = deferred || w.src != nil
		o.heldSource = o.heldSource || holdsSource(w.size)
		// A layout (schema) error is reported before a floor violation, as the reference does.
		var targets []uint64
		if resolved {
			if targets, _, err = w.targets(q.Paths); err != nil {
				return 0, err
			}
			if _, err := s.columnForWriteLocked(w, targets); err != nil {
				return 0, err
			}
		}
		if err := s.checkAdmission(s.requested.effective(w.attr), w.ordinal, w.attr); err != nil {
			return 0, err
		}
		if resolved {
			if err := s.checkInsertLocked(w, targets); err != nil {
				return 0, err
			}
		}
	}
	o.q, o.mutation, o.ordinal = q, true, o.ws[0].ordinal
	o.writes = o.oneAttr[:]
	if len(o.ws) > 1 {
		o.writes = make([]uint64, len(o.ws))
	}
	for i, w := range o.ws {
		o.writes[i] = w.attr
	}
	var inputs [1]*sched.Op
	inputs[0] = q.Producer
	op := s.enqueueOpLocked(&o.stageOp, o, nil, inputs[:], deferred)
	q.addUserLocked(op)
	return op.ID, nil
}

// applyWrites runs on a worker: per entry it re-checks admission against the applied floors,
// creates prims and the column as needed, and stages the payload as a delta. Entries apply in
// order; a failing entry stops the batch (earlier entries stay applied, spec §3.8). Payloads
// left unstaged are released by writeOp.Cleanup.
func (s *Stage) applyWrites(op *sched.Op, q *Query, ws []*preparedWrite) error {
	if len(ws) > 1 && ws[0].primMode == PrimModeInsert {
		// INSERT applies to the batch as a whole: check every entry's prims before the first
		// entry creates them, then apply the entries as upserts. (Payloads of entries that
		// are not staged are released by writeOp.Cleanup.)
		if err := s.checkBatchInsert(q, ws); err != nil {
			return err
		}
		for _, w := range ws {
			w.primMode = PrimModeUpsert
		}
	}
	for _, w := range ws {
		if err := s.applyWrite(op, q, w); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stage) checkBatchInsert(q *Query, ws []*preparedWrite) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range ws {
		targets, _, err := w.targets(q.Paths)
		if err == nil {
			err = s.checkInsertLocked(w, targets)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Stage) applyWrite(op *sched.Op, q *Query, w *preparedWrite) error {
	// The query was resolved before this op ran (it is an input), so its paths are stable.
	// Rows are checked before a deferred copy reads the source.
	targets, src, err := w.targets(q.Paths)
	if err != nil {
		return err
	}
	if w.src != nil && len(targets) > 0 {
		// Deferred copy-in, outside the stage lock so other ops proceed meanwhile.
		err := w.copyPayload(w.src, s.pool)
		w.src = nil
		if err != nil {
			return err
		}
	}
	w.src = nil
	if err := s.checkSingularConnections(w, targets, src); err != nil {
		return err
	}
	c, err := s.writeColumn(w, targets)
	if err != nil || len(targets) == 0 {
		return err
	}
	w.delta = column.Delta{Ordinal: w.ordinal, Seq: op.ID, Src: src, Payload: w.payload, RowOff: w.rowOff, RowLen: w.rowLen,
		Width: w.width, WidthElems: w.widthElems}
	w.payload = buffer.Buffer{} // the column owns it now
	if c.Stage(targets, &w.delta) || s.primsRemoved.Load() {
		// New rows mean possibly new prims; existing rows' prims are already recorded unless
		// a whole-prim delete removed them since.
		s.mu.Lock()
		defer s.mu.Unlock()
		s.addPrimsLocked(targets)
	}
	return nil
}

// writeColumn re-checks a write against the applied state (admission, schema, INSERT) and
// returns the column it goes to, created when needed (nil when it has no targets).
func (s *Stage) writeColumn(w *preparedWrite, targets []uint64) (*column.Column, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	injectFault(faultWriteApply)
	c, err := s.columnForWriteLocked(w, targets) // layout first, then the floor (as at enqueue)
	if err == nil {
		err = s.checkAdmission(s.floors.effective(w.attr), w.ordinal, w.attr)
	}
	if err == nil {
		err = s.checkInsertLocked(w, targets)
	}
	if err != nil || len(targets) == 0 || c != nil {
		return c, err
	}
	if c, err = newPlacedColumn(w); err != nil {
		return nil, err
	}
	s.columns[w.attr] = append(s.columns[w.attr], c)
	return c, nil
}

// resolvedPrims is the prim count of query h when it is already resolved, else -1 (unknown
// or pending: the write's enqueue reports a bad handle).
func (s *Stage) resolvedPrims(h uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queryLocked(h)
	if err != nil || (q.Producer != nil && !q.Producer.Done()) {
		return -1
	}
	return len(q.Paths)
}
