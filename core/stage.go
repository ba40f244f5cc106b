// Package core is the ovstage engine: stages with handle tables, ordinal-keyed mutations,
// write floors, reads of sealed snapshots, and the op table every asynchronous call goes
// through. It knows nothing of Python; pybind adapts it for gopy.
package core

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// TimeoutInfinite blocks a wait until completion.
const TimeoutInfinite = ^uint64(0)

// nextHandle mints every handle and group id in the process, so an id from one stage is never
// valid in another.
var nextHandle atomic.Uint64

func newHandle() uint64 { return nextHandle.Add(1) }

var (
	stagesMu sync.RWMutex
	stages   = map[uint64]*Stage{}
)

// Stage is one instance: its prims, columns, floors, ops and handles.
type Stage struct {
	ID   uint64
	Name string
	dict *pathdict.Dictionary
	pool *sched.Pool

	mu        sync.Mutex
	destroyed bool
	nextOp    uint64
	ops       map[uint64]*sched.Op
	// sameOrdinalTail is the last mutation submitted at each ordinal (same ordinal ⇒ submission order).
	sameOrdinalTail map[uint64]*sched.Op
	// pendingMutations are the unfinished mutations (floor advances wait for those at ordinals
	// ≤ N and count the attributes they write as known).
	pendingMutations map[*sched.Op]*stageOp
	// pendingAdvances are unfinished floor advances with the ordinal each asked for (later
	// reads wait for them, and so do later clones and map commits at or below that ordinal).
	pendingAdvances map[*sched.Op]uint64
	// pendingBarriers and attrPending summarize the pending mutations for conflict ordering
	// (conflicts.go).
	pendingBarriers map[*sched.Op]bool
	attrPending     map[uint64]*attrPending
	// policy is the stage's resolved ordinal admission policy; history holds the deletes and
	// clone creations it is checked against besides column records (history.go).
	policy  AdmissionPolicy
	history opHistory
	// prims holds every prim that exists (committed state), with a parent index on demand.
	prims primSet
	// primsRemoved: a whole-prim delete happened, so a write to an existing column row may
	// re-create a prim (writes then register their prims even when no row was added).
	primsRemoved atomic.Bool
	// columns: every column of each attribute name (one per storage schema, usually one).
	columns        map[uint64][]*column.Column
	readAdmission  column.Admission
	historyWindow  History // versions kept for lagging snapshot reads (versions.go)
	floors         floors  // applied floors
	requested      floors  // floors asked for by enqueued advances (admission at enqueue)
	queries        map[uint64]*Query
	reads          map[uint64]*Read
	groups         map[uint64]*Group
	ordinalQueries map[uint64]*OrdinalQuery
	maps           map[uint64]*Map
	// hierarchyModel is what RUNTIME_DEFAULT names for this stage (Config.HierarchyModel);
	// hierarchySeen holds the stage counts of the hierarchy's input columns at the last world
	// computation (a floor advance computes again only when they changed).
	hierarchyModel int32
	hierarchySeen  map[*column.Column]uint64
	hierToks       hierarchyTokens
	aliases        aliasTokens // public attribute token -> storage token (aliases.go)
	// clones holds each tracked clone op's record (its report once done); forgotten with the
	// op id (forgetOpLocked).
	clones map[uint64]*cloneRecord
	// toStart holds ops enqueued under s.mu; unlockAndStart submits them once the lock is
	// released, because a ready op may run inline and take s.mu itself (see enqueue.go).
	toStart    []startItem
	toStartBuf [2]startItem
	// feed is the advance observer, if one is attached (advance_feed.go).
	feed atomic.Pointer[advanceFeed]
	// closing is closed when Destroy begins: ops held by a test gate give up.
	closing chan struct{}
	// sourcesDone lists finished writes whose caller was told to keep the source alive until
	// completion (payloads of DeferCopyBytes or more); TakeSourcesDone hands them over.
	sourcesDone []uint64
}

// Config holds per-stage settings.
type Config struct {
	// Workers bounds parallel op execution (<= 0: GOMAXPROCS).
	Workers int
	// History is the window of versions kept for snapshot reads behind the floor (nil:
	// DefaultHistory; Ordinals 0: none, reads answer exactly as the reference).
	History *History
	// HierarchyModel is the hierarchy model RUNTIME_DEFAULT resolves to, also run by floor
	// advances over the world matrices (0: CPU_INCREMENTAL).
	HierarchyModel int32
	// Admission is the ordinal admission policy the stage captured (DEFAULT, the zero value,
	// resolves to NONDECREASING; the process-scope rules that pick it live in lifecycle/).
	Admission AdmissionPolicy
}

// history is the window cfg asks for.
func (c Config) history() History {
	if c.History == nil {
		return DefaultHistory
	}
	return c.History.resolved()
}

// Validate checks the settings a caller passed.
func (c Config) Validate() error {
	return CheckAdmissionPolicy(c.Admission, "ordinal admission policy")
}

// OpenStage validates cfg, then creates a stage (NewStage).
func OpenStage(name string, cfg Config) (*Stage, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewStage(name, cfg), nil
}

// NewStage creates a stage and registers it. cfg must be valid (Config.Validate): an invalid
// policy is a programming error and panics; callers with outside input use OpenStage.
func NewStage(name string, cfg Config) *Stage {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	s := &Stage{
		ID: newHandle(), Name: name, dict: pathdict.New(), pool: sched.NewPool(cfg.Workers),
		ops: map[uint64]*sched.Op{}, sameOrdinalTail: map[uint64]*sched.Op{},
		pendingMutations: map[*sched.Op]*stageOp{}, pendingAdvances: map[*sched.Op]uint64{},
		pendingBarriers: map[*sched.Op]bool{}, attrPending: map[uint64]*attrPending{},
		policy:  cfg.Admission.Resolve(),
		columns: map[uint64][]*column.Column{}, historyWindow: cfg.history(),
		floors: newFloors(), requested: newFloors(),
		queries: map[uint64]*Query{}, reads: map[uint64]*Read{}, groups: map[uint64]*Group{},
		ordinalQueries: map[uint64]*OrdinalQuery{}, maps: map[uint64]*Map{}, clones: map[uint64]*cloneRecord{},
		closing: make(chan struct{}), hierarchyModel: cfg.HierarchyModel,
	}
	s.readAdmission = s.historyWindow.readAdmission()
	s.toStart = s.toStartBuf[:0]
	s.aliases = newAliasTokens(s)
	s.hierToks = newHierarchyTokens(s)
	s.pool.OnDetachedDone = s.forgetDetached
	s.onCreated()
	stagesMu.Lock()
	defer stagesMu.Unlock()
	stages[s.ID] = s
	return s
}

// Lookup finds a live stage by id.
func Lookup(id uint64) (*Stage, error) {
	stagesMu.RLock()
	defer stagesMu.RUnlock()
	s, ok := stages[id]
	if !ok {
		return nil, status.Errorf(status.InvalidHandle, "stage %d does not exist (destroyed or never created)", id)
	}
	return s, nil
}

// Dictionary is the stage's own path dictionary.
func (s *Stage) Dictionary() *pathdict.Dictionary { return s.dict }

// Destroyed reports whether Destroy has begun (every later call on the stage fails).
func (s *Stage) Destroyed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.destroyed
}

// Destroy waits for pending ops, then releases every handle, group and column. Exported
// tensors keep their own buffer references and stay valid.
func (s *Stage) Destroy() {
	unregisterStage(s.ID)
	if first, _ := locked(s, func() (bool, error) {
		if s.destroyed {
			return false, nil
		}
		s.destroyed = true
		close(s.closing)
		return true, nil
	}); !first {
		return
	}
	s.pool.Drain()
	s.onDestroyed()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.groups {
		g.release()
	}
	for _, r := range s.reads {
		r.releaseUnfetched()
	}
	for _, q := range s.queries {
		q.close(s.dict)
	}
	for _, m := range s.maps {
		for _, g := range m.groups {
			g.release()
			g.staging.Release()
		}
	}
	for _, cols := range s.columns {
		for _, c := range cols {
			c.Close()
		}
	}
	s.groups, s.reads, s.queries, s.columns, s.ordinalQueries, s.maps = nil, nil, nil, nil, nil, nil
	s.ops, s.clones = map[uint64]*sched.Op{}, map[uint64]*cloneRecord{}
	s.sourcesDone = nil
	if LiveStages() == 0 {
		buffer.Trim() // no stage left to reuse recycled buffers
	}
}

func unregisterStage(id uint64) {
	stagesMu.Lock()
	defer stagesMu.Unlock()
	delete(stages, id)
}

// locked runs fn holding s.mu and releases it even if fn panics: a panic that kept the stage
// mutex would wedge the stage (every later call, and the op's own cleanup, take it).
func locked[T any](s *Stage, fn func() (T, error)) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn()
}

// label names the stage in messages: `stage 1 "name"`.
func (s *Stage) label() string { return fmt.Sprintf("stage %d %q", s.ID, s.Name) }

func (s *Stage) checkLiveLocked() error {
	if s.destroyed {
		return status.Errorf(status.InvalidHandle, "stage %d was destroyed", s.ID)
	}
	return nil
}

func (s *Stage) pendingAdvancesLocked() []*sched.Op {
	out := make([]*sched.Op, 0, len(s.pendingAdvances))
	for op := range s.pendingAdvances {
		out = append(out, op)
	}
	return out
}

// advancesOverLocked lists the pending floor advances to ordinal or above. A mutation whose
// floor check runs only when it executes (clones, map commits) waits for them, so it is
// admitted against the floors asked for before it was enqueued, as writes are at enqueue.
func (s *Stage) advancesOverLocked(ordinal uint64) []*sched.Op {
	var out []*sched.Op
	for op, n := range s.pendingAdvances {
		if n >= ordinal {
			out = append(out, op)
		}
	}
	return out
}

func (s *Stage) lookupOp(id uint64) (*sched.Op, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	op, ok := s.ops[id]
	if !ok {
		return nil, status.Errorf(status.InvalidHandle, "op id %d is unknown to stage %d (never issued, or already released)", id, s.ID)
	}
	return op, nil
}

// awaitOp waits up to timeoutNs for the op that produces handle h (a TIMEOUT error when it is
// not done in time) and returns the op's own failure.
func awaitOp(op *sched.Op, timeoutNs uint64, what string, h uint64) error {
	if !op.Wait(waitDuration(timeoutNs)) {
		return status.Errorf(status.Timeout, "%s %d is not finished", what, h)
	}
	return op.Err()
}

// awaitResult is awaitOp for fetches of a result: a failed producer is reported as OP_FAILED
// with the producer's message.
func awaitResult(op *sched.Op, timeoutNs uint64, what string, h uint64) error {
	err := awaitOp(op, timeoutNs, what, h)
	if err == nil || status.CodeOf(err) == status.Timeout {
		return err
	}
	return status.Errorf(status.OpFailed, "%s %d failed: %s", what, h, status.Describe(err))
}

// WaitResult is the outcome of WaitOp.
type WaitResult struct {
	Status        status.Code // OK or Timeout
	ErrorOpIDs    []uint64    // failed ops in the waited op's chain, root cause first
	LowestPending uint64      // on Timeout: lowest pending op id in the chain
	// Message describes the root cause (ErrorOpIDs[0]) when there is one: returned with the
	// wait, so it survives the stage's destruction (which forgets every op).
	Message string
}

// WaitOp waits for op id and its dependency chain. timeoutNs 0 polls, TimeoutInfinite blocks.
func (s *Stage) WaitOp(id, timeoutNs uint64) (WaitResult, error) {
	op, err := s.lookupOp(id)
	if err != nil {
		return WaitResult{}, err
	}
	if !op.Wait(waitDuration(timeoutNs)) {
		// The op may finish between the wait and the walk; the walk then finds nothing
		// pending (it includes the op itself) and the op counts as complete.
		if lowest := op.LowestPending(); lowest != 0 {
			return WaitResult{Status: status.Timeout, LowestPending: lowest}, nil
		}
	}
	res := WaitResult{Status: status.OK, ErrorOpIDs: op.FailedChain()}
	if len(res.ErrorOpIDs) > 0 {
		if res.Message = s.LastOpError(res.ErrorOpIDs[0]); res.Message == "" {
			// The root cause was released (or forgotten by Destroy): the op's own error
			// carries it ("input produced by op N failed: ...").
			res.Message = status.Describe(op.Err())
		}
	}
	return res, nil
}

// ReleaseOp forgets an op id. A pending op keeps running; only its tracking is dropped.
func (s *Stage) ReleaseOp(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return err
	}
	if _, ok := s.ops[id]; !ok {
		return status.Errorf(status.InvalidHandle, "op id %d is unknown to stage %d (never issued, or already released)", id, s.ID)
	}
	s.forgetOpLocked(id)
	return nil
}

// forgetOpLocked drops op id from the op table, with what the stage keeps for it.
func (s *Stage) forgetOpLocked(id uint64) {
	delete(s.ops, id)
	delete(s.clones, id)
}

// DetachOp says nobody will wait for op id any more (its owner, such as a garbage-collected
// Python Operation, is gone): the id is forgotten as soon as the op completes, at once if it
// already has. The op itself keeps running.
func (s *Stage) DetachOp(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return err
	}
	op, ok := s.ops[id]
	if !ok {
		return status.Errorf(status.InvalidHandle, "op id %d is unknown to stage %d (never issued, or already released)", id, s.ID)
	}
	if op.Detach() {
		s.forgetOpLocked(id)
	}
	return nil
}

// forgetDetached drops a detached op from the op table when it finishes (pool hook).
func (s *Stage) forgetDetached(op *sched.Op) {
	s.mu.Lock()
	if s.ops[op.ID] == op {
		s.forgetOpLocked(op.ID)
	}
	s.mu.Unlock()
}

// TakeSourcesDone returns, and forgets, the ids of finished writes whose source the caller
// was keeping alive (see DeferCopyBytes): the engine will not read those sources again,
// whether the op was waited, released or detached.
func (s *Stage) TakeSourcesDone() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := s.sourcesDone
	s.sourcesDone = nil
	return done
}

// LastOpError is the failure message of op id ("" when unknown, pending or successful). A
// failure with a specific status (not plain OP_FAILED) is prefixed with the status name, since
// callers see every execution failure as OP_FAILED.
func (s *Stage) LastOpError(id uint64) string {
	op, _ := locked(s, func() (*sched.Op, error) { return s.ops[id], nil })
	if op == nil || op.Err() == nil {
		return ""
	}
	return status.Describe(op.Err())
}

// Diagnostics counts live engine objects (leak tests).
type Diagnostics struct {
	Ops, Queries, Reads, Groups, Columns, OrdinalQueries, Maps int
	// VersionBytes is the memory the history window's versions hold (benchmarks).
	VersionBytes int64
}

// Diagnostics returns the stage's live object counts.
func (s *Stage) Diagnostics() Diagnostics {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, versions := 0, int64(0)
	for _, cols := range s.columns {
		n += len(cols)
		for _, c := range cols {
			versions += c.VersionBytes()
		}
	}
	return Diagnostics{Ops: len(s.ops), Queries: len(s.queries), Reads: len(s.reads),
		Groups: len(s.groups), Columns: n, OrdinalQueries: len(s.ordinalQueries), Maps: len(s.maps),
		VersionBytes: versions}
}

// addPrimsLocked records prims as existing.
func (s *Stage) addPrimsLocked(prims []uint64) {
	for _, p := range prims {
		s.prims.add(p, s.dict.Parent)
	}
}

// removePrimsLocked forgets prims (whole-prim delete).
func (s *Stage) removePrimsLocked(prims []uint64) {
	for _, p := range prims {
		s.prims.remove(p, s.dict.Parent)
		s.primsRemoved.Store(true)
	}
}

func (s *Stage) pathName(p uint64) string {
	str, err := s.dict.PathString(p)
	if err != nil {
		return "<unknown path>"
	}
	return str
}

func (s *Stage) tokenName(t uint64) string {
	str, err := s.dict.TokenString(t)
	if err != nil {
		return "<unknown token>"
	}
	return str
}
