package pybind

import (
	"github.com/ovstage-go/ovstage/abi"
	"strconv"
	"strings"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// Query enqueues a filter query. predsAddr holds n predicates as uint64 triples
// (attribute token, operator, value count); their values are nValues strings packed in the
// blob (lengths uint64[nValues] at lensAddr), in predicate order. attrsAddr/nAttrs scope
// attribute discovery when hasAttrs. Returns "<query handle> <op id>".
func Query(stageID uint64, predsAddr uintptr, n int, blobAddr uintptr, blobLen int, lensAddr uintptr,
	nValues int, attrsAddr uintptr, nAttrs int, hasAttrs bool) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		values, err := cptr.Strings(blobAddr, blobLen, cptr.Uint64s(lensAddr, nValues))
		if err != nil {
			return "", status.Errorf(status.InvalidArgument, "filter values: %v", err)
		}
		triples := cptr.Uint64s(predsAddr, 3*n)
		preds := make([]core.Predicate, n)
		for i := range preds {
			attr, op, count := triples[3*i], triples[3*i+1], int(triples[3*i+2])
			if count > len(values) {
				return "", status.Errorf(status.InvalidArgument, "filter predicate %d: %d values, %d left", i, count, len(values))
			}
			preds[i] = core.Predicate{Attr: attr, Op: core.FilterOp(int32(op)), Values: values[:count]}
			values = values[count:]
		}
		var attrs []uint64
		if hasAttrs {
			attrs = append([]uint64{}, cptr.Uint64s(attrsAddr, nAttrs)...)
		}
		h, op, err := s.Query(preds, attrs)
		return handleAndOp(h, op), err
	})
}

// FetchQueryResult returns "<total prim count> <token>,<token>,...".
func FetchQueryResult(stageID, query, timeoutNs uint64) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		res, err := s.FetchQueryResult(query, timeoutNs)
		if err != nil {
			return "", err
		}
		toks := make([]string, len(res.Attributes))
		for i, t := range res.Attributes {
			toks[i] = strconv.FormatUint(t, 10)
		}
		return strconv.Itoa(res.TotalPrimCount) + " " + strings.Join(toks, ","), nil
	})
}

// Clone enqueues a subtree clone of source to n target paths (packed strings).
func Clone(stageID uint64, source string, blobAddr uintptr, blobLen int, lensAddr uintptr, n int, ordinal uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		targets, err := cptr.Strings(blobAddr, blobLen, cptr.Uint64s(lensAddr, n))
		if err != nil {
			return 0, status.Errorf(status.InvalidArgument, "target_paths: %v", err)
		}
		return s.Clone(source, targets, ordinal)
	})
}

// MapAttribute enqueues a map session; dtype bits 0 means "existing schema"; sizesAddr/nSizes
// (hasSizes) give element_sizes for array attributes. Returns "<map handle> <op id>".
func MapAttribute(stageID, query, attrToken uint64, attrName string, ordinal uint64, primMode int32,
	code, bits, lanes int, semantic int32, sizesAddr uintptr, nSizes int, hasSizes bool) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		if code < 0 || code > 255 || bits < 0 || bits > 255 || lanes < 0 || lanes > 65535 {
			return "", status.Errorf(status.InvalidArgument, "dtype (%d, %d, %d) is out of range", code, bits, lanes)
		}
		req := core.MapRequest{Query: query, AttrToken: attrToken, AttrName: attrName, Ordinal: ordinal,
			PrimMode: primMode, Semantic: semantic,
			DType: tensor.DType{Code: uint8(code), Bits: uint8(bits), Lanes: uint16(lanes)}}
		if hasSizes {
			req.ElementSizes = append([]uint64{}, cptr.Uint64s(sizesAddr, nSizes)...)
		}
		h, op, err := s.MapAttribute(req)
		return handleAndOp(h, op), err
	})
}

// FetchMapNext returns "<address> <group id>": the address of the next group's
// ovstage_map_group_t (abi.NewMapGroup), in C memory the group owns, and its id.
func FetchMapNext(stageID, m, timeoutNs uint64) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		g, err := s.FetchMapNext(m, timeoutNs)
		if err != nil {
			return "", err
		}
		block, err := abi.NewMapGroup(g)
		if err != nil {
			return "", err
		}
		g.SetOnRelease(block.Free)
		s.RegisterMapGroup(g)
		return strconv.FormatUint(uint64(uintptr(block.Ptr())), 10) + " " + strconv.FormatUint(g.ID, 10), nil
	})
}

// UnmapGroup enqueues the commit of one map group.
func UnmapGroup(stageID, m, group uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return s.UnmapGroup(m, group)
	})
}

// UnmapAttribute enqueues the commit of every remaining group and ends the session.
func UnmapAttribute(stageID, m uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return s.UnmapAttribute(m)
	})
}
