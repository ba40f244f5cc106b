package core

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
	"github.com/ovstage-go/ovstage/internal/fakecuda"
)

// GPU placement logic on machines without a GPU: pure decisions, the CPU-only error paths, and
// the device paths against the fake driver (core/cuda/testdata/fakecuda.c), which checks
// context discipline, pointer kinds and frees. Real-GPU tests are in gpu_test.go (-tags gpu).

func TestResolvePlacement(t *testing.T) {
	cpu := tensor.Tensor{DeviceType: tensor.DeviceCPU}
	pinned := tensor.Tensor{DeviceType: tensor.DeviceCUDAHost, DeviceID: 1}
	gpu1 := tensor.Tensor{DeviceType: tensor.DeviceCUDA, DeviceID: 1}
	managed := tensor.Tensor{DeviceType: tensor.DeviceCUDAManaged, DeviceID: 2}
	cases := []struct {
		src      tensor.Tensor
		explicit column.Placement
		want     column.Placement
	}{
		{cpu, column.Placement{}, column.Host},
		{pinned, column.Placement{}, column.Host},
		{gpu1, column.Placement{}, column.CUDA(1)},
		{managed, column.Placement{}, column.CUDA(2)},
		{cpu, column.CUDA(0), column.CUDA(0)},
		{gpu1, column.Host, column.Host},
		{gpu1, column.CUDA(3), column.CUDA(3)},
	}
	for _, c := range cases {
		got, err := resolvePlacement(c.src, c.explicit, "tensors[0]")
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "source %d:%d, explicit %v", c.src.DeviceType, c.src.DeviceID, c.explicit)
	}
	_, err := resolvePlacement(cpu, column.Placement{DeviceType: 7}, "tensors[0]")
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "device: (device_type 7, device_id 0) is not a placement")
	_, err = resolvePlacement(cpu, column.Placement{DeviceType: tensor.DeviceCPU, DeviceID: 1}, "tensors[0]")
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	_, err = resolvePlacement(cpu, column.Placement{DeviceType: tensor.DeviceCUDA, DeviceID: -1}, "tensors[0]")
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	_, err = resolvePlacement(tensor.Tensor{DeviceType: tensor.DeviceCUDA, DeviceID: -2}, column.Placement{}, "tensors[0]")
	assert.Equal(t, "tensors[0]: CUDA device id -2 is negative", status.MessageOf(err))
	_, err = resolvePlacement(tensor.Tensor{DeviceType: 4}, column.Placement{}, "tensors[0]")
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
}

func TestCudaSyncArgumentNames(t *testing.T) {
	assert.True(t, CudaSync{}.IsZero())
	assert.Equal(t, "cuda_event", CudaSync{Event: 5}.argName())
	assert.Equal(t, "cuda_stream", CudaSync{Stream: 1}.argName())
	assert.Equal(t, "cuda_event and cuda_stream", CudaSync{Stream: 1, Event: 5}.argName())
}

// noGPU makes the driver unavailable for one test, whatever the machine has.
func noGPU(t *testing.T) {
	cuda.ReloadForTesting("libovstage-no-such-driver.so.1")
	t.Cleanup(func() { cuda.ReloadForTesting("") })
}

func TestWithoutGPUDeviceWritesFailWithTheReason(t *testing.T) {
	noGPU(t)
	f := newFixture(t)
	fake := []float32{1, 2, 3}
	src := f32Tensor(fake)
	src.DeviceType = tensor.DeviceCUDA
	_, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1, Tensors: []tensor.Tensor{src}})
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "tensors[0]: a CUDA tensor needs a GPU: GPU unavailable: libovstage-no-such-driver.so.1 not found")

	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor(fake)}, Sync: CudaSync{Stream: 1}})
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "cuda_stream: CUDA synchronization needs a GPU: GPU unavailable")

	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor(fake)}, Device: column.CUDA(0)})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err), "a CUDA placement is a bad argument without a driver")
	assert.Contains(t, status.MessageOf(err), "placement: cuda:0: cannot validate device_id without a usable CUDA driver: GPU unavailable")

	// host writes (explicitly placed on the CPU too) do not need the driver
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor(fake)}, Device: column.Host})
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got)
}

// gpuFixture is a stage on a CUDA driver (the fake, or the real one in -tags gpu builds), with
// helpers to put data on a device. fake says whether the fake's counters and traces exist.
type gpuFixture struct {
	*fixture
	fake   bool
	misuse int64
}

// realDriver is set by gpu_test.go (-tags gpu builds): device tests then also run against the
// machine's CUDA driver, as subtests named "GPU".
var realDriver = false

// forEachDriver runs body on a fresh stage over paths with the fake driver, and with the real
// one in -tags gpu builds.
func forEachDriver(t *testing.T, paths []string, body func(t *testing.T, g *gpuFixture)) {
	t.Run("fake", func(t *testing.T) { body(t, newGPUFixture(t, true, paths...)) })
	if realDriver {
		t.Run("GPU", func(t *testing.T) { body(t, newGPUFixture(t, false, paths...)) })
	}
}

func newGPUFixture(t *testing.T, fake bool, paths ...string) *gpuFixture {
	lib := ""
	if fake {
		var err error
		if lib, err = fakecuda.Build(); err != nil {
			t.Skipf("fake CUDA driver unavailable (needs a C compiler): %v", err)
		}
	}
	cuda.ReloadForTesting(lib)
	if ok, reason := cuda.Available(); !ok {
		cuda.ReloadForTesting("")
		t.Skipf("no usable GPU: %s", reason)
	}
	live := cuda.LiveBuffers()
	g := &gpuFixture{fake: fake, misuse: cuda.FakeStat("misuse")}
	t.Cleanup(func() {
		assert.Equal(t, live, cuda.LiveBuffers(), "device buffers leaked")
		assert.Equal(t, g.misuse, cuda.FakeStat("misuse"), "the fake driver saw misuse")
		assert.Equal(t, int64(0), cuda.FreeFailures(), "the driver refused a free")
		cuda.ReloadForTesting("")
	})
	// Registered after the driver cleanup, so the stage is destroyed (and frees) first.
	g.fixture = newFixture(t, paths...)
	return g
}

// second is device 1 when there is one, else device 0.
func second() int { return min(1, cuda.DeviceCount()-1) }

// upload puts vals in a new device buffer of the fake device and returns it with a CUDA
// tensor describing it (shape: len(vals) rows unless given).
func (g *gpuFixture) upload(ordinal int, vals []float32, shape ...int64) (buffer.Buffer, tensor.Tensor) {
	g.t.Helper()
	dev, err := cuda.Get(ordinal)
	require.NoError(g.t, err)
	s, err := dev.CopyStream()
	require.NoError(g.t, err)
	buf, err := dev.Alloc(4*len(vals), false, s)
	require.NoError(g.t, err)
	require.NoError(g.t, s.CopyHtoD(uintptr(buf.Data()), unsafe.Pointer(&vals[0]), 4*len(vals)))
	require.NoError(g.t, s.Sync())
	tn := f32Tensor(vals, shape...)
	tn.Data, tn.DeviceType, tn.DeviceID = buf.Data(), tensor.DeviceCUDA, int32(ordinal)
	return buf, tn
}

func download(t testing.TB, b buffer.Buffer, n int) []float32 {
	out := make([]float32, n)
	if b.OnHost() {
		copy(out, unsafe.Slice((*float32)(b.Data()), n))
		return out
	}
	dev, err := cuda.Get(int(b.DeviceID()))
	require.NoError(t, err)
	s, err := dev.CopyStream()
	require.NoError(t, err)
	require.NoError(t, s.CopyDtoH(unsafe.Pointer(&out[0]), uintptr(b.Data()), 4*n))
	require.NoError(t, s.Sync())
	return out
}

// sealedDeviceWrite writes vals from a new cuda:0 buffer at ordinal 1 and seals it; the caller
// releases the returned buffer.
func (g *gpuFixture) sealedDeviceWrite(vals []float32) buffer.Buffer {
	g.t.Helper()
	src, tn := g.upload(0, vals)
	require.NoError(g.t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{tn}}))
	g.seal(1)
	return src
}

func (g *gpuFixture) writeReq(req WriteRequest) error {
	req.Query, req.AttrToken = g.query, g.attr
	op, err := g.s.WriteAttribute(req)
	if err != nil {
		return err
	}
	res, err := g.s.WaitOp(op, TimeoutInfinite)
	require.NoError(g.t, err)
	if len(res.ErrorOpIDs) > 0 {
		return status.Errorf(status.OpFailed, "%s", g.s.LastOpError(op))
	}
	return nil
}

// readGroup returns the single group of a latest read (the caller releases it).
func (g *gpuFixture) readGroup() *Group {
	g.t.Helper()
	return g.placedGroup(column.Placement{}, Availability{}) // unplaced: ReadAttributes
}

func TestDeviceWriteStaysOnTheDevice(t *testing.T) {
	forEachDriver(t, nil, testDeviceWriteStaysOnTheDevice)
}

func testDeviceWriteStaysOnTheDevice(t *testing.T, g *gpuFixture) {
	src, tn := g.upload(0, []float32{1, 2, 3})
	htod, dtoh, dtod := cuda.FakeStat("htod"), cuda.FakeStat("dtoh"), cuda.FakeStat("dtod")
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{tn}}))
	if g.fake {
		assert.Equal(t, dtod+1, cuda.FakeStat("dtod"), "one device-to-device copy-in")
		assert.Equal(t, htod, cuda.FakeStat("htod"), "no host round trip")
		assert.Equal(t, dtoh, cuda.FakeStat("dtoh"), "no host round trip")
	}
	src.Release() // the payload was copied at enqueue: the caller may free its tensor
	g.seal(1)

	grp := g.readGroup()
	tv := grp.Tensors[0]
	assert.Equal(t, cuda.DeviceCUDA, tv.DeviceType)
	assert.Equal(t, int32(0), tv.DeviceID)
	assert.True(t, cuda.IsDeviceBuffer(tv.Buffer))
	assert.Equal(t, []float32{1, 2, 3}, download(t, tv.Buffer, 3))
	if g.fake {
		assert.Equal(t, htod, cuda.FakeStat("htod"), "write, seal and read never staged through the host")
	}

	// A reference to the group's buffer (what a DLPack export holds, abi.Export) outlives the
	// group and the stage; the device memory is freed with the last reference.
	held := tv.Buffer.Retain()
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
	g.s.Destroy()
	assert.Equal(t, []float32{1, 2, 3}, download(t, held, 3), "still valid after release and destroy")
	live := cuda.LiveBuffers()
	held.Release()
	assert.Equal(t, live-1, cuda.LiveBuffers(), "the last reference frees the device memory")
}

func TestExplicitDevicePlacements(t *testing.T) { forEachDriver(t, nil, testExplicitDevicePlacements) }

func testExplicitDevicePlacements(t *testing.T, g *gpuFixture) {
	target := int32(second())
	// host source, explicit cuda:1: uploaded once
	htod := cuda.FakeStat("htod")
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{f32Tensor([]float32{4, 5, 6})},
		Device: column.CUDA(target)}))
	if g.fake {
		assert.Equal(t, htod+1, cuda.FakeStat("htod"))
	}
	// device source on cuda:0 into the cuda:1 column: a peer copy
	src, tn := g.upload(0, []float32{7, 8, 9})
	defer src.Release()
	peer := cuda.FakeStat("peer")
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 2, Tensors: []tensor.Tensor{tn}, Device: column.CUDA(target)}))
	if g.fake && target != 0 {
		assert.Equal(t, peer+1, cuda.FakeStat("peer"))
	}
	g.seal(2)
	grp := g.readGroup()
	assert.Equal(t, target, grp.Tensors[0].DeviceID)
	assert.Equal(t, []float32{7, 8, 9}, download(t, grp.Tensors[0].Buffer, 3))
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
}

func TestDeviceSourceIntoHostColumn(t *testing.T) {
	forEachDriver(t, nil, testDeviceSourceIntoHostColumn)
}

func testDeviceSourceIntoHostColumn(t *testing.T, g *gpuFixture) {
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}}))
	src, tn := g.upload(second(), []float32{4, 5, 6})
	defer src.Release()

	// an unplaced write follows its source: the column's current copy moves to that device
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 2, Tensors: []tensor.Tensor{tn}}))
	g.seal(2)
	grp := g.readGroup()
	assert.Equal(t, int32(second()), grp.Tensors[0].DeviceID)
	assert.Equal(t, []float32{4, 5, 6}, download(t, grp.Tensors[0].Buffer, 3))
	require.NoError(t, g.s.ReleaseGroup(grp.ID))

	// an explicit host placement copies the device payload to the host
	dtoh := cuda.FakeStat("dtoh")
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 3, Tensors: []tensor.Tensor{tn}, Device: column.Host}))
	if g.fake {
		assert.Equal(t, dtoh+1, cuda.FakeStat("dtoh"))
	}
	g.seal(3)
	got, err := g.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{4, 5, 6}}, got)
}

func TestWritesPlacedElsewhereRefreshTheColumn(t *testing.T) {
	forEachDriver(t, nil, testWritesPlacedElsewhereRefreshTheColumn)
}

// A placement picks which copy becomes current, never an error: device, host and device again,
// partial writes merged with what the previous copy held.
func testWritesPlacedElsewhereRefreshTheColumn(t *testing.T, g *gpuFixture) {
	src, tn := g.upload(0, []float32{1, 2, 3})
	defer src.Release()
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{tn}}))
	// a host write into the cuda:0 column, unsealed behind the device one: accepted
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 2, Tensors: []tensor.Tensor{f32Tensor([]float32{4, 5, 6})}}))
	g.seal(2)
	grp := g.readGroup()
	assert.True(t, grp.Tensors[0].Buffer.OnHost(), "the latest write put the current copy on the host")
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
	got, err := g.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{4, 5, 6}}, got)
	// a partial write placed on the second device keeps the other rows
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 3, Tensors: []tensor.Tensor{f32Tensor([]float32{9})}, Count: 1,
		Device: column.CUDA(int32(second()))}))
	g.seal(3)
	grp = g.readGroup()
	assert.Equal(t, int32(second()), grp.Tensors[0].DeviceID)
	assert.Equal(t, []float32{9, 5, 6}, download(t, grp.Tensors[0].Buffer, 3))
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
}

func TestDeviceSourceValidation(t *testing.T) { forEachDriver(t, nil, testDeviceSourceValidation) }

func testDeviceSourceValidation(t *testing.T, g *gpuFixture) {
	src, tn := g.upload(second(), []float32{1, 2, 3})
	defer src.Release()

	bad := tn
	bad.DeviceID = 64
	err := g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{bad}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "tensors[0]: CUDA device 64 does not exist (this machine has ")

	if cuda.DeviceCount() > 1 {
		lying := tn
		lying.DeviceID = 0
		err = g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{lying}})
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
		assert.Equal(t, "tensors[0]: the tensor says cuda:0 but its data is memory of cuda:1", status.MessageOf(err))
	}

	host := []float32{1, 2, 3}
	notDevice := f32Tensor(host)
	notDevice.DeviceType = tensor.DeviceCUDA
	err = g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{notDevice}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "tensors[0]: address 0x")
	assert.Contains(t, status.MessageOf(err), "is not CUDA device memory")

}

func TestStridedDeviceSources(t *testing.T) { forEachDriver(t, nil, testStridedDeviceSources) }

func TestDeviceSourceOfTooManyPieces(t *testing.T) {
	paths := make([]string, 300)
	for i := range paths {
		paths[i] = fmt.Sprintf("/World/P%d", i)
	}
	forEachDriver(t, paths, func(t *testing.T, g *gpuFixture) {
		src, tn := g.upload(0, []float32{1, 2, 3})
		defer src.Release()
		// a transposed view of 300 x 255 values: one driver copy per value would be too many
		// (refused before any copy, so the tensor's extent is never read)
		tn.Shape, tn.Strides = []int64{300, 255}, []int64{1, 300}
		err := g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{tn}})
		assert.Equal(t, status.NotSupported, status.CodeOf(err))
		assert.Equal(t, fmt.Sprintf("tensors[0]: a non-contiguous CUDA tensor (shape [300 255], strides [1 300]) "+
			"would take more than %d copies, one per contiguous piece; make it contiguous first (e.g. tensor.contiguous())",
			maxDeviceSourceRuns), status.MessageOf(err))
	})
}

// A strided CUDA source is copied one contiguous piece at a time (tensor.CompactRuns), with no
// host round trip, into a column on its own device, on another one and on the host.
func testStridedDeviceSources(t *testing.T, g *gpuFixture) {
	src, base := g.upload(0, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	defer src.Release()
	view := func(first int, shape, strides []int64) tensor.Tensor {
		tn := base
		tn.Data = unsafe.Add(base.Data, 4*first)
		tn.Shape, tn.Strides = shape, strides
		return tn
	}
	cases := []struct {
		name   string
		tn     tensor.Tensor
		want   []float32
		pieces int64
	}{
		{"every fourth value", view(1, []int64{3}, []int64{4}), []float32{1, 5, 9}, 3},
		{"reversed", view(2, []int64{3}, []int64{-1}), []float32{2, 1, 0}, 3},
		{"every other pair", view(0, []int64{3, 2}, []int64{4, 1}), []float32{0, 1, 4, 5, 8, 9}, 3},
		{"transposed", view(0, []int64{3, 2}, []int64{1, 3}), []float32{0, 3, 1, 4, 2, 5}, 6},
	}
	places := map[string]column.Placement{"cuda:0": column.CUDA(0), "other device": column.CUDA(int32(second())), "host": column.Host}
	ordinal := uint64(0)
	for _, c := range cases {
		attr, err := g.s.Dictionary().InternToken("strided " + c.name) // one dtype per column
		require.NoError(t, err)
		g.attr = attr
		for where, place := range places {
			ordinal++
			before := map[string]int64{}
			for _, stat := range []string{"htod", "dtoh", "dtod", "peer"} {
				before[stat] = cuda.FakeStat(stat)
			}
			require.NoError(t, g.writeReq(WriteRequest{Ordinal: ordinal, Tensors: []tensor.Tensor{c.tn}, Device: place}), "%s into %s", c.name, where)
			if g.fake {
				want := map[string]int64{"htod": 0, "dtoh": 0, "dtod": 0, "peer": 0}
				switch {
				case place.IsHost():
					want["dtoh"] = c.pieces
				case place.DeviceID == 0:
					want["dtod"] = c.pieces
				default:
					want["peer"] = c.pieces
				}
				for stat, n := range want {
					assert.Equal(t, before[stat]+n, cuda.FakeStat(stat), "%s into %s: %s copies", c.name, where, stat)
				}
			}
			g.seal(ordinal)
			grp := g.readGroup()
			assert.Equal(t, c.want, download(t, grp.Tensors[0].Buffer, len(c.want)), "%s into %s", c.name, where)
			require.NoError(t, g.s.ReleaseGroup(grp.ID))
		}
	}
}

func TestCudaSyncIsHonouredBeforeTheCopy(t *testing.T) {
	g := newGPUFixture(t, true)
	dev, err := cuda.Get(0)
	require.NoError(t, err)
	theirs, err := dev.NewStream()
	require.NoError(t, err)
	defer theirs.Destroy()
	src, tn := g.upload(0, []float32{1, 2, 3})
	defer src.Release()
	event := cuda.ReadyEvent(src)
	copyStream, err := dev.CopyStream()
	require.NoError(t, err)
	cuda.FakeTrace()
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{tn},
		Sync: CudaSync{Stream: theirs.Handle(), Event: event}}))
	// the caller's event and stream first, then the copy, then our stream's completion
	assert.Equal(t, fmt.Sprintf("event_sync %#x;stream_sync %#x;dtod %#x;stream_sync %#x;",
		event, theirs.Handle(), copyStream.Handle(), copyStream.Handle()), cuda.FakeTrace())

	// With a GPU present, a host payload may be the target of the caller's async copies: the
	// sync is honoured for host sources too.
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 2, Tensors: []tensor.Tensor{f32Tensor([]float32{4, 5, 6})},
		Sync: CudaSync{Stream: cuda.StreamLegacy}, Device: column.CUDA(0)}))
	assert.Equal(t, fmt.Sprintf("stream_sync 0x1;htod %#x;stream_sync %#x;", copyStream.Handle(), copyStream.Handle()),
		cuda.FakeTrace())
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 3, Tensors: []tensor.Tensor{f32Tensor([]float32{4, 5, 6})},
		Sync: CudaSync{Event: event}, Device: column.CUDA(0)}))
	assert.True(t, strings.HasPrefix(cuda.FakeTrace(), fmt.Sprintf("event_sync %#x;htod", event)))
}

func TestPartialDeviceWritesCopyOnWrite(t *testing.T) {
	forEachDriver(t, []string{"/A", "/B", "/C", "/D"}, testPartialDeviceWritesCopyOnWrite)
}

func testPartialDeviceWritesCopyOnWrite(t *testing.T, g *gpuFixture) {
	src, tn := g.upload(0, []float32{1, 2, 3, 4})
	defer src.Release()
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{tn}}))
	g.seal(1)
	held := g.readGroup()

	// index map: prims A,B,C take payload rows 1,1,0; mask: only D
	src2, t2 := g.upload(0, []float32{10, 20})
	defer src2.Release()
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 2, Tensors: []tensor.Tensor{t2}, Count: 3,
		IndexMap: []uint32{1, 1, 0}, HasIndexMap: true}))
	src3, t3 := g.upload(0, []float32{0, 0, 0, 99})
	defer src3.Release()
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 2, Tensors: []tensor.Tensor{t3}, Count: 4,
		Mask: []uint64{0b1000}, HasMask: true}))
	g.seal(2)
	grp := g.readGroup()
	assert.Equal(t, []float32{20, 20, 10, 99}, download(t, grp.Tensors[0].Buffer, 4))
	assert.Equal(t, []float32{1, 2, 3, 4}, download(t, held.Tensors[0].Buffer, 4), "the held version never changes")
	assert.NotEqual(t, held.Tensors[0].Buffer.Data(), grp.Tensors[0].Buffer.Data())
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
	require.NoError(t, g.s.ReleaseGroup(held.ID))
}

func TestManagedSourceUsesUnifiedCopy(t *testing.T) {
	g := newGPUFixture(t, true)
	vals := []float32{3, 2, 1}
	managed := f32Tensor(vals)
	managed.DeviceType, managed.DeviceID = tensor.DeviceCUDAManaged, int32(second())
	anyCopies := cuda.FakeStat("any")
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{managed}}))
	assert.Equal(t, anyCopies+1, cuda.FakeStat("any"))
	g.seal(1)
	grp := g.readGroup()
	assert.Equal(t, int32(second()), grp.Tensors[0].DeviceID)
	assert.Equal(t, []float32{3, 2, 1}, download(t, grp.Tensors[0].Buffer, 3))
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
}
