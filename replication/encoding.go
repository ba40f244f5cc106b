package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// The wire format (docs/replication.md, "Messages"): little-endian, self-describing, one
// format version. A data message carries one part of one column's changes; a floor message
// closes an advance and says how many data messages it had.

const (
	magic      = "OVSR"
	version    = 2
	kindData   = 1
	kindFloor  = 2
	kindPrims  = 4 // whole-prim deletes (kindSnapshot = 3 is snapshot.go's)
	headerSize = len(magic) + 2
)

// errCorrupt is wrapped by every decoding failure.
var errCorrupt = errors.New("corrupt replication message")

// floorMsg closes one advance: Seq is the publisher's advance counter (1, 2, ... per Epoch),
// Parts the number of data messages before it, Nanos the primary's wall clock at the advance.
type floorMsg struct {
	Epoch      string
	Seq        uint64
	Ordinal    uint64
	Global     bool
	Attributes []string
	Parts      uint32
	Nanos      int64
}

// dataMsg is one part of an advance's changes of one column. SamePaths: the message lists
// no paths, they are those of the previous message of this attribute and part in the same
// epoch (the same prims change advance after advance; a replica reads the stream in order).
type dataMsg struct {
	Epoch     string
	Seq       uint64
	Part      int
	SamePaths bool
	Changes   core.ColumnChanges
}

type writer struct{ b []byte }

func (w *writer) u8(v uint8)   { w.b = append(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *writer) uv(v uint64)  { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) str(s string) { w.uv(uint64(len(s))); w.b = append(w.b, s...) }
func (w *writer) bool(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

func newWriter(kind uint8, size int) *writer {
	w := &writer{b: make([]byte, 0, size)}
	w.b = append(w.b, magic...)
	w.u8(version)
	w.u8(kind)
	return w
}

// primsMsg is one part of an advance's whole-prim deletes.
type primsMsg struct {
	Epoch   string
	Seq     uint64
	Deletes []core.PrimDelete
}

// encodePrims encodes a prims message.
func encodePrims(m primsMsg) []byte {
	w := newWriter(kindPrims, 64+16*len(m.Deletes))
	w.str(m.Epoch)
	w.uv(m.Seq)
	w.uv(uint64(len(m.Deletes)))
	prev := ""
	for _, d := range m.Deletes {
		prev = w.frontCoded(prev, d.Path)
		w.uv(d.Ordinal)
	}
	return w.b
}

func decodePrims(r *reader) (primsMsg, error) {
	m := primsMsg{Epoch: r.str("epoch"), Seq: r.uv("seq")}
	n := r.count(3, "prim count")
	m.Deletes = make([]core.PrimDelete, 0, n)
	prev := ""
	for range n {
		if prev = r.frontCoded(prev); r.err != nil {
			break
		}
		m.Deletes = append(m.Deletes, core.PrimDelete{Path: prev, Ordinal: r.uv("ordinal")})
	}
	return m, r.end()
}

// encodeFloor encodes a floor message.
func encodeFloor(m floorMsg) []byte {
	w := newWriter(kindFloor, 64)
	w.str(m.Epoch)
	w.uv(m.Seq)
	w.uv(m.Ordinal)
	w.bool(m.Global)
	w.uv(uint64(len(m.Attributes)))
	for _, a := range m.Attributes {
		w.str(a)
	}
	w.uv(uint64(m.Parts))
	w.u64(uint64(m.Nanos))
	return w.b
}

// encodeData encodes entries [lo, hi) of c (valueLo: byte offset of entry lo's value in
// c.Values, lenLo: index of its length in c.Lengths). Paths are front-coded against the
// previous path of the message: sibling prims share most of their path.
func encodeData(epoch string, seq uint64, part int, samePaths bool, c *core.ColumnChanges, lo, hi int, valueLo, valueHi, lenLo, lenHi int) []byte {
	w := newWriter(kindData, 64+len(c.Attribute)+(valueHi-valueLo)+(hi-lo)*8)
	w.str(epoch)
	w.uv(seq)
	w.uv(uint64(part))
	w.bool(samePaths)
	w.str(c.Attribute)
	w.bool(c.IsArray)
	w.u8(c.DType.Code)
	w.u8(c.DType.Bits)
	w.uv(uint64(c.DType.Lanes))
	w.uv(uint64(uint32(c.Semantic)))
	w.bool(c.Exact)
	w.bool(c.Tokens != nil)
	w.uv(uint64(hi - lo))
	prev := ""
	for i := lo; i < hi; i++ {
		if !samePaths {
			prev = w.frontCoded(prev, c.Paths[i])
		}
		w.uv(c.Ordinals[i])
		w.bool(c.Deleted[i])
	}
	if c.IsArray {
		for _, n := range c.Lengths[lenLo:lenHi] {
			w.uv(uint64(n))
		}
	}
	w.uv(uint64(valueHi - valueLo))
	w.b = append(w.b, c.Values[valueLo:valueHi]...)
	if c.Tokens != nil { // one string per 8-byte token id of the values
		for _, t := range c.Tokens[valueLo/8 : valueHi/8] {
			w.str(t)
		}
	}
	return w.b
}

// frontCoded writes p as the length of its prefix shared with prev and the rest; p is the
// next call's prev.
func (w *writer) frontCoded(prev, p string) string {
	shared := commonPrefix(prev, p)
	w.uv(uint64(shared))
	w.str(p[shared:])
	return p
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b), math.MaxUint16)
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated or invalid %s", errCorrupt, what)
	}
}

func (r *reader) u8(what string) uint8 {
	if r.err != nil || len(r.b) < 1 {
		r.fail(what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) u64(what string) uint64 {
	if r.err != nil || len(r.b) < 8 {
		r.fail(what)
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) uv(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n uint64, what string) []byte {
	if r.err != nil || uint64(len(r.b)) < n {
		r.fail(what)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// frontCoded reads a path written by writer.frontCoded after prev.
func (r *reader) frontCoded(prev string) string {
	shared := r.uv("path prefix")
	if shared > uint64(len(prev)) {
		r.fail("path prefix")
		return ""
	}
	return prev[:shared] + r.str("path")
}

func (r *reader) str(what string) string { return string(r.bytes(r.uv(what), what)) }
func (r *reader) bool(what string) bool  { return r.u8(what) != 0 }

// count reads an element count, refusing one the remaining bytes cannot hold (each element
// takes at least minBytes), so a forged count cannot make the decoder allocate without bound.
func (r *reader) count(minBytes int, what string) int {
	n := r.uv(what)
	if r.err == nil && n > uint64(len(r.b)/max(minBytes, 1)) {
		r.fail(what)
		return 0
	}
	return int(n)
}

// decodeKind checks the header and returns the message kind and a reader of the body.
func decodeKind(b []byte) (uint8, *reader, error) {
	if len(b) < headerSize || string(b[:len(magic)]) != magic {
		return 0, nil, fmt.Errorf("%w: no %q header", errCorrupt, magic)
	}
	if b[len(magic)] != version {
		return 0, nil, fmt.Errorf("%w: format version %d, this build reads %d", errCorrupt, b[len(magic)], version)
	}
	return b[len(magic)+1], &reader{b: b[headerSize:]}, nil
}

func decodeFloor(r *reader) (floorMsg, error) {
	m := floorMsg{Epoch: r.str("epoch"), Seq: r.uv("seq"), Ordinal: r.uv("ordinal"), Global: r.bool("global")}
	n := r.count(1, "attribute count")
	for range n {
		m.Attributes = append(m.Attributes, r.str("attribute"))
	}
	m.Parts = uint32(r.uv("parts"))
	m.Nanos = int64(r.u64("time"))
	return m, r.end()
}

func decodeData(r *reader) (dataMsg, error) {
	m := dataMsg{Epoch: r.str("epoch"), Seq: r.uv("seq"), Part: int(r.uv("part")), SamePaths: r.bool("same paths")}
	c := &m.Changes
	c.Attribute = r.str("attribute")
	c.IsArray = r.bool("is_array")
	c.DType = tensor.DType{Code: r.u8("dtype"), Bits: r.u8("dtype")}
	c.DType.Lanes = uint16(r.uv("lanes"))
	c.Semantic = int32(uint32(r.uv("semantic")))
	c.Exact = r.bool("exact")
	tokens := r.bool("tokens")
	n := r.count(2, "entry count")
	c.Ordinals, c.Deleted = make([]uint64, 0, n), make([]bool, 0, n)
	if !m.SamePaths {
		c.Paths = make([]string, 0, n)
	}
	prev := ""
	written := 0
	for range n {
		if !m.SamePaths {
			if prev = r.frontCoded(prev); r.err != nil {
				break
			}
			c.Paths = append(c.Paths, prev)
		}
		c.Ordinals = append(c.Ordinals, r.uv("ordinal"))
		del := r.bool("deleted")
		c.Deleted = append(c.Deleted, del)
		if !del {
			written++
		}
	}
	elem := uint64(c.DType.ElemBytes())
	total := uint64(0)
	if c.IsArray {
		c.Lengths = make([]int64, 0, min(written, len(r.b)))
		for range written {
			l := r.uv("array length")
			c.Lengths = append(c.Lengths, int64(l))
			total += l * elem
		}
	} else {
		total = uint64(written) * elem
	}
	vlen := r.uv("value bytes")
	if r.err == nil && vlen != total {
		return m, fmt.Errorf("%w: %d value bytes for %d entries of %s (%d expected)", errCorrupt, vlen, written, c.DType, total)
	}
	c.Values = r.bytes(vlen, "values")
	if tokens {
		if c.DType.ElemBytes()%8 != 0 {
			return m, fmt.Errorf("%w: token strings for %s values", errCorrupt, c.DType)
		}
		c.Tokens = make([]string, 0, min(vlen/8, uint64(len(r.b))))
		for range vlen / 8 {
			c.Tokens = append(c.Tokens, r.str("token"))
		}
	}
	return m, r.end()
}

// end reports the first decoding failure, or bytes left over.
func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the message", errCorrupt, len(r.b))
	}
	return r.err
}
