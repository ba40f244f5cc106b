package pybind

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/internal/cptr"
)

// unsafeUint64s views n uint64 values of caller memory at addr for writing results.
func unsafeUint64s(addr uintptr, n int) []uint64 { return unsafe.Slice((*uint64)(cptr.At(addr)), n) }
