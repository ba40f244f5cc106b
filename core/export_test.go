package core

import (
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

func floatsOf(tv TensorView) []float32 {
	return unsafe.Slice((*float32)(unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)), int(tv.Rows))
}

// latestGroup returns the single group of a latest read of the fixture's attribute.
func (f *fixture) latestGroup() *Group {
	f.t.Helper()
	h, op, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: 100})
	require.NoError(f.t, err)
	f.wait(op)
	g, err := f.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(f.t, err)
	_, err = f.s.ReleaseRead(h)
	require.NoError(f.t, err)
	return g
}

func TestWritableExportOfAReadGroupIsAPrivateCopy(t *testing.T) {
	f := newFixture(t)
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)
	g := f.latestGroup()

	view, err := f.s.ExportView(g.ID, 0, false)
	require.NoError(t, err)
	assert.False(t, view.Copied)
	assert.Equal(t, g.Tensors[0].Buffer.Data(), view.Buffer.Data(), "a read-only export is a view")
	view.Buffer.Release()

	private, err := f.s.ExportView(g.ID, 0, true)
	require.NoError(t, err)
	assert.True(t, private.Copied)
	assert.NotEqual(t, g.Tensors[0].Buffer.Data(), private.Buffer.Data())
	assert.Equal(t, 0, private.ByteOffset)
	assert.Equal(t, []float32{1, 2, 3}, floatsOf(private.TensorView))
	floatsOf(private.TensorView)[1] = 99 // what an in-place consumer does
	require.NoError(t, f.s.ReleaseGroup(g.ID))
	private.Buffer.Release()

	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got, "the sealed version is unchanged")

	_, err = f.s.ExportView(g.ID, 0, true)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "released group")
}

func TestWritableExportOfAMapGroupSharesItsStaging(t *testing.T) {
	f := newFixture(t)
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)
	h, mop, err := f.s.MapAttribute(MapRequest{Query: f.query, AttrToken: f.attr, Ordinal: 2})
	require.NoError(t, err)
	f.wait(mop)
	g, err := f.s.FetchMapNext(h, TimeoutInfinite)
	require.NoError(t, err)
	f.s.RegisterMapGroup(g)
	tv, err := f.s.ExportView(g.ID, 0, true)
	require.NoError(t, err)
	assert.False(t, tv.Copied)
	floatsOf(tv.TensorView)[0] = 10
	tv.Buffer.Release()
	un, err := f.s.UnmapAttribute(h)
	require.NoError(t, err)
	f.wait(un)
	f.seal(2)
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{10, 2, 3}}, got, "staging written through an export is committed")
}

func TestExportViewBoundsAndConcurrentRelease(t *testing.T) {
	f := newFixture(t)
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	f.wait(op)
	f.seal(1)
	g := f.latestGroup()
	for _, i := range []int{-1, 1} {
		_, err = f.s.ExportView(g.ID, i, false)
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
		assert.ErrorContains(t, err, "tensor index")
	}
	require.NoError(t, f.s.ReleaseGroup(g.ID))

	// Exports racing a release either fail cleanly or hold a live reference to intact data.
	for round := 0; round < 200; round++ {
		g := f.latestGroup()
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(writable bool) {
				defer wg.Done()
				tv, err := f.s.ExportView(g.ID, 0, writable)
				if err != nil {
					assert.Equal(t, status.InvalidHandle, status.CodeOf(err))
					return
				}
				assert.Equal(t, []float32{1, 2, 3}, floatsOf(tv.TensorView))
				tv.Buffer.Release()
			}(w%2 == 0)
		}
		_ = f.s.ReleaseGroup(g.ID)
		wg.Wait()
	}
}

func TestWritableExportOfADeviceReadGroupIsADeviceCopy(t *testing.T) {
	forEachDriver(t, nil, testWritableExportOfADeviceReadGroup)
}

func testWritableExportOfADeviceReadGroup(t *testing.T, g *gpuFixture) {
	src, tn := g.upload(0, []float32{1, 2, 3})
	require.NoError(t, g.writeReq(WriteRequest{Ordinal: 1, Tensors: []tensor.Tensor{tn}}))
	src.Release()
	g.seal(1)
	grp := g.readGroup()
	dtod, htod := cuda.FakeStat("dtod"), cuda.FakeStat("htod")
	private, err := g.s.ExportView(grp.ID, 0, true)
	require.NoError(t, err)
	assert.True(t, private.Copied)
	assert.True(t, cuda.IsDeviceBuffer(private.Buffer))
	assert.NotEqual(t, grp.Tensors[0].Buffer.Data(), private.Buffer.Data())
	if g.fake {
		assert.Equal(t, dtod+1, cuda.FakeStat("dtod"), "copied on the device")
		assert.Equal(t, htod, cuda.FakeStat("htod"), "no host round trip")
	}
	assert.Equal(t, []float32{1, 2, 3}, download(t, private.Buffer, 3))
	// An in-place consumer overwrites the copy.
	dev, err := cuda.Get(0)
	require.NoError(t, err)
	s, err := dev.CopyStream()
	require.NoError(t, err)
	zeros := []float32{0, 0, 0}
	require.NoError(t, s.CopyHtoD(uintptr(private.Buffer.Data()), unsafe.Pointer(&zeros[0]), 12))
	require.NoError(t, s.Sync())
	private.Buffer.Release()
	assert.Equal(t, []float32{1, 2, 3}, download(t, grp.Tensors[0].Buffer, 3), "sealed version unchanged")
	require.NoError(t, g.s.ReleaseGroup(grp.ID))
}
