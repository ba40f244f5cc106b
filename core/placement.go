package core

// Placement of columns (host or one CUDA device) and the copy-in of write payloads.
//
// Rules (README "GPU-resident attributes"):
//   - A write's placement is its explicit device (WriteRequest.Device, Python device=) when
//     given, else the source tensor's device: CPU and CUDA-host (pinned) tensors place on the
//     host, CUDA and CUDA-managed tensors on their device.
//   - A column has one placement, fixed by the write that creates it. A write placed elsewhere
//     is INVALID_ARGUMENT (the message names both placements): nothing migrates silently. An
//     explicit device= that matches the column copies any source there (host->device,
//     device->host, device->device across GPUs).
//   - The payload is copied at enqueue, as for host writes, so the caller may reuse its tensor
//     once the call returns: after waiting for the caller's cuda_event / cuda_stream (spec
//     §2.12), a CUDA source is copied device-to-device (no host round trip) on the device's
//     copy stream, which is synchronized before returning.

import (
	"strings"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/dlpack"
)

// CudaSync is ovstage_cuda_sync_t: Stream 0 = none, 1 = legacy default stream, 2 = per-thread
// default stream, else a CUstream whose queued work is drained first; Event 0 = none, else a
// CUevent to wait for.
type CudaSync struct {
	Stream uintptr
	Event  uintptr
}

// IsZero reports {0, 0}: CPU data, or already synchronized.
func (s CudaSync) IsZero() bool { return s.Stream == 0 && s.Event == 0 }

// argName names the arguments that were set, for messages.
func (s CudaSync) argName() string {
	var names []string
	if s.Event != 0 {
		names = append(names, "cuda_event")
	}
	if s.Stream != 0 {
		names = append(names, "cuda_stream")
	}
	return strings.Join(names, " and ")
}

// onDevice reports whether a source tensor lives in device (or managed) memory.
func onDevice(t dlpack.Tensor) bool {
	return t.DeviceType == dlpack.DeviceCUDA || t.DeviceType == dlpack.DeviceCUDAManaged
}

// resolvePlacement decides where a write's column lives: the explicit device when given, else
// the source's device.
func resolvePlacement(t dlpack.Tensor, explicit column.Placement, name string) (column.Placement, error) {
	if explicit != (column.Placement{}) {
		switch {
		case explicit.DeviceType == dlpack.DeviceCPU && explicit.DeviceID == 0:
			return column.Host, nil
		case explicit.DeviceType == dlpack.DeviceCUDA && explicit.DeviceID >= 0:
			return explicit, nil
		}
		return column.Placement{}, status.Errorf(status.InvalidArgument,
			"device: (device_type %d, device_id %d) is not a placement: use cpu (1, 0) or cuda:N (2, N)",
			explicit.DeviceType, explicit.DeviceID)
	}
	switch t.DeviceType {
	case dlpack.DeviceCPU, dlpack.DeviceCUDAHost:
		return column.Host, nil
	case dlpack.DeviceCUDA, dlpack.DeviceCUDAManaged:
		if t.DeviceID < 0 {
			return column.Placement{}, status.Errorf(status.InvalidArgument, "%s: CUDA device id %d is negative", name, t.DeviceID)
		}
		return column.CUDA(t.DeviceID), nil
	}
	return column.Placement{}, status.Errorf(status.NotSupported, "%s: device type %d is not supported", name, t.DeviceType)
}

// checkPlacement rejects a write whose placement differs from the existing column's.
func checkPlacement(attr string, have, want column.Placement) error {
	if have == want {
		return nil
	}
	return status.Errorf(status.InvalidArgument,
		"attribute %q is stored on %s, but this write places it on %s: a column has one placement "+
			"(pass device=%q to copy the payload to the column's device, or delete the attribute first)",
		attr, have, want, have.String())
}

// newStorage makes the storage of a new column placed at p.
func newStorage(p column.Placement) (column.Storage, error) {
	if p.IsHost() {
		return column.HostStorage(), nil
	}
	dev, err := cuda.Get(int(p.DeviceID))
	if err != nil {
		return nil, err
	}
	return cuda.NewColumnStorage(dev)
}

// gpuFor returns the device a write's GPU work runs on: the source's device for device
// sources, else the placement's, else device 0 (a host write that only synchronizes). Its
// errors name the argument that asked for a GPU.
func gpuFor(t dlpack.Tensor, place column.Placement, sync CudaSync, name string) (*cuda.Device, error) {
	ordinal, arg, what := 0, sync.argName(), "CUDA synchronization"
	switch {
	case onDevice(t):
		ordinal, arg, what = int(t.DeviceID), name, "a CUDA tensor"
	case !place.IsHost():
		ordinal, arg, what = int(place.DeviceID), "device", place.String()
	}
	dev, err := cuda.Get(ordinal)
	if err == nil {
		return dev, nil
	}
	if status.CodeOf(err) == status.NotSupported {
		return nil, status.Errorf(status.NotSupported, "%s: %s needs a GPU: %s", arg, what, status.MessageOf(err))
	}
	return nil, status.Errorf(status.CodeOf(err), "%s: %s", arg, status.MessageOf(err))
}

// copyIn copies t's data into a new payload buffer placed at place, after waiting for the
// caller's CUDA work (sync). Host-to-host copies never touch the driver.
func copyIn(t dlpack.Tensor, place column.Placement, sync CudaSync, name string) (buffer.Buffer, error) {
	size := int(t.ByteSize())
	if !onDevice(t) && place.IsHost() && sync.IsZero() {
		return copyHostToHost(t, size)
	}
	dev, err := gpuFor(t, place, sync, name)
	if err != nil {
		return buffer.Buffer{}, err
	}
	if !sync.IsZero() {
		if err := dev.SyncForeign(sync.Stream, sync.Event); err != nil {
			return buffer.Buffer{}, err
		}
	}
	if !onDevice(t) && place.IsHost() {
		return copyHostToHost(t, size)
	}
	if onDevice(t) {
		if err := checkDeviceSource(dev, t, name); err != nil {
			return buffer.Buffer{}, err
		}
	}
	stream, err := dev.CopyStream()
	if err != nil {
		return buffer.Buffer{}, err
	}
	var dst buffer.Buffer
	if place.IsHost() {
		dst, err = buffer.New(size)
	} else {
		var target *cuda.Device
		if target, err = cuda.Get(int(place.DeviceID)); err == nil {
			dst, err = target.Alloc(size, false, nil)
		}
	}
	if err != nil {
		return buffer.Buffer{}, err
	}
	if err := queueCopyIn(stream, t, dst, place, size); err != nil {
		_ = stream.Sync()
		dst.Release()
		return buffer.Buffer{}, err
	}
	if err := stream.Sync(); err != nil {
		dst.Release()
		return buffer.Buffer{}, err
	}
	return dst, nil
}

func copyHostToHost(t dlpack.Tensor, size int) (buffer.Buffer, error) {
	payload, err := buffer.New(size)
	if err != nil {
		return buffer.Buffer{}, err
	}
	if err := t.CopyCompact(payload.Bytes()); err != nil {
		payload.Release()
		return buffer.Buffer{}, err
	}
	return payload, nil
}

// checkDeviceSource validates a device source: compact, and really memory of the device it
// claims (CUDA-managed memory is addressable everywhere and is not checked).
func checkDeviceSource(dev *cuda.Device, t dlpack.Tensor, name string) error {
	if !t.Compact() {
		return status.Errorf(status.NotSupported,
			"%s: a non-contiguous CUDA tensor (shape %v, strides %v) cannot be copied without a host round trip; make it contiguous first (e.g. tensor.contiguous())",
			name, t.Shape, t.Strides)
	}
	if t.DeviceType != dlpack.DeviceCUDA || t.ByteSize() == 0 {
		return nil
	}
	ord, err := dev.PointerDevice(uintptr(t.Data))
	if err != nil {
		return status.Errorf(status.InvalidArgument, "%s: %s", name, status.MessageOf(err))
	}
	if ord != int(t.DeviceID) {
		return status.Errorf(status.InvalidArgument, "%s: the tensor says cuda:%d but its data is memory of cuda:%d", name, t.DeviceID, ord)
	}
	return nil
}

// queueCopyIn queues the copy of t into dst on stream (the source's device, or the target's
// for host sources).
func queueCopyIn(stream *cuda.Stream, t dlpack.Tensor, dst buffer.Buffer, place column.Placement, size int) error {
	if size == 0 {
		return nil
	}
	src := uintptr(t.Data)
	switch {
	case !onDevice(t): // host (pageable or pinned) -> device
		if t.Compact() {
			return stream.CopyHtoD(uintptr(dst.Data()), t.Data, size)
		}
		staged, err := copyHostToHost(t, size)
		if err != nil {
			return err
		}
		defer staged.Release()
		if err := stream.CopyHtoD(uintptr(dst.Data()), staged.Data(), size); err != nil {
			return err
		}
		return stream.Sync() // the staging buffer is released on return
	case t.DeviceType == dlpack.DeviceCUDAManaged: // unified addressing handles any target
		return stream.CopyAny(uintptr(dst.Data()), src, size)
	case place.IsHost():
		return stream.CopyDtoH(dst.Data(), src, size)
	case int(place.DeviceID) == stream.Device().Ordinal:
		return stream.CopyDtoD(uintptr(dst.Data()), src, size)
	default:
		target, err := cuda.Get(int(place.DeviceID))
		if err != nil {
			return err
		}
		return stream.CopyPeer(uintptr(dst.Data()), target, src, stream.Device(), size)
	}
}
