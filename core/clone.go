package core

import (
	"encoding/binary"
	"slices"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// Clone enqueues a copy of source's subtree (the prim, its held descendants and their
// attribute values) to each target, as one mutation at ordinal (multi-environment fan-out).
// Path values inside the source subtree are rebased onto each target.
func (s *Stage) Clone(source string, targets []string, ordinal uint64) (uint64, error) {
	src, err := s.dict.InternPath(source)
	if err != nil {
		return 0, status.Errorf(status.InvalidArgument, "source_path: %v", err)
	}
	if len(targets) == 0 {
		return 0, status.Errorf(status.InvalidArgument, "target_paths must name at least one target")
	}
	dsts := make([]uint64, len(targets))
	seen := map[uint64]int{}
	for i, t := range targets {
		d, err := s.dict.InternPath(t)
		if err != nil {
			return 0, status.Errorf(status.InvalidArgument, "target_paths[%d]: %v", i, err)
		}
		if j, dup := seen[d]; dup {
			return 0, status.Errorf(status.InvalidArgument, "target_paths[%d] and [%d] are both %q", j, i, t)
		}
		if s.isUnder(d, src) {
			return 0, status.Errorf(status.InvalidArgument, "target_paths[%d]: %q is inside the source subtree %q", i, t, source)
		}
		seen[d] = i
		dsts[i] = d
	}
	s.mu.Lock()
	defer s.unlockAndStart()
	if err := s.checkLiveLocked(); err != nil {
		return 0, err
	}
	// Admission runs when the clone executes: after the floor advances to its ordinal enqueued
	// before it.
	op := s.enqueueLocked(opSpec{deps: s.advancesOverLocked(ordinal), mutation: true, ordinal: ordinal, run: func(op *sched.Op) error {
		return s.applyClone(op, src, dsts, ordinal)
	}})
	return op.ID, nil
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
	out := []uint64{root}
	for p := range s.prims.all() {
		if p != root && s.isUnder(p, root) {
			out = append(out, p)
		}
	}
	slices.Sort(out[1:])
	return out
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

// cloneColumn is one column's values for the subtree, gathered before anything is written.
type cloneColumn struct {
	col    *column.Column
	prims  []uint64 // subtree prims that carry a value
	values [][]byte // copies of their committed values
}

func (s *Stage) applyClone(op *sched.Op, src uint64, dsts []uint64, ordinal uint64) error {
	gathered, mapped, err := s.gatherClone(src, dsts, ordinal, op.ID)
	if err != nil {
		return err
	}
	for _, cc := range gathered {
		if err := s.stageClone(op, cc, mapped, src, dsts, ordinal); err != nil {
			return err
		}
	}
	return nil
}

// gatherClone checks a clone against the applied state, copies the source subtree's values
// and records the target prims; mapped[t][k] is the target path of subtree prim k in target t.
func (s *Stage) gatherClone(src uint64, dsts []uint64, ordinal, seq uint64) ([]cloneColumn, [][]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return nil, nil, err
	}
	injectFault(faultCloneApply)
	if !s.prims.has(src) {
		return nil, nil, status.Errorf(status.NotFound, "clone source %s does not exist", s.pathName(src))
	}
	subtree := s.subtreeLocked(src)
	mapped := make([][]uint64, len(dsts)) // mapped[t][k] = target path of subtree[k]
	created := make(map[uint64]bool, len(dsts)*len(subtree))
	for t, dst := range dsts {
		mapped[t] = make([]uint64, len(subtree))
		for k, p := range subtree {
			m, err := s.rebase(p, src, dst)
			if err != nil {
				return nil, nil, status.Errorf(status.Internal, "rebasing %s: %v", s.pathName(p), err)
			}
			if s.prims.has(m) {
				return nil, nil, status.Errorf(status.PrimNotFound, "clone target %s already exists; nothing was cloned", s.pathName(m))
			}
			if created[m] {
				return nil, nil, status.Errorf(status.OpFailed, "clone target %s is also the copy of a prim under another target; nothing was cloned", s.pathName(m))
			}
			created[m] = true
			mapped[t][k] = m
		}
	}
	var gathered []cloneColumn
	var attrs []uint64
	for a, cols := range s.columns {
		for _, c := range cols {
			cc := cloneColumn{col: c}
			c.Committed(subtree, func(k int, v []byte) {
				cc.prims = append(cc.prims, uint64(k))
				cc.values = append(cc.values, append([]byte(nil), v...))
			})
			if len(cc.prims) == 0 {
				continue
			}
			attrs = append(attrs, a)
			gathered = append(gathered, cc)
		}
	}
	var targets []uint64
	for t := range dsts {
		targets = append(targets, mapped[t]...)
	}
	if err := s.admitCloneLocked(attrs, targets, ordinal, seq); err != nil {
		return nil, nil, err
	}
	s.addPrimsLocked(targets)
	s.recordCreatedLocked(targets, ordinal, seq)
	return gathered, mapped, nil
}

// stageClone writes one column's gathered values to every target subtree.
func (s *Stage) stageClone(op *sched.Op, cc cloneColumn, mapped [][]uint64,
	src uint64, dsts []uint64, ordinal uint64) error {
	schema := cc.col.Schema
	total := 0
	for _, v := range cc.values {
		total += len(v)
	}
	payload, err := buffer.New(total * len(dsts))
	if err != nil {
		return err
	}
	bytes := payload.Bytes()
	d := &column.Delta{Ordinal: ordinal, Seq: op.ID, Payload: payload}
	var targets []uint64
	off := 0
	for t, dst := range dsts {
		for j, k := range cc.prims {
			v := bytes[off : off+len(cc.values[j])]
			copy(v, cc.values[j])
			if err := s.rebaseValues(schema, v, src, dst); err != nil {
				payload.Release()
				return err
			}
			targets = append(targets, mapped[t][k])
			if schema.IsArray {
				d.RowOff = append(d.RowOff, int64(off))
				d.RowLen = append(d.RowLen, int64(len(v)/cc.col.RowBytes()))
			}
			off += len(v)
		}
	}
	cc.col.Stage(targets, d)
	return nil
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
