package abi

/*
#include <ovstage/ovstage.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Filter decodes an ovstage_filter_t (NULL or no predicates: every prim). Predicate
// attributes given as strings are interned in dict.
func Filter(p unsafe.Pointer, dict *pathdict.Dictionary) ([]core.Predicate, error) {
	if p == nil {
		return nil, nil
	}
	f := (*C.ovstage_filter_t)(p)
	preds, err := view[C.ovstage_predicate_t](unsafe.Pointer(f.predicates), uint64(f.count), MaxArray, "filter->predicates")
	if err != nil {
		return nil, err
	}
	out := make([]core.Predicate, len(preds))
	for i := range preds {
		pr := &preds[i]
		name := fmt.Sprintf("filter->predicates[%d]", i)
		tok, err := Token(unsafe.Pointer(&pr.attribute), name+".attribute", dict, false)
		if err != nil {
			return nil, err
		}
		values, err := Strings(unsafe.Pointer(pr.values), uint64(pr.value_count), name+".values")
		if err != nil {
			return nil, err
		}
		out[i] = core.Predicate{Attr: tok, Op: core.FilterOp(int32(pr.op)), Values: values}
	}
	return out, nil
}

// WriteFloor decodes an ovstage_write_floor_desc_t.
func WriteFloor(p unsafe.Pointer) (ordinal uint64, scope core.Scope, attrs []uint64, err error) {
	if p == nil {
		return 0, 0, nil, invalid("desc is NULL")
	}
	d := (*C.ovstage_write_floor_desc_t)(p)
	attrs, err = Tokens(unsafe.Pointer(d.attributes), uint64(d.attribute_count), "desc->attributes")
	return uint64(d.ordinal), core.Scope(int32(d.scope)), attrs, err
}

// OrdinalRange decodes an ovstage_ordinal_range_t (the engine checks start <= end).
func OrdinalRange(p unsafe.Pointer) (core.OrdinalRange, error) {
	if p == nil {
		return core.OrdinalRange{}, invalid("range is NULL")
	}
	r := (*C.ovstage_ordinal_range_t)(p)
	return core.OrdinalRange{Start: uint64(r.start_ordinal), End: uint64(r.end_ordinal), HasStart: bool(r.has_start_ordinal)}, nil
}

// Read decodes read_attributes' arguments: n attribute tokens at attrs, the range and a
// placement (may be NULL; see DecodePlacement).
func Read(attrs unsafe.Pointer, n uint64, rng, placement unsafe.Pointer) ([]uint64, core.OrdinalRange, Placed, error) {
	toks, err := Tokens(attrs, n, "attrs")
	if err != nil {
		return nil, core.OrdinalRange{}, Placed{}, err
	}
	placed, err := DecodePlacement(placement)
	if err != nil {
		return nil, core.OrdinalRange{}, Placed{}, err
	}
	r, err := OrdinalRange(rng)
	return toks, r, placed, err
}

// Map decodes map_attribute's arguments: desc (ovstage_map_desc_t*), element_sizes (size_t[n];
// NULL for a fixed-size attribute) and a placement (may be NULL).
func Map(query uint64, desc unsafe.Pointer, ordinal uint64, sizes unsafe.Pointer, n uint64, placement unsafe.Pointer) (core.MapRequest, error) {
	req := core.MapRequest{Query: query, Ordinal: ordinal}
	if desc == nil {
		return req, invalid("desc is NULL")
	}
	placed, err := DecodePlacement(placement)
	if err != nil {
		return req, err
	}
	req.Device, req.Avail = placed.Device, placed.Avail
	d := (*C.ovstage_map_desc_t)(desc)
	tok, s, err := StringOrToken(unsafe.Pointer(&d.attribute), "desc->attribute")
	if err != nil {
		return req, err
	}
	if tok == 0 && s == "" {
		return req, invalid("desc->attribute is empty: give a non-zero token or a non-empty string")
	}
	req.AttrToken, req.AttrName = tok, s
	req.DType = tensor.DType{Code: uint8(d.dtype.code), Bits: uint8(d.dtype.bits), Lanes: uint16(d.dtype.lanes)}
	req.Semantic = int32(d.semantic)
	req.PrimMode = int32(d.prim_mode)
	req.AttributeMode = attributeMode(d.attribute_mode)
	if sizes == nil && n > 0 {
		return req, invalid("element_sizes is NULL with element_count %d", n)
	}
	if sizes != nil {
		vals, err := view[C.size_t](sizes, n, MaxArray, "element_sizes")
		if err != nil {
			return req, err
		}
		req.ElementSizes = make([]uint64, len(vals))
		for i, v := range vals {
			req.ElementSizes[i] = uint64(v) // the engine reports an absurd size as given
		}
	}
	return req, nil
}

// Delete decodes delete_attributes' arguments: n ovx_string_or_token_t at attrs (none: delete
// the whole prims).
func Delete(query uint64, attrs unsafe.Pointer, n uint64, ordinal uint64) (core.DeleteRequest, error) {
	req := core.DeleteRequest{Query: query, Ordinal: ordinal}
	items, err := view[C.ovx_string_or_token_t](attrs, n, MaxArray, "attributes")
	if err != nil {
		return req, err
	}
	for i := range items {
		name := fmt.Sprintf("attributes[%d]", i)
		tok, s, err := StringOrToken(unsafe.Pointer(&items[i]), name)
		if err != nil {
			return req, err
		}
		if tok == 0 && s == "" {
			return req, invalid("%s is empty: give a non-zero token or a non-empty string", name)
		}
		req.Tokens = append(req.Tokens, tok)
		req.Names = append(req.Names, s)
	}
	return req, nil
}
