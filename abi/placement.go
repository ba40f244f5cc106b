package abi

/*
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Placed is a decoded ovstage_placement_t: the device whose copy the op brings up to date
// (writes, maps) or serves (reads) — zero when unspecified — and the availability event.
type Placed struct {
	Device column.Placement
	Avail  core.Availability
}

// DecodePlacement decodes a placed entry's placement. NULL is the unplaced slot (zero Placed,
// Avail.Placed false); device type 0 leaves the device unspecified. The device types accepted
// are 0, kDLCPU (1), kDLCUDA (2) and kDLCUDAManaged (13); the engine validates the device id.
func DecodePlacement(p unsafe.Pointer) (Placed, error) {
	pl := (*C.ovstage_placement_t)(p)
	if pl == nil {
		return Placed{}, nil
	}
	out := Placed{Avail: core.Availability{Placed: true, Stream: uintptr(pl.stream), Event: uintptr(pl.availability_event)}}
	kind, id := int32(pl.device.device_type), int32(pl.device.device_id)
	switch kind {
	case 0:
	case tensor.DeviceCPU, tensor.DeviceCUDA, tensor.DeviceCUDAManaged:
		if id < 0 {
			return out, invalid("placement->device.device_id %d is negative", id)
		}
		out.Device = column.Placement{DeviceType: kind, DeviceID: id}
	default:
		return out, invalid("placement->device.device_type %d is not one of 0 (unspecified), kDLCPU (1), kDLCUDA (2), kDLCUDAManaged (13)", kind)
	}
	return out, nil
}
