package core

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/tensor"
)

func isDerived(name string) bool {
	return name == BuiltinPath || name == BuiltinParent || name == BuiltinChildren
}

var pathIDType = tensor.DType{Code: tensor.CodeUInt, Bits: 64, Lanes: 1}

// derivedGroupsLocked synthesizes usd-path / usd-parent / usd-children for the query's prims
// that exist, from path components (spec §1.6): not floor-gated, reported at ordinal end. A
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
			if parent := s.dict.Parent(p); parent != 0 && parent != pathdict.Root {
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
