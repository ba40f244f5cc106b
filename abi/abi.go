// Package abi is the one encoding of the ovstage C ABI on the Go side: it decodes the request
// structs of the headers in include/ (write data, batches, filters, floors, ordinal ranges, map
// descriptors, placements, configuration) into engine requests, and lays engine results out in
// the header structs (read and map groups, query, hierarchy and clone results, configuration
// views). Every shape rule of a request that the engine does not check itself lives here.
//
// The functions take the addresses of C structs as unsafe.Pointer: the C library (capi/)
// passes the pointers it received; a Python extension passes the addresses of ctypes structs
// built to the same layout (cptr.At(addr)), which tests/abi/layout.json pins for both. Memory
// that results point into is C memory (Block), freed by whoever releases the result.
// See docs/c-api.md.
package abi

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <stdlib.h>
#include <string.h>
#include <ovstage/ovstage.h>
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/status"
)

// Bounds on counts a caller passes; anything larger is a malformed request (or a lie about an
// array's length), rejected before any element is read.
const (
	MaxTensors     = 1 << 24 // tensors of one write
	MaxBatch       = 1 << 20 // entries of one write_attributes batch
	MaxArray       = 1 << 28 // tokens, strings, predicates, element sizes, config entries
	MaxStringBytes = 1 << 30 // bytes of one ovx_string_t
)

func invalid(format string, args ...any) error {
	return status.Errorf(status.InvalidArgument, format, args...)
}

func notSupported(format string, args ...any) error {
	return status.Errorf(status.NotSupported, format, args...)
}

// view is the n elements of type T at p, read in place (nil for n == 0). A NULL p with n > 0,
// or n above limit, is an error naming the argument.
func view[T any](p unsafe.Pointer, n, limit uint64, name string) ([]T, error) {
	if n == 0 {
		return nil, nil
	}
	if p == nil {
		return nil, invalid("%s is NULL with a count of %d", name, n)
	}
	if n > limit {
		return nil, invalid("%s: count %d is larger than %d", name, n, limit)
	}
	return unsafe.Slice((*T)(p), int(n)), nil
}

// Block is one C allocation holding a result: a header struct at its start and everything the
// header points at after it.
type Block struct {
	p    unsafe.Pointer
	head uintptr
}

// Ptr is the address of the block's header struct.
func (b Block) Ptr() unsafe.Pointer { return b.p }

// Valid reports whether the block holds an allocation.
func (b Block) Valid() bool { return b.p != nil }

// CopyTo copies the header struct to out (the caller's struct of the same type).
func (b Block) CopyTo(out unsafe.Pointer) { C.memcpy(out, b.p, C.size_t(b.head)) }

// Free releases the allocation (a zero Block is a no-op).
func (b Block) Free() {
	if b.p != nil {
		C.free(b.p)
	}
}

func align8(n uintptr) uintptr { return (n + 7) &^ 7 }

// layout reserves consecutive 8-aligned areas of one block.
type layout struct{ size uintptr }

func (l *layout) add(n uintptr) uintptr {
	off := l.size
	l.size += align8(n)
	return off
}

func newBlock(l layout, head uintptr) (Block, error) {
	p := C.calloc(1, C.size_t(max(l.size, 8)))
	if p == nil {
		return Block{}, status.Errorf(status.OutOfMemory, "cannot allocate %d bytes for a result", l.size)
	}
	return Block{p: p, head: head}, nil
}

func (b Block) at(off uintptr) unsafe.Pointer { return unsafe.Add(b.p, off) }

// Zero clears n bytes at out (an out-struct of a failed call).
func Zero(out unsafe.Pointer, n uintptr) {
	if out != nil {
		C.memset(out, 0, C.size_t(n))
	}
}
