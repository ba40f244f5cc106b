package core

import (
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// AttributeMode FORCE: a write (or map commit) that meets a target prim carrying the attribute
// with another schema replaces that prim's schema instead of failing. The replacement is part
// of the write: it passes the write's admission, and at the write's ordinal the old schema's
// column records a tombstone for the replaced prims and the new schema's column their value,
// so a change range over the ordinal shows both and a latest read only the new value. Prims
// the write does not target keep their schema.
//
// A live read group over a replaced prim keeps its view (the tombstone folds into the old
// column copy-on-write, as any write does), so unlike the reference such a group does not
// refuse the write; neither does an open map session, whose commit re-validates the schema.
// The plan and its staging happen under the stage lock with nothing that can fail in between,
// so a failed FORCE write has terminated nothing and leaves its ordinal free. Reserved names
// never take FORCE (checkReservedAttribute).

// forcePart is the targets of a FORCE write that go to one column, with their payload rows.
type forcePart struct {
	col     *column.Column
	targets []uint64
	src     []int32
}

// forceEnd is an old-schema column and the prims whose schema in it the write ends.
type forceEnd struct {
	col   *column.Column
	prims []uint64
}

type forcePlan struct {
	parts []forcePart
	ends  []forceEnd
}

// planForceLocked decides, per target prim, the column a FORCE write at (w.ordinal, seq) goes
// to and the old-schema columns it ends. A prim that keeps its storage type under a NONE
// semantic keeps its role; with another storage type and NONE it gets no role; a non-NONE
// semantic sets the role. src gives each target's payload row (nil: its index).
func (s *Stage) planForceLocked(w *preparedWrite, targets []uint64, src []int32, seq uint64) (*forcePlan, error) {
	plan := &forcePlan{}
	partOf := map[*column.Column]int{}
	endOf := map[*column.Column]int{}
	ended := map[*column.Column]map[uint64]bool{}
	for i, p := range targets {
		var live []*column.Column
		for _, c := range s.columns[w.attr] {
			// A connection and a value of one name are separate channels: FORCE replaces
			// only the schema of the channel it writes.
			if sameChannel(c.Schema, w.schema) && c.LiveFrom(p, w.ordinal, seq) {
				live = append(live, c)
			}
		}
		dest, err := s.forceDestLocked(w, live)
		if err != nil {
			return nil, err
		}
		for _, c := range live {
			if c == dest || ended[c][p] {
				continue
			}
			if later := c.ValueAfter([]uint64{p}, w.ordinal, seq); len(later) > 0 {
				return nil, status.Errorf(status.InvalidArgument,
					"%sattribute %q on %s has a %s (is_array=%v, semantic %d) value ordered after ordinal %d: FORCE replaces only older schemas",
					w.label, s.tokenName(w.attr), s.pathName(p), c.Schema.DType, c.Schema.IsArray, c.Schema.Semantic, w.ordinal)
			}
			k, ok := endOf[c]
			if !ok {
				k = len(plan.ends)
				endOf[c] = k
				plan.ends = append(plan.ends, forceEnd{col: c})
				ended[c] = map[uint64]bool{}
			}
			ended[c][p] = true
			plan.ends[k].prims = append(plan.ends[k].prims, p)
		}
		k, ok := partOf[dest]
		if !ok {
			k = len(plan.parts)
			partOf[dest] = k
			plan.parts = append(plan.parts, forcePart{col: dest})
		}
		row := int32(i)
		if src != nil {
			row = src[i]
		}
		plan.parts[k].targets = append(plan.parts[k].targets, p)
		plan.parts[k].src = append(plan.parts[k].src, row)
	}
	return plan, nil
}

// forceDestLocked picks (creating it when needed) the column a FORCE write sends a prim to,
// given the columns the prim is live in.
func (s *Stage) forceDestLocked(w *preparedWrite, live []*column.Column) (*column.Column, error) {
	var dest *column.Column
	if w.schema.Semantic == SemanticNone {
		for _, c := range live {
			if sameStorage(c.Schema, w.schema) {
				dest = c // same storage: the prim keeps its role
				break
			}
		}
	}
	if dest == nil {
		for _, c := range s.columns[w.attr] {
			if !sameChannel(c.Schema, w.schema) {
				continue
			}
			role := c.Schema.Semantic == w.schema.Semantic ||
				(w.schema.Semantic == SemanticNone && len(live) == 0) // an ordinary write
			if sameStorage(c.Schema, w.schema) && role {
				dest = c
				break
			}
		}
	}
	if dest == nil {
		var err error
		if dest, err = s.newColumnLocked(w); err != nil {
			return nil, err
		}
	}
	return dest, nil
}

// stageForce ends the replaced schemas and stages the value, at the write's (ordinal, op).
func (s *Stage) stageForce(op *sched.Op, w *preparedWrite, dest writeDest, targets []uint64) {
	for _, e := range dest.force.ends {
		e.col.Stage(e.prims, &column.Delta{Ordinal: w.ordinal, Seq: op.ID, Tombstone: true})
	}
	// One payload reference per part, taken before the first part's column may fold and
	// release its own.
	refs := make([]buffer.Buffer, len(dest.force.parts))
	refs[0] = w.payload
	for i := 1; i < len(refs); i++ {
		refs[i] = w.payload.Retain()
	}
	w.payload = buffer.Buffer{} // the columns own it now
	for i, part := range dest.force.parts {
		part.col.Stage(part.targets, &column.Delta{Ordinal: w.ordinal, Seq: op.ID, Src: part.src, Payload: refs[i],
			RowOff: w.rowOff, RowLen: w.rowLen, Width: w.width, WidthElems: w.widthElems, Later: dest.later})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addWrittenPrimsLocked(targets, dest.gone)
}

// exactColumnLocked is attr's column of exactly schema's storage and role (nil if none).
func (s *Stage) exactColumnLocked(attr uint64, schema column.Schema) *column.Column {
	for _, c := range s.columns[attr] {
		if sameStorage(c.Schema, schema) && c.Schema.Semantic == schema.Semantic {
			return c
		}
	}
	return nil
}
