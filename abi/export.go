package abi

/*
#cgo CFLAGS: -I${SRCDIR}/../core/buffer
#include <ovstage/ovstage.h>
#include "ovs_buffer.h"
DLManagedTensorVersioned* ovs_export_new(ovs_buffer* buf, uint64_t byte_offset, uint8_t code,
	uint8_t bits, uint16_t lanes, int32_t ndim, const int64_t* shape, int32_t device_type,
	int32_t device_id, uint64_t flags);
void* ovs_export_clone(DLManagedTensorVersioned* src, int versioned);
void ovs_export_free(DLManagedTensorVersioned* m);
ovs_buffer* ovs_export_buffer(DLManagedTensorVersioned* m);
void ovs_capsule_destructor(void* capsule);
static uintptr_t ovs_capsule_destructor_address(void) { return (uintptr_t)&ovs_capsule_destructor; }
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// Exports of engine buffers as DLPack managed tensors (legacy and versioned). The deleters are
// C (export.c), so they run on any thread, Python's included, without entering Go.

// Flags are the DLManagedTensorVersioned flags of an export.
type Flags uint64

// The export flags the engine sets (DLPack values).
const (
	// ReadOnly: the consumer must not write (a view of sealed data).
	ReadOnly Flags = C.DLPACK_FLAG_BITMASK_READ_ONLY
	// IsCopied: the data is a private copy, not shared with the producer.
	IsCopied Flags = C.DLPACK_FLAG_BITMASK_IS_COPIED
)

// Export makes a versioned managed tensor over the published tensor tv of a column with the
// given semantic (typed shape, scalar lanes: core.TypedShape), holding its own buffer
// reference: the template CloneForCapsule copies for each capsule. The result is a
// DLManagedTensorVersioned* address.
func Export(tv core.TensorView, semantic int32, flags Flags) (uintptr, error) {
	shape, ndim := core.TypedShape(tv.Rows, tv.DType.Lanes, semantic)
	var cshape [core.MaxTypedDims]C.int64_t
	for i := range ndim {
		cshape[i] = C.int64_t(shape[i])
	}
	m := C.ovs_export_new((*C.ovs_buffer)(tv.Buffer.Raw()), C.uint64_t(tv.ByteOffset), C.uint8_t(tv.DType.Code),
		C.uint8_t(tv.DType.Bits), 1, C.int32_t(ndim), &cshape[0], C.int32_t(tv.DeviceType), C.int32_t(tv.DeviceID), C.uint64_t(flags))
	if m == nil {
		return 0, status.Errorf(status.OutOfMemory, "cannot allocate a DLPack export")
	}
	return uintptr(unsafe.Pointer(m)), nil
}

// CloneForCapsule returns a fresh managed tensor (versioned or legacy) sharing the storage of
// the versioned export at addr.
func CloneForCapsule(addr uintptr, versioned bool) (uintptr, error) {
	if addr == 0 {
		return 0, invalid("managed tensor address is NULL")
	}
	v := C.int(0)
	if versioned {
		v = 1
	}
	p := C.ovs_export_clone((*C.DLManagedTensorVersioned)(cptr.At(addr)), v)
	if p == nil {
		return 0, status.Errorf(status.OutOfMemory, "cannot allocate a DLPack export")
	}
	return uintptr(p), nil
}

// FreeExport runs the deleter of a versioned export made by Export.
func FreeExport(addr uintptr) {
	if addr != 0 {
		C.ovs_export_free((*C.DLManagedTensorVersioned)(cptr.At(addr)))
	}
}

// ExportBuffer is the buffer viewed by the versioned export at addr (made by Export), borrowed:
// valid while the export is alive, no reference is added.
func ExportBuffer(addr uintptr) (buffer.Buffer, error) {
	if addr == 0 {
		return buffer.Buffer{}, invalid("managed tensor address is NULL")
	}
	b := C.ovs_export_buffer((*C.DLManagedTensorVersioned)(cptr.At(addr)))
	if b == nil {
		return buffer.Buffer{}, status.Errorf(status.Internal, "export %#x has no buffer", addr)
	}
	return buffer.FromRaw(unsafe.Pointer(b)), nil
}

// CapsuleDestructorAddress is the C function to pass to PyCapsule_New for our exports.
func CapsuleDestructorAddress() uintptr { return uintptr(C.ovs_capsule_destructor_address()) }
