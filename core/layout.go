package core

import (
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Attribute semantics with layout rules (spec §1.4).
const (
	SemanticNone                 int32 = 0
	SemanticAssetPathID          int32 = 1
	SemanticTokenID              int32 = 2
	SemanticPathExpressionString int32 = 3
	SemanticRelationshipPathID   int32 = 4
	SemanticConnectionPathID     int32 = 12
	SemanticString               int32 = 13
	maxSemantic                  int32 = 15
)

// Built-in attribute names (spec §1.6).
const (
	BuiltinPath     = "usd-path"
	BuiltinParent   = "usd-parent"
	BuiltinChildren = "usd-children"
	BuiltinActive   = "usd-active"
	BuiltinPrimType = "usd-prim-type"
	BuiltinSchemas  = "usd-schemas"
)

// derivedBuiltins cannot be written, deleted or mapped.
var derivedBuiltins = map[string]bool{BuiltinPath: true, BuiltinParent: true, BuiltinChildren: true, BuiltinActive: true}

// MaxLanes is the widest transportable value (spec §1.4).
const MaxLanes = 255

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
		return tensor.DType{}, 0, status.Errorf(status.InvalidArgument, "%s: shape %v has an empty trailing dimension", name, t.Shape)
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

// checkSemanticLayout enforces the ID-semantic layouts of spec §1.4.
func checkSemanticLayout(label string, sem int32, dt tensor.DType, isArray bool) error {
	if sem < 0 || sem > maxSemantic {
		return nil // newer library values pass through unchecked (spec §5.3)
	}
	u64 := func(lanes uint16) bool {
		return dt.Code == tensor.CodeUInt && dt.Bits == 64 && dt.Lanes == lanes
	}
	bad := func(want string) error {
		return status.Errorf(status.InvalidArgument, "%ssemantic %d requires %s, got dtype %s (is_array=%v)", label, sem, want, dt, isArray)
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
	case SemanticRelationshipPathID:
		if !u64(1) || !isArray {
			return bad("dtype uint64x1 with is_array=True")
		}
	case SemanticConnectionPathID:
		if !u64(2) || !isArray {
			return bad("dtype uint64x2 with is_array=True")
		}
	case SemanticString:
		if dt.Code != tensor.CodeUInt || dt.Bits != 8 || dt.Lanes != 1 || !isArray {
			return bad("dtype uint8x1 with is_array=True")
		}
	}
	return nil
}

// checkBuiltinLayout enforces the layouts of the recorded built-ins (spec §1.6).
func checkBuiltinLayout(label, name string, dt tensor.DType, isArray bool) error {
	tokenIDs := dt.Code == tensor.CodeUInt && dt.Bits == 64 && dt.Lanes == 1
	switch name {
	case BuiltinPrimType:
		if isArray || !tokenIDs {
			return status.Errorf(status.InvalidArgument, "%sattribute %q holds one token id per prim: uint64x1 with is_array=False, got %s (is_array=%v)", label, name, dt, isArray)
		}
	case BuiltinSchemas:
		if !isArray || !tokenIDs {
			return status.Errorf(status.InvalidArgument, "%sattribute %q holds token-id arrays: uint64x1 with is_array=True, got %s (is_array=%v)", label, name, dt, isArray)
		}
	}
	return nil
}
