package core

import (
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// groupSummary is what a test checks of a read group.
type groupSummary struct {
	prims    []string
	isDelete bool
	semantic int32
	dtype    tensor.DType
}

// groupsOf reads attr over q in rng and summarizes the groups (sorted: tombstones first, then
// by dtype), keeping them fetched until the test ends when keep is set.
func (f *fixture) groupsOf(q uint64, attr string, rng OrdinalRange, keep bool) ([]groupSummary, []*Group) {
	f.t.Helper()
	h, op, err := f.s.ReadAttributes(q, []uint64{f.token(attr)}, rng)
	require.NoError(f.t, err)
	f.wait(op)
	var out []groupSummary
	var groups []*Group
	for {
		g, err := f.s.FetchReadNext(h, TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		require.NoError(f.t, err)
		paths, err := f.s.Dictionary().ListPaths(g.PrimList)
		require.NoError(f.t, err)
		sum := groupSummary{isDelete: g.IsDelete, semantic: g.Semantic}
		if len(g.Tensors) > 0 {
			sum.dtype = g.Tensors[0].DType
		}
		for k := 0; k < int(g.PrimCount); k++ {
			idx := int(g.PrimOffset) + k
			if g.PrimIndexMap != nil {
				idx = int(g.PrimIndexMap[k])
			}
			sum.prims = append(sum.prims, f.pathString(paths[idx]))
		}
		sort.Strings(sum.prims)
		out = append(out, sum)
		if keep {
			groups = append(groups, g)
			id := g.ID
			f.t.Cleanup(func() { _ = f.s.ReleaseGroup(id) })
		} else {
			require.NoError(f.t, f.s.ReleaseGroup(g.ID))
		}
	}
	_, err = f.s.ReleaseRead(h)
	require.NoError(f.t, err)
	sort.Slice(out, func(i, j int) bool {
		if out[i].isDelete != out[j].isDelete {
			return out[i].isDelete
		}
		return out[i].dtype.Code < out[j].dtype.Code
	})
	return out, groups
}

var (
	f32Type = tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}
	i32Type = tensor.DType{Code: tensor.CodeInt, Bits: 32, Lanes: 1}
)

const (
	semanticPoint int32 = 5
	semanticColor int32 = 8
)

// An empty write_attributes batch, and writes to a query with no prims, are accepted.
func TestEmptyBatchAndEmptyQueryAreAccepted(t *testing.T) {
	f := newFixture(t)
	f.mustSucceed(f.s.WriteAttributes(f.query, 1, PrimModeUpsert, nil))
	_, err := f.s.WriteAttributes(12345, 1, PrimModeUpsert, nil)
	assert.Equal(t, status.InvalidHandle, status.CodeOf(err), "the query handle is still checked")
	empty := f.queryOf()
	f.mustSucceed(f.s.WriteAttributes(empty, 2, PrimModeUpsert, []WriteRequest{
		{AttrName: "x", Tensors: []tensor.Tensor{f32Tensor([]float32{1})}}}))
	f.mustSucceed(f.writeF32(empty, "x", 2, 1))
}

// Two entries may write one attribute when their prims do not overlap (here by masks).
func TestBatchSameAttributeWithDisjointPrims(t *testing.T) {
	for _, policy := range allPolicies {
		f := newPolicyFixture(t, policy)
		q := f.queryOf("/B/A", "/B/B")
		f.mustSucceed(f.s.WriteAttributes(q, 1, PrimModeUpsert, []WriteRequest{
			{AttrName: "x", Count: 2, Mask: []uint64{0b01}, HasMask: true, Tensors: []tensor.Tensor{f32Tensor([]float32{1, 0})}},
			{AttrName: "x", Count: 2, Mask: []uint64{0b10}, HasMask: true, Tensors: []tensor.Tensor{f32Tensor([]float32{0, 2})}}}))
		assert.Equal(t, map[string]float32{"/B/A": 1, "/B/B": 2}, f.latestF32(q, "x", 1), policy)
	}
}

// Writing one (prim, attribute) twice in a batch, or one attribute with two column identities,
// is INVALID_ARGUMENT naming them; with an unresolved query the cell check runs before the
// first entry applies.
func TestBatchRepeatedCellAndIncompatibleIdentities(t *testing.T) {
	f := newFixture(t, "/B/A", "/B/B")
	twice := []WriteRequest{
		{AttrName: "y", Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2})}},
		{AttrName: "other", Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2})}},
		{AttrName: "y", Count: 1, Tensors: []tensor.Tensor{f32Tensor([]float32{3})}}}
	_, err := f.s.WriteAttributes(f.query, 1, PrimModeUpsert, twice)
	require.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.ErrorContains(t, err, "write_attributes: repeated concrete write target for prim '/B/A' and canonical attribute 'y'")

	_, err = f.s.WriteAttributes(f.query, 1, PrimModeUpsert, []WriteRequest{
		{AttrName: "z", Count: 1, Tensors: []tensor.Tensor{f32Tensor([]float32{1})}},
		{AttrName: "z", Count: 2, Mask: []uint64{0b10}, HasMask: true, Tensors: []tensor.Tensor{i32Tensor([]int32{0, 2})}}})
	require.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.ErrorContains(t, err, `descriptors for canonical attribute "z" declare incompatible column identities`)

	// The same repeated cell through a query resolved only after the enqueue: the op fails,
	// and its first entry did not apply.
	f.mustSucceed(f.write(1, []float32{1, 2}))
	q, release := f.pendingQuery(t)
	op, err := f.s.WriteAttributes(q, 2, PrimModeUpsert, twice)
	require.NoError(t, err)
	release()
	got := f.outcome(op)
	require.Equal(t, status.InvalidArgument, status.CodeOf(got))
	assert.Contains(t, status.MessageOf(got), "repeated concrete write target")
	assert.Empty(t, f.latestF32(f.query, "y", 2), "nothing of the batch applied")
}

// Ordinal admission covers the whole batch before its first entry applies.
func TestBatchIsAdmittedAsAWhole(t *testing.T) {
	f := newPolicyFixture(t, AdmissionNondecreasing)
	q := f.queryOf("/B/A")
	f.mustSucceed(f.writeF32(q, "x", 5, 1))
	op, err := f.s.WriteAttributes(q, 3, PrimModeUpsert, []WriteRequest{
		{AttrName: "y", Tensors: []tensor.Tensor{f32Tensor([]float32{2})}},
		{AttrName: "x", Tensors: []tensor.Tensor{f32Tensor([]float32{3})}}})
	require.NoError(t, err)
	got := f.outcome(op)
	require.Equal(t, status.WriteFloorViolation, status.CodeOf(got))
	assert.Contains(t, status.MessageOf(got), `write_attributes: writes[1]: ordinal conflict for requested attribute "x"`)
	assert.Empty(t, f.latestF32(q, "y", 5), "entry 0 was not applied")
}

// A partial FORCE replaces the schema of the target prims only; a change range over its
// ordinal shows the old schema's tombstone and the new value, a latest read the new schema.
func TestForceReplacesTheSchemaOfTargetPrims(t *testing.T) {
	f := newFixture(t)
	both, a := f.queryOf("/F/A", "/F/B"), f.queryOf("/F/A")
	f.mustSucceed(f.s.WriteAttribute(WriteRequest{Query: both, AttrName: "x", Ordinal: 1, Semantic: semanticPoint,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2})}}))
	_, err := f.s.WriteAttribute(WriteRequest{Query: a, AttrName: "x", Ordinal: 2, Tensors: []tensor.Tensor{i32Tensor([]int32{7})}})
	require.Equal(t, status.InvalidArgument, status.CodeOf(err), "REJECT refuses the schema change at enqueue")
	f.mustSucceed(f.s.WriteAttribute(WriteRequest{Query: a, AttrName: "x", Ordinal: 2, AttributeMode: AttributeModeForce,
		Tensors: []tensor.Tensor{i32Tensor([]int32{7})}}))
	f.seal(2)
	latest, _ := f.groupsOf(both, "x", OrdinalRange{End: 2}, false)
	assert.Equal(t, []groupSummary{
		{prims: []string{"/F/B"}, semantic: semanticPoint, dtype: f32Type},
		{prims: []string{"/F/A"}, semantic: SemanticNone, dtype: i32Type},
	}, sortByDType(latest), "a group per schema; the new column has no role")
	changes, _ := f.groupsOf(both, "x", OrdinalRange{Start: 2, End: 2, HasStart: true}, false)
	assert.Equal(t, []groupSummary{
		{prims: []string{"/F/A"}, isDelete: true, semantic: semanticPoint},
		{prims: []string{"/F/A"}, semantic: SemanticNone, dtype: i32Type},
	}, changes, "the old schema's termination and the new value, at the FORCE ordinal")
}

func sortByDType(gs []groupSummary) []groupSummary {
	out := slices.Clone(gs)
	sort.Slice(out, func(i, j int) bool { return out[i].dtype.Code > out[j].dtype.Code })
	return out
}

// The role rules: NONE keeps the role when the storage stays; a non-NONE semantic replaces
// the role even on the same storage.
func TestForceRoleRules(t *testing.T) {
	f := newFixture(t)
	q := f.queryOf("/F/R")
	f.mustSucceed(f.s.WriteAttribute(WriteRequest{Query: q, AttrName: "p", Ordinal: 1, Semantic: semanticPoint,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1})}}))
	f.mustSucceed(f.s.WriteAttribute(WriteRequest{Query: q, AttrName: "p", Ordinal: 2, AttributeMode: AttributeModeForce,
		Tensors: []tensor.Tensor{f32Tensor([]float32{2})}}))
	f.seal(2)
	got, _ := f.groupsOf(q, "p", OrdinalRange{End: 2}, false)
	assert.Equal(t, []groupSummary{{prims: []string{"/F/R"}, semantic: semanticPoint, dtype: f32Type}}, got, "NONE on the same storage keeps POINT")
	f.mustSucceed(f.s.WriteAttribute(WriteRequest{Query: q, AttrName: "p", Ordinal: 3, Semantic: semanticColor, AttributeMode: AttributeModeForce,
		Tensors: []tensor.Tensor{f32Tensor([]float32{3})}}))
	f.seal(3)
	got, _ = f.groupsOf(q, "p", OrdinalRange{End: 3}, false)
	assert.Equal(t, []groupSummary{{prims: []string{"/F/R"}, semantic: semanticColor, dtype: f32Type}}, got, "POINT -> COLOR")
	got, _ = f.groupsOf(q, "p", OrdinalRange{Start: 3, End: 3, HasStart: true}, false)
	assert.Equal(t, []groupSummary{
		{prims: []string{"/F/R"}, isDelete: true, semantic: semanticPoint},
		{prims: []string{"/F/R"}, semantic: semanticColor, dtype: f32Type},
	}, got)
}

// Bad attribute modes and FORCE on reserved metadata are refused synchronously.
func TestForceArgumentChecks(t *testing.T) {
	f := newFixture(t)
	_, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: "x", Ordinal: 1, AttributeMode: 2,
		Tensors: []tensor.Tensor{f32Tensor([]float32{1, 2, 3})}})
	require.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.ErrorContains(t, err, "attribute_mode: 2 is not an attribute mode (REJECT=0, FORCE=1)")
	tok := []uint64{1, 2, 3}
	for _, name := range []string{BuiltinPrimType, BuiltinSchemas, "usd-ancestor-types"} {
		_, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: name, Ordinal: 1, AttributeMode: AttributeModeForce,
			IsArray: name != BuiltinPrimType, Tensors: []tensor.Tensor{u64Tensor(tok)}})
		require.Equal(t, status.InvalidArgument, status.CodeOf(err), name)
		assert.ErrorContains(t, err, "reserved attribute '"+name+"' requires its canonical kind, semantic NONE and attribute_mode REJECT")
	}
	_, _, err = f.s.MapAttribute(MapRequest{Query: f.query, AttrName: "x", Ordinal: 1, AttributeMode: AttributeModeForce})
	require.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.ErrorContains(t, err, "map_attribute: attribute_mode FORCE requires dtype")
	_, _, err = f.s.MapAttribute(MapRequest{Query: f.query, AttrName: "x", Ordinal: 1, AttributeMode: -1, DType: f32Type})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
}

// A live read group over a replaced prim keeps its view (copy-on-write), so FORCE succeeds.
func TestForceKeepsALiveReadGroupIntact(t *testing.T) {
	f := newFixture(t)
	q := f.queryOf("/F/G")
	f.mustSucceed(f.writeF32(q, "x", 1, 4.5))
	f.seal(1)
	_, groups := f.groupsOf(q, "x", OrdinalRange{End: 1}, true)
	require.Len(t, groups, 1)
	f.mustSucceed(f.s.WriteAttribute(WriteRequest{Query: q, AttrName: "x", Ordinal: 2, AttributeMode: AttributeModeForce,
		Tensors: []tensor.Tensor{i32Tensor([]int32{9})}}))
	f.seal(2)
	assert.Equal(t, []float32{4.5}, tensorF32(groups[0].Tensors[0]), "the held group still shows its snapshot")
}

// FORCE passes ordinal admission with the write; and it cannot end a schema whose value is
// ordered after it (FLOOR_ONLY: the old value would outlive the replacement).
func TestForceAdmission(t *testing.T) {
	f := newPolicyFixture(t, AdmissionNondecreasing)
	q := f.queryOf("/F/N")
	f.mustSucceed(f.writeF32(q, "x", 5, 1))
	op, err := f.s.WriteAttribute(WriteRequest{Query: q, AttrName: "x", Ordinal: 3, AttributeMode: AttributeModeForce,
		Tensors: []tensor.Tensor{i32Tensor([]int32{9})}})
	require.NoError(t, err)
	assert.Equal(t, status.WriteFloorViolation, status.CodeOf(f.outcome(op)))

	g := newPolicyFixture(t, AdmissionFloorOnly)
	q = g.queryOf("/F/N")
	g.mustSucceed(g.writeF32(q, "x", 5, 1))
	op, err = g.s.WriteAttribute(WriteRequest{Query: q, AttrName: "x", Ordinal: 3, AttributeMode: AttributeModeForce,
		Tensors: []tensor.Tensor{i32Tensor([]int32{9})}})
	require.NoError(t, err)
	got := g.outcome(op)
	require.Equal(t, status.InvalidArgument, status.CodeOf(got))
	assert.Contains(t, status.MessageOf(got), "FORCE replaces only older schemas")
	assert.Equal(t, map[string]float32{"/F/N": 1}, g.latestF32(q, "x", 5), "nothing was replaced")
}

// A FORCE map needs a dtype; its setup tolerates prims of another schema (starting them from
// zeros) and its commit replaces their schema at the session ordinal.
func TestForceMapReplacesPerCommit(t *testing.T) {
	f := newFixture(t)
	q := f.queryOf("/F/M")
	f.mustSucceed(f.writeF32(q, "x", 1, 1.5))
	_, _, err := f.s.MapAttribute(MapRequest{Query: q, AttrName: "x", Ordinal: 2, DType: i32Type})
	require.NoError(t, err) // REJECT: the setup fails when it runs
	h, op, err := f.s.MapAttribute(MapRequest{Query: q, AttrName: "x", Ordinal: 3, DType: i32Type, AttributeMode: AttributeModeForce})
	require.NoError(t, err)
	require.NoError(t, f.outcome(op))
	g, err := f.s.FetchMapNext(h, TimeoutInfinite)
	require.NoError(t, err)
	buf := g.Tensors[0].Buffer.Bytes()
	assert.Equal(t, []byte{0, 0, 0, 0}, buf[:4], "a prim of another schema starts from zeros")
	buf[0] = 11
	f.mustSucceed(f.s.UnmapAttribute(h))
	f.seal(3)
	got, _ := f.groupsOf(q, "x", OrdinalRange{Start: 3, End: 3, HasStart: true}, false)
	assert.Equal(t, []groupSummary{
		{prims: []string{"/F/M"}, isDelete: true},
		{prims: []string{"/F/M"}, dtype: i32Type},
	}, got)
}

// FORCE replaces the schema of the channel it writes only: a value forced to another type
// next to a connection of the same name leaves the connection as it was.
func TestForceKeepsTheOtherChannelOfAName(t *testing.T) {
	c := newCStage(t)
	conn := u64s(c.path("/S"), c.tok("out"))
	c.ok(c.write([]string{"/A"}, "in", 1, false, SemanticNone, fixedTensor(dtF32, f32s(0.5))))
	c.ok(c.write([]string{"/A"}, "in", 1, true, SemanticConnectionPathID, rowsTensors(dtU64x2, conn)...))
	c.ok(c.s.WriteAttribute(WriteRequest{Query: c.query("/A"), AttrName: "in", Ordinal: 2,
		AttributeMode: AttributeModeForce, Tensors: []tensor.Tensor{fixedTensor(dtI32, i32s(7))}}))
	byConnection := map[bool][]byte{}
	for _, cl := range c.committed("/A", "in") {
		byConnection[isConnection(cl.schema)] = cl.value
	}
	assert.Equal(t, i32s(7), byConnection[false], "the value's schema was replaced")
	assert.Equal(t, conn, byConnection[true], "the connection is untouched")
}
