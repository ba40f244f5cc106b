package buffer

/*
#include "ovs_buffer.h"
*/
import "C"

import "unsafe"

// DeviceCPU is the DLPack device type of host buffers.
const DeviceCPU int32 = 1

// FromRaw adopts an ovs_buffer built by another package (core/cuda builds device buffers with
// their own destroy function). The caller transfers the one reference it holds.
func FromRaw(raw unsafe.Pointer) Buffer { return Buffer{b: (*C.ovs_buffer)(raw)} }

// DeviceType is the DLPack device type of the payload (DeviceCPU for host buffers).
func (b Buffer) DeviceType() int32 { return int32(b.b.device_type) }

// DeviceID is the device ordinal of the payload (0 for host buffers).
func (b Buffer) DeviceID() int32 { return int32(b.b.device_id) }

// OnHost reports whether the payload is host memory (Bytes may be used).
func (b Buffer) OnHost() bool { return b.b.device_type == C.int32_t(DeviceCPU) }
