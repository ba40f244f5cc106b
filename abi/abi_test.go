package abi

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
	"github.com/ovstage-go/ovstage/lifecycle"
)

// requireStatus checks err's status and that its message names the argument.
func requireStatus(t *testing.T, err error, code status.Code, mentions string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, code, status.CodeOf(err), "error: %v", err)
	assert.Contains(t, status.MessageOf(err), mentions)
}

func newArena(t *testing.T) *cArena {
	a := &cArena{}
	t.Cleanup(a.free)
	return a
}

func TestWriteDecodesEveryField(t *testing.T) {
	a := newArena(t)
	tensors := a.tensors(tensorSpec{values: []float32{1, 2, 3, 4, 5, 6}, shape: []int64{2}, lanes: 3})
	data := a.data(writeSpec{tensors: tensors, tensorCount: 1, count: 70, indexMap: make([]uint32, 70),
		mask: []uint64{^uint64(0), 0x3f}, stream: 7, event: 9, semantic: 5, isArray: false})
	place := a.placement(int32(tensor.DeviceCUDA), 1, 0, 0)
	req, owned, err := Write(11, a.attr(0, "points"), 3, data, core.PrimModeInsert, place)
	require.NoError(t, err)
	assert.Equal(t, 0, owned.Len())
	assert.Equal(t, uint64(11), req.Query)
	assert.Equal(t, "points", req.AttrName)
	assert.Zero(t, req.AttrToken)
	assert.Equal(t, uint64(3), req.Ordinal)
	assert.Equal(t, core.PrimModeInsert, req.PrimMode)
	require.Len(t, req.Tensors, 1)
	assert.Equal(t, []int64{2}, req.Tensors[0].Shape)
	assert.Equal(t, tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 3}, req.Tensors[0].DType)
	assert.Equal(t, float32(4), unsafe.Slice((*float32)(req.Tensors[0].Data), 6)[3])
	assert.Equal(t, uint32(70), req.Count)
	assert.True(t, req.HasIndexMap)
	assert.Len(t, req.IndexMap, 70)
	assert.True(t, req.HasMask)
	assert.Len(t, req.Mask, 2, "the mask has ceil(count/64) words")
	assert.Equal(t, core.CudaSync{Stream: 7, Event: 9}, req.Sync)
	assert.Equal(t, int32(5), req.Semantic)
	assert.False(t, req.IsArray)
	assert.Equal(t, column.Placement{DeviceType: tensor.DeviceCUDA, DeviceID: 1}, req.Device)

	req, _, err = Write(1, a.attr(42, "ignored"), 1, data, 0, nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(42), req.AttrToken, "a non-zero token wins")
	assert.Empty(t, req.AttrName)

	// attribute_mode is passed on as given; the engine checks it (naming attribute_mode).
	for _, mode := range []uint32{1, 7, 1 << 31} {
		good := a.tensors(tensorSpec{values: []float32{1}, shape: []int64{1}})
		req, _, err = Write(1, a.attr(0, "x"), 1, a.data(writeSpec{tensors: good, tensorCount: 1, mode: mode}), 0, nil)
		require.NoError(t, err)
		if mode == 1<<31 {
			assert.Negative(t, req.AttributeMode, "a mode beyond int32 stays out of range")
		} else {
			assert.Equal(t, int32(mode), req.AttributeMode)
		}
	}
}

func TestWriteRejectsBadInput(t *testing.T) {
	a := newArena(t)
	good := a.tensors(tensorSpec{values: []float32{1, 2}, shape: []int64{2}})
	attr := a.attr(0, "x")
	cases := []struct {
		name     string
		attr     unsafe.Pointer
		data     unsafe.Pointer
		code     status.Code
		mentions string
	}{
		{"NULL data", attr, nil, status.InvalidArgument, "data is NULL"},
		{"count 0 with tensors", attr, a.data(writeSpec{tensors: good}), status.InvalidArgument, "data.tensor_count is 0 but data.tensors is set"},
		{"no tensors", attr, a.data(writeSpec{}), status.InvalidArgument, "tensor_count is 0"},
		{"NULL tensors with a count", attr, a.data(writeSpec{tensorCount: 2}), status.InvalidArgument, "both NULL with tensor_count 2"},
		{"absurd count", attr, a.data(writeSpec{tensors: good, tensorCount: 1 << 30}), status.InvalidArgument, "data.tensor_count 1073741824 is larger"},
		{"NULL data pointer, non-zero size", attr, a.data(writeSpec{tensorCount: 1,
			tensors: a.tensors(tensorSpec{shape: []int64{2}, noData: true})}), status.InvalidArgument, "data.tensors[0]: data pointer is NULL"},
		{"too many dims", attr, a.data(writeSpec{tensorCount: 1,
			tensors: a.tensors(tensorSpec{values: []float32{1}, shape: make([]int64, 40)})}), status.InvalidArgument, "ndim 40"},
		{"negative extent", attr, a.data(writeSpec{tensorCount: 1,
			tensors: a.tensors(tensorSpec{values: []float32{1}, shape: []int64{2, -3}})}), status.InvalidArgument, "shape[1] = -3 is negative"},
		{"size beyond memory", attr, a.data(writeSpec{tensorCount: 1,
			tensors: a.tensors(tensorSpec{values: []float32{1}, shape: []int64{1 << 40, 1 << 40}})}), status.InvalidArgument, "too large"},
		{"token 0, no string", a.attr(0, ""), a.data(writeSpec{tensors: good, tensorCount: 1}), status.InvalidArgument, "attribute is empty"},
		{"NULL string with a length", a.rawAttr(nil, 5), a.data(writeSpec{tensors: good, tensorCount: 1}), status.InvalidArgument, "attribute.string: ptr is NULL with length 5"},
		{"absurd string length", a.rawAttr(unsafe.Pointer(good), 1<<40), a.data(writeSpec{tensors: good, tensorCount: 1}), status.InvalidArgument, "is larger than"},
		{"NULL attribute", nil, a.data(writeSpec{tensors: good, tensorCount: 1}), status.InvalidArgument, "attribute is NULL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, owned, err := Write(1, c.attr, 1, c.data, 0, nil)
			requireStatus(t, err, c.code, c.mentions)
			owned.Release()
		})
	}
}

func TestManagedTensorsAreOwnedFromCallEntry(t *testing.T) {
	a := newArena(t)
	before := managedDeleted()
	m1 := a.managed(tensorSpec{values: []float32{1, 2}, shape: []int64{2}})
	_, owned, err := Write(1, a.attr(0, "x"), 1, a.data(writeSpec{managed: a.managedList(m1), tensorCount: 1}), 0, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, owned.Len())
	assert.Equal(t, before, managedDeleted(), "nothing is released until Release")
	owned.Release()
	owned.Release()
	assert.Equal(t, before+1, managedDeleted(), "each deleter runs exactly once")

	// Rejected: the attribute is bad, but the managed tensor was taken and is released once.
	m2 := a.managed(tensorSpec{values: []float32{1, 2}, shape: []int64{2}})
	_, owned, err = Write(1, a.attr(0, ""), 1, a.data(writeSpec{managed: a.managedList(m2), tensorCount: 1}), 0, nil)
	requireStatus(t, err, status.InvalidArgument, "attribute is empty")
	assert.Equal(t, 1, owned.Len())
	owned.Release()
	assert.Equal(t, before+2, managedDeleted())

	// A batch whose first entry is bad still takes the managed tensors of later entries; a
	// pointer repeated across entries is an error and is released once.
	m3 := a.managed(tensorSpec{values: []float32{1, 2}, shape: []int64{2}})
	m4 := a.managed(tensorSpec{values: []float32{1, 2}, shape: []int64{2}})
	writes := a.batch(
		batchEntry{name: "", data: writeSpec{managed: a.managedList(m3), tensorCount: 1}},
		batchEntry{name: "y", data: writeSpec{managed: a.managedList(m4, m3), tensorCount: 2, isArray: true}},
	)
	_, owned, err = WriteBatch(writes, 2, nil)
	requireStatus(t, err, status.InvalidArgument, "writes[0].attribute is empty")
	assert.Equal(t, 2, owned.Len())
	owned.Release()
	assert.Equal(t, before+4, managedDeleted())

	writes = a.batch(
		batchEntry{name: "x", data: writeSpec{managed: a.managedList(m3), tensorCount: 1}},
		batchEntry{name: "y", data: writeSpec{managed: a.managedList(m4, m3), tensorCount: 2, isArray: true}},
	)
	_, owned, err = WriteBatch(writes, 2, nil)
	requireStatus(t, err, status.InvalidArgument, "writes[1].data.managed_tensors[1] is the same managed tensor as writes[0].data.managed_tensors[0]")
	owned.Release()

	// A NULL entry, and a foreign DLPack major version.
	_, owned, err = Write(1, a.attr(0, "x"), 1, a.data(writeSpec{managed: a.managedList(nil), tensorCount: 1}), 0, nil)
	requireStatus(t, err, status.InvalidArgument, "data.managed_tensors[0] is NULL")
	assert.Equal(t, 0, owned.Len())
	m5 := a.managed(tensorSpec{values: []float32{1}, shape: []int64{1}})
	m5.version.major = 0
	_, owned, err = Write(1, a.attr(0, "x"), 1, a.data(writeSpec{managed: a.managedList(m5), tensorCount: 1}), 0, nil)
	requireStatus(t, err, status.InvalidArgument, "DLPack version 0.")
	owned.Release()
	// Both kinds set.
	m6 := a.managed(tensorSpec{values: []float32{1}, shape: []int64{1}})
	good := a.tensors(tensorSpec{values: []float32{1}, shape: []int64{1}})
	_, owned, err = Write(1, a.attr(0, "x"), 1, a.data(writeSpec{tensors: good, managed: a.managedList(m6), tensorCount: 1}), 0, nil)
	requireStatus(t, err, status.InvalidArgument, "both set")
	assert.Equal(t, 1, owned.Len())
	owned.Release()
}

func TestWriteBatch(t *testing.T) {
	a := newArena(t)
	t1 := a.tensors(tensorSpec{values: []float32{1, 2}, shape: []int64{2}})
	t2 := a.tensors(tensorSpec{values: []float32{3}, shape: []int64{1}}, tensorSpec{values: []float32{4, 5}, shape: []int64{2}})
	writes := a.batch(
		batchEntry{token: 5, data: writeSpec{tensors: t1, tensorCount: 1, semantic: 8}},
		batchEntry{name: "ragged", data: writeSpec{tensors: t2, tensorCount: 2, isArray: true, count: 2, mask: []uint64{3}}},
	)
	reqs, owned, err := WriteBatch(writes, 2, a.placement(int32(tensor.DeviceCPU), 0, 0, 0))
	require.NoError(t, err)
	owned.Release()
	require.Len(t, reqs, 2)
	assert.Equal(t, uint64(5), reqs[0].AttrToken)
	assert.Equal(t, int32(8), reqs[0].Semantic)
	assert.Equal(t, "ragged", reqs[1].AttrName)
	assert.True(t, reqs[1].IsArray)
	assert.Len(t, reqs[1].Tensors, 2)
	assert.Equal(t, []uint64{3}, reqs[1].Mask)
	assert.Equal(t, column.Host, reqs[1].Device)

	_, _, err = WriteBatch(nil, 3, nil)
	requireStatus(t, err, status.InvalidArgument, "writes is NULL with a count of 3")
	_, _, err = WriteBatch(writes, MaxBatch+1, nil)
	requireStatus(t, err, status.InvalidArgument, "write_count")
	reqs, _, err = WriteBatch(nil, 0, nil)
	require.NoError(t, err)
	assert.Empty(t, reqs)
}

func TestPlacements(t *testing.T) {
	a := newArena(t)
	p, err := DecodePlacement(nil)
	require.NoError(t, err)
	assert.Equal(t, Placed{}, p, "NULL is the unplaced slot")
	p, err = DecodePlacement(a.placement(0, 0, 0, 0))
	require.NoError(t, err)
	assert.Equal(t, Placed{Avail: core.Availability{Placed: true}}, p, "device {0, 0} is unspecified")
	p, err = DecodePlacement(a.placement(2, 1, 5, 7))
	require.NoError(t, err)
	assert.Equal(t, Placed{Device: column.CUDA(1), Avail: core.Availability{Placed: true, Stream: 5, Event: 7}}, p)
	p, err = DecodePlacement(a.placement(13, 0, 0, 0))
	require.NoError(t, err)
	assert.Equal(t, column.Placement{DeviceType: tensor.DeviceCUDAManaged}, p.Device)
	_, err = DecodePlacement(a.placement(4, 0, 0, 0))
	requireStatus(t, err, status.InvalidArgument, "placement->device.device_type 4 is not one of 0 (unspecified), kDLCPU (1), kDLCUDA (2), kDLCUDAManaged (13)")
	_, err = DecodePlacement(a.placement(2, -1, 0, 0))
	requireStatus(t, err, status.InvalidArgument, "placement->device.device_id -1 is negative")
}

func TestFilterFloorRangeMapDelete(t *testing.T) {
	a := newArena(t)
	dict := pathdict.New()
	preds, err := Filter(a.filter([]predicateSpec{
		{name: "usd-path", op: int32(core.OpPrefix), values: []string{"/World/", "/Other/"}},
		{token: 77, op: int32(core.OpHas)},
	}, 2, false), dict)
	require.NoError(t, err)
	require.Len(t, preds, 2)
	tok, err := dict.InternToken("usd-path")
	require.NoError(t, err)
	assert.Equal(t, core.Predicate{Attr: tok, Op: core.OpPrefix, Values: []string{"/World/", "/Other/"}}, preds[0])
	assert.Equal(t, uint64(77), preds[1].Attr)
	assert.Empty(t, preds[1].Values)
	none, err := Filter(nil, dict)
	require.NoError(t, err)
	assert.Empty(t, none)
	_, err = Filter(a.filter(nil, 2, true), dict)
	requireStatus(t, err, status.InvalidArgument, "filter->predicates is NULL with a count of 2")
	_, err = Filter(a.filter([]predicateSpec{{op: 0}}, 1, false), dict)
	requireStatus(t, err, status.InvalidArgument, "filter->predicates[0].attribute is empty")
	_, err = Filter(a.filter([]predicateSpec{{name: "x", op: 1, count: 4}}, 1, false), dict)
	requireStatus(t, err, status.InvalidArgument, "filter->predicates[0].values is NULL with a count of 4")

	ord, scope, attrs, err := WriteFloor(a.floorDesc(9, int32(core.ScopeExclude), []uint64{4, 5}, 2))
	require.NoError(t, err)
	assert.Equal(t, uint64(9), ord)
	assert.Equal(t, core.ScopeExclude, scope)
	assert.Equal(t, []uint64{4, 5}, attrs)
	_, _, _, err = WriteFloor(nil)
	requireStatus(t, err, status.InvalidArgument, "desc is NULL")
	_, _, _, err = WriteFloor(a.floorDesc(1, 1, nil, 3))
	requireStatus(t, err, status.InvalidArgument, "desc->attributes is NULL")

	rng, err := OrdinalRange(a.ordinalRange(2, 7, true))
	require.NoError(t, err)
	assert.Equal(t, core.OrdinalRange{Start: 2, End: 7, HasStart: true}, rng)
	rng, err = OrdinalRange(a.ordinalRange(0, ^uint64(0), false))
	require.NoError(t, err)
	assert.Equal(t, core.OrdinalRange{End: ^uint64(0)}, rng)
	_, err = OrdinalRange(nil)
	requireStatus(t, err, status.InvalidArgument, "range is NULL")
	toks, rng, placed, err := Read(unsafe.Pointer(&[]uint64{5, 6}[0]), 2, a.ordinalRange(1, 3, false), nil)
	require.NoError(t, err)
	assert.Equal(t, []uint64{5, 6}, toks)
	assert.Equal(t, core.OrdinalRange{Start: 1, End: 3}, rng)
	assert.Equal(t, Placed{}, placed)
	_, _, placed, err = Read(nil, 0, a.ordinalRange(1, 3, false), a.placement(1, 0, 0, 0))
	require.NoError(t, err)
	assert.Equal(t, column.Host, placed.Device)

	req, err := Map(3, a.mapDesc(0, "m", 32, 8, 1, 0), 4, a.sizes(1, 2, 1<<63), 3, nil)
	require.NoError(t, err)
	assert.Equal(t, core.MapRequest{Query: 3, AttrName: "m", Ordinal: 4, PrimMode: 1, Semantic: 8,
		DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}, ElementSizes: []uint64{1, 2, 1 << 63}}, req)
	req, err = Map(3, a.mapDesc(6, "", 0, 0, 0, 0), 4, nil, 0, nil)
	require.NoError(t, err)
	assert.Nil(t, req.ElementSizes, "no element_sizes: a fixed-size map")
	assert.Equal(t, tensor.DType{}, req.DType, "a zero dtype: the existing schema")
	ragged, err := Map(3, a.mapDesc(6, "", 0, 0, 0, 0), 4, a.sizes(), 0, nil)
	require.NoError(t, err)
	assert.NotNil(t, ragged.ElementSizes, "element_sizes given with count 0: a ragged map of no prims")
	_, err = Map(3, nil, 4, nil, 0, nil)
	requireStatus(t, err, status.InvalidArgument, "desc is NULL")
	forced, err := Map(3, a.mapDesc(6, "", 0, 0, 0, 1), 4, nil, 0, nil)
	require.NoError(t, err)
	assert.Equal(t, core.AttributeModeForce, forced.AttributeMode, "the mode is passed on (the engine checks it)")
	_, err = Map(3, a.mapDesc(6, "", 0, 0, 0, 0), 4, nil, 2, nil)
	requireStatus(t, err, status.InvalidArgument, "element_sizes is NULL with element_count 2")
	_, err = Map(3, a.mapDesc(0, "", 0, 0, 0, 0), 4, nil, 0, nil)
	requireStatus(t, err, status.InvalidArgument, "desc->attribute is empty")

	del, err := Delete(2, a.attrList([2]any{uint64(9), ""}, [2]any{uint64(0), "name"}), 2, 5)
	require.NoError(t, err)
	assert.Equal(t, core.DeleteRequest{Query: 2, Tokens: []uint64{9, 0}, Names: []string{"", "name"}, Ordinal: 5}, del)
	del, err = Delete(2, nil, 0, 5)
	require.NoError(t, err)
	assert.Empty(t, del.Tokens, "no attributes: the whole prims")
	_, err = Delete(2, a.attrList([2]any{uint64(0), ""}), 1, 5)
	requireStatus(t, err, status.InvalidArgument, "attributes[0] is empty")
	_, err = Delete(2, nil, 1, 5)
	requireStatus(t, err, status.InvalidArgument, "attributes is NULL")
}

func TestConfigRoundTrip(t *testing.T) {
	a := newArena(t)
	entries, err := Config(a.config([]configSpec{
		{keyType: int32(lifecycle.KeyUint64), key: lifecycle.KeyAdmissionPolicy, u: 1},
		{keyType: int32(lifecycle.KeyString), key: lifecycle.KeyBinaryPackageRootPath, s: "/opt/x"},
		{keyType: int32(lifecycle.KeyBlob), key: 3, blob: []byte{1, 0, 2}},
	}, 3, false))
	require.NoError(t, err)
	want := []lifecycle.Entry{
		{Type: lifecycle.KeyUint64, Key: lifecycle.KeyAdmissionPolicy, Uint: 1},
		{Type: lifecycle.KeyString, Key: lifecycle.KeyBinaryPackageRootPath, String: "/opt/x"},
		{Type: lifecycle.KeyBlob, Key: 3, Blob: []byte{1, 0, 2}},
	}
	assert.Equal(t, want, entries)

	block, err := NewConfig(entries)
	require.NoError(t, err)
	defer block.Free()
	back, err := Config(block.Ptr())
	require.NoError(t, err)
	assert.Equal(t, want, back, "get_config's view decodes to the entries it was made from")
	empty, err := NewConfig(nil)
	require.NoError(t, err)
	defer empty.Free()
	none, err := Config(empty.Ptr())
	require.NoError(t, err)
	assert.Empty(t, none)

	_, err = Config(a.config(nil, 2, true))
	requireStatus(t, err, status.InvalidArgument, "config->entries is NULL with a count of 2")
	_, err = Config(a.config([]configSpec{{keyType: int32(lifecycle.KeyString), nullPtr: true}}, 1, false))
	requireStatus(t, err, status.InvalidArgument, "config->entries[0].value.string_value: ptr is NULL with length 3")
	none, err = Config(nil)
	require.NoError(t, err)
	assert.Empty(t, none)
}

func hostBuffer(t *testing.T, values ...float32) buffer.Buffer {
	b, err := buffer.New(len(values) * 4)
	require.NoError(t, err)
	copy(unsafe.Slice((*float32)(unsafe.Pointer(&b.Bytes()[0])), len(values)), values)
	t.Cleanup(b.Release)
	return b
}

func TestReadGroupLayout(t *testing.T) {
	assert.Equal(t, uintptr(120), ReadGroupSize, "ovstage_read_group_t is 120 bytes (the mask is one pointer)")
	assert.Equal(t, uintptr(88), MapGroupSize)
	buf := hostBuffer(t, 1, 2, 3, 4, 5, 6)
	g := &core.Group{ID: 91, Attribute: 4, Ordinal: 6, IsArray: false, Semantic: 5, PrimList: 12, PrimCount: 2,
		PrimIndexMap: []uint32{0, 2}, DataIndexMap: []uint32{1, 0}, FloorOrdinal: 5, LayoutGen: 3,
		Tensors: []core.TensorView{{Buffer: buf, ByteOffset: 4, DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1},
			Rows: 5, DeviceType: tensor.DeviceCPU}}}
	block, err := NewReadGroup(g)
	require.NoError(t, err)
	defer block.Free()
	out := make([]byte, ReadGroupSize)
	block.CopyTo(unsafe.Pointer(&out[0]))
	v := viewReadGroup(unsafe.Pointer(&out[0]))
	assert.Equal(t, uint64(91), ReadGroupID(unsafe.Pointer(&out[0])))
	assert.Equal(t, uint64(4), v.attribute)
	assert.Equal(t, uint64(6), v.ordinal)
	assert.Equal(t, int32(5), v.semantic)
	assert.Equal(t, uint64(12), v.list)
	assert.Equal(t, uint32(2), v.count)
	assert.Equal(t, []uint32{0, 2}, v.primMap)
	assert.Equal(t, []uint32{1, 0}, v.dataMap)
	assert.Equal(t, uint32(2), v.dataCount)
	assert.True(t, v.maskNil)
	assert.Zero(t, v.waitEvent, "host groups carry no CUDA event")
	assert.Equal(t, uint64(5), v.floor)
	assert.Equal(t, uint64(3), v.layoutGen)
	require.Len(t, v.tensors, 1)
	tv := v.tensors[0]
	assert.Equal(t, unsafe.Add(buf.Data(), 4), tv.data)
	assert.Equal(t, []int64{5}, tv.shape)
	assert.Equal(t, []int64{1}, tv.strides, "strides are explicit")
	assert.Equal(t, int32(tensor.DeviceCPU), tv.device)

	tomb, err := NewReadGroup(&core.Group{ID: 2, IsDelete: true, PrimCount: 3})
	require.NoError(t, err)
	defer tomb.Free()
	tv2 := viewReadGroup(tomb.Ptr())
	assert.True(t, tv2.isDelete)
	assert.Nil(t, tv2.tensorsPtr, "a tombstone group has no tensors")
	assert.Nil(t, tv2.primMap)
}

func TestMapGroupKeys(t *testing.T) {
	buf := hostBuffer(t, 1, 2)
	g := &core.MapGroup{Group: core.Group{ID: 5, PrimCount: 2, Tensors: []core.TensorView{{Buffer: buf,
		DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}, Rows: 2, DeviceType: tensor.DeviceCPU}}}}
	b1, err := NewMapGroup(g)
	require.NoError(t, err)
	defer b1.Free()
	empty, err := NewMapGroup(&core.MapGroup{})
	require.NoError(t, err)
	defer empty.Free()
	assert.NotZero(t, MapGroupKeyOf(empty), "a map group without tensors still has a key")
	assert.NotEqual(t, MapGroupKeyOf(b1), MapGroupKeyOf(empty))
	out := make([]byte, MapGroupSize)
	b1.CopyTo(unsafe.Pointer(&out[0]))
	assert.Equal(t, MapGroupKeyOf(b1), MapGroupKey(unsafe.Pointer(&out[0])), "a copy of the struct is the same group")
	v := viewMapGroup(unsafe.Pointer(&out[0]))
	assert.Equal(t, uint32(2), v.count)
	require.Len(t, v.tensors, 1)
	assert.Equal(t, buf.Data(), v.tensors[0].data)
}

func TestResults(t *testing.T) {
	qr, err := NewQueryResult(8, 3, core.QueryResult{Attributes: []uint64{4, 9}, TotalPrimCount: 17})
	require.NoError(t, err)
	defer qr.Free()
	v := viewQueryResult(qr.Ptr())
	assert.Equal(t, queryResultView{id: 8, all: 3, attributes: []uint64{4, 9}, total: 17}, v)
	assert.Equal(t, uint64(8), QueryResultID(qr.Ptr()))
	qe, err := NewQueryResult(9, 3, core.QueryResult{})
	require.NoError(t, err)
	defer qe.Free()
	assert.True(t, viewQueryResult(qe.Ptr()).attrsNilPtr)

	dict := pathdict.New()
	a, err := dict.InternPath("/W/A")
	require.NoError(t, err)
	b, err := dict.InternPath("/W/Bee")
	require.NoError(t, err)
	hr, err := NewHierarchyResult(12, core.HierarchyResult{Ordinal: 99, Items: []core.HierarchyItem{
		{Status: status.OK, Paths: []uint64{a, b}}, {Status: status.NotFound}, {Status: status.OK, Paths: []uint64{b}}}}, dict)
	require.NoError(t, err)
	defer hr.Free()
	id, ordinal, items, paths := viewHierarchyResult(hr.Ptr())
	assert.Equal(t, uint64(12), id)
	assert.Equal(t, uint64(12), HierarchyResultID(hr.Ptr()))
	assert.Equal(t, uint64(99), ordinal)
	assert.Equal(t, []hierarchyItemView{{0, 0, 2}, {int32(status.NotFound), 2, 0}, {0, 2, 1}}, items)
	assert.Equal(t, []string{"/W/A", "/W/Bee", "/W/Bee"}, paths)
	_, err = NewHierarchyResult(1, core.HierarchyResult{Items: []core.HierarchyItem{{Paths: []uint64{1 << 40}}}}, dict)
	requireStatus(t, err, status.InvalidArgument, "hierarchy result path")

	models, err := NewHierarchyModels([]core.HierarchyModel{{ID: 1, Name: "cpu", Description: "d1"}, {ID: 4, Name: "", Description: ""}})
	require.NoError(t, err)
	defer models.Free()
	assert.Equal(t, []modelView{{1, "cpu", "d1"}, {4, "", ""}}, viewModels(models.Ptr(), 2))

	storage := []uint64{7, 3}
	wr := make([]byte, WaitResultSize)
	PutWaitResult(unsafe.Pointer(&wr[0]), unsafe.Pointer(&storage[0]), 2, 0)
	ids, lowest, _ := viewWaitResult(unsafe.Pointer(&wr[0]))
	assert.Equal(t, []uint64{7, 3}, ids)
	assert.Zero(t, lowest)
	PutWaitResult(unsafe.Pointer(&wr[0]), unsafe.Pointer(&storage[0]), 0, 9)
	ids, lowest, nilIDs := viewWaitResult(unsafe.Pointer(&wr[0]))
	assert.Empty(t, ids)
	assert.True(t, nilIDs, "no failed ops: error_op_ids is NULL")
	assert.Equal(t, uint64(9), lowest)

	out := make([]byte, CloneResultSize)
	PutCloneResult(unsafe.Pointer(&out[0]), core.CloneReport{Ordinal: 3, TargetCount: 2, SourcePrimCount: 5, PrimsCloned: 10})
	assert.Equal(t, core.CloneReport{Ordinal: 3, TargetCount: 2, SourcePrimCount: 5, PrimsCloned: 10}, viewCloneResult(unsafe.Pointer(&out[0])))
	Zero(unsafe.Pointer(&out[0]), CloneResultSize)
	assert.Equal(t, core.CloneReport{}, viewCloneResult(unsafe.Pointer(&out[0])))
}

func TestStringsAndTokens(t *testing.T) {
	a := newArena(t)
	dict := pathdict.New()
	tok, err := Token(a.attr(0, "name"), "attribute", dict, false)
	require.NoError(t, err)
	s, err := dict.TokenString(tok)
	require.NoError(t, err)
	assert.Equal(t, "name", s)
	tok, err = Token(a.attr(0, ""), "attribute", dict, true)
	require.NoError(t, err)
	assert.Zero(t, tok, "an allowed empty attribute is token 0")
	_, err = Token(a.attr(0, "a\x00b"), "attribute", dict, false)
	requireStatus(t, err, status.InvalidArgument, "attribute: ")
	toks, err := Tokens(nil, 0, "attrs")
	require.NoError(t, err)
	assert.Nil(t, toks)
	_, err = Tokens(nil, 2, "attrs")
	requireStatus(t, err, status.InvalidArgument, "attrs is NULL with a count of 2")
	str, err := String(nil, "x")
	require.NoError(t, err)
	assert.Empty(t, str)
	_, err = Strings(nil, MaxArray+1, "values")
	requireStatus(t, err, status.InvalidArgument, "values is NULL")
	assert.True(t, strings.HasPrefix(status.MessageOf(invalid("x")), "x"))
}
