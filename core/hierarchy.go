package core

import (
	"encoding/binary"
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

// Hierarchy relations (spec §3.18).
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
// parent, children or siblings among the prims the stage holds. Hierarchy comes from path
// components, so client-authored prims have it too. The op runs after every pending
// mutation at or below ordinal and every pending floor advance; it returns (handle, op id).
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
			if parent != 0 && parent != pathdict.Root {
				related = []uint64{parent}
			}
		case RelationChildren:
			for c := range s.childrenLocked(p) {
				related = append(related, c)
			}
		case RelationSiblings:
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

// Hierarchy computation models (spec §3.18).
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

// HierarchyModels lists the models this build implements: the CPU model only.
func HierarchyModels() []HierarchyModel {
	return []HierarchyModel{{
		ID:   ModelCPUIncremental,
		Name: "CPU_INCREMENTAL",
		Description: "CPU world transforms: omni:fabric:worldMatrix = omni:xform * parent world " +
			"(USD row-vector convention; omni:resetXformStack makes a prim's world its local " +
			"transform) for every prim that already has omni:fabric:worldMatrix. GPU models are " +
			"not in this build.",
	}}
}

// Attribute names the hierarchy model reads and writes.
const (
	AttrXform           = "omni:xform"
	AttrResetXformStack = "omni:resetXformStack"
	AttrWorldMatrix     = "omni:fabric:worldMatrix"
)

// runtimeDefaultHierarchyModel is what RUNTIME_DEFAULT resolves to (a process configuration
// may choose another model; the only one built is CPU_INCREMENTAL).
func runtimeDefaultHierarchyModel() int32 { return ModelCPUIncremental }

func resolveHierarchyModel(model int32) (int32, error) {
	if model == ModelRuntimeDefault {
		model = runtimeDefaultHierarchyModel()
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

// ComputeHierarchy enqueues a world-transform computation: from the latest sealed omni:xform
// and omni:resetXformStack values it writes omni:fabric:worldMatrix at outputOrdinal (a
// mutation: floor admission applies, and later floor advances seal it) for every prim that
// already carries omni:fabric:worldMatrix; it never creates that attribute. It runs after
// pending floor advances and pending mutations at or below inputOrdinal. Ordinals do not
// select historical snapshots (latest only, like the reference).
func (s *Stage) ComputeHierarchy(model int32, inputOrdinal, outputOrdinal uint64) (uint64, error) {
	if _, err := resolveHierarchyModel(model); err != nil {
		return 0, err
	}
	var toks [3]uint64
	for i, name := range []string{AttrXform, AttrResetXformStack, AttrWorldMatrix} {
		t, err := s.dict.InternToken(name)
		if err != nil {
			return 0, status.Errorf(status.Internal, "intern %q: %v", name, err)
		}
		toks[i] = t
	}
	s.mu.Lock()
	defer s.unlockAndStart()
	if err := s.checkLiveLocked(); err != nil {
		return 0, err
	}
	if err := s.checkAdmission(s.requested.effective(toks[2]), outputOrdinal, toks[2]); err != nil {
		return 0, err
	}
	op := s.enqueueLocked(opSpec{
		deps: s.orderingDepsLocked(inputOrdinal), mutation: true, ordinal: outputOrdinal,
		run: func(op *sched.Op) error {
			return s.applyComputeHierarchy(op, outputOrdinal, toks[0], toks[1], toks[2])
		},
	})
	return op.ID, nil
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

// sealedValuesLocked calls fn with each prim's sealed value bytes, for every column of attr.
// A column whose schema accept rejects fails the op if it holds any sealed value.
func (s *Stage) sealedValuesLocked(attr uint64, accept func(column.Schema) bool, want string,
	fn func(c *column.Column, prim uint64, value []byte)) error {
	for _, c := range s.columns[attr] {
		prims, rows, snap := c.SealedFixed()
		if len(prims) > 0 && !accept(c.Schema) {
			snap.Release()
			return status.Errorf(status.InvalidArgument, "attribute %q is stored as %s (is_array=%v) on %s; the CPU hierarchy model reads %s",
				s.tokenName(attr), c.Schema.DType, c.Schema.IsArray, s.pathName(prims[0]), want)
		}
		if len(prims) > 0 {
			host, err := c.HostCopy(snap.Views[0].Buffer) // GPU columns: a host copy
			if err != nil {
				snap.Release()
				return err
			}
			data := host.Bytes()
			rb := c.RowBytes()
			for k, p := range prims {
				fn(c, p, data[int(rows[k])*rb:int(rows[k]+1)*rb])
			}
			host.Release()
		}
		if snap.Views != nil {
			snap.Release()
		}
	}
	return nil
}

// hierarchyInputs is what compute_hierarchy reads under the stage lock: the world-matrix
// columns to update (and their prims), the sealed local transforms and reset flags.
type hierarchyInputs struct {
	targets []hierarchyTarget
	locals  map[uint64]mat4
	resets  map[uint64]bool
}

type hierarchyTarget struct {
	col   *column.Column
	prims []uint64
}

// gatherHierarchy checks compute_hierarchy against the applied state and reads its inputs
// (no targets: nothing carries the world matrix).
func (s *Stage) gatherHierarchy(ordinal, xformTok, resetTok, worldTok uint64) (hierarchyInputs, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var in hierarchyInputs
	if err := s.checkLiveLocked(); err != nil {
		return in, err
	}
	if err := s.checkAdmission(s.floors.effective(worldTok), ordinal, worldTok); err != nil {
		return in, err
	}
	for _, c := range s.columns[worldTok] {
		prims := c.LivePrims()
		if len(prims) == 0 {
			continue
		}
		if !isMatrixSchema(c.Schema) {
			return in, status.Errorf(status.InvalidArgument, "attribute %q is stored as %s (is_array=%v) on %s; the CPU hierarchy model writes float64x16 or float32x16",
				AttrWorldMatrix, c.Schema.DType, c.Schema.IsArray, s.pathName(prims[0]))
		}
		in.targets = append(in.targets, hierarchyTarget{c, prims})
	}
	if len(in.targets) == 0 {
		return in, nil
	}
	in.locals, in.resets = map[uint64]mat4{}, map[uint64]bool{}
	err := s.sealedValuesLocked(xformTok, isMatrixSchema, "float64x16 or float32x16 matrices",
		func(c *column.Column, p uint64, v []byte) { in.locals[p] = readMatrix(v, c.Schema.DType.Bits) })
	if err == nil {
		err = s.sealedValuesLocked(resetTok, isFlagSchema, "one bool (or 8-bit integer) per prim",
			func(_ *column.Column, p uint64, v []byte) { in.resets[p] = v[0] != 0 })
	}
	return in, err
}

func (s *Stage) applyComputeHierarchy(op *sched.Op, ordinal, xformTok, resetTok, worldTok uint64) error {
	in, err := s.gatherHierarchy(ordinal, xformTok, resetTok, worldTok)
	if err != nil {
		return err
	}
	if len(in.targets) == 0 {
		logbus.Logf(logbus.Info, logbus.ChannelHierarchy, "stage %d: compute_hierarchy at ordinal %d: no prim carries %q, nothing to update (the model never creates it)",
			s.ID, ordinal, AttrWorldMatrix)
		return nil
	}
	targets, locals, resets := in.targets, in.locals, in.resets

	worlds := map[uint64]mat4{}
	var world func(p uint64) mat4
	world = func(p uint64) mat4 {
		if p == 0 || p == pathdict.Root {
			return identity
		}
		if w, ok := worlds[p]; ok {
			return w
		}
		local, ok := locals[p]
		if !ok {
			local = identity
		}
		w := local
		if !resets[p] {
			w = mul(local, world(s.dict.Parent(p)))
		}
		worlds[p] = w
		return w
	}
	updated := 0
	for _, t := range targets {
		bits := t.col.Schema.DType.Bits
		rb := t.col.RowBytes()
		payload, err := buffer.New(len(t.prims) * rb)
		if err != nil {
			return err
		}
		dst := payload.Bytes()
		for k, p := range t.prims {
			writeMatrix(dst[k*rb:(k+1)*rb], bits, world(p))
		}
		t.col.Stage(t.prims, &column.Delta{Ordinal: ordinal, Seq: op.ID, Payload: payload})
		updated += len(t.prims)
	}
	logbus.Logf(logbus.Info, logbus.ChannelHierarchy, "stage %d: compute_hierarchy at ordinal %d updated %d world matrices from %d local transforms",
		s.ID, ordinal, updated, len(locals))
	return nil
}
