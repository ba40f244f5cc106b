package abi

/*
#include <ovstage/ovstage.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/ovstage-go/ovstage/core/pathdict"
)

// goString copies an ovx_string_t. {NULL, 0} and {p, 0} are "", a NULL ptr with a length is an
// error naming the argument.
func goString(s C.ovx_string_t, name string) (string, error) {
	n := uint64(s.length)
	if n == 0 {
		return "", nil
	}
	if s.ptr == nil {
		return "", invalid("%s: ptr is NULL with length %d", name, n)
	}
	if n > MaxStringBytes {
		return "", invalid("%s: length %d is larger than %d bytes", name, n, MaxStringBytes)
	}
	return C.GoStringN(s.ptr, C.int(n)), nil
}

// String copies the ovx_string_t at p (a NULL p is "").
func String(p unsafe.Pointer, name string) (string, error) {
	if p == nil {
		return "", nil
	}
	return goString(*(*C.ovx_string_t)(p), name)
}

// Strings copies n ovx_string_t values at p.
func Strings(p unsafe.Pointer, n uint64, name string) ([]string, error) {
	items, err := view[C.ovx_string_t](p, n, MaxArray, name)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(items))
	for i, s := range items {
		if out[i], err = goString(s, fmt.Sprintf("%s[%d]", name, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// StringOrToken reads the ovx_string_or_token_t at p: a non-zero token wins (the string is
// ignored), else the string. Both empty is returned as (0, "").
func StringOrToken(p unsafe.Pointer, name string) (uint64, string, error) {
	if p == nil {
		return 0, "", invalid("%s is NULL", name)
	}
	st := (*C.ovx_string_or_token_t)(p)
	if st.token != 0 {
		return uint64(st.token), "", nil
	}
	s, err := goString(st.string, name+".string")
	return 0, s, err
}

// Token is StringOrToken resolved to a token (a string is interned in dict). Both empty is an
// error unless allowEmpty, when it is token 0.
func Token(p unsafe.Pointer, name string, dict *pathdict.Dictionary, allowEmpty bool) (uint64, error) {
	tok, s, err := StringOrToken(p, name)
	if err != nil || tok != 0 {
		return tok, err
	}
	if s == "" {
		if allowEmpty {
			return 0, nil
		}
		return 0, invalid("%s is empty: give a non-zero token or a non-empty string", name)
	}
	t, err := dict.InternToken(s)
	if err != nil {
		return 0, invalid("%s: %v", name, err)
	}
	return t, nil
}

// Tokens copies n ovx_token_t values at p.
func Tokens(p unsafe.Pointer, n uint64, name string) ([]uint64, error) {
	toks, err := view[uint64](p, n, MaxArray, name)
	if err != nil {
		return nil, err
	}
	return append([]uint64(nil), toks...), nil
}
