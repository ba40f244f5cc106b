// Package cptr turns addresses received from Python (uintptr of C or ctypes memory the caller
// keeps alive for the duration of the call) into pointers and slices.
package cptr

import (
	"fmt"
	"unsafe"
)

// At returns addr as a pointer. The memory is not Go-managed, so the GC never moves or frees
// it; going through a variable keeps `go vet`'s unsafeptr check meaningful elsewhere.
func At(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }

// Uint64s copies n uint64 values from addr (nil when n == 0).
func Uint64s(addr uintptr, n int) []uint64 {
	if n <= 0 || addr == 0 {
		return nil
	}
	return append([]uint64(nil), unsafe.Slice((*uint64)(At(addr)), n)...)
}

// Uint32s copies n uint32 values from addr (nil when n == 0).
func Uint32s(addr uintptr, n int) []uint32 {
	if n <= 0 || addr == 0 {
		return nil
	}
	return append([]uint32(nil), unsafe.Slice((*uint32)(At(addr)), n)...)
}

// Uintptrs copies n pointer-sized values from addr (nil when n == 0).
func Uintptrs(addr uintptr, n int) []uintptr {
	if n <= 0 || addr == 0 {
		return nil
	}
	return append([]uintptr(nil), unsafe.Slice((*uintptr)(At(addr)), n)...)
}

// Strings splits blobLen bytes at blobAddr into strings of the given byte lengths. They are
// views of the caller's memory, not copies: valid during the call only, so whoever keeps one
// must copy it (the path dictionary copies every token it interns).
func Strings(blobAddr uintptr, blobLen int, lens []uint64) ([]string, error) {
	var total uint64
	for _, l := range lens {
		total += l
	}
	if total != uint64(blobLen) || (blobLen > 0 && blobAddr == 0) {
		return nil, fmt.Errorf("string lengths add up to %d bytes but the buffer holds %d", total, blobLen)
	}
	var blob []byte
	if blobLen > 0 {
		blob = unsafe.Slice((*byte)(At(blobAddr)), blobLen)
	}
	out := make([]string, len(lens))
	off := uint64(0)
	for i, l := range lens {
		if l > 0 {
			out[i] = unsafe.String(&blob[off], int(l))
		}
		off += l
	}
	return out, nil
}
