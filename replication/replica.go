package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// ReplicaStatus is a snapshot of a replica's progress.
type ReplicaStatus struct {
	URL       string `json:"url"`
	Stream    string `json:"stream"`
	Connected bool   `json:"connected"`
	// Ordinal is the floor of the newest applied advance; PrimaryOrdinal that of the newest
	// advance in the stream. LagSeconds is how much earlier the primary sealed the applied
	// advance than the newest one (0 when caught up).
	Ordinal        uint64  `json:"ordinal"`
	Advances       uint64  `json:"advances"`
	PrimaryOrdinal uint64  `json:"primary_ordinal"`
	LagOrdinals    uint64  `json:"lag_ordinals"`
	LagSeconds     float64 `json:"lag_seconds"`
	// SnapshotOrdinal is the floor of the snapshot the replica started from (0: none, it
	// read the stream from its start).
	SnapshotOrdinal uint64 `json:"snapshot_ordinal"`
	Failed          bool   `json:"failed"`
	LastError       string `json:"last_error"`
}

// Replica applies a published stage's advances to a local stage, in order, through the
// engine's write path (docs/replication.md, "Replica").
type Replica struct {
	n      names
	nc     *nats.Conn
	stream jetstream.Stream
	cons   jetstream.ConsumeContext
	stage  *core.Stage

	mu      sync.Mutex
	st      ReplicaStatus
	epoch   string
	seq     uint64 // newest applied advance of epoch
	parts   uint32 // data messages applied of the advance in progress
	applied int64  // primary time of the newest applied advance
	closed  bool
	// known holds the paths of the last message of each (attribute, part), with a query of
	// them once one was needed (dataMsg.SamePaths).
	known map[memoKey]*knownPaths
	// pending holds the write and delete ops of the advance in progress, enqueued without
	// waiting; settle waits for them once, before the floor advances.
	pending []pendingOp
}

// pendingOp is an enqueued op and what to release once it completed (its value buffer's
// pin, a query made for it).
type pendingOp struct {
	op   uint64
	done func()
}

// settle waits for every pending op, then releases what they held; the first failure is
// returned.
func (r *Replica) settle() error {
	var first error
	for _, p := range r.pending {
		if err := r.wait(p.op); err != nil && first == nil {
			first = err
		}
		if p.done != nil {
			p.done()
		}
	}
	r.pending = r.pending[:0]
	return first
}

type knownPaths struct {
	paths   []string
	query   uint64
	release func()
}

func (k *knownPaths) drop() {
	if k.release != nil {
		k.release()
	}
}

// StartReplica follows the stream of name on url and applies it to s, which the caller
// created for it and does not write to.
func StartReplica(s *core.Stage, url, name string) (_ *Replica, err error) {
	n, err := namesOf(name)
	if err != nil {
		return nil, err
	}
	if url == "" {
		return nil, errors.New("url is empty: a replica connects to the primary's NATS server (Publisher.url)")
	}
	r := &Replica{n: n, stage: s, known: map[memoKey]*knownPaths{}}
	r.st.URL, r.st.Stream = redact(url), n.stream
	if r.nc, err = connect(url); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.nc.Close()
		}
	}()
	js, err := jetstream.New(r.nc)
	if err != nil {
		return nil, fmt.Errorf("JetStream on %s: %w", r.st.URL, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r.stream, err = js.Stream(ctx, n.stream); err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("no stage %q is published on %s (no stream %s)", name, r.st.URL, n.stream)
		}
		return nil, fmt.Errorf("looking up stream %s on %s: %w", n.stream, r.st.URL, err)
	}
	if err := r.catchUp(ctx, js); err != nil {
		return nil, err
	}
	cons, err := r.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{n.data, n.floor}})
	if err != nil {
		return nil, fmt.Errorf("subscribing to stream %s: %w", n.stream, err)
	}
	if r.cons, err = cons.Consume(r.handle); err != nil {
		return nil, fmt.Errorf("consuming stream %s: %w", n.stream, err)
	}
	return r, nil
}

// handle applies one message; after a failure the replica stops applying (its stage stays
// at the last complete advance) and reports why.
func (r *Replica) handle(msg jetstream.Msg) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.st.Failed {
		return
	}
	if err := r.applyMessage(msg.Data()); err != nil {
		_ = r.settle() // what was enqueued completes; the first error is the one to report
		r.st.Failed = true
		r.st.LastError = err.Error()
	}
}

func (r *Replica) applyMessage(b []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal panic applying a message: %v", p)
		}
	}()
	kind, rd, err := decodeKind(b)
	if err != nil {
		return err
	}
	switch kind {
	case kindData:
		m, err := decodeData(rd)
		if err != nil {
			return err
		}
		if skip, err := r.admit(m.Epoch, m.Seq); skip || err != nil {
			return err
		}
		known, err := r.pathsOf(&m)
		if err != nil {
			return err
		}
		if err := r.applyColumn(&m.Changes, known); err != nil {
			return fmt.Errorf("applying %s of advance %d: %w", m.Changes.Attribute, m.Seq, err)
		}
		r.parts++
	case kindPrims:
		m, err := decodePrims(rd)
		if err != nil {
			return err
		}
		if skip, err := r.admit(m.Epoch, m.Seq); skip || err != nil {
			return err
		}
		if err := r.deletePrims(m.Deletes); err != nil {
			return fmt.Errorf("deleting prims of advance %d: %w", m.Seq, err)
		}
		r.parts++
	case kindFloor:
		m, err := decodeFloor(rd)
		if err != nil {
			return err
		}
		if skip, err := r.admit(m.Epoch, m.Seq); skip || err != nil {
			return err
		}
		if err := r.settle(); err != nil {
			return fmt.Errorf("advance %d to floor %d: %w", m.Seq, m.Ordinal, err)
		}
		if m.Parts != r.parts {
			return fmt.Errorf("advance %d to floor %d: %d data messages applied, %d published", m.Seq, m.Ordinal, r.parts, m.Parts)
		}
		if err := r.advance(m); err != nil {
			return fmt.Errorf("advance %d to floor %d: %w", m.Seq, m.Ordinal, err)
		}
		r.seq, r.parts, r.applied = m.Seq, 0, m.Nanos
		r.st.Ordinal, r.st.Advances = m.Ordinal, r.st.Advances+1
	default:
		return fmt.Errorf("%w: message kind %d", errCorrupt, kind)
	}
	return nil
}

// admit checks a message's place in the sequence: skip a duplicate of an applied advance,
// fail on a gap (a dropped advance) or on a new publisher that does not start at 1.
func (r *Replica) admit(epoch string, seq uint64) (skip bool, err error) {
	if epoch != r.epoch {
		if seq != 1 || r.parts != 0 {
			return false, fmt.Errorf("publisher %s starts at advance %d after advance %d of publisher %q: advances are missing", epoch, seq, r.seq, r.epoch)
		}
		r.epoch, r.seq = epoch, 0
	}
	switch {
	case seq <= r.seq:
		return true, nil
	case seq > r.seq+1:
		return false, fmt.Errorf("advances %d..%d are missing from stream %s (the publisher dropped them)", r.seq+1, seq-1, r.n.stream)
	}
	return false, nil
}

// pathsOf fills in the paths of a message that refers to the previous ones, or remembers
// the paths it lists.
func (r *Replica) pathsOf(m *dataMsg) (*knownPaths, error) {
	key := memoKey{m.Changes.Attribute, m.Part}
	k := r.known[key]
	if m.SamePaths {
		if k == nil || len(k.paths) != len(m.Changes.Ordinals) {
			return nil, fmt.Errorf("%w: advance %d part %d of %s refers to paths this replica has not seen", errCorrupt, m.Seq, m.Part, key.attribute)
		}
		m.Changes.Paths = k.paths
		return k, nil
	}
	if k != nil {
		k.drop()
	}
	k = &knownPaths{paths: m.Changes.Paths}
	r.known[key] = k
	return k, nil
}

// wait waits for op and stops tracking it.
func (r *Replica) wait(op uint64) error {
	res, err := r.stage.WaitOp(op, core.TimeoutInfinite)
	if err != nil {
		return err
	}
	defer func() { _ = r.stage.ReleaseOp(op) }()
	if res.Status != status.OK {
		return fmt.Errorf("%s", r.stage.LastOpError(op))
	}
	return nil
}

// query makes a query of paths; release it when done.
func (r *Replica) query(paths []string) (uint64, func(), error) {
	dict := r.stage.Dictionary()
	list, err := dict.CreateListFromStrings(paths)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _, _ = dict.Release(list) }()
	q, err := r.stage.QueryFromPathList(list)
	if err != nil {
		return 0, nil, err
	}
	return q, func() {
		if op, err := r.stage.ReleaseQuery(q); err == nil {
			_ = r.stage.DetachOp(op)
		}
	}, nil
}

// applyColumn writes and deletes c's entries at their ordinals, lowest first.
func (r *Replica) applyColumn(c *core.ColumnChanges, known *knownPaths) error {
	if c.Tokens != nil { // token ids of the primary: this stage's ids of the same strings
		vals := make([]byte, len(c.Values))
		for i, str := range c.Tokens {
			tok, err := r.stage.Dictionary().InternToken(str)
			if err != nil {
				return fmt.Errorf("token %q: %w", str, err)
			}
			binary.LittleEndian.PutUint64(vals[8*i:], uint64(tok))
		}
		c.Values = vals
	}
	elem := int64(c.DType.ElemBytes())
	offs := make([]int64, len(c.Paths)) // value offset, lengths index packed below
	lens := make([]int64, len(c.Paths))
	byOrdinal := map[uint64][]int{}
	off, l := int64(0), 0
	for i := range c.Paths {
		byOrdinal[c.Ordinals[i]] = append(byOrdinal[c.Ordinals[i]], i)
		if c.Deleted[i] {
			continue
		}
		offs[i], lens[i] = off, 1
		if c.IsArray {
			lens[i] = c.Lengths[l]
			l++
		}
		off += lens[i] * elem
	}
	ordinals := make([]uint64, 0, len(byOrdinal))
	for o := range byOrdinal {
		ordinals = append(ordinals, o)
	}
	sort.Slice(ordinals, func(i, j int) bool { return ordinals[i] < ordinals[j] })
	for _, o := range ordinals {
		var writes, deletes []int
		for _, i := range byOrdinal[o] {
			if c.Deleted[i] {
				deletes = append(deletes, i)
			} else {
				writes = append(writes, i)
			}
		}
		if err := r.write(c, o, writes, offs, lens, known); err != nil {
			return err
		}
		if err := r.delete(c, o, deletes); err != nil {
			return err
		}
	}
	return nil
}

func pathsOf(c *core.ColumnChanges, idx []int) []string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = c.Paths[i]
	}
	return out
}

// write writes entries idx of c at ordinal from one contiguous copy of their values.
func (r *Replica) write(c *core.ColumnChanges, ordinal uint64, idx []int, offs, lens []int64, known *knownPaths) error {
	if len(idx) == 0 {
		return nil
	}
	elem := int64(c.DType.ElemBytes())
	total := int64(0)
	for _, i := range idx {
		total += lens[i] * elem
	}
	whole := !c.IsArray && len(idx) == len(c.Paths) && total > 0
	var buf []byte
	if whole { // every entry, in order: the message's values as they are
		buf = c.Values
	} else {
		buf = make([]byte, total+8) // +8: an empty array row still points at memory
	}
	pin := &runtime.Pinner{} // until the op completed (settle): it reads buf when it runs
	pin.Pin(&buf[0])
	release := pin.Unpin
	base := unsafe.Pointer(&buf[0])
	var tensors []tensor.Tensor
	at := int64(0)
	copies := idx
	if whole {
		copies = nil // nothing to gather
	}
	for _, i := range copies {
		n := lens[i] * elem
		copy(buf[at:at+n], c.Values[offs[i]:offs[i]+n])
		if c.IsArray {
			tensors = append(tensors, tensor.Tensor{Data: unsafe.Add(base, at), DeviceType: tensor.DeviceCPU,
				DType: c.DType, Shape: []int64{lens[i]}})
		}
		at += n
	}
	if !c.IsArray {
		tensors = []tensor.Tensor{{Data: base, DeviceType: tensor.DeviceCPU, DType: c.DType, Shape: []int64{int64(len(idx))}}}
	}
	var q uint64
	if len(idx) == len(known.paths) { // every entry: the remembered query of these paths
		if known.release == nil {
			var err error
			if known.query, known.release, err = r.query(known.paths); err != nil {
				release()
				return err
			}
		}
		q = known.query
	} else {
		var dropQuery func()
		var err error
		if q, dropQuery, err = r.query(pathsOf(c, idx)); err != nil {
			release()
			return err
		}
		release = func() { dropQuery(); pin.Unpin() }
	}
	op, err := r.stage.WriteAttribute(core.WriteRequest{Query: q, AttrName: c.Attribute, Ordinal: ordinal,
		Tensors: tensors, Semantic: c.Semantic, IsArray: c.IsArray})
	if err != nil {
		release()
		return err
	}
	r.pending = append(r.pending, pendingOp{op: op, done: release})
	return nil
}

// delete writes tombstones of entries idx of c at ordinal.
func (r *Replica) delete(c *core.ColumnChanges, ordinal uint64, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	q, release, err := r.query(pathsOf(c, idx))
	if err != nil {
		return err
	}
	tok, err := r.stage.Dictionary().InternToken(c.Attribute)
	if err != nil {
		release()
		return err
	}
	op, err := r.stage.DeleteAttributes(core.DeleteRequest{Query: q, Tokens: []uint64{tok}, Ordinal: ordinal})
	if err != nil {
		release()
		return err
	}
	r.pending = append(r.pending, pendingOp{op: op, done: release})
	return nil
}

// deletePrims deletes whole prims at their ordinals, lowest first. An advance's prim deletes
// come before its column changes (every change it carries for such a prim lies at or above
// the delete); a snapshot's after its rows (the delete is then the prim's last change).
func (r *Replica) deletePrims(dels []core.PrimDelete) error {
	byOrdinal := map[uint64][]string{}
	for _, d := range dels {
		byOrdinal[d.Ordinal] = append(byOrdinal[d.Ordinal], d.Path)
	}
	ordinals := make([]uint64, 0, len(byOrdinal))
	for o := range byOrdinal {
		ordinals = append(ordinals, o)
	}
	sort.Slice(ordinals, func(i, j int) bool { return ordinals[i] < ordinals[j] })
	for _, o := range ordinals {
		q, release, err := r.query(byOrdinal[o])
		if err != nil {
			return err
		}
		op, err := r.stage.DeleteAttributes(core.DeleteRequest{Query: q, Ordinal: o})
		if err != nil {
			release()
			return err
		}
		r.pending = append(r.pending, pendingOp{op: op, done: release})
	}
	return nil
}

// advance raises the local floors as the primary's advance did.
func (r *Replica) advance(m floorMsg) error {
	scope := core.ScopeAll
	var toks []uint64
	if !m.Global {
		scope = core.ScopeInclude
		for _, a := range m.Attributes {
			t, err := r.stage.Dictionary().InternToken(a)
			if err != nil {
				return err
			}
			toks = append(toks, t)
		}
	}
	op, err := r.stage.AdvanceWriteFloor(m.Ordinal, scope, toks)
	if err != nil {
		return err
	}
	return r.wait(op)
}

// Status is a snapshot of the replica's progress; it asks the server for the stream's newest
// advance (at most a second).
func (r *Replica) Status() ReplicaStatus {
	var newest *floorMsg
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if raw, err := r.stream.GetLastMsgForSubject(ctx, r.n.floor); err == nil {
		if kind, rd, err := decodeKind(raw.Data); err == nil && kind == kindFloor {
			if m, err := decodeFloor(rd); err == nil {
				newest = &m
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.Connected = r.nc.IsConnected()
	if newest != nil {
		st.PrimaryOrdinal = newest.Ordinal
		if newest.Epoch == r.epoch && newest.Seq > r.seq || newest.Epoch != r.epoch {
			st.LagOrdinals = newest.Ordinal - min(newest.Ordinal, st.Ordinal)
			if r.applied != 0 {
				st.LagSeconds = max(0, float64(newest.Nanos-r.applied)/1e9)
			} else {
				st.LagSeconds = time.Since(time.Unix(0, newest.Nanos)).Seconds()
			}
		}
	}
	return st
}

// Close stops following the stream; the stage keeps what was applied.
func (r *Replica) Close() {
	r.cons.Stop()
	r.mu.Lock()
	r.closed = true
	_ = r.settle() // ops of an advance left incomplete hold pins and queries
	for _, k := range r.known {
		k.drop()
	}
	r.mu.Unlock()
	r.nc.Close()
}
