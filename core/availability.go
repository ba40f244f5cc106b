package core

// Placed ops: the availability event a caller asks a placed write, read or map commit to
// record, and the device copy a placed read serves (README "GPU-resident attributes").

import (
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/status"
)

// Availability is the part of a placement (ovstage_placement_t) beyond its device: Placed says
// the op came through a placed entry point; Event (a CUevent the caller owns, 0: none) is
// recorded on Stream (0 and 1: legacy default stream, 2: per-thread default, else a CUstream)
// once the op's device work has been issued, whether the op succeeded or not.
type Availability struct {
	Placed bool
	Stream uintptr
	Event  uintptr
}

// eventRecord is a resolved availability event: where it is recorded. nil records nothing.
type eventRecord struct {
	dev           *cuda.Device
	event, stream uintptr
}

// resolveAvailability checks a placed op's event at enqueue. It is recorded on the CUDA device
// the op is placed on (for writes: its payload's placement, which follows a CUDA source when
// no device is given), else on device 0. Without a usable driver it is INVALID_ARGUMENT.
func resolveAvailability(a Availability, place column.Placement) (*eventRecord, error) {
	if a.Event == 0 {
		return nil, nil
	}
	ordinal := 0
	if place.IsCUDA() {
		ordinal = int(place.DeviceID)
	}
	dev, err := cuda.Get(ordinal)
	if err != nil {
		if status.CodeOf(err) == status.NotSupported {
			return nil, status.Errorf(status.InvalidArgument,
				"placement: availability_event %#x needs a usable CUDA driver: %s", a.Event, status.MessageOf(err))
		}
		return nil, status.Errorf(status.CodeOf(err), "placement: availability_event %#x: %s", a.Event, status.MessageOf(err))
	}
	return &eventRecord{dev: dev, event: a.Event, stream: a.Stream}, nil
}

// record records the event. A refused record fails the op (OP_FAILED) after its effects took
// place.
func (r *eventRecord) record() error {
	if r == nil {
		return nil
	}
	if err := r.dev.RecordForeign(r.event, r.stream); err != nil {
		return status.Errorf(status.OpFailed, "placement: recording availability_event %#x failed (the op's effects took place): %s",
			r.event, status.MessageOf(err))
	}
	return nil
}

// readPlacement resolves the device a placed read serves: zero (unplaced: each column's
// current copy), the host, or a CUDA device that must exist.
func readPlacement(device column.Placement) (column.Placement, error) {
	p, err := explicitPlacement(device, "placement")
	if err != nil || !p.IsCUDA() {
		return p, err
	}
	if _, err := cuda.Get(int(p.DeviceID)); err != nil {
		if status.CodeOf(err) == status.NotSupported {
			return p, placementNeedsGPU(p, err)
		}
		return p, status.Errorf(status.CodeOf(err), "placement: %s", status.MessageOf(err))
	}
	return p, nil
}

// placeGroups points the groups' tensors at copies on place: a buffer already there is served
// as is (no copy), any other is copied there for the groups (freed with their last reference).
// On failure every group is released.
func placeGroups(groups []*Group, place column.Placement) error {
	if place == (column.Placement{}) {
		return nil
	}
	for _, g := range groups {
		moved := map[any]buffer.Buffer{} // a ragged group's rows share buffers: copy each once
		for i := range g.Tensors {
			tv := &g.Tensors[i]
			if column.PlacementOf(tv.Buffer) == place {
				continue
			}
			nb, ok := moved[tv.Buffer.Raw()]
			if !ok {
				var err error
				if nb, err = cuda.Move(tv.Buffer.Retain(), place); err != nil {
					tv.Buffer.Release()
					for _, b := range moved {
						b.Release()
					}
					for _, g := range groups {
						g.release()
					}
					return status.Errorf(status.CodeOf(err), "placement: copying the read to %s: %s", place, status.MessageOf(err))
				}
				moved[tv.Buffer.Raw()] = nb
			}
			tv.Buffer.Release()
			tv.Buffer = nb.Retain()
			tv.DeviceType, tv.DeviceID = nb.DeviceType(), nb.DeviceID()
		}
		for _, b := range moved {
			b.Release()
		}
	}
	return nil
}
