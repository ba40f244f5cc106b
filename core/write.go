package core

import (
	"fmt"
	"slices"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Prim modes.
const (
	PrimModeUpsert int32 = 0
	PrimModeInsert int32 = 1
)

// Attribute modes: what a write or map does on a prim that carries the attribute with another
// schema (storage type, or a non-NONE role).
const (
	// AttributeModeReject refuses it (delete the attribute first).
	AttributeModeReject int32 = 0
	// AttributeModeForce replaces the prim's schema at the write's ordinal (force.go).
	AttributeModeForce int32 = 1
)

func checkAttributeMode(mode int32, arg string) error {
	if mode != AttributeModeReject && mode != AttributeModeForce {
		return status.Errorf(status.InvalidArgument, "%s: %d is not an attribute mode (REJECT=0, FORCE=1)", arg, mode)
	}
	return nil
}

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
	// AttributeMode is AttributeModeReject (the zero value) or AttributeModeForce.
	AttributeMode int32
	// Device is the requested placement (zero value: follow the source tensor); Sync is the
	// caller's CUDA work to wait for before the payload is read (placement.go).
	Device column.Placement
	Sync   CudaSync
	// Avail is the placed op's event (availability.go); a batch records its first entry's.
	Avail Availability
}

// preparedWrite is a validated write. Its payload is copied into engine memory at enqueue, so
// the caller's tensors may be freed as soon as the enqueue returns, except for large host
// payloads (see DeferCopyBytes): those are copied by the op on a worker, and the caller keeps
// the source alive and unchanged until the op completes (the reference's contract for every
// write).
type preparedWrite struct {
	label    string // argument name for messages ("writes[1]" in a batch)
	opName   string // the call, for admission messages ("write_attribute", "unmap_group")
	mode     int32  // attribute mode
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
	// place is where the payload lives and where the column moves when the write seals; the
	// zero value (map commits, clones) follows the column, or the host (placement.go).
	place column.Placement
}

// resolveAttribute returns the token for a token-or-string attribute argument (an alias
// resolved to its storage name, aliases.go).
func (s *Stage) resolveAttribute(tok uint64, name, arg string) (uint64, error) {
	if tok != 0 || name == "" {
		if !s.validToken(tok) {
			return 0, InvalidToken(arg, tok)
		}
		return s.canonicalAttr(tok), nil
	}
	t, err := s.dict.InternToken(name)
	if err != nil {
		return 0, status.Errorf(status.InvalidArgument, "%s: %v", arg, err)
	}
	return s.canonicalAttr(t), nil
}

// InvalidToken is the error for an attribute argument arg holding token tok, which names no
// attribute: 0 (never a token) or a value this stage's path dictionary never issued.
func InvalidToken(arg string, tok uint64) error {
	if tok == 0 {
		return status.Errorf(status.InvalidArgument, "%s: token 0 is not a valid token", arg)
	}
	return status.Errorf(status.InvalidArgument, "%s: token %d is not a token of this stage's path dictionary", arg, tok)
}

// validToken reports whether tok is a token of this stage's path dictionary (0 never is).
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
	if err := checkAttributeMode(req.AttributeMode, label+"attribute_mode"); err != nil {
		return err
	}
	if len(req.Tensors) == 0 {
		return status.Errorf(status.InvalidArgument, "%stensors: at least one tensor is required", label)
	}
	// w is fresh (zero) storage: set fields one by one rather than copying a whole literal.
	w.label, w.attr, w.count, w.primMode, w.ordinal = label, attr, req.Count, req.PrimMode, req.Ordinal
	w.opName, w.mode = "write_attribute", req.AttributeMode
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
	if err := checkReservedAttribute(label, name, w.schema, req.AttributeMode == AttributeModeForce); err != nil {
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

// columnForWriteLocked finds the column a REJECT write at (w.ordinal, seq) goes to: the column
// of the attribute with the write's storage schema and role (semantic NONE matches any role).
// It returns nil when a new column is needed, and rejects a schema or role change on a prim
// that carries the attribute from just before the write on (delete the attribute
// first). Columns are keyed by (storage, role) so a deleted attribute frees both.
func (s *Stage) columnForWriteLocked(w *preparedWrite, targets []uint64, seq uint64) (*column.Column, error) {
	cols := s.columns[w.attr]
	matches := func(c *column.Column) (storage, role bool) { return schemaFits(c.Schema, w.schema) }
	if len(cols) == 1 && sameChannel(cols[0].Schema, w.schema) { // the common case needs no per-prim liveness checks
		if storage, role := matches(cols[0]); storage && role {
			return cols[0], nil
		}
	}
	var target *column.Column
	targetLive := false
	for _, c := range cols {
		if !sameChannel(c.Schema, w.schema) {
			continue // a connection and a value of one name live side by side
		}
		live := firstLiveFrom(c, targets, w.ordinal, seq)
		storage, role := matches(c)
		switch {
		case !storage && live != 0:
			return nil, status.Errorf(status.InvalidArgument,
				"%sattribute %q on %s is %s (is_array=%v); writing %s (is_array=%v) would change its schema: delete the attribute first (or write with attribute_mode FORCE)",
				w.label, s.tokenName(w.attr), s.pathName(live), c.Schema.DType, c.Schema.IsArray, w.schema.DType, w.schema.IsArray)
		case storage && !role && live != 0:
			return nil, status.Errorf(status.InvalidArgument,
				"%sattribute %q on %s has semantic %d; a write with semantic %d cannot change its role: delete the attribute first (or write with attribute_mode FORCE)",
				w.label, s.tokenName(w.attr), s.pathName(live), c.Schema.Semantic, w.schema.Semantic)
		case storage && role && (target == nil || (live != 0 && !targetLive)):
			target, targetLive = c, live != 0
		}
	}
	return target, nil
}

// firstLiveFrom returns the first of prims that carries c's attribute at some point from just
// before (ordinal, seq) on (0 when none does).
func firstLiveFrom(c *column.Column, prims []uint64, ordinal, seq uint64) uint64 {
	for _, p := range prims {
		if c.LiveFrom(p, ordinal, seq) {
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
	var err error
	if o.event, err = resolveAvailability(req.Avail, o.one.place); err != nil {
		o.releasePayloads()
		return 0, err
	}
	return s.enqueueWrites(req.Query, o)
}

// WriteAttributes enqueues a batch of writes at one ordinal: the whole batch is validated
// before anything is queued, and one op covers it. Entries may name one attribute several
// times if they agree on its column identity (dtype, array kind, semantic) and write disjoint
// prims. An empty batch is accepted and does nothing.
func (s *Stage) WriteAttributes(query, ordinal uint64, primMode int32, reqs []WriteRequest) (uint64, error) {
	if len(reqs) == 0 {
		return s.acceptEmptyBatch(query)
	}
	o := &writeOp{ws: make([]*preparedWrite, 0, len(reqs))}
	first := map[uint64]int{}
	prims := s.resolvedPrims(query)
	for i, req := range reqs {
		req.Ordinal, req.PrimMode = ordinal, primMode
		w, err := s.prepareWrite(req, fmt.Sprintf("writes[%d]: ", i), prims)
		if err != nil {
			o.releasePayloads()
			return 0, err
		}
		w.opName = "write_attributes"
		o.ws = append(o.ws, w)
		j, dup := first[w.attr]
		if !dup {
			first[w.attr] = i
			continue
		}
		o.sharedAttrs = true
		if a, b := o.ws[j].schema, w.schema; a != b {
			o.releasePayloads()
			return 0, status.Errorf(status.InvalidArgument,
				"write_attributes: writes[%d] and writes[%d]: descriptors for canonical attribute %q declare incompatible column identities (%s is_array=%v semantic %d, and %s is_array=%v semantic %d)",
				j, i, s.tokenName(w.attr), a.DType, a.IsArray, a.Semantic, b.DType, b.IsArray, b.Semantic)
		}
	}
	var err error
	if o.event, err = batchAvailability(reqs, o.ws); err != nil {
		o.releasePayloads()
		return 0, err
	}
	return s.enqueueWrites(query, o)
}

// acceptEmptyBatch answers a batch of no entries: a completed op, once the query handle is
// known valid.
func (s *Stage) acceptEmptyBatch(qh uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.queryLocked(qh); err != nil {
		return 0, err
	}
	return s.registerDoneLocked().ID, nil
}

// checkBatchCoverage refuses a batch in which two entries write the same (prim, attribute).
func (s *Stage) checkBatchCoverage(paths []uint64, ws []*preparedWrite) error {
	type cell struct{ attr, prim uint64 }
	owner := map[cell]int{}
	for i, w := range ws {
		targets, _, err := w.targets(paths)
		if err != nil {
			return err
		}
		for _, p := range targets {
			c := cell{w.attr, p}
			if j, ok := owner[c]; ok && j != i {
				return status.Errorf(status.InvalidArgument,
					"write_attributes: repeated concrete write target for prim '%s' and canonical attribute '%s' (writes[%d] and writes[%d])",
					s.pathName(p), s.tokenName(w.attr), j, i)
			}
			owner[c] = i
		}
	}
	return nil
}

// batchAvailability resolves a placed batch's event: on the batch's device, else on its CUDA
// sources' device. Sources on several devices with no device and a default stream cannot be
// covered by one record: INVALID_ARGUMENT (checked even when the query selects no prims).
func batchAvailability(reqs []WriteRequest, ws []*preparedWrite) (*eventRecord, error) {
	avail, device := reqs[0].Avail, reqs[0].Device
	if !avail.Placed {
		return nil, nil
	}
	place := column.Placement{}
	if device != (column.Placement{}) {
		place = ws[0].place
	} else {
		for i, w := range ws {
			if w.place.IsHost() {
				continue
			}
			if place != (column.Placement{}) && place != w.place && avail.Stream <= cuda.StreamPerThread {
				return nil, status.Errorf(status.InvalidArgument,
					"writes[%d]: its source is on %s but an earlier entry's is on %s: with no placement device and a default stream, "+
						"one availability event cannot cover sources on several devices (name a device or a stream)", i, w.place, place)
			}
			if place == (column.Placement{}) {
				place = w.place
			}
		}
	}
	return resolveAvailability(avail, place)
}

// writeOp is one write or write batch: the op, its entries and (for a single write) their
// storage, allocated together.
type writeOp struct {
	stageOp
	q           *Query
	ws          []*preparedWrite
	sharedAttrs bool // some attribute has several entries
	// belowFloor is the floor refusal of entry belowFloorAt, found at enqueue when the layout
	// error that would be named first could not be known yet: the op reports it when it runs.
	belowFloor   error
	belowFloorAt int
	one          preparedWrite
	oneList      [1]*preparedWrite
	oneAttr      [1]uint64
	oneSchema    [1]column.Schema
	fpStore      footprint
}

// Run applies the entries (on a worker, or inline when the op is ready at enqueue).
// The availability event is recorded after the entries, whatever their outcome.
func (o *writeOp) Run(op *sched.Op) error {
	o.ran = true
	err := o.s.applyWrites(op, o)
	if rerr := o.event.record(); err == nil {
		err = rerr
	}
	return err
}

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

// footprint is what the write touches for conflict ordering: its attributes with the schema
// it writes (FORCE: unknown, since it may end other schemas); INSERT makes it a barrier.
func (o *writeOp) footprint() *footprint {
	fp := &o.fpStore
	fp.attrs, fp.schemas = o.oneAttr[:0], o.oneSchema[:0]
	for _, w := range o.ws {
		sc := w.schema
		if w.mode == AttributeModeForce {
			sc = column.Schema{}
		}
		if i := slices.Index(fp.attrs, w.attr); i >= 0 {
			if sc != fp.schemas[i] {
				fp.schemas[i] = column.Schema{}
			}
			continue
		}
		fp.attrs = append(fp.attrs, w.attr)
		fp.schemas = append(fp.schemas, sc)
	}
	fp.barrier = o.ws[0].primMode == PrimModeInsert
	return fp
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

// enqueueWritesLocked checks what it can at enqueue and queues the op. Layout and coverage
// errors are found as soon as the query is resolved; schema and INSERT refusals only when no
// pending mutation the write waits for could still change the answer (conflicts.go), so
// that a refusal at enqueue is exactly the one the op would meet when it runs. Ordinal
// conflicts are reported by the op (as the reference does), and take precedence there.
func (s *Stage) enqueueWritesLocked(qh uint64, o *writeOp) (uint64, error) {
	q, err := s.queryLocked(qh)
	if err != nil {
		return 0, err
	}
	o.q, o.mutation, o.ordinal = q, true, o.ws[0].ordinal
	fp := o.footprint()
	deps := s.conflictDepsLocked(fp, o.ordinal)
	resolved := q.Producer == nil || q.Producer.Done()
	settled := resolved && len(deps) == 0
	if resolved && o.sharedAttrs {
		if err := s.checkBatchCoverage(q.Paths, o.ws); err != nil {
			return 0, err
		}
	}
	deferred := false
	var one [1][]uint64
	targets := one[:]
	if len(o.ws) > 1 {
		targets = make([][]uint64, len(o.ws))
	}
	for i, w := range o.ws {
		deferred = deferred || w.src != nil
		o.heldSource = o.heldSource || holdsSource(w.size)
		if resolved {
			if targets[i], _, err = w.targets(q.Paths); err != nil {
				return 0, err
			}
		}
		if o.belowFloor != nil {
			continue
		}
		if err := s.checkAdmission(s.requested.effective(w.attr), w.ordinal, w.attr); err != nil {
			// A layout error the write also has is named first. It is known now when no
			// pending mutation can change the schema it is checked against (settled) or no
			// schema could refuse the write; otherwise the op decides when it runs, so the
			// outcome never depends on how far earlier ops have got.
			switch {
			case settled:
				return 0, s.layoutBeforeFloorLocked(w, targets[i], ^uint64(0), err)
			case w.mode != AttributeModeReject || (!s.layoutMayRefuseLocked(w, resolved, targets[i]) &&
				!s.mayBringOtherSchemaLocked(w, resolved, targets[i], deps)):
				return 0, err
			}
			o.belowFloor, o.belowFloorAt = err, i
		}
	}
	if settled && o.belowFloor == nil && !s.ordinalConflictLocked(o, targets) {
		// In the order the op checks them: every entry's schema, then INSERT.
		for i, w := range o.ws {
			if w.mode == AttributeModeReject {
				if _, err := s.columnForWriteLocked(w, targets[i], ^uint64(0)); err != nil {
					return 0, err
				}
			}
		}
		for i, w := range o.ws {
			if err := s.checkInsertLocked(w, targets[i]); err != nil {
				return 0, err
			}
		}
	}
	o.fp, o.conflictDeps, o.writes = fp, true, fp.attrs
	var inputs [1]*sched.Op
	inputs[0] = q.Producer
	op := s.enqueueOpLocked(&o.stageOp, o, deps, inputs[:], deferred)
	q.addUserLocked(op)
	return op.ID, nil
}

// ordinalConflictLocked: some entry meets an ordinal conflict with an applied change. The op
// reports it when it runs (as the reference does), before any schema or INSERT refusal, so
// the enqueue leaves those to the op too.
func (s *Stage) ordinalConflictLocked(o *writeOp, targets [][]uint64) bool {
	if !s.checksHistory() {
		return false
	}
	for i, w := range o.ws {
		if _, conflict := s.cellConflictLocked(w.attr, targets[i], w.ordinal, ^uint64(0)); conflict {
			return true
		}
	}
	return false
}

// applyWrites runs on a worker: a batch is admitted as a whole first (coverage, floors,
// ordinal admission); then per entry it re-checks against the applied state, creates prims
// and the column as needed, and stages the payload as a delta. Entries apply in order; a
// failing entry stops the batch (earlier entries stay applied). Payloads left
// unstaged are released by writeOp.Cleanup.
func (s *Stage) applyWrites(op *sched.Op, o *writeOp) error {
	q, ws := o.q, o.ws
	if o.belowFloor != nil {
		return s.refuseBelowFloor(op, o)
	}
	if len(ws) > 1 {
		if err := s.admitBatch(op, q, o); err != nil {
			return err
		}
	}
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

// refuseBelowFloor is the refusal of a write whose entry belowFloorAt the floor refused at
// enqueue: what the enqueue would have said with every earlier mutation applied (the earlier
// entries' targets, then that entry's layout error or the floor refusal).
func (s *Stage) refuseBelowFloor(op *sched.Op, o *writeOp) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return err
	}
	if o.sharedAttrs {
		if err := s.checkBatchCoverage(o.q.Paths, o.ws); err != nil {
			return err
		}
	}
	for i, w := range o.ws[:o.belowFloorAt+1] {
		targets, _, err := w.targets(o.q.Paths)
		if err != nil {
			return err
		}
		if i == o.belowFloorAt {
			return s.layoutBeforeFloorLocked(w, targets, op.ID, o.belowFloor)
		}
	}
	return o.belowFloor
}

// admitBatch checks a whole batch before its first entry changes anything: no two entries
// write one cell, each entry passes the floors and the ordinal admission policy, and none
// changes a schema (REJECT).
func (s *Stage) admitBatch(op *sched.Op, q *Query, o *writeOp) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return err
	}
	if o.sharedAttrs {
		if err := s.checkBatchCoverage(q.Paths, o.ws); err != nil {
			return err
		}
	}
	for _, w := range o.ws {
		targets, _, err := w.targets(q.Paths)
		if err != nil {
			return err
		}
		if err := s.checkAdmission(s.floors.effective(w.attr), w.ordinal, w.attr); err != nil {
			return err
		}
		if err := s.admitCellsLocked(w.opName, w.label, w.attr, targets, w.ordinal, op.ID); err != nil {
			return err
		}
	}
	// Schema refusals too, so that a batch refused when it runs has applied nothing, exactly
	// like one refused at enqueue (entries of one attribute share its schema, so no entry's
	// answer depends on an earlier entry).
	for _, w := range o.ws {
		if w.mode != AttributeModeReject {
			continue
		}
		targets, _, _ := w.targets(q.Paths)
		if _, err := s.columnForWriteLocked(w, targets, op.ID); err != nil {
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
	dest, err := s.writeColumn(w, targets, src, op.ID)
	if err != nil || len(targets) == 0 {
		return err
	}
	if dest.force != nil {
		s.stageForce(op, w, dest, targets)
		return nil
	}
	w.delta = column.Delta{Ordinal: w.ordinal, Seq: op.ID, Src: src, Payload: w.payload, RowOff: w.rowOff, RowLen: w.rowLen,
		Width: w.width, WidthElems: w.widthElems, Later: dest.later, Place: w.place}
	w.payload = buffer.Buffer{} // the column owns it now
	if dest.col.Stage(targets, &w.delta) || s.primsRemoved.Load() {
		// New rows mean possibly new prims; existing rows' prims are already recorded unless
		// a whole-prim delete removed them since.
		s.mu.Lock()
		defer s.mu.Unlock()
		s.addWrittenPrimsLocked(targets, dest.gone)
	}
	return nil
}

// addWrittenPrimsLocked records a write's prims as existing, except those whose whole-prim
// deletion is ordered after the write (gone).
func (s *Stage) addWrittenPrimsLocked(prims []uint64, gone map[uint64]bool) {
	if gone == nil {
		s.addPrimsLocked(prims)
		return
	}
	for _, p := range prims {
		if !gone[p] {
			s.prims.add(p, s.dict.Parent)
		}
	}
}

// writeDest is where a write goes: one column (REJECT), or FORCE's plan; the deletes ordered
// after it that it falls under, and the prims it does not bring back (FLOOR_ONLY).
type writeDest struct {
	col   *column.Column
	force *forcePlan
	later []column.LaterDelete
	gone  map[uint64]bool
}

// writeColumn re-checks a write against the applied state (floors, ordinal admission, schema,
// INSERT) and returns where it goes, creating the column when needed (nothing when it has no
// targets). src gives each target's payload row (nil: its index).
func (s *Stage) writeColumn(w *preparedWrite, targets []uint64, src []int32, seq uint64) (writeDest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return writeDest{}, err
	}
	injectFault(faultWriteApply)
	if err := s.checkAdmission(s.floors.effective(w.attr), w.ordinal, w.attr); err != nil {
		return writeDest{}, s.layoutBeforeFloorLocked(w, targets, seq, err)
	}
	if err := s.admitCellsLocked(w.opName, w.label, w.attr, targets, w.ordinal, seq); err != nil {
		return writeDest{}, err
	}
	// The checks run in the order the enqueue runs them (schema, then INSERT), so a refusal
	// names the same cause whichever found it; FORCE's plan is only made here, last.
	var dest writeDest
	var err error
	if w.mode == AttributeModeReject {
		dest.col, err = s.columnForWriteLocked(w, targets, seq)
	}
	if err == nil {
		err = s.checkInsertLocked(w, targets)
	}
	if err == nil && w.mode == AttributeModeForce && len(targets) > 0 {
		dest.force, err = s.planForceLocked(w, targets, src, seq)
	}
	if err != nil || len(targets) == 0 {
		return dest, err
	}
	if !s.checksHistory() {
		dest.later, dest.gone = s.laterDeletesLocked(w.attr, targets, w.ordinal, seq)
	}
	if dest.col != nil || dest.force != nil {
		return dest, nil
	}
	if dest.col, err = s.newColumnLocked(w); err != nil {
		return writeDest{}, err
	}
	return dest, nil
}

// layoutBeforeFloorLocked is the refusal of a write the floor refused (floorErr): a layout
// (schema) error the write also has is named first, as the reference does.
func (s *Stage) layoutBeforeFloorLocked(w *preparedWrite, targets []uint64, seq uint64, floorErr error) error {
	if w.mode == AttributeModeReject {
		if _, err := s.columnForWriteLocked(w, targets, seq); err != nil {
			return err
		}
	}
	return floorErr
}

// layoutMayRefuseLocked: the applied state may refuse w's layout (its targets are known when
// resolved; otherwise any column of w's attribute and channel with another schema or role).
func (s *Stage) layoutMayRefuseLocked(w *preparedWrite, resolved bool, targets []uint64) bool {
	if resolved {
		_, err := s.columnForWriteLocked(w, targets, ^uint64(0))
		return err != nil
	}
	for _, c := range s.columns[w.attr] {
		if storage, role := schemaFits(c.Schema, w.schema); sameChannel(c.Schema, w.schema) && !(storage && role) {
			return true
		}
	}
	return false
}

// mayBringOtherSchemaLocked: one of the pending mutations deps may leave w's attribute live
// with another schema or role on its targets (known when resolved): a write or map of another
// or unknown schema, a clone creating a subtree over them, another mutation that declares no
// footprint. Deletes only end values.
func (s *Stage) mayBringOtherSchemaLocked(w *preparedWrite, resolved bool, targets []uint64, deps []*sched.Op) bool {
	for _, op := range deps {
		o := s.pendingMutations[op]
		if o == nil || o.fp == nil {
			return true
		}
		fp := o.fp
		switch {
		case o.clone:
			if !resolved || s.underAnyLocked(targets, o.cloneTo) {
				return true
			}
			continue
		case fp.deletes:
			continue
		case fp.barrier && len(fp.attrs) == 0:
			return true
		}
		sc, touches := fp.schemaOf(w.attr)
		if !touches {
			continue
		}
		if storage, role := schemaFits(sc, w.schema); unknownSchema(sc) || (sameChannel(sc, w.schema) && !(storage && role)) {
			return true
		}
	}
	return false
}

// underAnyLocked: some prim of prims is one of roots or below one.
func (s *Stage) underAnyLocked(prims, roots []uint64) bool {
	if len(roots) == 0 {
		return false
	}
	for _, p := range prims {
		for q := p; q != 0; q = s.dict.Parent(q) {
			if slices.Contains(roots, q) {
				return true
			}
		}
	}
	return false
}

// schemaFits says whether a write of schema w keeps a column of schema c: the same storage,
// and the same role (semantic) unless the write names none.
func schemaFits(c, w column.Schema) (storage, role bool) {
	return sameStorage(c, w), w.Semantic == SemanticNone || w.Semantic == c.Semantic
}

// newColumnLocked creates and registers a column of w's attribute and schema.
func (s *Stage) newColumnLocked(w *preparedWrite) (*column.Column, error) {
	c, err := newPlacedColumn(w)
	if err != nil {
		return nil, err
	}
	s.newColumnVersionsLocked(c)
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
