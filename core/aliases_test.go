package core

import (
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

var dtF64x16 = tensor.DType{Code: tensor.CodeFloat, Bits: 64, Lanes: 16}

func matrixRow(translate float64) []byte {
	out := make([]byte, 8*16)
	for i := 0; i < 16; i++ {
		v := 0.0
		if i%5 == 0 {
			v = 1
		}
		if i == 12 {
			v = translate
		}
		bits := math.Float64bits(v)
		for b := 0; b < 8; b++ {
			out[8*i+b] = byte(bits >> (8 * b))
		}
	}
	return out
}

// readLatest reads attr on prim (latest) and returns the group's reported attribute name and
// its value bytes (nil: no group).
func (c *cstage) readLatest(prim, attr string) (string, []byte) {
	c.t.Helper()
	h, op, err := c.s.ReadAttributes(c.query(prim), []uint64{c.tok(attr)}, OrdinalRange{End: math.MaxUint64})
	c.ok(op, err)
	defer func() {
		_, err := c.s.ReleaseRead(h)
		require.NoError(c.t, err)
	}()
	g, err := c.s.FetchReadNext(h, TimeoutInfinite)
	if status.CodeOf(err) == status.EndOfIteration {
		return "", nil
	}
	require.NoError(c.t, err)
	defer func() { require.NoError(c.t, c.s.ReleaseGroup(g.ID)) }()
	v := g.Tensors[0]
	data := unsafe.Slice((*byte)(unsafe.Add(v.Buffer.Data(), v.ByteOffset)), int(v.Rows)*v.DType.ElemBytes())
	return c.s.tokenName(g.Attribute), slices.Clone(data)
}

func (c *cstage) discovered(preds ...Predicate) []string {
	c.t.Helper()
	qh, op, err := c.s.Query(preds, nil)
	c.ok(op, err)
	res, err := c.s.FetchQueryResult(qh, TimeoutInfinite)
	require.NoError(c.t, err)
	out := []string{}
	for _, a := range res.Attributes {
		out = append(out, c.s.tokenName(a))
	}
	return out
}

// floorOf is attr's effective floor, through get_attribute_write_floor.
func (c *cstage) floorOf(attr string) uint64 {
	c.t.Helper()
	h, op, err := c.s.GetAttributeWriteFloor(c.tok(attr))
	c.ok(op, err)
	defer func() { _, err := c.s.ReleaseOrdinalQuery(h); require.NoError(c.t, err) }()
	v, err := c.s.FetchOrdinal(h, 0)
	require.NoError(c.t, err)
	return v
}

// The public transform names address the columns stored under the storage names: one
// column, one value, one floor; discovery reports the storage name.
func TestAliasesAddressTheStorageColumn(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/A"}, AttrXform, 1, false, SemanticMatrix, fixedTensor(dtF64x16, matrixRow(2))))
	require.Equal(t, matrixRow(2), c.value("/A", AttrLocalMatrix))
	require.Empty(t, c.committed("/A", AttrXform), "no column under the public name")
	require.Equal(t, []string{AttrLocalMatrix}, c.discovered(Predicate{Attr: c.tok(AttrXform), Op: OpHas}))

	c.seal(1)
	// Either name reads the same value, reported under the name it was asked by.
	for _, name := range []string{AttrXform, AttrLocalMatrix} {
		got, value := c.readLatest("/A", name)
		require.Equal(t, name, got)
		require.Equal(t, matrixRow(2), value)
	}
	// A write through the storage name is seen through the alias.
	c.ok(c.write([]string{"/A"}, AttrLocalMatrix, 2, false, SemanticMatrix, fixedTensor(dtF64x16, matrixRow(5))))
	c.seal(2)
	_, value := c.readLatest("/A", AttrXform)
	require.Equal(t, matrixRow(5), value)

	// Floors are shared: sealing one name seals the other.
	c.ok(c.s.AdvanceWriteFloor(3, ScopeInclude, []uint64{c.tok(AttrXform)}))
	require.Equal(t, uint64(3), c.floorOf(AttrLocalMatrix))
	require.Equal(t, uint64(3), c.floorOf(AttrXform))
	c.fails(status.WriteFloorViolation)(c.write([]string{"/A"}, AttrLocalMatrix, 3, false, SemanticMatrix, fixedTensor(dtF64x16, matrixRow(7))))

	// Scoped discovery by the alias reports the storage name.
	qh, op, err := c.s.Query(nil, []uint64{c.tok(AttrResetXformStack), c.tok(AttrXform)})
	c.ok(op, err)
	res, err := c.s.FetchQueryResult(qh, TimeoutInfinite)
	require.NoError(t, err)
	require.Equal(t, []uint64{c.tok(AttrLocalMatrix)}, res.Attributes)
}

// A name and its alias in one batch are one canonical column: the same prim twice is refused.
func TestAliasAndStorageNameInOneBatch(t *testing.T) {
	c := newCStage(t)
	req := func(name string) WriteRequest {
		return WriteRequest{AttrName: name, Tensors: []tensor.Tensor{fixedTensor(dtF64x16, matrixRow(1))}, Semantic: SemanticMatrix}
	}
	msg := c.fails(status.InvalidArgument)(c.s.WriteAttributes(c.query("/A"), 1, PrimModeUpsert,
		[]WriteRequest{req(AttrXform), req(AttrLocalMatrix)}))
	require.Contains(t, msg, AttrLocalMatrix)
	require.Nil(t, c.value("/A", AttrLocalMatrix), "the refused batch wrote nothing")

	// Over prims that do not overlap, the two names write one column.
	masked := func(name string, mask uint64) WriteRequest {
		rows := append(matrixRow(1), matrixRow(2)...)
		return WriteRequest{AttrName: name, Count: 2, Mask: []uint64{mask}, HasMask: true,
			Tensors: []tensor.Tensor{fixedTensor(dtF64x16, rows)}, Semantic: SemanticMatrix}
	}
	c.ok(c.s.WriteAttributes(c.query("/A", "/B"), 1, PrimModeUpsert,
		[]WriteRequest{masked(AttrXform, 0b01), masked(AttrLocalMatrix, 0b10)}))
	require.Equal(t, matrixRow(1), c.value("/A", AttrLocalMatrix))
	require.Equal(t, matrixRow(2), c.value("/B", AttrLocalMatrix))
}

// Deleting through the alias removes the storage column's value.
func TestAliasDelete(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/A"}, AttrFabricResetXformStack, 1, false, 0, fixedTensor(tensor.DType{Code: tensor.CodeBool, Bits: 8, Lanes: 1}, []byte{1})))
	c.ok(c.s.DeleteAttributes(DeleteRequest{Query: c.query("/A"), Tokens: []uint64{c.tok(AttrResetXformStack)}, Ordinal: 2}))
	require.Nil(t, c.value("/A", AttrFabricResetXformStack))
}

func TestAttributeAliasesIsACopyOfTheTable(t *testing.T) {
	got := AttributeAliases()
	want := [][2]string{{AttrXform, AttrLocalMatrix}, {AttrResetXformStack, AttrFabricResetXformStack}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("AttributeAliases() = %v, want %v", got, want)
	}
	got[0][1] = "changed"
	if AttributeAliases()[0][1] != AttrLocalMatrix {
		t.Fatal("AttributeAliases hands out the table itself")
	}
}
