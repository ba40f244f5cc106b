package replication

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/tensor"
)

var u64 = tensor.DType{Code: tensor.CodeUInt, Bits: 64, Lanes: 1}

// tokensOf interns names in s and returns their ids.
func tokensOf(t *testing.T, s *core.Stage, names ...string) []uint64 {
	t.Helper()
	out := make([]uint64, len(names))
	for i, n := range names {
		tok, err := s.Dictionary().InternToken(n)
		require.NoError(t, err)
		out[i] = tok
	}
	return out
}

// stringsOf decodes token-id bytes of s's dictionary into their strings.
func stringsOf(t *testing.T, s *core.Stage, b string) []string {
	t.Helper()
	var out []string
	for i := 0; i+8 <= len(b); i += 8 {
		str, err := s.Dictionary().TokenString(binary.LittleEndian.Uint64([]byte(b[i:])))
		require.NoError(t, err)
		out = append(out, str)
	}
	return out
}

// TestTokenBuiltinsReplicate: prim types and applied schemas arrive as the same strings,
// held as the replica's own token ids (which differ from the primary's here).
func TestTokenBuiltinsReplicate(t *testing.T) {
	s, pub := limitedPrimary(t, "typed", 0, 0)
	tokensOf(t, s, "pad0", "pad1", "pad2") // the primary's ids are not the replica's
	mirror, seen, rep := newMirror(t, pub.URL(), "typed")

	types := tokensOf(t, s, "Mesh", "Xform")
	op, err := s.WriteAttribute(core.WriteRequest{Query: queryOf(t, s, []string{"/A", "/B"}), AttrName: core.BuiltinPrimType, Ordinal: 1,
		Tensors: []tensor.Tensor{{Data: unsafe.Pointer(&types[0]), DeviceType: tensor.DeviceCPU, DType: u64, Shape: []int64{2}}}})
	must(t, s, op, err)
	schemas := tokensOf(t, s, "PhysicsAPI", "MaterialBindingAPI")
	op, err = s.WriteAttribute(core.WriteRequest{Query: queryOf(t, s, []string{"/A"}), AttrName: core.BuiltinSchemas, Ordinal: 1, IsArray: true,
		Tensors: []tensor.Tensor{{Data: unsafe.Pointer(&schemas[0]), DeviceType: tensor.DeviceCPU, DType: u64, Shape: []int64{2}}}})
	must(t, s, op, err)
	op, err = s.AdvanceWriteFloor(1, core.ScopeAll, nil)
	must(t, s, op, err)

	waitFor(t, "the replica", func() bool { st := rep.Status(); return st.Ordinal == 1 || st.Failed })
	require.False(t, rep.Status().Failed, rep.Status().LastError)
	got, _ := seen(1)
	require.Equal(t, []string{"Mesh"}, stringsOf(t, mirror, got[core.BuiltinPrimType]["/A"]))
	require.Equal(t, []string{"Xform"}, stringsOf(t, mirror, got[core.BuiltinPrimType]["/B"]))
	require.Equal(t, []string{"PhysicsAPI", "MaterialBindingAPI"}, stringsOf(t, mirror, got[core.BuiltinSchemas]["/A"]))
	mesh := tokensOf(t, mirror, "Mesh")[0]
	require.NotEqual(t, types[0], mesh, "the test needs the two dictionaries to differ")
}
