package core

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ovstage-go/ovstage/core/column"

	"github.com/ovstage-go/ovstage/core/logbus"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// The advance feed hands what each floor advance seals to one observer (replication's
// publisher, docs/replication.md). It runs inside the advance op, after the columns are
// folded, so the sealed state it copies is exactly the state at the advance's floors.

// ColumnChanges is what one advance sealed in one column: the prims whose newest change lies
// between the attribute's previous and new effective floor, each with that change's ordinal
// and its sealed state (a value or a tombstone).
type ColumnChanges struct {
	Attribute string
	IsArray   bool
	DType     tensor.DType
	Semantic  int32
	// Exact is false when change membership was coalesced away (the column's retention
	// frontier passed the previous floor): Paths then lists every sealed row, at the floor.
	Exact    bool
	Paths    []string
	Ordinals []uint64
	Deleted  []bool
	// Values holds the written entries (not Deleted) back to back: fixed rows of
	// DType.ElemBytes() bytes each, or array rows of Lengths[k] elements each.
	Values  []byte
	Lengths []int64
	// Tokens holds, for a token-valued built-in (prim type, applied schemas, ancestor
	// types), the string of each token id in Values, in order: the ids are this stage's.
	Tokens []string
}

// SealedAdvance is one applied floor advance and what it sealed.
type SealedAdvance struct {
	Ordinal uint64
	// Global: the advance raised the global floor (scope ALL, or EXCLUDE of nothing);
	// otherwise Attributes names the attributes whose floors it raised.
	Global     bool
	Attributes []string
	Columns    []ColumnChanges
	// PrimDeletes are the whole prims deleted at ordinals the advance sealed and not written
	// again after (within it): a replica deletes them whole, at that ordinal.
	PrimDeletes []PrimDelete
	// State is the whole sealed state after the advance, when one was asked for
	// (RequestSealedState); nil otherwise.
	State *SealedState
}

// PrimDelete is one whole-prim delete an advance sealed.
type PrimDelete struct {
	Path    string
	Ordinal uint64
}

// primsEnded is a whole-prim delete entry of the history: its prims and ordinal.
type primsEnded struct {
	prims   []uint64
	ordinal uint64
}

// primDeletesSealedBy lists the whole-prim deletes adv will seal: those above the global
// floor and at or below the one adv raises it to (the history drops them once sealed).
func (s *Stage) primDeletesSealedBy(adv floorAdvance) []primsEnded {
	s.mu.Lock()
	defer s.mu.Unlock()
	target := s.floors.global
	if adv.global {
		target = max(target, adv.ordinal)
	}
	var out []primsEnded
	for _, e := range s.history.entries {
		if e.kind == historyPrimDelete && e.ordinal > s.floors.global && e.ordinal <= target {
			out = append(out, primsEnded{prims: e.prims, ordinal: e.ordinal})
		}
	}
	return out
}

// SealedState is a stage's whole sealed state at one advance: every sealed row of every
// column (its newest change's ordinal, value or tombstone; Exact false where change records
// were coalesced, every row then at the column's floor), and the floors that sealed it.
type SealedState struct {
	GlobalFloor uint64
	// Floors holds each attribute's effective floor where it is above GlobalFloor.
	Floors  map[string]uint64
	Columns []ColumnChanges
	// PrimDeletes are the prims whose every sealed row is a tombstone and that the stage no
	// longer holds: deleted whole, at their newest tombstone.
	PrimDeletes []PrimDelete
}

// advanceFeed is a stage's observer. mu serializes the advances while one is attached:
// without it two advances may fold concurrently, and a feed needs each one's sealed state
// on its own.
type advanceFeed struct {
	mu sync.Mutex
	fn func(SealedAdvance)
	// paths caches each column's path strings by row: the same prims change advance after
	// advance, and building a path string costs more than copying its value.
	paths map[*column.Column]*rowPaths
	// wantState: the next advance also reports the whole sealed state (RequestSealedState).
	wantState atomic.Bool
}

// noPrim marks a row of the path cache not filled yet.
const noPrim = ^uint64(0)

// rowPaths is a column's path cache: the prim and path of each row.
type rowPaths struct {
	prims []uint64
	paths []string
}

// ObserveAdvances attaches fn, called with what every later floor advance seals, on the
// advance's worker and before the advance completes (fn must not block for long). A stage has
// at most one observer; detach undoes it.
func (s *Stage) ObserveAdvances(fn func(SealedAdvance)) (detach func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	if s.feed.Load() != nil {
		return nil, status.Errorf(status.InvalidArgument, "%s already has an advance observer (one publisher per stage)", s.label())
	}
	f := &advanceFeed{fn: fn, paths: map[*column.Column]*rowPaths{}}
	s.feed.Store(f)
	return func() { s.feed.CompareAndSwap(f, nil) }, nil
}

// RequestSealedState makes the next floor advance's report carry the stage's whole sealed
// state (SealedAdvance.State): replication's snapshots. The copy runs inside that advance.
func (s *Stage) RequestSealedState() error {
	f := s.feed.Load()
	if f == nil {
		return status.Errorf(status.InvalidArgument, "%s has no advance observer to report a sealed state to", s.label())
	}
	f.wantState.Store(true)
	return nil
}

// report collects what work sealed and hands it to the feed; a panic in the observer is
// logged, never the advance's failure.
func (f *advanceFeed) report(s *Stage, adv floorAdvance, work []sealWork, ended []primsEnded) {
	defer func() {
		if r := recover(); r != nil {
			logbus.Logf(logbus.Error, logbus.ChannelInternal, "%s: advance observer panicked at floor %d: %v", s.label(), adv.ordinal, r)
		}
	}()
	out := SealedAdvance{Ordinal: adv.ordinal, Global: adv.global}
	for _, a := range adv.attrs {
		out.Attributes = append(out.Attributes, s.tokenName(a))
	}
	for _, w := range work {
		if w.floor <= w.from {
			continue // this column's floor did not move
		}
		name := s.tokenName(w.attr)
		if isDerived(name) {
			continue // derived again by the replica (docs/replication.md)
		}
		if cc, ok := f.collectColumn(s, name, w); ok {
			out.Columns = append(out.Columns, cc)
		}
	}
	out.PrimDeletes = primDeletes(s, ended, out.Columns)
	if f.wantState.Swap(false) {
		out.State = f.collectState(s, work)
	}
	f.fn(out)
}

// primDeletes lists each ended prim once, at its newest delete, leaving out prims a change
// of cols writes again (every change of a deleted prim lies at or above its delete).
func primDeletes(s *Stage, ended []primsEnded, cols []ColumnChanges) []PrimDelete {
	if len(ended) == 0 {
		return nil
	}
	at := map[uint64]uint64{}
	for _, e := range ended {
		for _, p := range e.prims {
			at[p] = max(at[p], e.ordinal)
		}
	}
	written := map[string]bool{}
	for _, c := range cols {
		for i, p := range c.Paths {
			if !c.Deleted[i] {
				written[p] = true
			}
		}
	}
	var out []PrimDelete
	for p, o := range at {
		if path := s.pathName(p); !written[path] {
			out = append(out, PrimDelete{Path: path, Ordinal: o})
		}
	}
	slices.SortFunc(out, func(a, b PrimDelete) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// collectState copies every column's whole sealed state, and the floors.
func (f *advanceFeed) collectState(s *Stage, work []sealWork) *SealedState {
	st := &SealedState{Floors: map[string]uint64{}}
	s.mu.Lock()
	st.GlobalFloor = s.floors.global
	s.mu.Unlock()
	for _, w := range work {
		name := s.tokenName(w.attr)
		if w.floor == 0 || isDerived(name) {
			continue
		}
		if w.floor > st.GlobalFloor {
			st.Floors[name] = w.floor
		}
		w.from = 0 // every change up to the floor
		if cc, ok := f.collectColumn(s, name, w); ok {
			st.Columns = append(st.Columns, cc)
		}
	}
	st.PrimDeletes = endedPrims(s, st.Columns)
	return st
}

// endedPrims lists the prims cols hold only tombstones of that s no longer holds, each at its
// newest tombstone.
func endedPrims(s *Stage, cols []ColumnChanges) []PrimDelete {
	at := map[string]uint64{}
	written := map[string]bool{}
	for _, c := range cols {
		for i, p := range c.Paths {
			if c.Deleted[i] {
				at[p] = max(at[p], c.Ordinals[i])
			} else {
				written[p] = true
			}
		}
	}
	ids := map[string]uint64{}
	for p := range at {
		if id, err := s.dict.InternPath(p); err == nil && !written[p] { // interned already: a column's row
			ids[p] = id
		}
	}
	var out []PrimDelete
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, id := range ids {
		if !s.prims.has(id) {
			out = append(out, PrimDelete{Path: p, Ordinal: at[p]})
		}
	}
	slices.SortFunc(out, func(a, b PrimDelete) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// collectColumn copies one column's sealed changes in (w.from, w.floor].
func (f *advanceFeed) collectColumn(s *Stage, name string, w sealWork) (ColumnChanges, bool) {
	sc := w.col.Schema
	rows, exact := w.col.SealedChanges(w.from, w.floor)
	cc := ColumnChanges{Attribute: name, IsArray: sc.IsArray, DType: sc.DType, Semantic: sc.Semantic, Exact: exact,
		Ordinals: rows.Ordinals, Deleted: rows.Deleted, Values: rows.Values, Lengths: rows.Lengths}
	cc.Paths = f.pathsOf(s, w.col, rows.Rows, rows.Prims)
	if isTokenBuiltin(name) {
		cc.Tokens = make([]string, len(cc.Values)/8)
		for i := range cc.Tokens {
			cc.Tokens[i] = s.tokenName(binary.LittleEndian.Uint64(cc.Values[8*i:]))
		}
	}
	return cc, len(cc.Paths) > 0
}

// pathsOf returns the paths of the prims at rows of col, from the column's cache: when the
// rows are the column's first ones, in order, and their prims are the cached ones (a dense
// change set, advance after advance), one copy of the cached strings.
func (f *advanceFeed) pathsOf(s *Stage, col *column.Column, rows []int32, prims []uint64) []string {
	c := f.paths[col]
	if c == nil {
		c = &rowPaths{}
		f.paths[col] = c
	}
	n := len(rows)
	if n > 0 && int(rows[n-1]) == n-1 && n <= len(c.prims) && slices.Equal(c.prims[:n], prims) {
		return slices.Clone(c.paths[:n])
	}
	out := make([]string, n)
	for i, r := range rows {
		for int(r) >= len(c.prims) {
			c.prims = append(c.prims, noPrim) // never equal to a prim: the fast path skips it
			c.paths = append(c.paths, "")
		}
		if c.prims[r] != prims[i] {
			c.prims[r], c.paths[r] = prims[i], s.pathName(prims[i])
		}
		out[i] = c.paths[r]
	}
	return out
}
