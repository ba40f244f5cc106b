package core

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// placedGroup returns the single group of a latest read placed on device (released by the
// caller).
func (g *gpuFixture) placedGroup(device column.Placement, avail Availability) *Group {
	g.t.Helper()
	h, op, err := g.s.ReadAttributesPlaced(g.query, []uint64{g.attr}, OrdinalRange{End: 100}, device, avail)
	require.NoError(g.t, err)
	g.wait(op)
	grp, err := g.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(g.t, err)
	_, err = g.s.ReleaseRead(h)
	require.NoError(g.t, err)
	return grp
}

func TestPlacedReadServesTheCurrentCopyOrCopies(t *testing.T) {
	forEachDriver(t, nil, testPlacedReadServesTheCurrentCopyOrCopies)
}

func testPlacedReadServesTheCurrentCopyOrCopies(t *testing.T, g *gpuFixture) {
	src := g.sealedDeviceWrite([]float32{1, 2, 3})
	defer src.Release()
	current := g.readGroup()
	defer func() { require.NoError(t, g.s.ReleaseGroup(current.ID)) }()

	// on the device that is current: the column's own buffer, no copy
	copies := cuda.FakeStat("copy")
	grp := g.placedGroup(column.CUDA(0), Availability{})
	assert.Equal(t, current.Tensors[0].Buffer.Data(), grp.Tensors[0].Buffer.Data(), "served zero-copy")
	if g.fake {
		assert.Equal(t, copies, cuda.FakeStat("copy"), "no data moved")
	}
	require.NoError(t, g.s.ReleaseGroup(grp.ID))

	// on the host: a host copy owned by the group
	live := cuda.LiveBuffers()
	grp = g.placedGroup(column.Host, Availability{})
	tv := grp.Tensors[0]
	assert.True(t, tv.Buffer.OnHost())
	assert.Equal(t, tensor.DeviceCPU, tv.DeviceType)
	assert.Equal(t, []float32{1, 2, 3}, download(t, tv.Buffer, 3))
	require.NoError(t, g.s.ReleaseGroup(grp.ID))

	// on another device: a device copy, freed with the group
	grp = g.placedGroup(column.CUDA(int32(second())), Availability{})
	tv = grp.Tensors[0]
	assert.Equal(t, int32(second()), tv.DeviceID)
	assert.Equal(t, int32(second()), tv.Buffer.DeviceID())
	assert.Equal(t, []float32{1, 2, 3}, download(t, tv.Buffer, 3))
	if second() != 0 {
		assert.NotEqual(t, current.Tensors[0].Buffer.Data(), tv.Buffer.Data())
	}
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
	assert.Equal(t, live, cuda.LiveBuffers(), "the read's copies are freed with their groups")

	// the column did not move: reads change nothing
	grp = g.readGroup()
	assert.Equal(t, current.Tensors[0].Buffer.Data(), grp.Tensors[0].Buffer.Data())
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
}

func TestPlacedRaggedReadCopiesEachBufferOnce(t *testing.T) {
	forEachDriver(t, nil, func(t *testing.T, g *gpuFixture) {
		vals := []float32{1, 2, 3, 4, 5, 6}
		packed := f32Tensor(vals, 3, 2) // three rows of two elements, one payload buffer
		require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{packed}, IsArray: true}))
		g.seal(1)
		htod := cuda.FakeStat("htod")
		grp := g.placedGroup(column.CUDA(0), Availability{})
		require.Len(t, grp.Tensors, 3)
		for k, tv := range grp.Tensors {
			assert.Equal(t, cuda.DeviceCUDA, tv.DeviceType)
			assert.Equal(t, grp.Tensors[0].Buffer.Data(), tv.Buffer.Data(), "rows share the copy")
			assert.Equal(t, vals[2*k:2*k+2], download(t, tv.Buffer, 6)[tv.ByteOffset/4:tv.ByteOffset/4+2])
		}
		if g.fake {
			assert.Equal(t, htod+1, cuda.FakeStat("htod"), "one upload for the shared payload")
		}
		require.NoError(t, g.s.ReleaseGroup(grp.ID))
	})
}

func TestAvailabilityEventIsRecordedOncePerOp(t *testing.T) {
	forEachDriver(t, nil, func(t *testing.T, g *gpuFixture) {
		if !g.fake {
			t.Skip("events are made by the fake driver's helpers")
		}
		dev := second()
		event := cuda.FakeNewEvent(dev)
		require.NotZero(t, event)
		avail := Availability{Placed: true, Event: event}
		cudaDev := column.CUDA(int32(dev))
		require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})},
			Device: cudaDev, Avail: avail}))
		assert.Equal(t, int64(1), cuda.FakeEventRecords(event), "one record per accepted write")
		assert.Contains(t, cuda.FakeTrace(), fmt.Sprintf("record %#x;", event), "on the default stream")

		g.seal(1)

		// calls rejected at enqueue (no tensors; INSERT of existing prims) do not touch it
		_, err := g.s.WriteAttribute(WriteRequest{Query: g.query, AttrToken: g.attr, Ordinal: 3, Avail: avail})
		require.Error(t, err)
		_, err = g.s.WriteAttribute(WriteRequest{Query: g.query, AttrToken: g.attr, Ordinal: 3, Device: cudaDev, Avail: avail,
			Tensors: []tensor.Tensor{f32Tensor([]float32{4, 5, 6})}, PrimMode: PrimModeInsert})
		require.Error(t, err)
		assert.Equal(t, int64(1), cuda.FakeEventRecords(event))

		// a placed read records before its groups are handed out
		grp := g.placedGroup(cudaDev, avail)
		assert.Equal(t, int64(2), cuda.FakeEventRecords(event))
		require.NoError(t, g.s.ReleaseGroup(grp.ID))
		// a host placement records on device 0
		event0 := cuda.FakeNewEvent(0)
		grp = g.placedGroup(column.Host, Availability{Placed: true, Event: event0})
		assert.Equal(t, int64(1), cuda.FakeEventRecords(event0))
		require.NoError(t, g.s.ReleaseGroup(grp.ID))

		// a record CUDA refuses fails the op after its effects took place
		cuda.FakeDestroyEvent(dev, event)
		g.misuse = cuda.FakeStat("misuse") + 1 // recording a destroyed event is the misuse
		err = g.writeReq(WriteRequest{Ordinal: 4, Tensors: []tensor.Tensor{f32Tensor([]float32{7, 8, 9})},
			Device: cudaDev, Avail: avail})
		assert.Equal(t, status.OpFailed, status.CodeOf(err))
		assert.Contains(t, status.MessageOf(err), "availability_event")
		g.seal(4)
		got, err := g.readAll()
		require.NoError(t, err)
		assert.Equal(t, [][]float32{{7, 8, 9}}, got, "the write is committed all the same")
	})
}

func TestPlacedBatchSourcesOnTwoDevicesNeedADevice(t *testing.T) {
	forEachDriver(t, nil, func(t *testing.T, g *gpuFixture) {
		if cuda.DeviceCount() < 2 {
			t.Skip("needs two devices")
		}
		a, ta := g.upload(0, []float32{1, 2, 3})
		defer a.Release()
		b, tb := g.upload(1, []float32{4, 5, 6})
		defer b.Release()
		other, err := g.s.dict.InternToken("other")
		require.NoError(t, err)
		reqs := []WriteRequest{{AttrToken: g.attr, Tensors: []tensor.Tensor{ta}, Avail: Availability{Placed: true}},
			{AttrToken: other, Tensors: []tensor.Tensor{tb}, Avail: Availability{Placed: true}}}
		_, err = g.s.WriteAttributes(g.query, 1, PrimModeUpsert, reqs)
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
		assert.Contains(t, status.MessageOf(err), "one availability event cannot cover sources on several devices")
		// unplaced, or with a device, the same batch is fine
		for i := range reqs {
			reqs[i].Avail = Availability{}
		}
		op, err := g.s.WriteAttributes(g.query, 1, PrimModeUpsert, reqs)
		require.NoError(t, err)
		g.wait(op)
	})
}

func TestWithoutGPUPlacedReadsAndEventsAreInvalidArguments(t *testing.T) {
	noGPU(t)
	f := newFixture(t)
	_, _, err := f.s.ReadAttributesPlaced(f.query, []uint64{f.attr}, OrdinalRange{End: 1}, column.CUDA(0), Availability{})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "placement: cuda:0: cannot validate device_id without a usable CUDA driver: GPU unavailable")
	_, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}, Avail: Availability{Placed: true, Event: 0x1234}})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Contains(t, status.MessageOf(err), "placement: availability_event 0x1234 needs a usable CUDA driver")
	_, _, err = f.s.ReadAttributesPlaced(f.query, []uint64{f.attr}, OrdinalRange{End: 1}, column.Placement{DeviceType: 4}, Availability{})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	// a host placement needs no driver
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: 1,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}, Device: column.Host, Avail: Availability{Placed: true}})
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)
	h, op, err := f.s.ReadAttributesPlaced(f.query, []uint64{f.attr}, OrdinalRange{End: 1}, column.Host, Availability{Placed: true})
	require.NoError(t, err)
	f.wait(op)
	grp, err := f.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(t, err)
	assert.True(t, grp.Tensors[0].Buffer.OnHost())
	require.NoError(t, f.s.ReleaseGroup(grp.ID))
}

func TestPlacedMapStagesOnTheDevice(t *testing.T) {
	forEachDriver(t, nil, func(t *testing.T, g *gpuFixture) {
		require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}}))
		g.seal(1)
		f32 := tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}
		dev := column.CUDA(int32(second()))

		_, _, err := g.s.MapAttribute(MapRequest{Query: g.query, AttrToken: g.attr, Ordinal: 2, DType: f32,
			ElementSizes: []uint64{1, 1, 1}, Device: dev})
		assert.Equal(t, status.NotSupported, status.CodeOf(err), "array + CUDA placement")
		assert.Contains(t, status.MessageOf(err), "array attributes (element_sizes) cannot be mapped on a CUDA device")

		var avail Availability
		var event uintptr
		if g.fake {
			event = cuda.FakeNewEvent(second())
			avail = Availability{Placed: true, Event: event}
		}
		h, op, err := g.s.MapAttribute(MapRequest{Query: g.query, AttrToken: g.attr, Ordinal: 2, Device: dev, Avail: avail})
		require.NoError(t, err)
		g.wait(op)
		mg, err := g.s.FetchMapNext(h, TimeoutInfinite)
		require.NoError(t, err)
		tv := mg.Tensors[0]
		assert.Equal(t, cuda.DeviceCUDA, tv.DeviceType)
		assert.Equal(t, dev.DeviceID, tv.DeviceID)
		assert.Equal(t, []float32{1, 2, 3}, download(t, tv.Buffer, 3), "prefilled with the current values")
		vals := []float32{7, 8, 9}
		up, err := cuda.Move(hostBuffer(t, vals), dev)
		require.NoError(t, err)
		s, err := mustDevice(t, dev).CopyStream()
		require.NoError(t, err)
		require.NoError(t, s.CopyDtoD(uintptr(tv.Buffer.Data()), uintptr(up.Data()), 12))
		require.NoError(t, s.Sync())
		up.Release()
		op, err = g.s.UnmapAttributeWithSync(h, CudaSync{Stream: cuda.StreamLegacy})
		require.NoError(t, err)
		g.wait(op)
		if g.fake {
			assert.Equal(t, int64(1), cuda.FakeEventRecords(event), "one record per commit")
		}
		g.seal(2)
		grp := g.readGroup()
		assert.Equal(t, dev.DeviceID, grp.Tensors[0].DeviceID, "the commit made the device copy current")
		assert.Equal(t, vals, download(t, grp.Tensors[0].Buffer, 3))
		require.NoError(t, g.s.ReleaseGroup(grp.ID))
	})
}

func hostBuffer(t *testing.T, vals []float32) buffer.Buffer {
	b, err := buffer.New(4 * len(vals))
	require.NoError(t, err)
	copy(unsafe.Slice((*float32)(b.Data()), len(vals)), vals)
	return b
}

func mustDevice(t *testing.T, p column.Placement) *cuda.Device {
	d, err := cuda.Get(int(p.DeviceID))
	require.NoError(t, err)
	return d
}
