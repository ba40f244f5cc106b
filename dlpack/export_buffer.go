package dlpack

/*
#cgo CFLAGS: -I${SRCDIR}/../core/buffer
#include "dlpack.h"
#include "ovs_buffer.h"
ovs_buffer* ovs_export_buffer(DLManagedTensorVersioned* m);
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

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
