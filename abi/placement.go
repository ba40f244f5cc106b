package abi

/*
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/column"
)

// placementAt reads an ovstage_placement_t (nil for a NULL pointer).
func placementAt(p unsafe.Pointer) *C.ovstage_placement_t { return (*C.ovstage_placement_t)(p) }

// WritePlacement decodes a placed write's placement: its device becomes the write's explicit
// placement (the engine accepts the host and CUDA devices). NULL, or device {0, 0}, leaves the
// placement to the source tensor. A stream or an availability event is not in the engine.
func WritePlacement(p unsafe.Pointer) (column.Placement, error) {
	pl := placementAt(p)
	if pl == nil {
		return column.Placement{}, nil
	}
	if pl.stream != 0 {
		return column.Placement{}, notSupported("placement->stream %#x: placed writes on a caller's stream are not in this build "+
			"(the payload is copied at enqueue, after the data's cuda_sync; pass stream 0)", uintptr(pl.stream))
	}
	if pl.availability_event != 0 {
		return column.Placement{}, notSupported("placement->availability_event %#x: availability events are not in this build "+
			"(the data is available once wait_op reports the op complete; pass 0)", uintptr(pl.availability_event))
	}
	return column.Placement{DeviceType: int32(pl.device.device_type), DeviceID: int32(pl.device.device_id)}, nil
}

// unplaced reports whether a placement asks for nothing (NULL, or all fields zero).
func unplaced(pl *C.ovstage_placement_t) bool {
	return pl == nil || (pl.device.device_type == 0 && pl.device.device_id == 0 && pl.stream == 0 && pl.availability_event == 0)
}

// ReadPlacement accepts a placed read's placement only when it asks for nothing: groups point
// at the column's own storage (where its writes placed it).
func ReadPlacement(p unsafe.Pointer) error {
	if pl := placementAt(p); !unplaced(pl) {
		return notSupported("placement: placed reads (a device, stream or event for read_attributes_on_device) are not in this build; " +
			"read groups point at the column's own storage, on the device its writes placed it (pass NULL)")
	}
	return nil
}

// MapPlacement accepts a placed map's placement only when it asks for nothing: map sessions
// stage in host memory.
func MapPlacement(p unsafe.Pointer) error {
	if pl := placementAt(p); !unplaced(pl) {
		return notSupported("placement: placed map sessions (a device, stream or event for map_attribute_on_device) are not in this build; " +
			"map sessions stage in host memory (pass NULL)")
	}
	return nil
}
