package core

// Reserved (built-in) attributes and the semantic layout rules.

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

func reservedMessage(name string) string {
	return fmt.Sprintf("reserved attribute '%s' requires its canonical kind, semantic NONE and attribute_mode REJECT", name)
}

// The recorded built-ins take one kind each (a token id per prim for the prim type, token-id
// arrays for the two tag sets), semantic NONE and attribute mode REJECT; anything else is
// INVALID_ARGUMENT at enqueue and changes nothing.
func TestReservedRecordedBuiltinsRequireTheirCanonicalKind(t *testing.T) {
	c := newCStage(t)
	abc := []string{"/A", "/B"}
	ids := u64s(c.tok("X"), c.tok("Y"))
	for _, name := range []string{BuiltinPrimType, BuiltinSchemas, BuiltinAncestorTypes} {
		array := name != BuiltinPrimType
		wrong := map[string]func() (uint64, error){
			"other arrayness": func() (uint64, error) {
				if array {
					return c.write(abc, name, 1, false, SemanticNone, fixedTensor(dtU64, ids))
				}
				return c.write(abc, name, 1, true, SemanticNone, rowsTensors(dtU64, ids[:8], ids[8:])...)
			},
			"float": func() (uint64, error) {
				if array {
					return c.write(abc, name, 1, true, SemanticNone, rowsTensors(dtF32, f32s(1), f32s(2))...)
				}
				return c.write(abc, name, 1, false, SemanticNone, fixedTensor(dtF32, f32s(1, 2)))
			},
			"semantic TOKEN_ID": func() (uint64, error) {
				if array {
					return c.write(abc, name, 1, true, SemanticTokenID, rowsTensors(dtU64, ids[:8], ids[8:])...)
				}
				return c.write(abc, name, 1, false, SemanticTokenID, fixedTensor(dtU64, ids))
			},
		}
		for what, enqueue := range wrong {
			msg := c.fails(status.InvalidArgument)(enqueue())
			assert.Contains(t, msg, reservedMessage(name), "%s, %s", name, what)
		}
		_, _, err := c.s.MapAttribute(MapRequest{Query: c.query(abc...), AttrName: name, Ordinal: 1, Semantic: SemanticTokenID,
			ElementSizes: map[bool][]uint64{true: {1, 1}}[array]})
		assert.Contains(t, status.MessageOf(err), reservedMessage(name), "%s: map with a semantic", name)
		// FORCE is refused too: the hook the attribute-mode check calls.
		sc := column.Schema{DType: dtU64, IsArray: array}
		require.NoError(t, checkReservedAttribute("", name, sc, false))
		err = checkReservedAttribute("writes[2]: ", name, sc, true)
		assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
		assert.Contains(t, status.MessageOf(err), "writes[2]: "+reservedMessage(name))
		assert.Empty(t, c.committed("/A", name), "nothing was written")
	}
	require.NoError(t, checkReservedAttribute("", "temperature", column.Schema{DType: dtF32}, true), "other names pass")
}

// usd-ancestor-types is a recorded token-id array: a row is the complete set (an empty row
// clears it), reads report is_array and semantic NONE, filters take HAS and CONTAINS, and it
// is independent of usd-prim-type.
func TestAncestorTypesIsARecordedTokenArray(t *testing.T) {
	c := newCStage(t)
	abc := []string{"/A", "/B", "/C"}
	xf, imageable, mesh := c.tok("Xformable"), c.tok("Imageable"), c.tok("Mesh")
	c.ok(c.write(abc, BuiltinPrimType, 1, false, SemanticNone, fixedTensor(dtU64, u64s(mesh, mesh, mesh))))
	c.ok(c.write(abc, BuiltinAncestorTypes, 1, true, SemanticNone,
		rowsTensors(dtU64, u64s(xf, imageable), u64s(imageable), u64s())...))
	c.ok(c.write(abc[:1], BuiltinAncestorTypes, 2, true, SemanticNone, rowsTensors(dtU64, u64s(imageable))...))
	assert.Equal(t, []uint64{imageable}, readU64s(c.value("/A", BuiltinAncestorTypes)), "a row replaces the whole set")
	assert.Equal(t, []uint64{}, readU64s(c.value("/C", BuiltinAncestorTypes)), "an empty row: no tags")
	assert.Equal(t, []uint64{mesh}, readU64s(c.value("/A", BuiltinPrimType)), "the prim type is untouched")

	c.seal(2)
	h, op, err := c.s.ReadAttributes(c.query(abc...), []uint64{c.tok(BuiltinAncestorTypes)}, OrdinalRange{End: 2})
	c.ok(op, err)
	g, err := c.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(t, err)
	assert.True(t, g.IsArray)
	assert.Equal(t, SemanticNone, g.Semantic)
	require.NoError(t, c.s.ReleaseGroup(g.ID))

	find := c.find
	anc := c.tok(BuiltinAncestorTypes)
	assert.Equal(t, []string{"/A", "/B"}, find(Predicate{Attr: anc, Op: OpContains, Values: []string{"Imageable"}}))
	assert.Equal(t, []string{"/A", "/B", "/C"}, find(Predicate{Attr: anc, Op: OpHas}))
	_, _, err = c.s.Query([]Predicate{{Attr: anc, Op: OpIn, Values: []string{"Imageable"}}}, nil)
	assert.Equal(t, status.NotSupported, status.CodeOf(err), "IN is not an ancestor-type operator")
}

// The recorded built-ins can be deleted like ordinary attributes; the change feed shows the
// tombstone.
func TestRecordedBuiltinsAreDeletable(t *testing.T) {
	c := newCStage(t)
	ab := []string{"/A", "/B"}
	x := c.tok("X")
	c.ok(c.write(ab, BuiltinPrimType, 1, false, SemanticNone, fixedTensor(dtU64, u64s(x, x))))
	c.ok(c.write(ab, BuiltinSchemas, 1, true, SemanticNone, rowsTensors(dtU64, u64s(x), u64s(x))...))
	c.ok(c.write(ab, BuiltinAncestorTypes, 1, true, SemanticNone, rowsTensors(dtU64, u64s(x), u64s(x))...))
	for _, name := range []string{BuiltinPrimType, BuiltinSchemas, BuiltinAncestorTypes} {
		c.ok(c.s.DeleteAttributes(DeleteRequest{Query: c.query("/A"), Tokens: []uint64{c.tok(name)}, Ordinal: 2}))
		assert.Empty(t, c.committed("/A", name), name)
		assert.NotEmpty(t, c.committed("/B", name), name)
	}
	c.seal(2)
	for _, name := range []string{BuiltinPrimType, BuiltinSchemas, BuiltinAncestorTypes} {
		assert.Equal(t, map[string][]int32{"/A": {SemanticNone}}, c.changes(ab, name, 2, 2), "%s: the tombstone", name)
	}
}

// usd-path, usd-parent, usd-children and usd-active are derived (or unsupported): writes,
// batch entries, deletes and maps are NOT_SUPPORTED with one message; usd-active is refused by
// reads and predicates too.
func TestDerivedBuiltinsCannotBeWrittenDeletedOrMapped(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/A"}, "t", 1, false, SemanticNone, fixedTensor(dtF32, f32s(1))))
	q := c.query("/A")
	for _, name := range []string{BuiltinPath, BuiltinParent, BuiltinChildren, BuiltinActive} {
		want := fmt.Sprintf("built-in attribute '%s' is derived on demand and cannot be written", name)
		msg := c.fails(status.NotSupported)(c.write([]string{"/A"}, name, 2, false, SemanticNone, fixedTensor(dtU64, u64s(1))))
		assert.Contains(t, msg, want)
		msg = c.fails(status.NotSupported)(c.s.WriteAttributes(q, 2, PrimModeUpsert, []WriteRequest{
			{AttrName: "t", Tensors: []tensor.Tensor{fixedTensor(dtF32, f32s(2))}},
			{AttrName: name, Tensors: []tensor.Tensor{fixedTensor(dtU64, u64s(1))}}}))
		assert.Contains(t, msg, "writes[1]: "+want)
		msg = c.fails(status.NotSupported)(c.s.DeleteAttributes(DeleteRequest{Query: q, Tokens: []uint64{c.tok(name)}, Ordinal: 2}))
		assert.Contains(t, msg, "attributes[0]: "+want)
		_, _, err := c.s.MapAttribute(MapRequest{Query: q, AttrName: name, Ordinal: 2, DType: dtU64})
		assert.Equal(t, status.NotSupported, status.CodeOf(err))
		assert.Contains(t, status.MessageOf(err), want)
	}
	assert.Equal(t, f32s(1), c.value("/A", "t"), "the rejected batch wrote nothing")
	_, _, err := c.s.ReadAttributes(q, []uint64{c.tok(BuiltinActive)}, OrdinalRange{End: 1})
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
	_, _, err = c.s.Query([]Predicate{{Attr: c.tok(BuiltinActive), Op: OpHas}}, nil)
	assert.Equal(t, status.NotSupported, status.CodeOf(err))
}

// A map of a reserved name without a dtype maps its canonical kind (the prims need not carry
// it yet), and the commit writes the complete tag set.
func TestReservedBuiltinMapWithoutDType(t *testing.T) {
	c := newCStage(t)
	a, b := c.tok("A"), c.tok("B")
	c.ok(c.write([]string{"/P"}, BuiltinSchemas, 1, true, SemanticNone, rowsTensors(dtU64, u64s(a, b))...))
	h, op, err := c.s.MapAttribute(MapRequest{Query: c.query("/P", "/Q"), AttrName: BuiltinSchemas, Ordinal: 2, ElementSizes: []uint64{1, 0}})
	c.ok(op, err)
	g, err := c.s.FetchMapNext(h, TimeoutInfinite)
	require.NoError(t, err)
	require.Len(t, g.Tensors, 2)
	assert.Equal(t, dtU64, g.Tensors[0].DType)
	copy(g.Tensors[0].Buffer.Bytes()[g.Tensors[0].ByteOffset:], u64s(b))
	c.ok(c.s.UnmapAttribute(h))
	assert.Equal(t, []uint64{b}, readU64s(c.value("/P", BuiltinSchemas)), "the row is the whole set: A is gone")
	assert.Equal(t, []uint64{}, readU64s(c.value("/Q", BuiltinSchemas)))
}

// RELATIONSHIP_PATH_ID may be fixed (exactly one target per prim) as well as an array.
func TestRelationshipPathIDMayBeFixed(t *testing.T) {
	c := newCStage(t)
	ab := []string{"/A", "/B"}
	c.ok(c.write(ab, "rel", 1, false, SemanticRelationshipPathID, fixedTensor(dtU64, u64s(c.path("/T1"), c.path("/T2")))))
	cells := c.committed("/B", "rel")
	require.Len(t, cells, 1)
	assert.Equal(t, column.Schema{DType: dtU64, Semantic: SemanticRelationshipPathID}, cells[0].schema)
	assert.Equal(t, []uint64{c.path("/T2")}, readU64s(cells[0].value))
	c.fails(status.InvalidArgument)(c.write(ab, "rel2", 1, false, SemanticRelationshipPathID, fixedTensor(dtU64x2, u64s(1, 2, 3, 4))))
}

// CONNECTION_PATH_ID may be fixed or an array, but a write gives each prim exactly one pair:
// an array row of another length is accepted at enqueue and fails when the write executes,
// writing nothing.
func TestConnectionPathIDWritesAreSingular(t *testing.T) {
	c := newCStage(t)
	ab := []string{"/A", "/B"}
	rgb := c.tok("outputs:rgb")
	one := func(p string) []byte { return u64s(c.path(p), rgb) }
	c.ok(c.write(ab, "fixedCon", 1, false, SemanticConnectionPathID, fixedTensor(dtU64x2, append(one("/S1"), one("/S2")...))))
	assert.Equal(t, one("/S2"), c.value("/B", "fixedCon"))
	c.ok(c.write(ab, "con", 1, true, SemanticConnectionPathID, rowsTensors(dtU64x2, one("/S1"), one("/S2"))...))
	assert.Equal(t, one("/S2"), c.value("/B", "con"))

	op, err := c.write(ab, "con", 2, true, SemanticConnectionPathID, rowsTensors(dtU64x2, append(one("/X"), one("/Y")...), one("/Z"))...)
	require.NoError(t, err, "accepted at enqueue")
	require.NotZero(t, op)
	msg := c.fails(status.OpFailed)(op, nil)
	assert.Contains(t, msg, "CONNECTION_PATH_ID per-prim writes require exactly one connection element (prim_index=0, elements=2)")
	assert.Equal(t, one("/S1"), c.value("/A", "con"), "nothing was written")
	assert.Equal(t, one("/S2"), c.value("/B", "con"))

	// A packed payload of two pairs per row, and an empty row, fail the same way.
	msg = c.fails(status.OpFailed)(c.write(ab, "packed", 2, true, SemanticConnectionPathID,
		fixedTensor(dtU64x2, append(append(one("/X"), one("/Y")...), append(one("/Z"), one("/W")...)...))))
	assert.Contains(t, msg, "elements=2")
	msg = c.fails(status.OpFailed)(c.write(ab, "con", 2, true, SemanticConnectionPathID, rowsTensors(dtU64x2, one("/X"), nil)...))
	assert.Contains(t, msg, "prim_index=1, elements=0")
	assert.Empty(t, c.committed("/A", "packed"))

	// A map commit is a write: a ragged map of two pairs fails when it commits.
	h, mop, err := c.s.MapAttribute(MapRequest{Query: c.query("/A"), AttrName: "con", Ordinal: 3, DType: dtU64x2,
		Semantic: SemanticConnectionPathID, ElementSizes: []uint64{2}})
	c.ok(mop, err)
	msg = c.fails(status.OpFailed)(c.s.UnmapAttribute(h))
	assert.Contains(t, msg, "elements=2")
	assert.Equal(t, one("/S1"), c.value("/A", "con"))
}

// A prim may carry an attribute's connection next to its value under the same name: they are
// separate columns, and a write of one never lands in, or conflicts with, the other.
func TestConnectionAndValueOfOneNameCoexist(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/A"}, "in", 1, false, SemanticNone, fixedTensor(dtF32, f32s(0.5))))
	c.ok(c.write([]string{"/A"}, "in", 1, true, SemanticConnectionPathID, rowsTensors(dtU64x2, u64s(c.path("/S"), c.tok("out")))...))
	cells := c.committed("/A", "in")
	require.Len(t, cells, 2)
	c.ok(c.write([]string{"/A"}, "in", 2, false, SemanticNone, fixedTensor(dtF32, f32s(0.75))))
	// A second value of another type still conflicts with the value (not with the connection).
	c.fails(status.InvalidArgument)(c.write([]string{"/A"}, "in", 2, false, SemanticNone, fixedTensor(dtI32, i32s(1))))
	byConnection := map[bool][]byte{}
	for _, cl := range c.committed("/A", "in") {
		byConnection[isConnection(cl.schema)] = cl.value
	}
	assert.Equal(t, f32s(0.75), byConnection[false])
	assert.Equal(t, u64s(c.path("/S"), c.tok("out")), byConnection[true])
	c.seal(2)
	assert.ElementsMatch(t, []int32{SemanticNone, SemanticConnectionPathID}, c.changes([]string{"/A"}, "in", 1, 2)["/A"],
		"a read returns one group per column")
}

// STRING rows are their bytes: a trailing NUL is data, kept on the way back.
func TestStringRowsKeepATrailingNUL(t *testing.T) {
	c := newCStage(t)
	c.ok(c.write([]string{"/A", "/B"}, "label", 1, true, SemanticString, rowsTensors(dtU8, []byte("hi\x00"), []byte(""))...))
	assert.Equal(t, []byte("hi\x00"), c.value("/A", "label"))
	assert.Equal(t, []byte{}, c.value("/B", "label"))
}

// QUATERNION values are (x, y, z, w) lanes, stored and returned in that order (the engine never
// reorders them); PATH_EXPRESSION_STRING takes one token id per element, scalar or array;
// ASSET_PATH_ID an (authored, resolved) token pair.
func TestQuaternionPathExpressionAndAssetLayouts(t *testing.T) {
	c := newCStage(t)
	quat := tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 4}
	c.ok(c.write([]string{"/A"}, "orient", 1, false, SemanticQuaternion, fixedTensor(quat, f32s(0.1, 0.2, 0.3, 0.9))))
	assert.Equal(t, f32s(0.1, 0.2, 0.3, 0.9), c.value("/A", "orient"))
	c.ok(c.write([]string{"/A"}, "expr", 1, false, SemanticPathExpressionString, fixedTensor(dtU64, u64s(c.tok("/W/*")))))
	c.ok(c.write([]string{"/A"}, "exprs", 1, true, SemanticPathExpressionString, rowsTensors(dtU64, u64s(1, 2))...))
	c.fails(status.InvalidArgument)(c.write([]string{"/A"}, "bad", 1, false, SemanticPathExpressionString, fixedTensor(dtU64x2, u64s(1, 2))))
	c.ok(c.write([]string{"/A"}, "asset", 1, false, SemanticAssetPathID, fixedTensor(dtU64x2, u64s(c.tok("a.usd"), 0))))
	c.fails(status.InvalidArgument)(c.write([]string{"/A"}, "bad", 1, false, SemanticAssetPathID, fixedTensor(dtU64, u64s(1))))
}
