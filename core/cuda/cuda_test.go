package cuda

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
	"github.com/ovstage-go/ovstage/internal/fakecuda"
)

// useFake loads the fake driver (core/cuda/testdata/fakecuda.c) for one test and checks, when
// the test ends, that every device buffer was freed and the driver saw no misuse.
func useFake(t *testing.T) *fakeCheck {
	t.Helper()
	lib, err := fakecuda.Build()
	if err != nil {
		t.Skipf("fake CUDA driver unavailable (needs a C compiler): %v", err)
	}
	ReloadForTesting(lib)
	require.NoError(t, Init())
	live := LiveBuffers()
	fc := &fakeCheck{misuse: FakeStat("misuse")}
	t.Cleanup(func() {
		assert.Equal(t, live, LiveBuffers(), "device buffers leaked")
		assert.Equal(t, fc.misuse, FakeStat("misuse"), "the fake driver saw misuse")
		assert.Equal(t, int64(0), FakeStat("depth"), "a context push was not popped")
		ReloadForTesting("")
	})
	return fc
}

type fakeCheck struct{ misuse int64 }

// realDriver is set by gpu_test.go (-tags gpu builds): device tests then also run against the
// machine's CUDA driver, as subtests named "GPU" (select them with -test.run '/GPU$').
var realDriver = false

// useReal loads the machine's CUDA driver for one test, or skips it with the reason.
func useReal(t *testing.T) {
	t.Helper()
	ReloadForTesting("")
	if ok, reason := Available(); !ok {
		t.Skipf("no usable GPU: %s", reason)
	}
	live := LiveBuffers()
	t.Cleanup(func() {
		assert.Equal(t, live, LiveBuffers(), "device buffers leaked")
		assert.Equal(t, int64(0), FreeFailures(), "the driver refused a free")
		ReloadForTesting("")
	})
}

// forEachDriver runs body against the fake driver, and against the real one in -tags gpu
// builds. fake tells body whether the fake's counters and traces are available.
func forEachDriver(t *testing.T, body func(t *testing.T, fake bool)) {
	t.Run("fake", func(t *testing.T) {
		useFake(t)
		body(t, true)
	})
	if realDriver {
		t.Run("GPU", func(t *testing.T) {
			useReal(t)
			body(t, false)
		})
	}
}

// second is device 1 when there is one, else device 0.
func second() int { return min(1, DeviceCount()-1) }

// expectMisuse accounts for n deliberate misuses (bogus handles passed on purpose).
func (f *fakeCheck) expectMisuse(n int64) { f.misuse += n }

func TestUnavailableWhenLibraryIsMissing(t *testing.T) {
	ReloadForTesting("libovstage-no-such-driver.so.1")
	t.Cleanup(func() { ReloadForTesting("") })
	ok, reason := Available()
	assert.False(t, ok)
	assert.Contains(t, reason, "GPU unavailable: libovstage-no-such-driver.so.1 not found (dlopen:")
	_, err := Get(0)
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "GPU unavailable")
	assert.Equal(t, 0, DeviceCount())
	assert.Equal(t, 0, DriverVersion())
}

func TestUnavailableWhenLibraryIsNotTheDriver(t *testing.T) {
	ReloadForTesting("libc.so.6")
	t.Cleanup(func() { ReloadForTesting("") })
	ok, reason := Available()
	assert.False(t, ok)
	assert.Equal(t, "GPU unavailable: libc.so.6 has no symbol cuInit (driver too old, or not the CUDA driver)", reason)
}

func TestDefaultLibraryOutcomeIsAValue(t *testing.T) {
	if os.Getenv(LibraryEnv) != "" {
		t.Skipf("%s is set", LibraryEnv)
	}
	ReloadForTesting("")
	ok, reason := Available()
	if ok {
		t.Skip("a CUDA driver and GPU are present; the GPU tests (-tags gpu) cover this machine")
	}
	assert.True(t, strings.HasPrefix(reason, "GPU unavailable: "), reason)
	// Either the driver is missing or it reports no usable device.
	assert.True(t, strings.Contains(reason, DefaultLibrary) || strings.Contains(reason, "cuInit") ||
		strings.Contains(reason, "no devices"), reason)
}

func TestFakeDevicesAndOrdinals(t *testing.T) {
	useFake(t)
	n := DeviceCount() // FAKECUDA_DEVICES, 2 by default
	assert.GreaterOrEqual(t, n, 1)
	assert.Equal(t, 12080, DriverVersion())
	d0, err := Get(0)
	require.NoError(t, err)
	again, err := Get(0)
	require.NoError(t, err)
	assert.Same(t, d0, again)
	assert.Equal(t, "Fake CUDA Device", d0.Name())
	assert.Equal(t, "cuda:0", d0.String())
	_, err = Get(n)
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Equal(t, fmt.Sprintf("CUDA device %d does not exist (this machine has %d: 0..%d)", n, n, n-1), status.MessageOf(err))
	_, err = Get(-1)
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
}

func hostBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}

func TestDeviceBufferRoundTripAndFree(t *testing.T) {
	forEachDriver(t, testDeviceBufferRoundTripAndFree)
}

func testDeviceBufferRoundTripAndFree(t *testing.T, fake bool) {
	d, err := Get(0)
	require.NoError(t, err)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Destroy()

	buf, err := d.Alloc(1000, true, s)
	require.NoError(t, err)
	assert.True(t, IsDeviceBuffer(buf))
	assert.False(t, buf.OnHost())
	assert.Equal(t, DeviceCUDA, buf.DeviceType())
	assert.Equal(t, int32(0), buf.DeviceID())
	assert.Equal(t, 1000, buf.Size())
	assert.Zero(t, uintptr(buf.Data())%256, "device payloads are 256-byte aligned")
	assert.Panics(t, func() { _ = buf.Bytes() }, "device memory is not host-addressable")
	ord, err := d.PointerDevice(uintptr(buf.Data()))
	require.NoError(t, err)
	assert.Equal(t, 0, ord)

	zero := make([]byte, 1000)
	out := make([]byte, 1000)
	require.NoError(t, s.CopyDtoH(unsafe.Pointer(&out[0]), uintptr(buf.Data()), 1000))
	require.NoError(t, s.Sync())
	assert.Equal(t, zero, out, "zero-filled on request")

	in := hostBytes(1000)
	require.NoError(t, s.CopyHtoD(uintptr(buf.Data()), unsafe.Pointer(&in[0]), 1000))
	other, err := d.Alloc(1000, false, s)
	require.NoError(t, err)
	require.NoError(t, s.CopyDtoD(uintptr(other.Data()), uintptr(buf.Data()), 1000))
	require.NoError(t, s.CopyDtoH(unsafe.Pointer(&out[0]), uintptr(other.Data()), 1000))
	require.NoError(t, s.Sync())
	assert.Equal(t, in, out)

	frees := FakeStat("free")
	live := LiveBuffers()
	buf.Release()
	other.Release()
	assert.Equal(t, live-2, LiveBuffers())
	if fake {
		assert.Equal(t, frees+2, FakeStat("free"))
	}
}

func TestCopyRunsScattersRows(t *testing.T) { forEachDriver(t, testCopyRunsScattersRows) }

func testCopyRunsScattersRows(t *testing.T, _ bool) {
	d, _ := Get(0)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Destroy()
	src, err := d.Alloc(16, false, s)
	require.NoError(t, err)
	defer src.Release()
	dst, err := d.Alloc(16, true, s)
	require.NoError(t, err)
	defer dst.Release()
	in := []byte("abcdefghijklmnop")
	require.NoError(t, s.CopyHtoD(uintptr(src.Data()), unsafe.Pointer(&in[0]), 16))
	// dst[0:4] = src[12:16], dst[8:16] = src[0:8]
	require.NoError(t, s.CopyRuns(dst, src, []int64{0, 12, 4, 8, 0, 8}))
	out := make([]byte, 16)
	require.NoError(t, s.CopyDtoH(unsafe.Pointer(&out[0]), uintptr(dst.Data()), 16))
	require.NoError(t, s.Sync())
	assert.Equal(t, append(append([]byte("mnop"), 0, 0, 0, 0), []byte("abcdefgh")...), out)
	assert.Error(t, s.CopyRuns(dst, src, []int64{0, 1}))
}

func TestReadyEventWaitAndRecord(t *testing.T) { forEachDriver(t, testReadyEventWaitAndRecord) }

func testReadyEventWaitAndRecord(t *testing.T, fake bool) {
	d, _ := Get(second())
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Destroy()
	buf, err := d.Alloc(64, false, s)
	require.NoError(t, err)
	defer buf.Release()
	ev := ReadyEvent(buf)
	require.NotZero(t, ev)
	records := FakeStat("records")
	require.NoError(t, s.MarkReady(buf))
	consumer, err := d.NewStream()
	require.NoError(t, err)
	defer consumer.Destroy()
	require.NoError(t, WaitReady(buf, consumer.Handle()))
	if fake {
		assert.Equal(t, records+1, FakeStat("records"))
		assert.Equal(t, int64(consumer.Handle()), FakeStat("last_wait_stream"))
		assert.Equal(t, int64(ev), FakeStat("last_wait_event"))
	}
	require.NoError(t, WaitReady(buf, StreamLegacy))
	require.NoError(t, WaitReady(buf, StreamPerThread))
	if fake {
		assert.Equal(t, int64(StreamPerThread), FakeStat("last_wait_stream"))
	}
	require.NoError(t, consumer.Sync())

	host, err := buffer.New(8)
	require.NoError(t, err)
	defer host.Release()
	waits := FakeStat("wait")
	assert.NoError(t, WaitReady(host, StreamLegacy), "host buffers need no wait")
	assert.Equal(t, waits, FakeStat("wait"))
	assert.Zero(t, ReadyEvent(host))
	assert.False(t, IsDeviceBuffer(host))
}

func TestSyncForeignHonoursStreamAndEvent(t *testing.T) {
	fc := useFake(t)
	testSyncForeign(t)
	d, _ := Get(0)
	theirs, err := d.NewStream()
	require.NoError(t, err)
	defer theirs.Destroy()
	buf, err := d.Alloc(8, false, theirs)
	require.NoError(t, err)
	defer buf.Release()
	ev := ReadyEvent(buf)

	require.NoError(t, d.SyncForeign(theirs.Handle(), ev))
	assert.Equal(t, int64(theirs.Handle()), FakeStat("last_sync_stream"))
	assert.Equal(t, int64(ev), FakeStat("last_sync_event"))
	syncs := FakeStat("stream_sync")
	require.NoError(t, d.SyncForeign(StreamLegacy, 0))
	assert.Equal(t, syncs+1, FakeStat("stream_sync"))
	assert.Equal(t, int64(StreamLegacy), FakeStat("last_sync_stream"))
	require.NoError(t, d.SyncForeign(0, 0))
	assert.Equal(t, syncs+1, FakeStat("stream_sync"), "{0,0} means already synchronized")

	// A bogus event handle: the fake rejects (and counts) it, we report the argument.
	fc.expectMisuse(1)
	bogus := make([]uint32, 4) // not an event: the fake's magic check fails
	err = d.SyncForeign(0, uintptr(unsafe.Pointer(&bogus[0])))
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "cuda_event 0x")
	assert.Contains(t, status.MessageOf(err), "cuEventSynchronize failed: CUDA_ERROR_INVALID_HANDLE")
}

// testSyncForeign is the driver-independent part: a caller's stream and event are waited for.
func testSyncForeign(t *testing.T) {
	d, _ := Get(0)
	theirs, err := d.NewStream()
	require.NoError(t, err)
	defer theirs.Destroy()
	buf, err := d.Alloc(8, false, theirs)
	require.NoError(t, err)
	defer buf.Release()
	require.NoError(t, theirs.MarkReady(buf))
	require.NoError(t, d.SyncForeign(theirs.Handle(), ReadyEvent(buf)))
	require.NoError(t, d.SyncForeign(StreamLegacy, 0))
	require.NoError(t, d.SyncForeign(StreamPerThread, 0))
}

func TestPeerCopyBetweenDevices(t *testing.T) { forEachDriver(t, testPeerCopyBetweenDevices) }

func testPeerCopyBetweenDevices(t *testing.T, _ bool) {
	if DeviceCount() < 2 {
		t.Skip("needs two devices")
	}
	d0, _ := Get(0)
	d1, _ := Get(1)
	s0, err := d0.NewStream()
	require.NoError(t, err)
	defer s0.Destroy()
	s1, err := d1.NewStream()
	require.NoError(t, err)
	defer s1.Destroy()
	a, err := d0.Alloc(32, false, s0)
	require.NoError(t, err)
	defer a.Release()
	b, err := d1.Alloc(32, true, s1)
	require.NoError(t, err)
	defer b.Release()
	in := hostBytes(32)
	require.NoError(t, s0.CopyHtoD(uintptr(a.Data()), unsafe.Pointer(&in[0]), 32))
	require.NoError(t, s1.CopyPeer(uintptr(b.Data()), d1, uintptr(a.Data()), d0, 32))
	out := make([]byte, 32)
	require.NoError(t, s1.CopyDtoH(unsafe.Pointer(&out[0]), uintptr(b.Data()), 32))
	require.NoError(t, s1.Sync())
	assert.Equal(t, in, out)
	ord, err := d0.PointerDevice(uintptr(b.Data()))
	require.NoError(t, err)
	assert.Equal(t, 1, ord)
}

func TestPointerDeviceRejectsHostMemory(t *testing.T) {
	forEachDriver(t, testPointerDeviceRejectsHostMemory)
}

func testPointerDeviceRejectsHostMemory(t *testing.T, _ bool) {
	d, _ := Get(0)
	host := make([]byte, 8)
	_, err := d.PointerDevice(uintptr(unsafe.Pointer(&host[0])))
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "is not CUDA device memory")
}

func TestAllocationFailureIsOutOfMemory(t *testing.T) {
	useFake(t)
	d, _ := Get(0)
	require.True(t, FakeFailAlloc(0))
	defer FakeFailAlloc(-1)
	_, err := d.Alloc(4096, false, nil)
	assert.Equal(t, status.OutOfMemory, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "allocating 4096 bytes on cuda:0 failed: CUDA_ERROR_OUT_OF_MEMORY")
	_, err = d.Alloc(-1, false, nil)
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
}

// The last reference may drop on any thread (DLPack deleters run on Python threads): the free
// must make the right context current there.
func TestBuffersFreeOnForeignThreads(t *testing.T) { forEachDriver(t, testBuffersFreeOnForeignThreads) }

func testBuffersFreeOnForeignThreads(t *testing.T, fake bool) {
	d0, _ := Get(0)
	d1, _ := Get(second())
	var bufs []buffer.Buffer
	for i := 0; i < 16; i++ {
		d := d0
		if i%2 == 1 {
			d = d1
		}
		b, err := d.Alloc(128, true, nil)
		require.NoError(t, err)
		bufs = append(bufs, b)
	}
	frees := FakeStat("free")
	var wg sync.WaitGroup
	for _, b := range bufs {
		wg.Add(1)
		go func(b buffer.Buffer) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.Retain()
			b.Release()
			b.Release()
		}(b)
	}
	wg.Wait()
	if fake {
		assert.Equal(t, frees+16, FakeStat("free"))
	}
	assert.Equal(t, int64(0), FreeFailures())
}

func TestCopyStreamIsSharedPerDevice(t *testing.T) {
	forEachDriver(t, func(t *testing.T, _ bool) { testCopyStreamIsSharedPerDevice(t) })
}

func testCopyStreamIsSharedPerDevice(t *testing.T) {
	d, _ := Get(0)
	s1, err := d.CopyStream()
	require.NoError(t, err)
	s2, err := d.CopyStream()
	require.NoError(t, err)
	assert.Same(t, s1, s2)
	assert.Same(t, d, s1.Device())
}

func TestColumnStorageSealsOnTheDevice(t *testing.T) {
	forEachDriver(t, testColumnStorageSealsOnTheDevice)
}

func testColumnStorageSealsOnTheDevice(t *testing.T, fake bool) {
	d, _ := Get(second())
	store, err := NewColumnStorage(d)
	require.NoError(t, err)
	f32 := column.Schema{DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}}
	c, err := column.NewPlaced(7, f32, store, Placer{})
	require.NoError(t, err)
	assert.Equal(t, d.String(), c.Placement().String())

	upload := func(vals ...float32) buffer.Buffer {
		b, err := d.Alloc(4*len(vals), false, store.stream)
		require.NoError(t, err)
		require.NoError(t, store.stream.CopyHtoD(uintptr(b.Data()), unsafe.Pointer(&vals[0]), 4*len(vals)))
		require.NoError(t, store.stream.Sync())
		return b
	}
	download := func(b buffer.Buffer, n int) []float32 {
		out := make([]float32, n)
		require.NoError(t, store.stream.CopyDtoH(unsafe.Pointer(&out[0]), uintptr(b.Data()), 4*n))
		require.NoError(t, store.stream.Sync())
		return out
	}
	prims := []uint64{1, 2, 3}
	c.Stage(prims, &column.Delta{Ordinal: 1, Seq: 1, Payload: upload(1, 2, 3)})
	require.NoError(t, c.Seal(1))
	current := column.Bounds{End: column.Current}
	_, _, snap, err := c.ReadSnapshot(prims, nil, current, func(uint64) string { return "p" })
	require.NoError(t, err)
	assert.True(t, IsDeviceBuffer(snap.Views[0].Buffer))
	assert.Equal(t, int32(d.Ordinal), snap.Views[0].Buffer.DeviceID())
	assert.Equal(t, []float32{1, 2, 3}, download(snap.Views[0].Buffer, 3))

	// a partial write while a reader holds the version: copy-on-write on the device
	records := FakeStat("records")
	c.Stage([]uint64{3, 1}, &column.Delta{Ordinal: 2, Seq: 2, Src: []int32{0, 0}, Payload: upload(9)})
	require.NoError(t, c.Seal(2))
	if fake {
		assert.Equal(t, records+1, FakeStat("records"), "the new version's ready event is recorded")
	}
	_, _, snap2, err := c.ReadSnapshot(prims, nil, current, func(uint64) string { return "p" })
	require.NoError(t, err)
	assert.NotEqual(t, snap.Views[0].Buffer.Data(), snap2.Views[0].Buffer.Data())
	assert.Equal(t, []float32{1, 2, 3}, download(snap.Views[0].Buffer, 3), "the reader's version is untouched")
	assert.Equal(t, []float32{9, 2, 9}, download(snap2.Views[0].Buffer, 3))
	snap.Release()
	snap2.Release()
	c.Close()
}

func TestSyncForeignOnEveryDriver(t *testing.T) {
	forEachDriver(t, func(t *testing.T, _ bool) { testSyncForeign(t) })
}

func TestColumnMovesToWherePlacedChangesPutIt(t *testing.T) {
	forEachDriver(t, testColumnMovesToWherePlacedChangesPutIt)
}

// A placed change elsewhere moves the column when it seals: the copy it leaves is merged into
// the new one, and readers of the old copy keep their version.
func testColumnMovesToWherePlacedChangesPutIt(t *testing.T, fake bool) {
	d, _ := Get(second())
	here := column.CUDA(int32(d.Ordinal))
	store, err := NewColumnStorage(d)
	require.NoError(t, err)
	f32 := column.Schema{DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}}
	c, err := column.NewPlaced(7, f32, store, Placer{})
	require.NoError(t, err)
	defer c.Close()
	host := func(vals ...float32) buffer.Buffer {
		b, err := buffer.New(4 * len(vals))
		require.NoError(t, err)
		copy(unsafe.Slice((*float32)(b.Data()), len(vals)), vals)
		return b
	}
	values := func(snap column.Snapshot, n int) []float32 {
		h, err := Move(snap.Views[0].Buffer.Retain(), column.Host)
		require.NoError(t, err)
		defer h.Release()
		return append([]float32(nil), unsafe.Slice((*float32)(h.Data()), n)...)
	}
	read := func() column.Snapshot {
		_, _, snap, err := c.ReadSnapshot([]uint64{1, 2, 3}, nil, column.Bounds{End: column.Current}, func(uint64) string { return "p" })
		require.NoError(t, err)
		return snap
	}
	dev, err := Move(host(1, 2, 3), here)
	require.NoError(t, err)
	c.Stage([]uint64{1, 2, 3}, &column.Delta{Ordinal: 1, Seq: 1, Payload: dev, Place: here})
	require.NoError(t, c.Seal(1))
	onDevice := read()
	assert.Equal(t, here, column.PlacementOf(onDevice.Views[0].Buffer))

	// a host-placed partial write moves the column to the host, keeping the other rows
	c.Stage([]uint64{2}, &column.Delta{Ordinal: 2, Seq: 2, Payload: host(20), Place: column.Host})
	require.NoError(t, c.Seal(2))
	assert.Equal(t, column.Host, c.Placement())
	onHost := read()
	assert.True(t, onHost.Views[0].Buffer.OnHost())
	assert.Equal(t, []float32{1, 20, 3}, values(onHost, 3))
	assert.Equal(t, []float32{1, 2, 3}, values(onDevice, 3), "the device reader's version is untouched")

	// an unplaced change (a map commit's host payload) follows the column; a device-placed one
	// in the same fold moves it back
	back, err := Move(host(30), here)
	require.NoError(t, err)
	c.Stage([]uint64{1}, &column.Delta{Ordinal: 3, Seq: 3, Payload: host(10)})
	c.Stage([]uint64{3}, &column.Delta{Ordinal: 3, Seq: 4, Payload: back, Place: here})
	require.NoError(t, c.Seal(3))
	assert.Equal(t, here, c.Placement())
	again := read()
	assert.Equal(t, here, column.PlacementOf(again.Views[0].Buffer))
	assert.Equal(t, []float32{10, 20, 30}, values(again, 3))
	for _, s := range []column.Snapshot{onDevice, onHost, again} {
		s.Release()
	}
	if fake {
		assert.Equal(t, int64(0), FakeStat("depth"), "every context push was popped")
	}
}
