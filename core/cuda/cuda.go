// Package cuda is a lazily loaded binding to the CUDA driver API. Nothing happens at import:
// the first GPU use dlopens libcuda.so.1 (or the library named by OVSTAGE_CUDA_LIBRARY),
// resolves the entry points, calls cuInit and counts devices. A machine without a driver or a
// GPU gets errors as values ("GPU unavailable: ..."), never an exit, so the extension imports
// and every CPU feature works there. No CUDA header or library is needed to build.
//
// Memory is allocated in each device's primary context (the one PyTorch and CuPy use). Every
// driver call goes through a C wrapper that pushes the context and pops it again within the
// same cgo call, so calls are correct on whatever OS thread the goroutine (or a Python thread
// running a DLPack deleter) happens to be on.
package cuda

/*
#cgo CFLAGS: -I${SRCDIR}/../buffer
#include <stdlib.h>
#include "driver.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
)

// LibraryEnv names the environment variable that overrides the driver library to load (a
// path or a soname). Tests point it at a fake driver; users normally leave it unset.
const LibraryEnv = "OVSTAGE_CUDA_LIBRARY"

// DefaultLibrary is the CUDA driver's soname.
const DefaultLibrary = "libcuda.so.1"

// DeviceCUDA is the DLPack device type of CUDA device memory.
const DeviceCUDA int32 = 2

// Stream handles with special meaning to the driver (and in DLPack / ovstage_cuda_sync_t).
const (
	StreamLegacy    uintptr = 1 // the legacy default stream
	StreamPerThread uintptr = 2 // the per-thread default stream
)

var state struct {
	mu      sync.Mutex
	done    bool
	err     error
	count   int
	version int
	devices map[int]*Device
	lib     string // set by ReloadForTesting
}

// unavailable builds the error every GPU entry point returns when there is no usable GPU.
func unavailable(format string, args ...any) error {
	return status.Errorf(status.NotSupported, "GPU unavailable: "+format, args...)
}

func driverError(r C.CUresult) string {
	return fmt.Sprintf("%s (%s)", C.GoString(C.ovs_cu_error_name(r)), C.GoString(C.ovs_cu_error_string(r)))
}

// callError reports a failed driver call; out-of-memory keeps its status.
func callError(r C.CUresult, what string, args ...any) error {
	code := status.Internal
	if r == 2 || r == C.OVS_CU_NO_MEMORY { // CUDA_ERROR_OUT_OF_MEMORY
		code = status.OutOfMemory
	}
	return status.Errorf(code, "%s failed: %s", fmt.Sprintf(what, args...), driverError(r))
}

// Init loads the driver and counts devices, once per process; later calls return the first
// outcome. It is safe for concurrent use.
func Init() error {
	state.mu.Lock()
	defer state.mu.Unlock()
	return initLocked()
}

func initLocked() error {
	if state.done {
		return state.err
	}
	state.done = true
	lib := state.lib
	if lib == "" {
		lib = os.Getenv(LibraryEnv)
	}
	if lib == "" {
		lib = DefaultLibrary
	}
	state.err = load(lib)
	return state.err
}

func load(lib string) error {
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	var reason [512]C.char
	if C.ovs_cu_load(clib, &reason[0], C.size_t(len(reason))) != 0 {
		return unavailable("%s", C.GoString(&reason[0]))
	}
	if r := C.ovs_cu_init(); r != 0 {
		return unavailable("cuInit failed: %s", driverError(r))
	}
	var version, count C.int
	if r := C.ovs_cu_driver_version(&version); r != 0 {
		return unavailable("cuDriverGetVersion failed: %s", driverError(r))
	}
	if r := C.ovs_cu_device_count(&count); r != 0 {
		return unavailable("cuDeviceGetCount failed: %s", driverError(r))
	}
	if count <= 0 {
		return unavailable("the CUDA driver reports no devices")
	}
	state.version, state.count = int(version), int(count)
	state.devices = map[int]*Device{}
	return nil
}

// Available reports whether a GPU can be used, and why not ("" when it can).
func Available() (bool, string) {
	if err := Init(); err != nil {
		return false, status.MessageOf(err)
	}
	return true, ""
}

// DeviceCount is the number of CUDA devices (0 when unavailable).
func DeviceCount() int {
	state.mu.Lock()
	defer state.mu.Unlock()
	if initLocked() != nil {
		return 0
	}
	return state.count
}

// DriverVersion is the driver's CUDA version (e.g. 12040 for 12.4; 0 when unavailable).
func DriverVersion() int {
	state.mu.Lock()
	defer state.mu.Unlock()
	if initLocked() != nil {
		return 0
	}
	return state.version
}

// Device is one GPU: its primary context and a stream for copy-ins. Devices live as long as
// the process (the primary context is retained once and never released).
type Device struct {
	Ordinal int
	ctx     uintptr
	name    string

	streamOnce sync.Once
	stream     *Stream
	streamErr  error
}

// Get returns device ordinal, retaining its primary context on first use. An ordinal outside
// the installed devices is INVALID_ARGUMENT; no usable GPU is NOT_SUPPORTED.
func Get(ordinal int) (*Device, error) {
	state.mu.Lock()
	defer state.mu.Unlock()
	if err := initLocked(); err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= state.count {
		return nil, status.Errorf(status.InvalidArgument, "CUDA device %d does not exist (this machine has %d: 0..%d)",
			ordinal, state.count, state.count-1)
	}
	if d := state.devices[ordinal]; d != nil {
		return d, nil
	}
	var ctx C.uintptr_t
	if r := C.ovs_cu_primary_ctx(C.int(ordinal), &ctx); r != 0 {
		return nil, callError(r, "retaining the primary context of cuda:%d", ordinal)
	}
	var name [256]C.char
	d := &Device{Ordinal: ordinal, ctx: uintptr(ctx)}
	if C.ovs_cu_device_name(C.int(ordinal), &name[0], C.int(len(name))) == 0 {
		d.name = C.GoString(&name[0])
	}
	state.devices[ordinal] = d
	return d, nil
}

// Name is the device's marketing name ("" if the driver did not say).
func (d *Device) Name() string { return d.name }

func (d *Device) String() string { return fmt.Sprintf("cuda:%d", d.Ordinal) }

// CopyStream is the device's shared stream for copy-ins (created on first use).
func (d *Device) CopyStream() (*Stream, error) {
	d.streamOnce.Do(func() { d.stream, d.streamErr = d.NewStream() })
	return d.stream, d.streamErr
}

// NewStream creates a blocking stream in the device's primary context: it orders after work on
// the legacy default stream, where DLPack producers publish pending work for stream=None.
func (d *Device) NewStream() (*Stream, error) {
	var h C.uintptr_t
	if r := C.ovs_cu_stream_create(C.uintptr_t(d.ctx), &h); r != 0 {
		return nil, callError(r, "cuStreamCreate on %s", d)
	}
	return &Stream{dev: d, h: uintptr(h)}, nil
}

// Alloc allocates a device buffer of size bytes holding one reference, zero-filled on s when
// zero is set. Its memory is freed (in the primary context, on any thread) with the last
// reference.
func (d *Device) Alloc(size int, zero bool, s *Stream) (buffer.Buffer, error) {
	if size < 0 {
		return buffer.Buffer{}, status.Errorf(status.InvalidArgument, "device buffer size %d is negative", size)
	}
	z, sh := C.int(0), C.uintptr_t(0)
	if zero {
		z = 1
	}
	if s != nil {
		sh = C.uintptr_t(s.h)
	}
	var r C.CUresult
	b := C.ovs_cu_buffer_new(C.uintptr_t(d.ctx), C.int(d.Ordinal), C.size_t(size), z, sh, &r)
	if b == nil {
		return buffer.Buffer{}, callError(r, "allocating %d bytes on %s", size, d)
	}
	return buffer.FromRaw(unsafe.Pointer(b)), nil
}

// PointerDevice is the ordinal of the device owning ptr (cuPointerGetAttribute).
func (d *Device) PointerDevice(ptr uintptr) (int, error) {
	var ord C.int
	if r := C.ovs_cu_pointer_device(C.uintptr_t(d.ctx), C.uintptr_t(ptr), &ord); r != 0 {
		return 0, status.Errorf(status.InvalidArgument, "address %#x is not CUDA device memory: %s", ptr, driverError(r))
	}
	return int(ord), nil
}

// SyncForeign blocks until a caller's CUDA work is done, per ovstage_cuda_sync_t: stream 0 =
// none, 1 = legacy default stream, 2 = per-thread default stream, else a CUstream; event 0 =
// none, else a CUevent. Both belong to the caller (their context may be any).
func (d *Device) SyncForeign(stream, event uintptr) error {
	if event != 0 {
		if r := C.ovs_cu_event_sync(C.uintptr_t(d.ctx), C.uintptr_t(event)); r != 0 {
			return status.Errorf(status.InvalidArgument, "cuda_event %#x: cuEventSynchronize failed: %s", event, driverError(r))
		}
	}
	if stream != 0 {
		if r := C.ovs_cu_stream_sync(C.uintptr_t(d.ctx), C.uintptr_t(stream)); r != 0 {
			return status.Errorf(status.InvalidArgument, "cuda_stream %#x: cuStreamSynchronize failed: %s", stream, driverError(r))
		}
	}
	return nil
}

// RecordForeign records a caller's CUevent on stream (0/1 legacy default, 2 per-thread
// default, else a CUstream of this device) in this device's context.
func (d *Device) RecordForeign(event, stream uintptr) error {
	if r := C.ovs_cu_event_record(C.uintptr_t(d.ctx), C.uintptr_t(event), C.uintptr_t(stream)); r != 0 {
		return status.Errorf(status.OpFailed, "cuEventRecord on %s (stream %#x) failed: %s", d, stream, driverError(r))
	}
	return nil
}

// Stream is a CUDA stream of one device.
type Stream struct {
	dev *Device
	h   uintptr
}

// Device is the stream's device.
func (s *Stream) Device() *Device { return s.dev }

// Handle is the CUstream value.
func (s *Stream) Handle() uintptr { return s.h }

// Sync blocks until everything queued on the stream is done.
func (s *Stream) Sync() error {
	if r := C.ovs_cu_stream_sync(C.uintptr_t(s.dev.ctx), C.uintptr_t(s.h)); r != 0 {
		return callError(r, "cuStreamSynchronize on %s", s.dev)
	}
	return nil
}

// Destroy releases the stream; queued work still completes.
func (s *Stream) Destroy() {
	if s != nil && s.h != 0 {
		C.ovs_cu_stream_destroy(C.uintptr_t(s.dev.ctx), C.uintptr_t(s.h))
		s.h = 0
	}
}

func (s *Stream) ctx() C.uintptr_t { return C.uintptr_t(s.dev.ctx) }

// CopyHtoD queues n bytes from host memory src (C or pinned memory) to device address dst.
func (s *Stream) CopyHtoD(dst uintptr, src unsafe.Pointer, n int) error {
	if r := C.ovs_cu_copy_htod(s.ctx(), C.uintptr_t(dst), src, C.size_t(n), C.uintptr_t(s.h)); r != 0 {
		return callError(r, "host-to-device copy of %d bytes to %s", n, s.dev)
	}
	return nil
}

// CopyDtoH queues n bytes from device address src to host memory dst.
func (s *Stream) CopyDtoH(dst unsafe.Pointer, src uintptr, n int) error {
	if r := C.ovs_cu_copy_dtoh(s.ctx(), dst, C.uintptr_t(src), C.size_t(n), C.uintptr_t(s.h)); r != 0 {
		return callError(r, "device-to-host copy of %d bytes from %s", n, s.dev)
	}
	return nil
}

// CopyDtoD queues n bytes between two addresses of the stream's device.
func (s *Stream) CopyDtoD(dst, src uintptr, n int) error {
	if r := C.ovs_cu_copy_dtod(s.ctx(), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.uintptr_t(s.h)); r != 0 {
		return callError(r, "device-to-device copy of %d bytes on %s", n, s.dev)
	}
	return nil
}

// CopyAny queues a unified-addressing copy (managed memory, or when the kinds are unknown).
func (s *Stream) CopyAny(dst, src uintptr, n int) error {
	if r := C.ovs_cu_copy_any(s.ctx(), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.uintptr_t(s.h)); r != 0 {
		return callError(r, "copy of %d bytes on %s", n, s.dev)
	}
	return nil
}

// CopyPeer queues n bytes from src on device from to dst on device to.
func (s *Stream) CopyPeer(dst uintptr, to *Device, src uintptr, from *Device, n int) error {
	if r := C.ovs_cu_copy_peer(s.ctx(), C.uintptr_t(dst), C.uintptr_t(to.ctx), C.uintptr_t(src),
		C.uintptr_t(from.ctx), C.size_t(n), C.uintptr_t(s.h)); r != 0 {
		return callError(r, "peer copy of %d bytes from %s to %s", n, from, to)
	}
	return nil
}

// CopyRuns queues device-to-device copies from src to dst: runs holds (dst offset, src
// offset, bytes) triples.
func (s *Stream) CopyRuns(dst, src buffer.Buffer, runs []int64) error {
	if len(runs) == 0 {
		return nil
	}
	if len(runs)%3 != 0 {
		return status.Errorf(status.Internal, "copy runs hold %d values, not triples", len(runs))
	}
	cr := (*C.int64_t)(C.malloc(C.size_t(8 * len(runs))))
	if cr == nil {
		return status.Errorf(status.OutOfMemory, "cannot allocate %d copy runs", len(runs)/3)
	}
	defer C.free(unsafe.Pointer(cr))
	copy(unsafe.Slice((*int64)(unsafe.Pointer(cr)), len(runs)), runs)
	if r := C.ovs_cu_copy_runs(s.ctx(), C.uintptr_t(uintptr(dst.Data())), C.uintptr_t(uintptr(src.Data())),
		cr, C.size_t(len(runs)/3), C.uintptr_t(s.h)); r != 0 {
		return callError(r, "device-to-device row copies (%d runs) on %s", len(runs)/3, s.dev)
	}
	return nil
}

// MarkReady records buf's ready event on s: consumers of buf wait for everything queued on s
// so far.
func (s *Stream) MarkReady(buf buffer.Buffer) error {
	d := devBuffer(buf)
	if d == nil {
		return nil
	}
	if r := C.ovs_cu_event_record(d.ctx, d.ready, C.uintptr_t(s.h)); r != 0 {
		return callError(r, "cuEventRecord on %s", s.dev)
	}
	return nil
}

func devBuffer(buf buffer.Buffer) *C.ovs_dev_buffer {
	raw := (*C.ovs_buffer)(buf.Raw())
	if C.ovs_cu_is_device_buffer(raw) == 0 {
		return nil
	}
	return (*C.ovs_dev_buffer)(unsafe.Pointer(raw))
}

// IsDeviceBuffer reports whether buf was allocated by this package.
func IsDeviceBuffer(buf buffer.Buffer) bool { return buf.Valid() && devBuffer(buf) != nil }

// ReadyEvent is buf's ready event (a CUevent; 0 for host buffers). It is recorded after the
// last write into buf and lives as long as buf.
func ReadyEvent(buf buffer.Buffer) uintptr {
	if d := devBuffer(buf); d != nil {
		return uintptr(d.ready)
	}
	return 0
}

// WaitReady makes stream (a consumer's CUstream, or StreamLegacy / StreamPerThread) wait on
// GPU for buf's ready event, without blocking the host. Host buffers need no wait.
func WaitReady(buf buffer.Buffer, stream uintptr) error {
	d := devBuffer(buf)
	if d == nil {
		return nil
	}
	if r := C.ovs_cu_stream_wait_event(d.ctx, C.uintptr_t(stream), d.ready); r != 0 {
		return status.Errorf(status.InvalidArgument, "stream %#x: cuStreamWaitEvent failed: %s", stream, driverError(r))
	}
	return nil
}

// LiveBuffers is the number of device buffers not yet freed in the process.
func LiveBuffers() int64 { return int64(C.ovs_cu_live_buffers()) }

// LiveBytes is the payload bytes of device buffers not yet freed.
func LiveBytes() int64 { return int64(C.ovs_cu_live_bytes()) }

// FreeFailures counts device frees the driver refused (0 in a healthy process).
func FreeFailures() int64 { return int64(C.ovs_cu_free_failures()) }
