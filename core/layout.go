package core

import (
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Attribute semantics with layout rules.
const (
	SemanticNone                 int32 = 0
	SemanticAssetPathID          int32 = 1
	SemanticTokenID              int32 = 2
	SemanticPathExpressionString int32 = 3
	SemanticRelationshipPathID   int32 = 4
	// SemanticQuaternion values are four lanes in the order (x, y, z, w): the imaginary part
	// first, the real part last. The engine stores and returns them as written.
	SemanticQuaternion       int32 = 9
	SemanticMatrix           int32 = 10
	SemanticConnectionPathID int32 = 12
	// SemanticString rows are raw UTF-8 bytes, one string per row; a row's length is the
	// string's length, so a trailing NUL byte is data, never a terminator.
	SemanticString int32 = 13
	maxSemantic    int32 = 15
)

// semanticNames name the semantics whose layout checkSemanticLayout enforces, for its messages.
var semanticNames = map[int32]string{
	SemanticAssetPathID:          "ASSET_PATH_ID",
	SemanticTokenID:              "TOKEN_ID",
	SemanticPathExpressionString: "PATH_EXPRESSION_STRING",
	SemanticRelationshipPathID:   "RELATIONSHIP_PATH_ID",
	SemanticConnectionPathID:     "CONNECTION_PATH_ID",
	SemanticString:               "STRING",
}

// MaxLanes is the widest transportable value.
const MaxLanes = 255

// MaxTypedDims is the most axes a published tensor has (rows plus two matrix axes).
const MaxTypedDims = 3

// TypedShape is the shape in which reads and maps publish rows values of a column stored
// lanes wide: scalar lanes plus component axes. A one-lane column is (rows), a MATRIX column
// of 4, 9 or 16 lanes is (rows, side, side), any other tuple is (rows, lanes). It returns the
// shape in an array and how many of its entries are used (no allocation per tensor).
func TypedShape(rows int64, lanes uint16, semantic int32) (shape [MaxTypedDims]int64, ndim int) {
	shape[0] = rows
	switch {
	case lanes <= 1:
		return shape, 1
	case semantic == SemanticMatrix && (lanes == 4 || lanes == 9 || lanes == 16):
		side := int64(2)
		for side*side != int64(lanes) {
			side++
		}
		shape[1], shape[2] = side, side
		return shape, 3
	default:
		shape[1] = int64(lanes)
		return shape, 2
	}
}

// checkDType accepts numeric int/uint/float/bfloat/bool value types.
func checkDType(dt tensor.DType, name string) error {
	ok := false
	switch dt.Code {
	case tensor.CodeInt, tensor.CodeUInt:
		ok = dt.Bits == 8 || dt.Bits == 16 || dt.Bits == 32 || dt.Bits == 64
	case tensor.CodeFloat:
		ok = dt.Bits == 16 || dt.Bits == 32 || dt.Bits == 64
	case tensor.CodeBfloat:
		ok = dt.Bits == 16
	case tensor.CodeBool:
		ok = dt.Bits == 8
	}
	if !ok {
		return status.Errorf(status.NotSupported, "%s: dtype %s is not a supported value type (int/uint 8-64, float 16/32/64, bfloat16, bool)", name, dt)
	}
	if dt.Lanes < 1 || dt.Lanes > MaxLanes {
		return status.Errorf(status.NotSupported, "%s: %d lanes is outside 1..%d", name, dt.Lanes, MaxLanes)
	}
	return nil
}

// checkDevice accepts host and CUDA tensors (whether a GPU is usable is decided at copy-in,
// see placement.go).
func checkDevice(t tensor.Tensor, name string) error {
	switch t.DeviceType {
	case tensor.DeviceCPU, tensor.DeviceCUDAHost, tensor.DeviceCUDA, tensor.DeviceCUDAManaged:
		return nil
	}
	return status.Errorf(status.NotSupported, "%s: device type %d is not supported", name, t.DeviceType)
}

// foldFixed returns the canonical value dtype of a fixed-size payload: trailing dims fold into
// lanes ((N,3) lanes 1 → lanes 3, (N,4,4) → 16). The leading dim is the row count.
func foldFixed(t tensor.Tensor, name string) (tensor.DType, int64, error) {
	if len(t.Shape) == 0 {
		return tensor.DType{}, 0, status.Errorf(status.InvalidArgument, "%s: a fixed-size write needs a tensor with a leading row dimension (ndim >= 1), got ndim 0", name)
	}
	lanes := int64(t.DType.Lanes)
	for _, d := range t.Shape[1:] {
		lanes *= d
		if lanes > MaxLanes {
			break
		}
	}
	if lanes == 0 {
		return tensor.DType{}, 0, status.Errorf(status.InvalidArgument, "%s: shape %v has an empty trailing dimension: its canonical folded shape has 0 lanes per row", name, t.Shape)
	}
	if lanes > MaxLanes {
		return tensor.DType{}, 0, status.Errorf(status.NotSupported, "%s: shape %v with %d lanes folds to more than %d lanes per row", name, t.Shape, t.DType.Lanes, MaxLanes)
	}
	dt := tensor.DType{Code: t.DType.Code, Bits: t.DType.Bits, Lanes: uint16(lanes)}
	if err := checkDType(dt, name); err != nil {
		return tensor.DType{}, 0, err
	}
	return dt, t.Shape[0], nil
}

// storedSemantic is the semantic a column records for a requested one: a value this build does
// not know (a newer library's) is stored, and read back, as NONE, as the reference does.
func storedSemantic(sem int32) int32 {
	if sem < 0 || sem > maxSemantic {
		return SemanticNone
	}
	return sem
}

// checkSemanticLayout enforces the dtype each ID semantic requires (token and path ids: uint64x1,
// asset paths: uint64x2; ragged or fixed as the semantic allows).
func checkSemanticLayout(label string, sem int32, dt tensor.DType, isArray bool) error {
	if sem < 0 || sem > maxSemantic {
		return nil // newer library values pass through unchecked
	}
	u64 := func(lanes uint16) bool {
		return dt.Code == tensor.CodeUInt && dt.Bits == 64 && dt.Lanes == lanes
	}
	bad := func(want string) error {
		return status.Errorf(status.InvalidArgument, "%ssemantic %s (%d) requires %s, got dtype %s (is_array=%v)", label, semanticNames[sem], sem, want, dt, isArray)
	}
	switch sem {
	case SemanticTokenID, SemanticPathExpressionString:
		if !u64(1) {
			return bad("dtype uint64x1")
		}
	case SemanticAssetPathID:
		if !u64(2) {
			return bad("dtype uint64x2")
		}
	case SemanticRelationshipPathID: // a target list (array) or exactly one target (fixed)
		if !u64(1) {
			return bad("dtype uint64x1")
		}
	case SemanticConnectionPathID: // fixed or array; array rows hold exactly one pair (checkSingularConnections)
		if !u64(2) {
			return bad("dtype uint64x2")
		}
	case SemanticString:
		if dt.Code != tensor.CodeUInt || dt.Bits != 8 || dt.Lanes != 1 || !isArray {
			return bad("dtype uint8x1 with is_array=True")
		}
	}
	return nil
}

// checkSingularConnections enforces that a CONNECTION_PATH_ID array write gives each prim
// exactly one (path, token) pair. The rule is about the rows the prims take, so it is checked
// when the write executes (OP_FAILED), once the payload's rows are known; src[i] is the
// payload row of targets[i] (nil: row i).
func (s *Stage) checkSingularConnections(w *preparedWrite, targets []uint64, src []int32) error {
	if w.schema.Semantic != SemanticConnectionPathID || !w.schema.IsArray {
		return nil
	}
	for i, p := range targets {
		row := int32(i)
		if src != nil {
			row = src[i]
		}
		n := w.widthElems
		if w.rowLen != nil {
			n = w.rowLen[row]
		}
		if n != 1 {
			return status.Errorf(status.OpFailed,
				"%sCONNECTION_PATH_ID per-prim writes require exactly one connection element (prim_index=%d, elements=%d): prim %s; nothing of this write was applied",
				w.label, i, n, s.pathName(p))
		}
	}
	return nil
}

// isConnection reports whether a column holds an attribute's connection (CONNECTION_PATH_ID)
// rather than its value. A prim may carry both under one name: they are separate channels,
// and a write, map or clone of one never conflicts with, or lands in, the other.
func isConnection(sc column.Schema) bool { return sc.Semantic == SemanticConnectionPathID }

// sameChannel reports whether two schemas are both connections or both values.
func sameChannel(a, b column.Schema) bool { return isConnection(a) == isConnection(b) }
