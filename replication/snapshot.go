package replication

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/ovstage-go/ovstage/core"
)

// A snapshot (docs/replication.md, "Snapshots") is the primary's whole sealed state after one
// advance, stored as the object snapshotObject of the stage's object store: a header message,
// then data messages of every column's sealed rows, then prims messages of the prims deleted
// whole, each record preceded by its length. A
// replica whose stream no longer holds the advances it lacks loads it, then reads the stream
// from the advance after it.

const (
	kindSnapshot   = 3
	snapshotObject = "state"
)

// snapshotHeader says which advance a snapshot follows and how to continue after it: the
// floors to advance to, and the paths the publisher remembered (pathMemo) once it had encoded
// that advance, which later messages with SamePaths refer to.
type snapshotHeader struct {
	Epoch       string
	Seq         uint64
	Ordinal     uint64
	Nanos       int64
	GlobalFloor uint64
	Floors      map[string]uint64
	Memo        pathMemo
	Parts       uint32
}

// encodeSnapshot encodes h and the state's columns (split into data messages of at most
// limit bytes) as one snapshot object.
func encodeSnapshot(h snapshotHeader, st *core.SealedState, limit int) ([]byte, error) {
	var parts [][]byte
	for i := range st.Columns {
		ps, err := splitColumn(h.Epoch, h.Seq, &st.Columns[i], limit, nil)
		if err != nil {
			return nil, fmt.Errorf("snapshot of advance %d: %w", h.Seq, err)
		}
		parts = append(parts, ps...)
	}
	parts = append(parts, splitPrims(h.Epoch, h.Seq, st.PrimDeletes, limit)...)
	h.Parts = uint32(len(parts))
	out := appendRecord(nil, encodeSnapshotHeader(h))
	for _, p := range parts {
		out = appendRecord(out, p)
	}
	return out, nil
}

func appendRecord(b, rec []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(rec)))
	return append(b, rec...)
}

func encodeSnapshotHeader(h snapshotHeader) []byte {
	w := newWriter(kindSnapshot, 256)
	w.str(h.Epoch)
	w.uv(h.Seq)
	w.uv(h.Ordinal)
	w.u64(uint64(h.Nanos))
	w.uv(h.GlobalFloor)
	attrs := make([]string, 0, len(h.Floors))
	for a := range h.Floors {
		attrs = append(attrs, a)
	}
	sort.Strings(attrs)
	w.uv(uint64(len(attrs)))
	for _, a := range attrs {
		w.str(a)
		w.uv(h.Floors[a])
	}
	keys := make([]memoKey, 0, len(h.Memo))
	for k := range h.Memo {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].attribute != keys[j].attribute {
			return keys[i].attribute < keys[j].attribute
		}
		return keys[i].part < keys[j].part
	})
	w.uv(uint64(len(keys)))
	for _, k := range keys {
		w.str(k.attribute)
		w.uv(uint64(k.part))
		paths := h.Memo[k]
		w.uv(uint64(len(paths)))
		prev := ""
		for _, p := range paths {
			prev = w.frontCoded(prev, p)
		}
	}
	w.uv(uint64(h.Parts))
	return w.b
}

// decodeSnapshot splits a snapshot object into its header, its data messages and its prim
// deletes.
func decodeSnapshot(b []byte) (snapshotHeader, []dataMsg, []core.PrimDelete, error) {
	var recs [][]byte
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return snapshotHeader{}, nil, nil, fmt.Errorf("%w: truncated snapshot record", errCorrupt)
		}
		recs, b = append(recs, b[k:k+int(n)]), b[k+int(n):]
	}
	if len(recs) == 0 {
		return snapshotHeader{}, nil, nil, fmt.Errorf("%w: empty snapshot", errCorrupt)
	}
	kind, rd, err := decodeKind(recs[0])
	if err != nil {
		return snapshotHeader{}, nil, nil, err
	}
	if kind != kindSnapshot {
		return snapshotHeader{}, nil, nil, fmt.Errorf("%w: a snapshot starts with message kind %d", errCorrupt, kind)
	}
	h, err := decodeSnapshotHeader(rd)
	if err != nil {
		return h, nil, nil, err
	}
	if int(h.Parts) != len(recs)-1 {
		return h, nil, nil, fmt.Errorf("%w: snapshot of advance %d has %d data messages, its header says %d", errCorrupt, h.Seq, len(recs)-1, h.Parts)
	}
	msgs := make([]dataMsg, 0, h.Parts)
	var ended []core.PrimDelete
	for _, rec := range recs[1:] {
		kind, rd, err := decodeKind(rec)
		if err == nil && kind == kindPrims {
			m, err := decodePrims(rd)
			if err != nil {
				return h, nil, nil, err
			}
			ended = append(ended, m.Deletes...)
			continue
		}
		if err == nil && kind != kindData {
			err = fmt.Errorf("%w: message kind %d in a snapshot", errCorrupt, kind)
		}
		if err != nil {
			return h, nil, nil, err
		}
		m, err := decodeData(rd)
		if err != nil {
			return h, nil, nil, err
		}
		if m.SamePaths {
			return h, nil, nil, fmt.Errorf("%w: a snapshot's data message refers to earlier paths", errCorrupt)
		}
		msgs = append(msgs, m)
	}
	return h, msgs, ended, nil
}

func decodeSnapshotHeader(r *reader) (snapshotHeader, error) {
	h := snapshotHeader{Epoch: r.str("epoch"), Seq: r.uv("seq"), Ordinal: r.uv("ordinal"), Nanos: int64(r.u64("time")),
		GlobalFloor: r.uv("global floor"), Floors: map[string]uint64{}, Memo: pathMemo{}}
	for range r.count(2, "floor count") {
		a := r.str("attribute")
		h.Floors[a] = r.uv("floor")
	}
	for range r.count(3, "path memo count") {
		k := memoKey{attribute: r.str("attribute"), part: int(r.uv("part"))}
		n := r.count(2, "path count")
		paths := make([]string, 0, n)
		prev := ""
		for range n {
			if prev = r.frontCoded(prev); r.err != nil {
				break
			}
			paths = append(paths, prev)
		}
		h.Memo[k] = paths
	}
	h.Parts = uint32(r.uv("parts"))
	return h, r.end()
}
