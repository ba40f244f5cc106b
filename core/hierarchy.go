package core

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/logbus"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Hierarchy relations.
const (
	RelationParent   int32 = 0
	RelationChildren int32 = 1
	RelationSiblings int32 = 2
)

// HierarchyItem is the relation of one input prim: Status OK with its related prims, or
// NOT_FOUND when the stage does not hold the prim.
type HierarchyItem struct {
	Status status.Code
	Paths  []uint64
}

// HierarchyResult is what a hierarchy handle produces: one item per input path, in order.
type HierarchyResult struct {
	Ordinal uint64
	Items   []HierarchyItem
}

// Hierarchy is a hierarchy handle: its op computes the result that fetches return.
type Hierarchy struct {
	Handle    uint64
	Op        *sched.Op
	stage     *Stage
	result    HierarchyResult
	releasing bool
}

// Hierarchy handles live in one process-wide table (handle ids are process-unique); each
// knows its stage. Lock order: Stage.mu, then hierMu.
var (
	hierMu      sync.Mutex
	hierarchies = map[uint64]*Hierarchy{}
)

func lookupHierarchy(h uint64) *Hierarchy {
	hierMu.Lock()
	defer hierMu.Unlock()
	return hierarchies[h]
}

// setHierarchy registers hh under h, or forgets h when hh is nil.
func setHierarchy(h uint64, hh *Hierarchy) {
	hierMu.Lock()
	defer hierMu.Unlock()
	if hh == nil {
		delete(hierarchies, h)
	} else {
		hierarchies[h] = hh
	}
}

func dropHierarchies(s *Stage) {
	hierMu.Lock()
	defer hierMu.Unlock()
	for id, h := range hierarchies {
		if h.stage == s {
			delete(hierarchies, id)
		}
	}
}

// hierarchyLocked finds a usable hierarchy handle of s. s.mu must be held.
func (s *Stage) hierarchyLocked(h uint64) (*Hierarchy, error) {
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	hh := lookupHierarchy(h)
	if hh == nil || hh.stage != s || hh.releasing {
		return nil, status.Errorf(status.InvalidHandle, "hierarchy handle %d is not valid on stage %d (released, from another stage, or never created)", h, s.ID)
	}
	return hh, nil
}

// orderingDepsLocked: pending floor advances, and pending mutations at or below ordinal (so
// an op "at ordinal" sees everything submitted at or below it).
func (s *Stage) orderingDepsLocked(ordinal uint64) []*sched.Op {
	deps := s.pendingAdvancesLocked()
	for op, o := range s.pendingMutations {
		if o.ordinal <= ordinal {
			deps = append(deps, op)
		}
	}
	return deps
}

// GetHierarchy enqueues a hierarchy query: for each path of the list (copied now), its
// parent, children or siblings among the prims the stage holds, as committed when the op runs.
// Hierarchy comes from path components, so client-authored prims have it too. ordinal selects
// no snapshot: it orders the op after every pending mutation at or below it (and every pending
// floor advance) and is returned in the result. It returns (handle, op id).
func (s *Stage) GetHierarchy(list pathdict.ListID, ordinal uint64, relation int32) (uint64, uint64, error) {
	if relation != RelationParent && relation != RelationChildren && relation != RelationSiblings {
		return 0, 0, status.Errorf(status.InvalidArgument, "relation %d is not PARENT (0), CHILDREN (1) or SIBLINGS (2)", relation)
	}
	paths, err := s.dict.ListPaths(list)
	if err != nil {
		return 0, 0, status.Errorf(status.InvalidHandle, "path_list: %v", err)
	}
	paths = slices.Clone(paths)
	s.mu.Lock()
	defer s.unlockAndStart()
	if err := s.checkLiveLocked(); err != nil {
		return 0, 0, err
	}
	h := &Hierarchy{Handle: newHandle(), stage: s}
	if deps := s.orderingDepsLocked(ordinal); len(deps) == 0 {
		h.result = s.relationsLocked(paths, ordinal, relation)
		h.Op = s.registerDoneLocked()
	} else {
		h.Op = s.enqueueLocked(opSpec{deps: deps, run: func(*sched.Op) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := s.checkLiveLocked(); err != nil {
				return err
			}
			h.result = s.relationsLocked(paths, ordinal, relation)
			return nil
		}})
	}
	setHierarchy(h.Handle, h)
	return h.Handle, h.Op.ID, nil
}

// relationsLocked computes a hierarchy result from the committed prims. Related prims are
// sorted by path string; a top-level prim has no parent (the pseudo-root is not a prim).
func (s *Stage) relationsLocked(paths []uint64, ordinal uint64, relation int32) HierarchyResult {
	res := HierarchyResult{Ordinal: ordinal, Items: make([]HierarchyItem, len(paths))}
	names := map[uint64]string{}
	sortByName := func(ids []uint64) {
		for _, id := range ids {
			if _, ok := names[id]; !ok {
				names[id] = s.pathName(id)
			}
		}
		slices.SortFunc(ids, func(a, b uint64) int {
			switch na, nb := names[a], names[b]; {
			case na < nb:
				return -1
			case na > nb:
				return 1
			}
			return 0
		})
	}
	for i, p := range paths {
		if !s.prims.has(p) {
			res.Items[i].Status = status.NotFound
			continue
		}
		parent := s.dict.Parent(p)
		var related []uint64
		switch relation {
		case RelationParent:
			if parent != 0 && parent != s.dict.Root() {
				related = []uint64{parent}
			}
		case RelationChildren:
			for c := range s.childrenLocked(p) {
				related = append(related, c)
			}
		case RelationSiblings: // a top-level prim has none (the pseudo-root is no parent)
			if parent == 0 || parent == s.dict.Root() {
				break
			}
			for c := range s.childrenLocked(parent) {
				if c != p {
					related = append(related, c)
				}
			}
		}
		sortByName(related)
		res.Items[i].Paths = related
	}
	return res
}

// FetchHierarchyResult waits up to timeoutNs for a hierarchy handle's op and returns its
// result (the result stays with the handle until it is released).
func (s *Stage) FetchHierarchyResult(h, timeoutNs uint64) (HierarchyResult, error) {
	hh, err := locked(s, func() (*Hierarchy, error) { return s.hierarchyLocked(h) })
	if err != nil {
		return HierarchyResult{}, err
	}
	if !hh.Op.Wait(waitDuration(timeoutNs)) {
		return HierarchyResult{}, status.Errorf(status.Timeout, "hierarchy %d is not finished", h)
	}
	if err := hh.Op.Err(); err != nil {
		return HierarchyResult{}, status.Errorf(status.OpFailed, "hierarchy %d failed: %s", h, status.MessageOf(err))
	}
	return hh.result, nil
}

// ReleaseHierarchy enqueues the release of a hierarchy handle after its op.
func (s *Stage) ReleaseHierarchy(h uint64) (uint64, error) {
	s.mu.Lock()
	defer s.unlockAndStart()
	hh, err := s.hierarchyLocked(h)
	if err != nil {
		return 0, err
	}
	hh.releasing = true
	op := s.enqueueLocked(opSpec{deps: []*sched.Op{hh.Op}, run: func(*sched.Op) error {
		setHierarchy(h, nil)
		return nil
	}})
	return op.ID, nil
}

// Hierarchy computation models (the ids of the C API).
const (
	ModelInvalid        int32 = 0
	ModelCPUIncremental int32 = 1
	ModelGPUIncremental int32 = 2
	ModelGPUGlobal      int32 = 3
	ModelRuntimeDefault int32 = 4
)

// HierarchyModel describes an advertised computation model.
type HierarchyModel struct {
	ID          int32
	Name        string
	Description string
}

// HierarchyModels lists the four models of the API. Only the CPU model is built: the GPU ones
// are listed for compatibility and compute_hierarchy refuses them (NOT_SUPPORTED).
func HierarchyModels() []HierarchyModel {
	return []HierarchyModel{
		{ID: ModelCPUIncremental, Name: "cpu-incremental", Description: "CPU world transforms: " +
			"omni:fabric:worldMatrix = omni:xform * parent world (USD row-vector convention; " +
			"omni:resetXformStack makes a prim's world its local transform) for every prim that " +
			"already has omni:fabric:worldMatrix."},
		{ID: ModelGPUIncremental, Name: "gpu-incremental", Description: "GPU incremental world transforms: " +
			"not in this build (compute_hierarchy returns NOT_SUPPORTED)."},
		{ID: ModelGPUGlobal, Name: "gpu-global", Description: "GPU world transforms of the whole hierarchy: " +
			"not in this build (compute_hierarchy returns NOT_SUPPORTED)."},
		{ID: ModelRuntimeDefault, Name: "runtime-default", Description: "The model the stage captured when " +
			"it was created (cpu-incremental unless configured); also what a floor advance over " +
			"omni:fabric:worldMatrix runs when the hierarchy has pending changes."},
	}
}

// Attribute names the hierarchy model reads and writes (the first two are aliases of the
// columns it reads, aliases.go).
const (
	AttrXform           = "omni:xform"
	AttrResetXformStack = "omni:resetXformStack"
	AttrWorldMatrix     = "omni:fabric:worldMatrix"
)

// runtimeDefaultModel is what RUNTIME_DEFAULT resolves to for this stage: the model its
// configuration names, CPU_INCREMENTAL when it names none.
func (s *Stage) runtimeDefaultModel() int32 {
	if m := s.hierarchyModel; m != ModelInvalid && m != ModelRuntimeDefault {
		return m
	}
	return ModelCPUIncremental
}

func (s *Stage) resolveHierarchyModel(model int32) (int32, error) {
	if model == ModelRuntimeDefault {
		model = s.runtimeDefaultModel()
	}
	switch model {
	case ModelCPUIncremental:
		return model, nil
	case ModelGPUIncremental, ModelGPUGlobal:
		name := map[int32]string{ModelGPUIncremental: "GPU_INCREMENTAL", ModelGPUGlobal: "GPU_GLOBAL"}[model]
		return 0, status.Errorf(status.NotSupported, "model %d (%s): GPU hierarchy models are not in this build; use CPU_INCREMENTAL (1)", model, name)
	case ModelInvalid:
		return 0, status.Errorf(status.InvalidArgument, "model 0 (INVALID) is not a hierarchy computation model")
	}
	return 0, status.Errorf(status.InvalidArgument, "model %d is not a hierarchy computation model (CPU_INCREMENTAL=1, GPU_INCREMENTAL=2, GPU_GLOBAL=3, RUNTIME_DEFAULT=4)", model)
}

// hierarchyTokens are the attributes the computation reads (local transform, reset flag) and
// writes (world matrix).
type hierarchyTokens struct{ xform, reset, world uint64 }

func newHierarchyTokens(s *Stage) hierarchyTokens {
	return hierarchyTokens{s.canonicalAttr(s.builtinToken(AttrXform)), s.canonicalAttr(s.builtinToken(AttrResetXformStack)), s.builtinToken(AttrWorldMatrix)}
}

// ComputeHierarchy enqueues a world-transform computation: from the newest committed
// omni:xform and omni:resetXformStack values it derives omni:fabric:worldMatrix for every
// prim that already carries it (it never creates that attribute), and records a change at
// outputOrdinal for each row whose value it changes. outputOrdinal is not subject to the
// write floor: a row recorded at a sealed ordinal is folded in at once, and readers that
// consumed that ordinal earlier do not see it. inputOrdinal selects no snapshot: the op runs
// after the pending floor advances and the pending mutations at or below it.
func (s *Stage) ComputeHierarchy(model int32, inputOrdinal, outputOrdinal uint64) (uint64, error) {
	if _, err := s.resolveHierarchyModel(model); err != nil {
		return 0, err
	}
	toks := s.hierToks
	s.mu.Lock()
	defer s.unlockAndStart()
	if err := s.checkLiveLocked(); err != nil {
		return 0, err
	}
	op := s.enqueueLocked(opSpec{
		deps: s.orderingDepsLocked(inputOrdinal), mutation: true, ordinal: outputOrdinal,
		run: func(op *sched.Op) error {
			n, err := s.computeWorldMatrices(op, toks, outputOrdinal, false)
			if err == nil {
				logbus.Logf(logbus.Info, logbus.ChannelHierarchy, "stage %d: compute_hierarchy at ordinal %d changed %d world matrices", s.ID, outputOrdinal, n)
			}
			return err
		},
	})
	return op.ID, nil
}

// autoComputeHierarchy runs before a floor advance moves the floors: when the advance covers
// omni:fabric:worldMatrix and the hierarchy's inputs changed since the last computation, the
// runtime-default model records the rows it changes at the advance's ordinal. An advance never
// fails, so a computation that cannot run is logged and skipped.
func (s *Stage) autoComputeHierarchy(op *sched.Op, adv floorAdvance) {
	toks := s.hierToks
	if !adv.global && !slices.Contains(adv.attrs, toks.world) {
		return
	}
	if none, _ := locked(s, func() (bool, error) { return len(s.columns[toks.world]) == 0, nil }); none {
		return // the common case: no world matrices to maintain
	}
	if model := s.runtimeDefaultModel(); model != ModelCPUIncremental {
		logbus.Logf(logbus.Warning, logbus.ChannelHierarchy, "stage %d: floor advance to %d: the runtime-default hierarchy model %d is not in this build; world matrices were not updated",
			s.ID, adv.ordinal, model)
		return
	}
	n, err := s.computeWorldMatrices(op, toks, adv.ordinal, true)
	switch {
	case err != nil:
		logbus.Logf(logbus.Warning, logbus.ChannelHierarchy, "stage %d: floor advance to %d: world matrices were not updated: %s", s.ID, adv.ordinal, status.Describe(err))
	case n > 0:
		logbus.Logf(logbus.Info, logbus.ChannelHierarchy, "stage %d: floor advance to %d updated %d world matrices", s.ID, adv.ordinal, n)
	}
}

type mat4 [16]float64

var identity = mat4{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}

// mul is the row-major product a*b.
func mul(a, b mat4) mat4 {
	var c mat4
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			v := 0.0
			for k := 0; k < 4; k++ {
				v += a[4*i+k] * b[4*k+j]
			}
			c[4*i+j] = v
		}
	}
	return c
}

func isMatrixSchema(sc column.Schema) bool {
	return !sc.IsArray && sc.DType.Code == tensor.CodeFloat && (sc.DType.Bits == 64 || sc.DType.Bits == 32) &&
		sc.DType.Lanes == 16
}

func isFlagSchema(sc column.Schema) bool {
	return !sc.IsArray && sc.DType.Bits == 8 && sc.DType.Lanes == 1 &&
		(sc.DType.Code == tensor.CodeBool || sc.DType.Code == tensor.CodeUInt || sc.DType.Code == tensor.CodeInt)
}

func readMatrix(b []byte, bits uint8) mat4 {
	var m mat4
	for i := range m {
		if bits == 64 {
			m[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		} else {
			m[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
	}
	return m
}

func writeMatrix(b []byte, bits uint8, m mat4) {
	for i, v := range m {
		if bits == 64 {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
		} else {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		}
	}
}

// committedValuesLocked calls fn with each prim's committed value bytes, for every column of
// attr. A column whose schema accept rejects fails the computation if any prim carries it.
func (s *Stage) committedValuesLocked(attr uint64, accept func(column.Schema) bool, want string,
	fn func(c *column.Column, prim uint64, value []byte)) error {
	for _, c := range s.columns[attr] {
		prims := c.LivePrims()
		if len(prims) == 0 {
			continue
		}
		if !accept(c.Schema) {
			return status.Errorf(status.InvalidArgument, "attribute %q is stored as %s (is_array=%v) on %s; the CPU hierarchy model reads %s",
				s.tokenName(attr), c.Schema.DType, c.Schema.IsArray, s.pathName(prims[0]), want)
		}
		c.Committed(prims, func(k int, v []byte) { fn(c, prims[k], v) })
	}
	return nil
}

// hierarchyInputs is what a computation reads under the stage lock: the world-matrix columns
// to update (their prims and current values), the local transforms and reset flags.
type hierarchyInputs struct {
	targets []hierarchyTarget
	locals  map[uint64]mat4
	resets  map[uint64]bool
	seen    map[*column.Column]uint64 // the input columns' stage counts
}

type hierarchyTarget struct {
	col     *column.Column
	prims   []uint64
	current [][]byte
}

// inputCountsLocked is the stage count of every column the computation reads.
func (s *Stage) inputCountsLocked(toks hierarchyTokens) map[*column.Column]uint64 {
	out := map[*column.Column]uint64{}
	for _, a := range []uint64{toks.xform, toks.reset} {
		for _, c := range s.columns[a] {
			out[c] = c.StageCount()
		}
	}
	return out
}

// gatherHierarchyLocked reads a computation's inputs (no targets: nothing carries the world
// matrix). onlyIfChanged skips it (no targets) when no input column changed since the last
// computation.
func (s *Stage) gatherHierarchyLocked(toks hierarchyTokens, onlyIfChanged bool) (hierarchyInputs, error) {
	var in hierarchyInputs
	if len(s.columns[toks.world]) == 0 {
		return in, nil
	}
	in.seen = s.inputCountsLocked(toks)
	if onlyIfChanged && maps.Equal(in.seen, s.hierarchySeen) {
		return in, nil
	}
	for _, c := range s.columns[toks.world] {
		prims := c.LivePrims()
		if len(prims) == 0 {
			continue
		}
		if !isMatrixSchema(c.Schema) {
			return in, status.Errorf(status.InvalidArgument, "attribute %q is stored as %s (is_array=%v) on %s; the CPU hierarchy model writes float64x16 or float32x16",
				AttrWorldMatrix, c.Schema.DType, c.Schema.IsArray, s.pathName(prims[0]))
		}
		t := hierarchyTarget{col: c, prims: prims, current: make([][]byte, len(prims))}
		c.Committed(prims, func(k int, v []byte) { t.current[k] = slices.Clone(v) })
		in.targets = append(in.targets, t)
	}
	in.locals, in.resets = map[uint64]mat4{}, map[uint64]bool{}
	err := s.committedValuesLocked(toks.xform, isMatrixSchema, "float64x16 or float32x16 matrices",
		func(c *column.Column, p uint64, v []byte) { in.locals[p] = readMatrix(v, c.Schema.DType.Bits) })
	if err == nil {
		err = s.committedValuesLocked(toks.reset, isFlagSchema, "one bool (or 8-bit integer) per prim",
			func(_ *column.Column, p uint64, v []byte) { in.resets[p] = v[0] != 0 })
	}
	return in, err
}

// computeWorldMatrices derives the world matrices from the committed inputs and stages the
// rows whose value changes at ordinal (seq orders them among same-ordinal changes); a row at
// or below the column's floor is folded in at once. It returns the number of rows changed.
func (s *Stage) computeWorldMatrices(op *sched.Op, toks hierarchyTokens, ordinal uint64, onlyIfChanged bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return 0, err
	}
	in, err := s.gatherHierarchyLocked(toks, onlyIfChanged)
	if err != nil || len(in.targets) == 0 {
		if err == nil && in.seen != nil {
			s.hierarchySeen = in.seen
		}
		return 0, err
	}
	worlds := map[uint64]mat4{}
	var world func(p uint64) mat4
	world = func(p uint64) mat4 {
		if p == 0 || p == s.dict.Root() {
			return identity
		}
		if w, ok := worlds[p]; ok {
			return w
		}
		local, ok := in.locals[p]
		if !ok {
			local = identity
		}
		w := local
		if !in.resets[p] {
			w = mul(local, world(s.dict.Parent(p)))
		}
		worlds[p] = w
		return w
	}
	type staged struct {
		col   *column.Column
		prims []uint64
		delta *column.Delta
	}
	var out []staged
	changed := 0
	for _, t := range in.targets {
		bits, rb := t.col.Schema.DType.Bits, t.col.RowBytes()
		row := make([]byte, rb)
		var prims []uint64
		var rows []byte
		for k, p := range t.prims {
			writeMatrix(row, bits, world(p))
			if !slices.Equal(row, t.current[k]) {
				prims = append(prims, p)
				rows = append(rows, row...)
			}
		}
		if len(prims) == 0 {
			continue
		}
		payload, err := buffer.New(len(rows))
		if err != nil {
			for _, st := range out {
				st.delta.Payload.Release()
			}
			return 0, err
		}
		copy(payload.Bytes(), rows)
		out = append(out, staged{t.col, prims, &column.Delta{Ordinal: ordinal, Seq: op.ID, Payload: payload}})
		changed += len(prims)
	}
	floor := s.floors.effective(toks.world)
	for _, st := range out {
		st.col.Stage(st.prims, st.delta)
		if ordinal <= floor {
			if err := st.col.Seal(floor); err != nil {
				return changed, err
			}
		}
	}
	s.hierarchySeen = in.seen
	return changed, nil
}
