package main

/*
#include <stdlib.h>
#include <string.h>
#include "capi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/status"
)

// The path dictionary slots serve the instance's own dictionary: tokens, paths and lists of one
// instance are refused by every other (core/pathdict). Results are ovx_api_result_t: an error's
// text is malloc'd for the caller, who frees it with release_error.

type dictResult = C.ovx_api_result_t

func dictOK(res *dictResult) {
	res.status = C.OVX_API_SUCCESS
	res.error = C.ovx_string_t{}
}

func dictFail(res *dictResult, fn string, err error) {
	msg := fn + ": "
	var pe *pathdict.Error
	if errors.As(err, &pe) {
		msg += pe.Message
	} else {
		msg += status.MessageOf(err)
	}
	res.status = C.OVX_API_ERROR
	res.error = C.ovx_string_t{ptr: C.CString(msg), length: C.size_t(len(msg))}
}

// dictGuard is deferred by every dictionary export: a panic becomes an OVX_API_ERROR result.
func dictGuard(fn string, res *dictResult) {
	if r := recover(); r != nil {
		dictFail(res, fn, recovered(fn, r))
	}
}

func dictionaryOf(ctx C.uintptr_t) (*pathdict.Dictionary, error) {
	in, err := byContext(ctx)
	if err != nil {
		return nil, err
	}
	return in.stage.Dictionary(), nil
}

// outArray is n elements of T at p for results (nil for n == 0; NULL with n > 0 is an error).
func outArray[T any](p unsafe.Pointer, n uint64, name string) ([]T, error) {
	if n == 0 {
		return nil, nil
	}
	if p == nil {
		return nil, invalid("%s is NULL with a count of %d", name, n)
	}
	if n > abi.MaxArray {
		return nil, invalid("%s: count %d is larger than %d", name, n, abi.MaxArray)
	}
	return unsafe.Slice((*T)(p), int(n)), nil
}

func inArray[T any](p unsafe.Pointer, n uint64, name string) ([]T, error) {
	return outArray[T](p, n, name)
}

//export ovsgo_pd_create_tokens_from_strings
func ovsgo_pd_create_tokens_from_strings(ctx C.uintptr_t, strings unsafe.Pointer, n C.size_t, out unsafe.Pointer, res *dictResult) {
	const fn = "create_tokens_from_strings"
	defer dictGuard(fn, res)
	err := func() error {
		d, err := dictionaryOf(ctx)
		if err != nil {
			return err
		}
		strs, err := abi.Strings(strings, uint64(n), "strings")
		if err != nil {
			return err
		}
		dst, err := outArray[uint64](out, uint64(n), "out_tokens")
		if err != nil {
			return err
		}
		toks := make([]uint64, len(strs))
		for i, s := range strs {
			if toks[i], err = d.InternToken(s); err != nil {
				return fmt.Errorf("strings[%d]: %w", i, err)
			}
		}
		copy(dst, toks)
		return nil
	}()
	finishDict(res, fn, err)
}

func finishDict(res *dictResult, fn string, err error) {
	if err != nil {
		dictFail(res, fn, err)
		return
	}
	dictOK(res)
}

//export ovsgo_pd_create_paths_from_tokens
func ovsgo_pd_create_paths_from_tokens(ctx C.uintptr_t, tokens, counts unsafe.Pointer, n C.size_t, out unsafe.Pointer, res *dictResult) {
	const fn = "create_paths_from_tokens"
	defer dictGuard(fn, res)
	err := func() error {
		d, err := dictionaryOf(ctx)
		if err != nil {
			return err
		}
		per, err := inArray[C.size_t](counts, uint64(n), "num_tokens_per_path")
		if err != nil {
			return err
		}
		dst, err := outArray[uint64](out, uint64(n), "out_prim_paths")
		if err != nil {
			return err
		}
		total := uint64(0)
		for _, c := range per {
			total += uint64(c)
			if total > abi.MaxArray {
				return invalid("num_tokens_per_path adds up to more than %d tokens", abi.MaxArray)
			}
		}
		toks, err := inArray[uint64](tokens, total, "tokens_per_path")
		if err != nil {
			return err
		}
		paths := make([]uint64, len(per))
		off := uint64(0)
		for i, c := range per {
			if paths[i], err = d.PathFromTokens(toks[off : off+uint64(c)]); err != nil {
				return fmt.Errorf("path %d: %w", i, err)
			}
			off += uint64(c)
		}
		copy(dst, paths)
		return nil
	}()
	finishDict(res, fn, err)
}

func internPaths(d *pathdict.Dictionary, strs []string) ([]uint64, error) {
	paths := make([]uint64, len(strs))
	for i, s := range strs {
		p, err := d.InternPath(s)
		if err != nil {
			return nil, fmt.Errorf("path_strings[%d]: %w", i, err)
		}
		paths[i] = p
	}
	return paths, nil
}

//export ovsgo_pd_create_paths_from_strings
func ovsgo_pd_create_paths_from_strings(ctx C.uintptr_t, strings unsafe.Pointer, n C.size_t, out unsafe.Pointer, res *dictResult) {
	const fn = "create_paths_from_strings"
	defer dictGuard(fn, res)
	err := func() error {
		d, err := dictionaryOf(ctx)
		if err != nil {
			return err
		}
		strs, err := abi.Strings(strings, uint64(n), "path_strings")
		if err != nil {
			return err
		}
		dst, err := outArray[uint64](out, uint64(n), "out_prim_paths")
		if err != nil {
			return err
		}
		paths, err := internPaths(d, strs)
		if err != nil {
			return err
		}
		copy(dst, paths)
		return nil
	}()
	finishDict(res, fn, err)
}

func listOut(out unsafe.Pointer) (*uint64, error) { return out64(out, "out_path_list") }

//export ovsgo_pd_create_path_list_from_paths
func ovsgo_pd_create_path_list_from_paths(ctx C.uintptr_t, paths unsafe.Pointer, n C.size_t, out unsafe.Pointer, res *dictResult) {
	const fn = "create_path_list_from_paths"
	defer dictGuard(fn, res)
	err := func() error {
		o, err := listOut(out)
		if err != nil {
			return err
		}
		d, err := dictionaryOf(ctx)
		if err != nil {
			return err
		}
		ps, err := inArray[uint64](paths, uint64(n), "paths")
		if err != nil {
			return err
		}
		l, err := d.CreateList(ps)
		if err == nil {
			*o = l
		}
		return err
	}()
	finishDict(res, fn, err)
}

//export ovsgo_pd_create_path_list_from_strings
func ovsgo_pd_create_path_list_from_strings(ctx C.uintptr_t, strings unsafe.Pointer, n C.size_t, out unsafe.Pointer, res *dictResult) {
	const fn = "create_path_list_from_strings"
	defer dictGuard(fn, res)
	err := func() error {
		o, err := listOut(out)
		if err != nil {
			return err
		}
		d, err := dictionaryOf(ctx)
		if err != nil {
			return err
		}
		strs, err := abi.Strings(strings, uint64(n), "path_strings")
		if err != nil {
			return err
		}
		paths, err := internPaths(d, strs)
		if err != nil {
			return err
		}
		l, err := d.CreateList(paths)
		if err == nil {
			*o = l
		}
		return err
	}()
	finishDict(res, fn, err)
}

//export ovsgo_pd_add_path_list_reference
func ovsgo_pd_add_path_list_reference(ctx C.uintptr_t, list C.uint64_t, res *dictResult) {
	const fn = "add_path_list_reference"
	defer dictGuard(fn, res)
	d, err := dictionaryOf(ctx)
	if err == nil {
		err = d.AddRef(uint64(list))
	}
	finishDict(res, fn, err)
}

//export ovsgo_pd_release_path_list_reference
func ovsgo_pd_release_path_list_reference(ctx C.uintptr_t, list C.uint64_t, res *dictResult) {
	const fn = "release_path_list_reference"
	defer dictGuard(fn, res)
	d, err := dictionaryOf(ctx)
	if err == nil {
		_, err = d.Release(uint64(list))
	}
	finishDict(res, fn, err)
}

// tokenTexts holds the NUL-terminated C copy of each token string handed out, by text (one
// copy serves every instance's token of that text): the views outlive every dictionary.
var tokenTexts struct {
	sync.Mutex
	m map[string]*C.char
}

func tokenText(s string) *C.char {
	tokenTexts.Lock()
	defer tokenTexts.Unlock()
	if p, ok := tokenTexts.m[s]; ok {
		return p
	}
	if tokenTexts.m == nil {
		tokenTexts.m = map[string]*C.char{}
	}
	p := C.CString(s)
	C.ovs_retain_forever(unsafe.Pointer(p))
	tokenTexts.m[s] = p
	return p
}

//export ovsgo_pd_get_strings_from_tokens
func ovsgo_pd_get_strings_from_tokens(ctx C.uintptr_t, tokens unsafe.Pointer, n C.size_t, out unsafe.Pointer, res *dictResult) {
	const fn = "get_strings_from_tokens"
	defer dictGuard(fn, res)
	err := func() error {
		d, err := dictionaryOf(ctx)
		if err != nil {
			return err
		}
		toks, err := inArray[uint64](tokens, uint64(n), "tokens")
		if err != nil {
			return err
		}
		dst, err := outArray[C.ovx_string_t](out, uint64(n), "out_strings")
		if err != nil {
			return err
		}
		views := make([]C.ovx_string_t, len(toks))
		for i, t := range toks {
			s, err := d.TokenString(t)
			if err != nil {
				return fmt.Errorf("tokens[%d]: %w", i, err)
			}
			views[i] = C.ovx_string_t{ptr: tokenText(s), length: C.size_t(len(s))}
		}
		copy(dst, views)
		return nil
	}()
	finishDict(res, fn, err)
}

//export ovsgo_pd_get_tokens_from_paths
func ovsgo_pd_get_tokens_from_paths(ctx C.uintptr_t, paths unsafe.Pointer, n C.size_t, buffer unsafe.Pointer, bufferSize C.size_t,
	outPerPath, outCounts, outProcessed unsafe.Pointer, res *dictResult) {
	const fn = "get_tokens_from_paths"
	defer dictGuard(fn, res)
	err := func() error {
		processed, err := out64(outProcessed, "out_num_paths_processed")
		if err != nil {
			return err
		}
		d, err := dictionaryOf(ctx)
		if err != nil {
			return err
		}
		ps, err := inArray[uint64](paths, uint64(n), "prim_paths")
		if err != nil {
			return err
		}
		perPath, err := outArray[unsafe.Pointer](outPerPath, uint64(n), "out_tokens_per_path")
		if err != nil {
			return err
		}
		counts, err := outArray[C.size_t](outCounts, uint64(n), "out_num_tokens_per_path")
		if err != nil {
			return err
		}
		if buffer == nil && bufferSize > 0 {
			return invalid("token_buffer is NULL with token_buffer_size %d", bufferSize)
		}
		used := uintptr(0)
		for i, p := range ps {
			toks, err := d.Tokens(p)
			if err != nil {
				return fmt.Errorf("prim_paths[%d]: %w", i, err)
			}
			if used+uintptr(len(toks)) > uintptr(bufferSize) {
				break // the caller retries with a larger buffer
			}
			at := unsafe.Add(buffer, used*8)
			if len(toks) > 0 {
				copy(unsafe.Slice((*uint64)(at), len(toks)), toks)
			}
			perPath[i], counts[i] = at, C.size_t(len(toks))
			used += uintptr(len(toks))
			*processed = uint64(i + 1)
		}
		return nil
	}()
	finishDict(res, fn, err)
}

//export ovsgo_pd_get_num_paths_from_path_list
func ovsgo_pd_get_num_paths_from_path_list(ctx C.uintptr_t, list C.uint64_t, out unsafe.Pointer, res *dictResult) {
	const fn = "get_num_paths_from_path_list"
	defer dictGuard(fn, res)
	err := func() error {
		o, err := out64(out, "out_num_paths")
		if err != nil {
			return err
		}
		d, err := dictionaryOf(ctx)
		if err != nil {
			return err
		}
		ps, err := d.ListPaths(uint64(list))
		if err == nil {
			*o = uint64(len(ps))
		}
		return err
	}()
	finishDict(res, fn, err)
}

//export ovsgo_pd_get_paths_from_path_list
func ovsgo_pd_get_paths_from_path_list(ctx C.uintptr_t, list C.uint64_t, start, maxPaths C.size_t, out unsafe.Pointer, outNum unsafe.Pointer, res *dictResult) {
	const fn = "get_paths_from_path_list"
	defer dictGuard(fn, res)
	err := func() error {
		num, err := out64(outNum, "out_num_paths")
		if err != nil {
			return err
		}
		d, err := dictionaryOf(ctx)
		if err != nil {
			return err
		}
		ps, err := d.ListPaths(uint64(list))
		if err != nil {
			return err
		}
		if uint64(start) > uint64(len(ps)) {
			return invalid("start_offset %d is past the list's %d paths", start, len(ps))
		}
		k := min(uint64(maxPaths), uint64(len(ps))-uint64(start))
		dst, err := outArray[uint64](out, k, "out_paths")
		if err != nil {
			return err
		}
		copy(dst, ps[start:uint64(start)+k])
		*num = k
		return nil
	}()
	finishDict(res, fn, err)
}
