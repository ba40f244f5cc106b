package abi

/*
#include <string.h>
#include <ovstage/ovstage.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/lifecycle"
)

// Config decodes an ovstage_config_t (NULL or no entries: none). The key and value unions are
// read as the key type says; strings and blobs are copied.
func Config(p unsafe.Pointer) ([]lifecycle.Entry, error) {
	if p == nil {
		return nil, nil
	}
	c := (*C.ovstage_config_t)(p)
	items, err := view[C.ovstage_config_entry_t](unsafe.Pointer(c.entries), uint64(c.entry_count), MaxArray, "config->entries")
	if err != nil {
		return nil, err
	}
	out := make([]lifecycle.Entry, len(items))
	for i := range items {
		it := &items[i]
		name := fmt.Sprintf("config->entries[%d]", i)
		e := lifecycle.Entry{Type: lifecycle.KeyType(int32(it.key_type)), Key: *(*int32)(unsafe.Pointer(&it.key))}
		value := unsafe.Pointer(&it.value)
		switch e.Type {
		case lifecycle.KeyBool:
			e.Bool = bool(*(*C.bool)(value))
		case lifecycle.KeyInt64:
			e.Int = *(*int64)(value)
		case lifecycle.KeyUint64:
			e.Uint = *(*uint64)(value)
		case lifecycle.KeyDouble:
			e.Double = *(*float64)(value)
		case lifecycle.KeyString:
			if e.String, err = goString(*(*C.ovx_string_t)(value), name+".value.string_value"); err != nil {
				return nil, err
			}
		case lifecycle.KeyBlob:
			b := (*struct {
				data unsafe.Pointer
				size C.size_t
			})(value)
			blob, err := view[byte](b.data, uint64(b.size), MaxStringBytes, name+".value.blob_value.data")
			if err != nil {
				return nil, err
			}
			e.Blob = append([]byte(nil), blob...)
		}
		out[i] = e
	}
	return out, nil
}

// NewConfig lays out entries as an ovstage_config_t followed by its entry array and their
// string and blob bytes (NUL-terminated), for get_config's borrowed view.
func NewConfig(entries []lifecycle.Entry) (Block, error) {
	var l layout
	head := l.add(unsafe.Sizeof(C.ovstage_config_t{}))
	array := l.add(uintptr(len(entries)) * unsafe.Sizeof(C.ovstage_config_entry_t{}))
	payload := make([]uintptr, len(entries))
	for i, e := range entries {
		payload[i] = l.add(uintptr(len(e.String)+len(e.Blob)) + 1)
	}
	b, err := newBlock(l, unsafe.Sizeof(C.ovstage_config_t{}))
	if err != nil {
		return b, err
	}
	cfg := (*C.ovstage_config_t)(b.at(head))
	cfg.entry_count = C.size_t(len(entries))
	if len(entries) > 0 {
		cfg.entries = (*C.ovstage_config_entry_t)(b.at(array))
	}
	items := unsafe.Slice((*C.ovstage_config_entry_t)(b.at(array)), len(entries))
	for i, e := range entries {
		it := &items[i]
		it.key_type = C.ovstage_config_key_type_t(e.Type)
		*(*int32)(unsafe.Pointer(&it.key)) = e.Key
		value := unsafe.Pointer(&it.value)
		switch e.Type {
		case lifecycle.KeyBool:
			*(*C.bool)(value) = C.bool(e.Bool)
		case lifecycle.KeyInt64:
			*(*int64)(value) = e.Int
		case lifecycle.KeyUint64:
			*(*uint64)(value) = e.Uint
		case lifecycle.KeyDouble:
			*(*float64)(value) = e.Double
		case lifecycle.KeyString:
			s := (*C.ovx_string_t)(value)
			if len(e.String) > 0 {
				dst := b.at(payload[i])
				C.memcpy(dst, unsafe.Pointer(unsafe.StringData(e.String)), C.size_t(len(e.String)))
				s.ptr, s.length = (*C.char)(dst), C.size_t(len(e.String))
			}
		case lifecycle.KeyBlob:
			bv := (*struct {
				data unsafe.Pointer
				size C.size_t
			})(value)
			if len(e.Blob) > 0 {
				dst := b.at(payload[i])
				C.memcpy(dst, unsafe.Pointer(&e.Blob[0]), C.size_t(len(e.Blob)))
				bv.data, bv.size = dst, C.size_t(len(e.Blob))
			}
		}
	}
	return b, nil
}

// History is the engine's history window for the window w names: nil (the engine's default)
// when w is not set; ordinals 0 keeps no versions (the reference's answers).
func History(w lifecycle.HistoryWindow) *core.History {
	if !w.Set {
		return nil
	}
	return &core.History{Ordinals: w.Ordinals, Bytes: w.Bytes}
}
