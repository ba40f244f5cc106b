package pybind

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// writeEntry mirrors python/ovstage/_stage.py's _WriteEntry (12 eight-byte fields).
type writeEntry struct {
	Attr, Tensors, TensorCount, Count  uint64
	IndexMap, IndexMapLen, HasIndexMap uint64
	Mask, MaskLen, HasMask             uint64
	Semantic                           int64
	IsArray                            uint64
}

// decodeWrite turns the address-based arguments of one write into a core.WriteRequest.
func decodeWrite(label string, tensorsAddr uintptr, tensorCount int, count int64,
	indexMapAddr uintptr, indexMapLen int, hasIndexMap bool, maskAddr uintptr, maskLen int, hasMask bool) (core.WriteRequest, error) {
	var req core.WriteRequest
	if count < 0 || count > int64(^uint32(0)) {
		return req, status.Errorf(status.InvalidArgument, "%scount %d is outside the uint32 range", label, count)
	}
	if tensorCount < 0 || tensorCount > 1<<24 {
		return req, status.Errorf(status.InvalidArgument, "%stensor count %d is out of range", label, tensorCount)
	}
	req.Count = uint32(count)
	for i, addr := range cptr.Uintptrs(tensorsAddr, tensorCount) {
		t, err := abi.FromAddress(addr, label+"tensors["+strconv.Itoa(i)+"]")
		if err != nil {
			return req, err
		}
		req.Tensors = append(req.Tensors, t)
	}
	if hasIndexMap {
		req.IndexMap, req.HasIndexMap = cptr.Uint32s(indexMapAddr, indexMapLen), true
	}
	if hasMask {
		req.Mask, req.HasMask = cptr.Uint64s(maskAddr, maskLen), true
	}
	return req, nil
}

// WriteAttributes enqueues a batch: n writeEntry structs at entriesAddr (attribute tokens
// already interned by the caller), one ordinal and prim mode for all.
func WriteAttributes(stageID, query uint64, entriesAddr uintptr, n int, ordinal uint64, primMode int32) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		if n < 0 || n > 1<<20 || (n > 0 && entriesAddr == 0) {
			return 0, status.Errorf(status.InvalidArgument, "writes: %d entries at address %#x", n, entriesAddr)
		}
		var entries []writeEntry
		if n > 0 {
			entries = unsafe.Slice((*writeEntry)(cptr.At(entriesAddr)), n)
		}
		reqs := make([]core.WriteRequest, n)
		for i, e := range entries {
			req, err := decodeWrite(fmt.Sprintf("writes[%d]: ", i), uintptr(e.Tensors), int(e.TensorCount), int64(e.Count),
				uintptr(e.IndexMap), int(e.IndexMapLen), e.HasIndexMap != 0, uintptr(e.Mask), int(e.MaskLen), e.HasMask != 0)
			if err != nil {
				return 0, err
			}
			if e.Semantic < -1<<31 || e.Semantic > 1<<31-1 {
				return 0, status.Errorf(status.InvalidArgument, "writes[%d]: semantic %d is outside int32", i, e.Semantic)
			}
			req.AttrToken, req.Semantic, req.IsArray = e.Attr, int32(e.Semantic), e.IsArray != 0
			if req.AttrToken == 0 {
				return 0, core.InvalidToken(fmt.Sprintf("writes[%d]: attribute", i), 0)
			}
			reqs[i] = req
		}
		return s.WriteAttributes(query, ordinal, primMode, reqs)
	})
}

// DeleteAttributes enqueues tombstones for uint64[n] attribute tokens at tokensAddr (n == 0:
// delete the whole prims).
func DeleteAttributes(stageID, query uint64, tokensAddr uintptr, n int, ordinal uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		toks := cptr.Uint64s(tokensAddr, n)
		for i, t := range toks {
			if t == 0 {
				return 0, core.InvalidToken(fmt.Sprintf("attributes[%d]", i), 0)
			}
		}
		return s.DeleteAttributes(core.DeleteRequest{Query: query, Tokens: toks, Ordinal: ordinal})
	})
}

func handleAndOp(h, op uint64) string {
	return strconv.FormatUint(h, 10) + " " + strconv.FormatUint(op, 10)
}

// GetOldestPreservedOrdinal enqueues a retention-frontier query: "<handle> <op id>".
func GetOldestPreservedOrdinal(stageID uint64) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		h, op, err := s.GetOldestPreservedOrdinal()
		return handleAndOp(h, op), err
	})
}

// GetAttributeWriteFloor enqueues a floor query for attr (0: the global floor):
// "<handle> <op id>".
func GetAttributeWriteFloor(stageID, attr uint64) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		h, op, err := s.GetAttributeWriteFloor(attr)
		return handleAndOp(h, op), err
	})
}

// FetchOrdinal returns an ordinal query's value once ready.
func FetchOrdinal(stageID, handle, timeoutNs uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return s.FetchOrdinal(handle, timeoutNs)
	})
}

// ReleaseOrdinalQuery enqueues the release of an ordinal query handle.
func ReleaseOrdinalQuery(stageID, handle uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return s.ReleaseOrdinalQuery(handle)
	})
}
