package core

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// CloneReport is a finished clone's completion report.
type CloneReport struct {
	Ordinal         uint64 // the ordinal the clone was recorded at
	TargetCount     uint64 // the number of targets the caller passed
	SourcePrimCount uint64 // prims of the source subtree, its root included
	// PrimsCloned sums, over the targets, the prims of each target's hierarchy subtree once
	// the clone is done: the target and the held prims reachable from it through held
	// parents (created, merged-into and already present ones alike).
	PrimsCloned uint64
}

// cloneRecord is what the stage keeps of a clone op until its id is released or forgotten:
// its report, once the clone succeeded (written under s.mu).
type cloneRecord struct {
	report CloneReport
}

// Clone enqueues a copy of source's subtree (the prim, its held descendants and their
// attribute values) to each target, as one mutation at ordinal (multi-environment fan-out).
// Path values inside the source subtree are rebased onto each target. Zero targets are
// allowed: the clone then only checks its admission. Bad target lists are refused here;
// everything that depends on the stage's state is checked when the clone executes.
func (s *Stage) Clone(source string, targets []string, ordinal uint64) (uint64, error) {
	src, err := s.dict.InternPath(source)
	if err != nil {
		return 0, status.Errorf(status.InvalidArgument, "clone: source_path: %v", err)
	}
	dsts, err := s.cloneTargets(src, source, targets)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.unlockAndStart()
	if err := s.checkLiveLocked(); err != nil {
		return 0, err
	}
	rec := &cloneRecord{}
	// Admission runs when the clone executes: after the floor advances to its ordinal enqueued
	// before it.
	op := s.enqueueLocked(opSpec{deps: s.advancesOverLocked(ordinal), mutation: true, ordinal: ordinal, clone: true, cloneTo: dsts, run: func(op *sched.Op) error {
		return s.applyClone(op, rec, src, dsts, ordinal)
	}})
	s.clones[op.ID] = rec
	return op.ID, nil
}

// cloneTargets validates and interns the target list: each a prim path, none twice, none
// inside the source subtree (where the copy would be copied again).
func (s *Stage) cloneTargets(src uint64, source string, targets []string) ([]uint64, error) {
	dsts := make([]uint64, len(targets))
	seen := make(map[uint64]int, len(targets))
	for i, t := range targets {
		d, err := s.dict.InternPath(t)
		if err != nil {
			return nil, status.Errorf(status.InvalidArgument, "clone: target_paths[%d]: %v (not a valid prim path)", i, err)
		}
		if d == s.dict.Root() {
			return nil, status.Errorf(status.InvalidArgument, "clone: target_paths[%d] is %q, the pseudo-root, not a prim path", i, t)
		}
		if j, dup := seen[d]; dup {
			return nil, status.Errorf(status.InvalidArgument, "clone: duplicate target path '%s' (target_paths[%d] and [%d])", t, j, i)
		}
		if s.isUnder(d, src) {
			return nil, status.Errorf(status.InvalidArgument, "clone: target_paths[%d]: %q is inside the source subtree %q", i, t, source)
		}
		seen[d] = i
		dsts[i] = d
	}
	return dsts, nil
}

// FetchCloneResult waits up to timeoutNs for clone op id and returns its report. The op stays
// tracked (ReleaseOp forgets it and its report). A clone that failed returns its own error,
// with the specific code (NOT_FOUND, PRIM_NOT_FOUND, WRITE_FLOOR_VIOLATION, OP_FAILED,
// OUT_OF_MEMORY, INTERNAL).
func (s *Stage) FetchCloneResult(id, timeoutNs uint64) (CloneReport, error) {
	op, rec, err := func() (*sched.Op, *cloneRecord, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.checkLiveLocked(); err != nil {
			return nil, nil, err
		}
		op, rec := s.ops[id], s.clones[id]
		if op == nil || rec == nil {
			return nil, nil, status.Errorf(status.InvalidHandle, "fetch_clone_result: op id %d is not a live clone operation of stage %d", id, s.ID)
		}
		return op, rec, nil
	}()
	if err != nil {
		return CloneReport{}, err
	}
	if !op.Wait(waitDuration(timeoutNs)) {
		return CloneReport{}, status.Errorf(status.Timeout, "clone op %d is not finished", id)
	}
	if err := op.Err(); err != nil {
		return CloneReport{}, err
	}
	return locked(s, func() (CloneReport, error) { return rec.report, nil })
}

// isUnder reports whether p is anc or one of its descendants (by path components).
func (s *Stage) isUnder(p, anc uint64) bool {
	for ; p != 0; p = s.dict.Parent(p) {
		if p == anc {
			return true
		}
	}
	return false
}

// subtreeLocked lists root and every held prim below it (by path components, so descendants
// under a prim the stage does not hold are included), sorted by path id.
func (s *Stage) subtreeLocked(root uint64) []uint64 {
	out := append([]uint64{root}, s.prims.under(root, s.dict.Parent)...)
	slices.Sort(out[1:])
	return out
}

// hierarchySizeLocked counts root (when held) and the held prims reachable from it through
// held children.
func (s *Stage) hierarchySizeLocked(root uint64) int {
	if !s.prims.has(root) {
		return 0
	}
	n := 0
	for todo := []uint64{root}; len(todo) > 0; {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		n++
		for c := range s.childrenLocked(p) {
			todo = append(todo, c)
		}
	}
	return n
}

// rebase maps p from under src to the same place under dst (p itself when outside src).
func (s *Stage) rebase(p, src, dst uint64) (uint64, error) {
	if !s.isUnder(p, src) {
		return p, nil
	}
	srcToks, err := s.dict.Tokens(src)
	if err != nil {
		return 0, err
	}
	pToks, err := s.dict.Tokens(p)
	if err != nil {
		return 0, err
	}
	dstToks, err := s.dict.Tokens(dst)
	if err != nil {
		return 0, err
	}
	return s.dict.PathFromTokens(append(dstToks, pToks[len(srcToks):]...))
}

// isPropertyPath reports whether p's last component names a property ("T.attr"): such a
// target cannot receive child prims.
func (s *Stage) isPropertyPath(p uint64) bool {
	name := s.pathName(p)
	return strings.Contains(name[strings.LastIndexByte(name, '/')+1:], ".")
}

// cloneSource is one column's part of the source subtree: the subtree prims live in it and
// copies of their committed values (kept only when there are targets).
type cloneSource struct {
	col    *column.Column
	attr   uint64
	prims  []int    // indices into the subtree
	values [][]byte // values[j] is subtree prim prims[j]'s value
}

// clonePlan is a clone decided against the applied state, before anything changes.
type clonePlan struct {
	src, ordinal uint64
	subtree      []uint64   // source prims, root first
	dsts         []uint64   // target roots
	mapped       [][]uint64 // mapped[t][k]: target t's prim for subtree[k]
	merged       map[uint64]bool
	sources      []cloneSource
	// skip lists the (target prim, attribute) connections left out of a merge: the source
	// prim has a value and a connection of that name, the existing prim no connection.
	skip map[[2]uint64]bool
}

func (s *Stage) applyClone(op *sched.Op, rec *cloneRecord, src uint64, dsts []uint64, ordinal uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return err
	}
	injectFault(faultCloneApply)
	plan, err := s.planCloneLocked(src, dsts, ordinal, op.ID)
	if err != nil {
		return err
	}
	// Every payload is built (allocated) before the first prim is created: a failure here
	// leaves the stage unchanged.
	staged, err := s.cloneDeltasLocked(op, plan)
	if err != nil {
		return err
	}
	var created []uint64
	for _, row := range plan.mapped {
		s.addPrimsLocked(row)
		for _, m := range row {
			if !plan.merged[m] {
				created = append(created, m)
			}
		}
	}
	s.recordCreatedLocked(created, ordinal, op.ID)
	for _, st := range staged {
		st.col.Stage(st.prims, st.delta)
	}
	rec.report = CloneReport{Ordinal: ordinal, TargetCount: uint64(len(dsts)), SourcePrimCount: uint64(len(plan.subtree))}
	for _, d := range dsts {
		rec.report.PrimsCloned += uint64(s.hierarchySizeLocked(d))
	}
	return nil
}

// planCloneLocked checks a clone against the applied state, in this order: the source exists,
// no target root exists (PRIM_NOT_FOUND naming every one), no target's copy lands on a prim
// another target creates and no property-path target receives children (OP_FAILED), the
// existing prims below absent target roots can be merged into (OP_FAILED naming every
// conflict), then admission at (ordinal, seq) (admitCloneLocked).
func (s *Stage) planCloneLocked(src uint64, dsts []uint64, ordinal, seq uint64) (*clonePlan, error) {
	if !s.prims.has(src) {
		return nil, status.Errorf(status.NotFound, "clone: source prim does not exist at '%s'", s.pathName(src))
	}
	plan := &clonePlan{src: src, ordinal: ordinal, subtree: s.subtreeLocked(src), dsts: dsts,
		mapped: make([][]uint64, len(dsts)), merged: map[uint64]bool{}, skip: map[[2]uint64]bool{}}
	var existing []string
	for _, d := range dsts {
		if s.prims.has(d) {
			existing = append(existing, s.pathName(d))
		}
	}
	if len(existing) > 0 {
		return nil, status.Errorf(status.PrimNotFound, "clone: target prim already exists at '%s'; nothing was cloned", strings.Join(existing, "', '"))
	}
	created := make(map[uint64]bool, len(dsts)*len(plan.subtree))
	for t, dst := range dsts {
		if len(plan.subtree) > 1 && s.isPropertyPath(dst) {
			return nil, status.Errorf(status.OpFailed, "clone: target '%s' is a property path and cannot receive the %d child prims of %s; nothing was cloned",
				s.pathName(dst), len(plan.subtree)-1, s.pathName(src))
		}
		plan.mapped[t] = make([]uint64, len(plan.subtree))
		for k, p := range plan.subtree {
			m, err := s.rebase(p, src, dst)
			if err != nil {
				return nil, status.Errorf(status.Internal, "clone: rebasing %s: %v", s.pathName(p), err)
			}
			if created[m] {
				return nil, status.Errorf(status.OpFailed, "clone: target %s is also the copy of a prim under another target; nothing was cloned", s.pathName(m))
			}
			created[m] = true
			plan.mapped[t][k] = m
			if s.prims.has(m) {
				plan.merged[m] = true
			}
		}
	}
	for a, cols := range s.columns {
		for _, c := range cols {
			if !slices.ContainsFunc(plan.subtree, c.Live) {
				continue // Committed would find nothing, and it costs the column's pending rows
			}
			cs := cloneSource{col: c, attr: a}
			c.Committed(plan.subtree, func(k int, v []byte) {
				cs.prims = append(cs.prims, k)
				if len(dsts) > 0 {
					cs.values = append(cs.values, slices.Clone(v))
				}
			})
			if len(cs.prims) > 0 {
				plan.sources = append(plan.sources, cs)
			}
		}
	}
	if err := s.checkCloneMergesLocked(plan); err != nil {
		return nil, err
	}
	attrs := make([]uint64, 0, len(plan.sources))
	for _, cs := range plan.sources {
		attrs = append(attrs, cs.attr)
	}
	var targets []uint64
	for _, row := range plan.mapped {
		targets = append(targets, row...)
	}
	if err := s.admitCloneLocked(attrs, targets, ordinal, seq); err != nil {
		return nil, err
	}
	return plan, nil
}

// channels is where a prim carries one attribute name: its value column and its connection
// column (nil when it has none).
type channels struct{ value, connection *column.Column }

func (ch *channels) set(c *column.Column) {
	if isConnection(c.Schema) {
		ch.connection = c
	} else {
		ch.value = c
	}
}

// checkCloneMergesLocked checks every existing prim a clone would merge into (a prim below an
// absent target root) against its source prim, and decides which connections the merge
// leaves out. Attributes only the existing prim has are kept; the merge fails (OP_FAILED,
// nothing cloned) when the existing prim
//   - carries a cloned attribute (value or connection) in a column of another type,
//   - has another prim type than its typed source prim (an untyped source keeps the type),
//   - lacks a connection the source prim has without a value of that name, or
//   - has only the connection of a name whose value the source prim has.
//
// A connection whose name also has a value in the source prim is taken over only by a prim
// that has that connection itself; elsewhere it is left out.
func (s *Stage) checkCloneMergesLocked(plan *clonePlan) error {
	if len(plan.merged) == 0 {
		return nil
	}
	// What each source prim carries, per attribute.
	src := make([]map[uint64]*channels, len(plan.subtree))
	for _, cs := range plan.sources {
		for _, k := range cs.prims {
			if src[k] == nil {
				src[k] = map[uint64]*channels{}
			}
			ch := src[k][cs.attr]
			if ch == nil {
				ch = &channels{}
				src[k][cs.attr] = ch
			}
			ch.set(cs.col)
		}
	}
	primType := s.builtinToken(BuiltinPrimType)
	var problems []string
	for t := range plan.dsts {
		for k, m := range plan.mapped[t] {
			if !plan.merged[m] {
				continue
			}
			name := s.pathName(m)
			for a, sch := range src[k] {
				var dch channels
				for _, c := range s.columns[a] {
					if c.Live(m) {
						dch.set(c)
					}
				}
				attr := s.tokenName(a)
				differs := func(have, want *column.Column) bool {
					return have != nil && want != nil && have.Schema != want.Schema
				}
				switch {
				case differs(dch.value, sch.value) || differs(dch.connection, sch.connection):
					problems = append(problems, fmt.Sprintf("%s holds %q under another type", name, attr))
				case sch.value == nil && dch.connection == nil:
					problems = append(problems, fmt.Sprintf("%s lacks the connection %q", name, attr))
				case sch.value != nil && dch.value == nil && dch.connection != nil:
					problems = append(problems, fmt.Sprintf("%s has only the connection of %q", name, attr))
				case a == primType && sch.value != nil && !slices.Equal(s.committedLocked(dch.value, m), s.committedLocked(sch.value, plan.subtree[k])):
					problems = append(problems, fmt.Sprintf("%s has another prim type than %s", name, s.pathName(plan.subtree[k])))
				case sch.value != nil && sch.connection != nil && dch.connection == nil:
					plan.skip[[2]uint64{m, a}] = true
				}
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return status.Errorf(status.OpFailed, "clone: cannot merge into the existing prims below the target: %s; nothing was cloned", strings.Join(problems, "; "))
	}
	return nil
}

// committedLocked is prim's committed value in c (nil when c is nil or the prim has none).
func (s *Stage) committedLocked(c *column.Column, prim uint64) []byte {
	if c == nil {
		return nil
	}
	var out []byte
	c.Committed([]uint64{prim}, func(_ int, v []byte) { out = slices.Clone(v) })
	return out
}

// stagedClone is one delta a clone stages, built before anything is staged.
type stagedClone struct {
	col   *column.Column
	prims []uint64
	delta *column.Delta
}

// cloneDeltasLocked builds the deltas of a planned clone: per source column, the values of
// its subtree prims for every target (path values rebased; a merged prim's applied schemas
// and ancestor types are the union of both sets). A connection whose name the source prim
// also has a value of is staged untracked: the name's change is recorded through its value.
func (s *Stage) cloneDeltasLocked(op *sched.Op, plan *clonePlan) ([]stagedClone, error) {
	if len(plan.dsts) == 0 {
		return nil, nil
	}
	valued := map[[2]uint64]bool{} // (source prim, attribute) with a value column
	for _, cs := range plan.sources {
		if !isConnection(cs.col.Schema) {
			for _, k := range cs.prims {
				valued[[2]uint64{plan.subtree[k], cs.attr}] = true
			}
		}
	}
	var out []stagedClone
	release := func() {
		for _, st := range out {
			st.delta.Payload.Release()
		}
	}
	union := s.tagSetTokens()
	for _, cs := range plan.sources {
		for _, untracked := range []bool{false, true} {
			var prims []uint64
			var values [][]byte
			for t, dst := range plan.dsts {
				for j, k := range cs.prims {
					if isConnection(cs.col.Schema) && valued[[2]uint64{plan.subtree[k], cs.attr}] != untracked {
						continue
					}
					if !isConnection(cs.col.Schema) && untracked {
						continue
					}
					m := plan.mapped[t][k]
					if plan.skip[[2]uint64{m, cs.attr}] && isConnection(cs.col.Schema) {
						continue
					}
					v := slices.Clone(cs.values[j])
					if plan.merged[m] && union[cs.attr] {
						v = unionTokenIDs(s.committedLocked(cs.col, m), v)
					}
					if err := s.rebaseValues(cs.col.Schema, v, plan.src, dst); err != nil {
						release()
						return nil, err
					}
					prims = append(prims, m)
					values = append(values, v)
				}
			}
			if len(prims) == 0 {
				continue
			}
			d, err := cloneDelta(op, plan.ordinal, cs.col, values)
			if err != nil {
				release()
				return nil, err
			}
			d.Untracked = untracked
			out = append(out, stagedClone{col: cs.col, prims: prims, delta: d})
		}
	}
	return out, nil
}

// tagSetTokens returns the tokens of the tag-set built-ins a merge unites (usd-schemas,
// usd-ancestor-types) that the dictionary knows.
func (s *Stage) tagSetTokens() map[uint64]bool {
	out := map[uint64]bool{}
	for _, name := range []string{BuiltinSchemas, BuiltinAncestorTypes} {
		if t := s.builtinToken(name); t != 0 {
			out[t] = true
		}
	}
	return out
}

// unionTokenIDs is have's token ids followed by those of add it lacks.
func unionTokenIDs(have, add []byte) []byte {
	out := slices.Clone(have)
	seen := map[uint64]bool{}
	for off := 0; off+8 <= len(have); off += 8 {
		seen[binary.LittleEndian.Uint64(have[off:])] = true
	}
	for off := 0; off+8 <= len(add); off += 8 {
		if id := binary.LittleEndian.Uint64(add[off:]); !seen[id] {
			seen[id] = true
			out = append(out, add[off:off+8]...)
		}
	}
	return out
}

// cloneDelta packs values (one row each) into one payload for column c.
func cloneDelta(op *sched.Op, ordinal uint64, c *column.Column, values [][]byte) (*column.Delta, error) {
	total := 0
	for _, v := range values {
		total += len(v)
	}
	payload, err := buffer.New(total)
	if err != nil {
		return nil, err
	}
	d := &column.Delta{Ordinal: ordinal, Seq: op.ID, Payload: payload}
	bytes := payload.Bytes()
	off := 0
	for _, v := range values {
		copy(bytes[off:], v)
		if c.Schema.IsArray {
			d.RowOff = append(d.RowOff, int64(off))
			d.RowLen = append(d.RowLen, int64(len(v)/c.RowBytes()))
		}
		off += len(v)
	}
	return d, nil
}

// rebaseValues rewrites path ids inside src's subtree to dst's (relationship targets, and the
// path half of connection pairs).
func (s *Stage) rebaseValues(schema column.Schema, v []byte, src, dst uint64) error {
	stride := 0
	switch schema.Semantic {
	case SemanticRelationshipPathID:
		stride = 8
	case SemanticConnectionPathID:
		stride = 16
	default:
		return nil
	}
	for off := 0; off+8 <= len(v); off += stride {
		p := binary.LittleEndian.Uint64(v[off:])
		if p == 0 || !s.dict.ValidPath(p) {
			continue
		}
		m, err := s.rebase(p, src, dst)
		if err != nil {
			return status.Errorf(status.Internal, "rebasing a path value: %v", err)
		}
		binary.LittleEndian.PutUint64(v[off:], m)
	}
	return nil
}
