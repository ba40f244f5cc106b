// Package buffer holds payload bytes in C memory with an atomic reference count. Columns, read
// groups and exported DLPack tensors each hold a reference to the buffer version they view, so
// a view never dangles and never changes under its reader (writers copy when shared).
package buffer

/*
#include <stdlib.h>
#include "ovs_buffer.h"
ovs_buffer* ovs_buffer_new(size_t size);
ovs_buffer* ovs_buffer_new_uninit(size_t size);
void ovs_buffer_trim(void);
void ovs_copy(void* dst, const void* src, size_t n);
int64_t ovs_buffer_cached_bytes(void);
int64_t ovs_buffer_live_count(void);
int64_t ovs_buffer_live_bytes(void);
static void ovs_retain(ovs_buffer* b) { ovs_buffer_retain(b); }
static void ovs_release(ovs_buffer* b) { ovs_buffer_release(b); }
static int64_t ovs_refs(ovs_buffer* b) { return ovs_buffer_refs(b); }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// AllocError is a failed allocation of Size bytes. The package imports nothing of the project,
// so the error carries its status as a method: status.CodeOf reports it as OUT_OF_MEMORY.
type AllocError struct{ Size int }

func (e *AllocError) Error() string { return fmt.Sprintf("cannot allocate %d bytes", e.Size) }

// OutOfMemory reports that the allocation failed for want of memory.
func (e *AllocError) OutOfMemory() bool { return true }

// checkSize refuses a negative size (a caller's bug: sizes come from validated requests).
func checkSize(size int) error {
	if size < 0 {
		return fmt.Errorf("buffer size %d is negative", size)
	}
	return nil
}

// Buffer is one reference to a C-allocated payload. The zero value is not usable.
type Buffer struct{ b *C.ovs_buffer }

// New allocates a zero-filled buffer of size bytes holding one reference.
func New(size int) (Buffer, error) {
	if err := checkSize(size); err != nil {
		return Buffer{}, err
	}
	b := C.ovs_buffer_new(C.size_t(size))
	if b == nil {
		return Buffer{}, &AllocError{Size: size}
	}
	return Buffer{b: b}, nil
}

// NewUninit is New without the zero fill, for a payload the caller overwrites completely
// before anyone reads it.
func NewUninit(size int) (Buffer, error) {
	if err := checkSize(size); err != nil {
		return Buffer{}, err
	}
	b := C.ovs_buffer_new_uninit(C.size_t(size))
	if b == nil {
		return Buffer{}, &AllocError{Size: size}
	}
	return Buffer{b: b}, nil
}

// Copy copies n bytes from src to dst (non-overlapping) with the C library's memcpy, which
// streams large copies past the cache; for small ones Go's copy is cheaper (no cgo call).
func Copy(dst, src unsafe.Pointer, n int) {
	if n > 0 {
		C.ovs_copy(dst, src, C.size_t(n))
	}
}

// Trim frees the memory of released large buffers kept for reuse.
func Trim() { C.ovs_buffer_trim() }

// CachedBytes is the memory of released large buffers kept for reuse (at most 1 GiB in 8
// buffers; see buffer.c).
func CachedBytes() int64 { return int64(C.ovs_buffer_cached_bytes()) }

// Valid reports whether the buffer refers to memory.
func (b Buffer) Valid() bool { return b.b != nil }

// Data is the payload address (64-byte aligned).
func (b Buffer) Data() unsafe.Pointer { return b.b.data }

// Size is the payload size in bytes.
func (b Buffer) Size() int { return int(b.b.size) }

// Bytes views the payload as a Go slice (C memory; valid while a reference is held). Host
// buffers only: device memory is not addressable from the CPU (see OnHost).
func (b Buffer) Bytes() []byte {
	if !b.OnHost() {
		panic("buffer.Bytes called on a device buffer (device memory is not host-addressable)")
	}
	if b.b.size == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(b.b.data), int(b.b.size))
}

// Retain adds a reference and returns the same buffer for convenience.
func (b Buffer) Retain() Buffer { C.ovs_retain(b.b); return b }

// Release drops one reference; the memory is freed with the last one.
func (b Buffer) Release() { C.ovs_release(b.b) }

// Refs is the current reference count (a snapshot).
func (b Buffer) Refs() int64 { return int64(C.ovs_refs(b.b)) }

// Raw is the C header address, for C code that retains/releases the buffer itself.
func (b Buffer) Raw() unsafe.Pointer { return unsafe.Pointer(b.b) }

// LiveCount is the number of buffers not yet freed in the process (diagnostics and leak tests).
func LiveCount() int64 { return int64(C.ovs_buffer_live_count()) }

// LiveBytes is the payload bytes of buffers not yet freed.
func LiveBytes() int64 { return int64(C.ovs_buffer_live_bytes()) }
