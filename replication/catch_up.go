package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ovstage-go/ovstage/core"
)

// snapshotWait bounds how long a starting replica waits for a snapshot that covers the
// advances its stream dropped (the publisher may be storing a newer one).
const snapshotWait = 10 * time.Second

// catchUp starts the replica from the newest snapshot when the stream no longer holds the
// start of its publisher's advances (docs/replication.md, "Snapshots"); the stream is then
// read from its first message, and what the snapshot covers is skipped.
func (r *Replica) catchUp(ctx context.Context, js jetstream.JetStream) error {
	info, err := r.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", r.n.stream, err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	first, err := r.stream.GetMsg(ctx, info.State.FirstSeq)
	if err != nil {
		return fmt.Errorf("stream %s, first message: %w", r.n.stream, err)
	}
	epoch, seq, whole, err := startOf(first.Data)
	if err != nil {
		return err
	}
	if seq == 1 && whole {
		return nil // the stream holds its publisher's advances from the first
	}
	need := seq // the snapshot must cover the advances before the first whole one
	if whole {
		need = seq - 1
	}
	deadline := time.Now().Add(snapshotWait)
	for {
		h, msgs, ended, err := r.fetchSnapshot(ctx, js)
		if err != nil {
			return err
		}
		if h.Epoch == epoch && h.Seq >= need {
			return r.applySnapshot(h, msgs, ended)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stream %s starts at advance %d of publisher %s, the newest snapshot follows advance %d of publisher %s: "+
				"the stream's limits dropped advances no snapshot covers (snapshot more often, or raise the limits)", r.n.stream, seq, epoch, h.Seq, h.Epoch)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startOf reads a message's publisher and advance, and whether it begins the advance (a data
// message of part 0, or the floor message of an advance without data).
func startOf(b []byte) (epoch string, seq uint64, whole bool, err error) {
	kind, rd, err := decodeKind(b)
	if err != nil {
		return "", 0, false, err
	}
	switch kind {
	case kindData:
		m, err := decodeData(rd)
		return m.Epoch, m.Seq, m.Part == 0, err
	case kindFloor:
		m, err := decodeFloor(rd)
		return m.Epoch, m.Seq, m.Parts == 0, err
	case kindPrims: // may be a later part of the advance's prim deletes: not whole
		m, err := decodePrims(rd)
		return m.Epoch, m.Seq, false, err
	}
	return "", 0, false, fmt.Errorf("%w: message kind %d", errCorrupt, kind)
}

// fetchSnapshot reads and decodes the newest snapshot.
func (r *Replica) fetchSnapshot(ctx context.Context, js jetstream.JetStream) (snapshotHeader, []dataMsg, []core.PrimDelete, error) {
	none := fmt.Errorf("stream %s no longer holds its first advances and no snapshot is published (object store %s): "+
		"publish with snapshot_every, or call snapshot(), for late replicas", r.n.stream, r.n.snapshots)
	store, err := js.ObjectStore(ctx, r.n.snapshots)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return snapshotHeader{}, nil, nil, none
	}
	if err != nil {
		return snapshotHeader{}, nil, nil, fmt.Errorf("object store %s: %w", r.n.snapshots, err)
	}
	b, err := store.GetBytes(ctx, snapshotObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return snapshotHeader{}, nil, nil, none
	}
	if err != nil {
		return snapshotHeader{}, nil, nil, fmt.Errorf("reading the snapshot from %s: %w", r.n.snapshots, err)
	}
	return decodeSnapshot(b)
}

// applySnapshot writes a snapshot's rows at their ordinals, then ends the prims it deletes
// whole (at their newest tombstone, the last change of each), raises the floors as the
// primary had, and continues after the snapshot's advance with the paths the publisher
// remembered.
func (r *Replica) applySnapshot(h snapshotHeader, msgs []dataMsg, ended []core.PrimDelete) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal panic applying a snapshot: %v", p)
		}
	}()
	var used []*knownPaths
	defer func() {
		for _, k := range used {
			k.drop()
		}
	}()
	keep := map[string]bool{} // prims not to revive: ended, or holding a value
	for _, d := range ended {
		keep[d.Path] = true
	}
	for i := range msgs {
		for j, p := range msgs[i].Changes.Paths {
			if !msgs[i].Changes.Deleted[j] {
				keep[p] = true
			}
		}
	}
	for i := range msgs {
		reviveHeld(&msgs[i].Changes, keep)
		k := &knownPaths{paths: msgs[i].Changes.Paths}
		used = append(used, k)
		if err := r.applyColumn(&msgs[i].Changes, k); err != nil {
			_ = r.settle()
			return fmt.Errorf("applying the snapshot of floor %d, %s: %w", h.Ordinal, msgs[i].Changes.Attribute, err)
		}
	}
	if err := r.deletePrims(ended); err != nil {
		_ = r.settle()
		return fmt.Errorf("applying the snapshot of floor %d, deleting prims: %w", h.Ordinal, err)
	}
	if err := r.settle(); err != nil {
		return fmt.Errorf("applying the snapshot of floor %d: %w", h.Ordinal, err)
	}
	floors := []floorMsg{{Ordinal: h.GlobalFloor, Global: true}}
	attrs := make([]string, 0, len(h.Floors))
	for a := range h.Floors {
		attrs = append(attrs, a)
	}
	sort.Strings(attrs)
	for _, a := range attrs {
		floors = append(floors, floorMsg{Ordinal: h.Floors[a], Attributes: []string{a}})
	}
	for _, f := range floors {
		if err := r.advance(f); err != nil {
			return fmt.Errorf("the snapshot's floor %d: %w", f.Ordinal, err)
		}
	}
	for key, paths := range h.Memo {
		r.known[key] = &knownPaths{paths: paths}
	}
	r.epoch, r.seq, r.applied = h.Epoch, h.Seq, h.Nanos
	r.st.Ordinal, r.st.SnapshotOrdinal = h.Ordinal, h.Ordinal
	return nil
}

// reviveHeld adds, for each tombstone of c on a prim not in keep, a write of a zero value at
// the same ordinal: the primary holds such a prim (it was not deleted whole), and a tombstone
// alone would not create it on the replica. applyColumn writes before it deletes at one
// ordinal, so the tombstone stays the newest change.
func reviveHeld(c *core.ColumnChanges, keep map[string]bool) {
	if c.Tokens != nil {
		return // no string for a zero token id; another column revives the prim
	}
	elem := c.DType.ElemBytes()
	c.Values = slices.Clip(c.Values) // a view of the snapshot's bytes: append must copy
	for i, n := 0, len(c.Paths); i < n; i++ {
		if !c.Deleted[i] || keep[c.Paths[i]] {
			continue
		}
		c.Paths = append(c.Paths, c.Paths[i])
		c.Ordinals = append(c.Ordinals, c.Ordinals[i])
		c.Deleted = append(c.Deleted, false)
		if c.IsArray {
			c.Lengths = append(c.Lengths, 0)
		} else {
			c.Values = append(c.Values, make([]byte, elem)...)
		}
	}
}
