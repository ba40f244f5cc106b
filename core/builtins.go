package core

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Built-in (reserved) attribute names. usd-path, usd-parent and usd-children are derived from
// the prims the stage holds whenever they are read; usd-active is not supported at all. The
// other three are recorded columns with a fixed kind (recordedBuiltins).
const (
	BuiltinPath          = "usd-path"
	BuiltinParent        = "usd-parent"
	BuiltinChildren      = "usd-children"
	BuiltinActive        = "usd-active"
	BuiltinPrimType      = "usd-prim-type"
	BuiltinSchemas       = "usd-schemas"
	BuiltinAncestorTypes = "usd-ancestor-types"
)

// derivedBuiltins cannot be written, deleted or mapped.
var derivedBuiltins = map[string]bool{BuiltinPath: true, BuiltinParent: true, BuiltinChildren: true, BuiltinActive: true}

func isDerived(name string) bool {
	return name == BuiltinPath || name == BuiltinParent || name == BuiltinChildren
}

// checkNotDerived refuses to write, delete or map a derived built-in (label prefixes the
// message, e.g. "writes[1]: ").
func checkNotDerived(label, name string) error {
	if derivedBuiltins[name] {
		return status.Errorf(status.NotSupported, "%sbuilt-in attribute '%s' is derived on demand and cannot be written", label, name)
	}
	return nil
}

// recordedBuiltins are the reserved names stored as ordinary columns, with the one kind each
// may have: a token id per prim (the prim type), or a token-id array per prim (the complete
// set of applied schemas, or of ancestor types: a row replaces the whole set).
var recordedBuiltins = map[string]bool{BuiltinPrimType: false, BuiltinSchemas: true, BuiltinAncestorTypes: true}

// isTokenBuiltin reports whether name holds token ids (filters compare them as strings).
func isTokenBuiltin(name string) bool {
	_, ok := recordedBuiltins[name]
	return ok
}

// checkReservedAttribute checks a write or map of a recorded built-in: its canonical kind
// (uint64x1, fixed for the prim type and arrays for the tag sets), semantic NONE, and
// attribute mode REJECT (force reports a FORCE write, which reserved names refuse). Other
// names pass.
func checkReservedAttribute(label, name string, schema column.Schema, force bool) error {
	isArray, reserved := recordedBuiltins[name]
	if !reserved {
		return nil
	}
	dt := schema.DType
	canonical := dt.Code == tensor.CodeUInt && dt.Bits == 64 && dt.Lanes == 1 && schema.IsArray == isArray
	if canonical && schema.Semantic == SemanticNone && !force {
		return nil
	}
	mode := "REJECT"
	if force {
		mode = "FORCE"
	}
	return status.Errorf(status.InvalidArgument,
		"%sreserved attribute '%s' requires its canonical kind, semantic NONE and attribute_mode REJECT (uint64x1 with is_array=%v); got %s (is_array=%v), semantic %d, attribute_mode %s",
		label, name, isArray, dt, schema.IsArray, schema.Semantic, mode)
}

var pathIDType = tensor.DType{Code: tensor.CodeUInt, Bits: 64, Lanes: 1}

// derivedGroupsLocked synthesizes usd-path / usd-parent / usd-children for the query's prims
// that exist, from path components: not floor-gated, reported at ordinal end. A
// prim with no value (a top-level prim's parent, a leaf's children) contributes no row.
func (s *Stage) derivedGroupsLocked(q *Query, a uint64, name string, end uint64) ([]*Group, error) {
	var idx []uint32
	var rows [][]uint64
	for i, p := range q.Paths {
		if !s.prims.has(p) {
			continue
		}
		var row []uint64
		switch name {
		case BuiltinPath:
			row = []uint64{p}
		case BuiltinParent:
			if parent := s.dict.Parent(p); parent != 0 && parent != s.dict.Root() {
				row = []uint64{parent}
			}
		case BuiltinChildren:
			row = s.prims.childrenOf(p, s.dict.Parent)
		}
		if len(row) == 0 {
			continue
		}
		idx = append(idx, uint32(i))
		rows = append(rows, row)
	}
	if len(idx) == 0 {
		return nil, nil
	}
	if len(idx) == len(q.Paths) {
		idx = nil
	}
	g, err := s.newGroupLocked(q, a, end, idx)
	if err != nil {
		return nil, err
	}
	g.FloorOrdinal = 0
	g.IsArray = name == BuiltinChildren
	total := 0
	for _, r := range rows {
		total += len(r)
	}
	buf, err := buffer.New(8 * total)
	if err != nil {
		g.release()
		return nil, err
	}
	ids := unsafe.Slice((*uint64)(buf.Data()), total)
	off := 0
	for _, r := range rows {
		copy(ids[off:], r)
		if g.IsArray {
			g.Tensors = append(g.Tensors, TensorView{Buffer: buf.Retain(), ByteOffset: 8 * off,
				DType: pathIDType, Rows: int64(len(r)), DeviceType: tensor.DeviceCPU})
		}
		off += len(r)
	}
	if g.IsArray {
		buf.Release() // each row holds its own reference
	} else {
		g.Tensors = []TensorView{{Buffer: buf, DType: pathIDType, Rows: int64(total), DeviceType: tensor.DeviceCPU}}
	}
	return []*Group{g}, nil
}

// builtinToken is the token of a built-in name (interned on first use; the names are valid
// tokens, so this cannot fail).
func (s *Stage) builtinToken(name string) uint64 {
	t, _ := s.dict.InternToken(name)
	return t
}
