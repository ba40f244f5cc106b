package core

// Placement of columns (host or one CUDA device) and the copy-in of write payloads.
//
// Rules (README "GPU-resident attributes"):
//   - A write's placement is its explicit device (WriteRequest.Device: Python placement= or
//     device=, the C placement table) when given, else the source tensor's device: CPU and
//     CUDA-host (pinned) tensors place on the host, CUDA and CUDA-managed tensors on their
//     device. The payload is copied there (host->device, device->host, between GPUs).
//   - A placement picks which copy of the column becomes current; it never binds the column.
//     The column keeps one current copy and moves to the placement of the latest placed write
//     when that write seals, so a later write placed elsewhere is an ordinary update.
//   - A placed read serves each column's copy when it is current on the requested device, and
//     otherwise a copy made there for the read, owned by its groups (availability.go).
//   - The payload is copied at enqueue, as for host writes, so the caller may reuse its tensor
//     once the call returns: after waiting for the caller's cuda_event / cuda_stream, a CUDA
//     source is copied device-to-device (no host round trip) on the device's copy stream,
//     which is synchronized before returning.
//   - Writes without a placement of their own (map commits, clones: host payloads) go to the
//     column they target wherever it is; the column moves the payload in when it seals.

import (
	"fmt"
	"strings"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
	"github.com/ovstage-go/ovstage/internal/cptr"
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
func onDevice(t tensor.Tensor) bool {
	return t.DeviceType == tensor.DeviceCUDA || t.DeviceType == tensor.DeviceCUDAManaged
}

// explicitPlacement normalizes a requested device (a write's device, a read's or map's
// placement): zero (none given), the host (cpu:0) or cuda:N. CUDA-managed memory is
// addressable everywhere: its copy lives on the named device. arg names the argument.
func explicitPlacement(device column.Placement, arg string) (column.Placement, error) {
	switch {
	case device == (column.Placement{}):
		return device, nil
	case device.DeviceType == tensor.DeviceCPU && device.DeviceID == 0:
		return column.Host, nil
	case (device.DeviceType == tensor.DeviceCUDA || device.DeviceType == tensor.DeviceCUDAManaged) && device.DeviceID >= 0:
		return column.CUDA(device.DeviceID), nil
	}
	return column.Placement{}, status.Errorf(status.InvalidArgument,
		"%s: (device_type %d, device_id %d) is not a placement: use cpu (1, 0) or cuda:N (2, N)",
		arg, device.DeviceType, device.DeviceID)
}

// resolvePlacement decides where a write's column lives: the explicit device when given, else
// the source's device.
func resolvePlacement(t tensor.Tensor, explicit column.Placement, name string) (column.Placement, error) {
	if explicit != (column.Placement{}) {
		return explicitPlacement(explicit, "device")
	}
	switch t.DeviceType {
	case tensor.DeviceCPU, tensor.DeviceCUDAHost:
		return column.Host, nil
	case tensor.DeviceCUDA, tensor.DeviceCUDAManaged:
		if t.DeviceID < 0 {
			return column.Placement{}, status.Errorf(status.InvalidArgument, "%s: CUDA device id %d is negative", name, t.DeviceID)
		}
		return column.CUDA(t.DeviceID), nil
	}
	return column.Placement{}, status.Errorf(status.NotSupported, "%s: device type %d is not supported", name, t.DeviceType)
}

// newPlacedColumn creates the column a write needs, placed where the write is (host for
// writes without a placement). Later placed writes move it (column.Placer).
func newPlacedColumn(w *preparedWrite) (*column.Column, error) {
	place := w.place
	if place == (column.Placement{}) {
		place = column.Host
	}
	store, err := cuda.Placer{}.Open(place)
	if err != nil {
		return nil, err
	}
	return column.NewPlaced(w.attr, w.schema, store, cuda.Placer{})
}

// gpuFor returns the device a write's GPU work runs on: the source's device for device
// sources, else the placement's, else device 0 (a host write that only synchronizes). Its
// errors name the argument that asked for a GPU (label prefixes a batch entry's arguments;
// name is the tensor's).
func gpuFor(t tensor.Tensor, place column.Placement, sync CudaSync, label, name string) (*cuda.Device, error) {
	ordinal, arg, what := 0, label+sync.argName(), "CUDA synchronization"
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
	if status.CodeOf(err) == status.NotSupported && arg == "device" {
		// a placement is a request argument: without a usable driver its device_id cannot be
		// validated
		return nil, placementNeedsGPU(place, err)
	}
	if status.CodeOf(err) == status.NotSupported {
		return nil, status.Errorf(status.NotSupported, "%s: %s needs a GPU: %s", arg, what, status.MessageOf(err))
	}
	return nil, status.Errorf(status.CodeOf(err), "%s: %s", arg, status.MessageOf(err))
}

// placementNeedsGPU is the error of a CUDA placement on a machine whose CUDA driver is not
// usable (err says why).
func placementNeedsGPU(place column.Placement, err error) error {
	return status.Errorf(status.InvalidArgument,
		"placement: %s: cannot validate device_id without a usable CUDA driver: %s", place, status.MessageOf(err))
}

// copyIn copies a write's tensors back to back into one payload buffer placed at place.
// Host-to-host copies never touch the driver. Use: beginCopyIn, alloc, copy per tensor, then
// finish (or abort on failure).
type copyIn struct {
	place   column.Placement
	dst     buffer.Buffer
	gpu     bool                 // some copy involves a device
	streams map[int]*cuda.Stream // copy streams used, by device ordinal (synced by finish)
}

// beginCopyIn checks that the GPU the tensors or the placement need is usable and waits for
// the caller's CUDA work (sync) before anything is read.
func beginCopyIn(tensors []tensor.Tensor, place column.Placement, sync CudaSync, label string) (*copyIn, error) {
	cp := &copyIn{place: place, streams: map[int]*cuda.Stream{}}
	cp.gpu = !place.IsHost() || !sync.IsZero()
	for i, t := range tensors {
		if onDevice(t) {
			cp.gpu = true
			// every device a source names must exist (INVALID_ARGUMENT otherwise)
			if _, err := gpuFor(t, place, sync, label, fmt.Sprintf("%stensors[%d]", label, i)); err != nil {
				return nil, err
			}
		}
	}
	if !cp.gpu {
		return cp, nil
	}
	first := tensor.Tensor{DeviceType: tensor.DeviceCPU}
	if len(tensors) > 0 {
		first = tensors[0]
	}
	dev, err := gpuFor(first, place, sync, label, label+"tensors[0]")
	if err != nil {
		return nil, err
	}
	if !sync.IsZero() {
		if err := dev.SyncForeign(sync.Stream, sync.Event); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// alloc allocates the payload buffer (size bytes) in the placement.
func (cp *copyIn) alloc(size int) error {
	var err error
	if cp.place.IsHost() {
		cp.dst, err = buffer.New(size)
		return err
	}
	dev, err := cuda.Get(int(cp.place.DeviceID))
	if err != nil {
		return err
	}
	cp.dst, err = dev.Alloc(size, false, nil)
	return err
}

// copy copies t's data to byte offset off of the payload.
func (cp *copyIn) copy(t tensor.Tensor, off int64, name string) error {
	size := int(t.ByteSize())
	if !onDevice(t) && cp.place.IsHost() {
		return t.CopyCompact(cp.dst.Bytes()[off : off+int64(size)])
	}
	ordinal := int(cp.place.DeviceID)
	if onDevice(t) {
		ordinal = int(t.DeviceID)
	}
	dev, err := cuda.Get(ordinal)
	if err != nil {
		return err
	}
	var runs []tensor.Run
	if onDevice(t) {
		if runs, err = checkDeviceSource(dev, t, name); err != nil {
			return err
		}
	}
	stream := cp.streams[ordinal]
	if stream == nil {
		if stream, err = dev.CopyStream(); err != nil {
			return err
		}
		cp.streams[ordinal] = stream
	}
	return queueCopyIn(stream, t, runs, uintptr(cp.dst.Data())+uintptr(off), cp.place, size)
}

// finish waits for the queued copies and returns the payload (one reference).
func (cp *copyIn) finish() (buffer.Buffer, error) {
	for _, s := range cp.streams {
		if err := s.Sync(); err != nil {
			cp.abort()
			return buffer.Buffer{}, err
		}
	}
	return cp.dst, nil
}

// abort waits for queued copies (they may still write the payload) and drops the payload.
func (cp *copyIn) abort() {
	for _, s := range cp.streams {
		_ = s.Sync()
	}
	if cp.dst.Valid() {
		cp.dst.Release()
	}
}

func copyHostToHost(t tensor.Tensor, size int) (buffer.Buffer, error) {
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

// maxDeviceSourceRuns bounds the copies one strided device source may take: a CUDA copy moves
// contiguous bytes, so such a source is copied one contiguous piece at a time
// (tensor.CompactRuns: a row of every other row is one piece, a transposed matrix one piece
// per element). Beyond it the caller is asked for a contiguous tensor.
const maxDeviceSourceRuns = 1 << 16

// checkDeviceSource validates a device source: really memory of the device it claims
// (CUDA-managed memory is addressable everywhere and is not checked), and, when strided, not
// more than maxDeviceSourceRuns pieces. It returns the pieces to copy (nil when empty).
func checkDeviceSource(dev *cuda.Device, t tensor.Tensor, name string) ([]tensor.Run, error) {
	runs, ok := t.CompactRuns(maxDeviceSourceRuns)
	if !ok {
		return nil, status.Errorf(status.NotSupported,
			"%s: a non-contiguous CUDA tensor (shape %v, strides %v) would take more than %d copies, one per contiguous piece; make it contiguous first (e.g. tensor.contiguous())",
			name, t.Shape, t.Strides, maxDeviceSourceRuns)
	}
	if t.DeviceType != tensor.DeviceCUDA || t.ByteSize() == 0 {
		return runs, nil
	}
	ord, err := dev.PointerDevice(uintptr(t.Data))
	if err != nil {
		return nil, status.Errorf(status.InvalidArgument, "%s: %s", name, status.MessageOf(err))
	}
	if ord != int(t.DeviceID) {
		return nil, status.Errorf(status.InvalidArgument, "%s: the tensor says cuda:%d but its data is memory of cuda:%d", name, t.DeviceID, ord)
	}
	return runs, nil
}

// queueCopyIn queues the copy of t to address dst (in the placement) on stream (the source's
// device, or the target's for host sources). A device source is copied piece by piece (runs,
// from checkDeviceSource); a strided host one is made compact on the host first.
func queueCopyIn(stream *cuda.Stream, t tensor.Tensor, runs []tensor.Run, dst uintptr, place column.Placement, size int) error {
	if size == 0 {
		return nil
	}
	if !onDevice(t) { // host (pageable or pinned) -> device
		if t.Compact() {
			return stream.CopyHtoD(dst, t.Data, size)
		}
		staged, err := copyHostToHost(t, size)
		if err != nil {
			return err
		}
		defer staged.Release()
		if err := stream.CopyHtoD(dst, staged.Data(), size); err != nil {
			return err
		}
		return stream.Sync() // the staging buffer is released on return
	}
	for _, r := range runs {
		src := uintptr(int64(uintptr(t.Data)) + r.Src)
		if err := copyDevicePiece(stream, t, dst+uintptr(r.Dst), src, place, int(r.Len)); err != nil {
			return err
		}
	}
	return nil
}

// copyDevicePiece queues the copy of size contiguous bytes of device source t, at src, to dst.
func copyDevicePiece(stream *cuda.Stream, t tensor.Tensor, dst, src uintptr, place column.Placement, size int) error {
	switch {
	case t.DeviceType == tensor.DeviceCUDAManaged: // unified addressing handles any target
		return stream.CopyAny(dst, src, size)
	case place.IsHost():
		return stream.CopyDtoH(cptr.At(dst), src, size)
	case int(place.DeviceID) == stream.Device().Ordinal:
		return stream.CopyDtoD(dst, src, size)
	default:
		target, err := cuda.Get(int(place.DeviceID))
		if err != nil {
			return err
		}
		return stream.CopyPeer(dst, target, src, stream.Device(), size)
	}
}

// needsGPU reports whether a write's payload copy involves the driver: a device source, a
// device placement, or a CUDA sync descriptor to honour.
func needsGPU(tensors []tensor.Tensor, place column.Placement, sync CudaSync) bool {
	if !place.IsHost() || !sync.IsZero() {
		return true
	}
	for _, t := range tensors {
		if onDevice(t) {
			return true
		}
	}
	return false
}

// copyPayloadPlaced is copyPayload for writes that involve a GPU: it waits for the caller's
// CUDA work (sync), then copies every tensor back to back into one buffer placed at w.place,
// before the enqueue returns (never deferred: the caller may reuse its tensor at once).
func (w *preparedWrite) copyPayloadPlaced(tensors []tensor.Tensor, sync CudaSync) error {
	cp, err := beginCopyIn(tensors, w.place, sync, w.label)
	if err != nil {
		return err
	}
	if err := cp.alloc(int(w.size)); err != nil {
		return err
	}
	off := int64(0)
	for i, t := range tensors {
		if err := cp.copy(t, off, fmt.Sprintf("%stensors[%d]", w.label, i)); err != nil {
			cp.abort()
			return err
		}
		if w.schema.IsArray && !w.packed {
			w.rowOff = append(w.rowOff, off)
			w.rowLen = append(w.rowLen, t.NumElements())
		}
		off += t.ByteSize()
	}
	w.payload, err = cp.finish()
	return err
}
