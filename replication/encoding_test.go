package replication

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/tensor"
)

func sampleArray() core.ColumnChanges {
	return core.ColumnChanges{Attribute: "points", IsArray: true, DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 3},
		Semantic: 2, Exact: true, Paths: []string{"/World/a", "/World/ab", "/World/b", "/Other"},
		Ordinals: []uint64{3, 4, 4, 5}, Deleted: []bool{false, true, false, false},
		Lengths: []int64{1, 0, 2}, Values: make([]byte, 3*12)}
}

func TestDataRoundTripsAndSplits(t *testing.T) {
	c := sampleArray()
	for i := range c.Values {
		c.Values[i] = byte(i)
	}
	whole, err := splitColumn("ep", 7, &c, 1<<20, nil)
	require.NoError(t, err)
	require.Len(t, whole, 1)
	kind, r, err := decodeKind(whole[0])
	require.NoError(t, err)
	require.Equal(t, uint8(kindData), kind)
	m, err := decodeData(r)
	require.NoError(t, err)
	require.Equal(t, "ep", m.Epoch)
	require.Equal(t, uint64(7), m.Seq)
	require.Equal(t, c, m.Changes)

	// A small limit splits the entries over several messages that concatenate back.
	parts, err := splitColumn("ep", 7, &c, 340, nil)
	require.NoError(t, err)
	require.Greater(t, len(parts), 1)
	var got core.ColumnChanges
	for _, p := range parts {
		require.LessOrEqual(t, len(p), 340)
		_, r, err := decodeKind(p)
		require.NoError(t, err)
		m, err := decodeData(r)
		require.NoError(t, err)
		got.Paths = append(got.Paths, m.Changes.Paths...)
		got.Ordinals = append(got.Ordinals, m.Changes.Ordinals...)
		got.Deleted = append(got.Deleted, m.Changes.Deleted...)
		got.Lengths = append(got.Lengths, m.Changes.Lengths...)
		got.Values = append(got.Values, m.Changes.Values...)
	}
	require.Equal(t, c.Paths, got.Paths)
	require.Equal(t, c.Ordinals, got.Ordinals)
	require.Equal(t, c.Deleted, got.Deleted)
	require.Equal(t, c.Lengths, got.Lengths)
	require.Equal(t, c.Values, got.Values)
}

func TestValueOverLimitIsAnError(t *testing.T) {
	c := sampleArray()
	_, err := splitColumn("ep", 1, &c, 100, nil)
	require.ErrorContains(t, err, "exceeds the server's message limit")
}

func TestFloorRoundTrips(t *testing.T) {
	in := floorMsg{Epoch: "e", Seq: 3, Ordinal: 9, Attributes: []string{"a", "b"}, Parts: 4, Nanos: -5}
	_, r, err := decodeKind(encodeFloor(in))
	require.NoError(t, err)
	out, err := decodeFloor(r)
	require.NoError(t, err)
	require.Equal(t, in, out)
}

func TestCorruptMessagesAreErrorsNotPanics(t *testing.T) {
	c := sampleArray()
	parts, err := splitColumn("ep", 1, &c, 1<<20, nil)
	require.NoError(t, err)
	good := parts[0]
	for n := 0; n < len(good); n++ {
		kind, r, err := decodeKind(good[:n])
		if err != nil {
			continue
		}
		require.Equal(t, uint8(kindData), kind)
		_, err = decodeData(r)
		require.ErrorIs(t, err, errCorrupt, "prefix of %d bytes", n)
	}
	bad := append([]byte(nil), good...)
	bad[len(magic)] = 9
	_, _, err = decodeKind(bad)
	require.ErrorContains(t, err, "format version 9")
}

func TestNames(t *testing.T) {
	n, err := namesOf("sim_1")
	require.NoError(t, err)
	require.Equal(t, "OVSTAGE_sim_1", n.stream)
	require.Equal(t, "ovstage.sim_1.data", n.data)
	require.Equal(t, "OVSTAGE-OWNER_sim_1", n.ownerStream)
	require.Equal(t, "OVSTAGE-SNAP_sim_1", n.snapshots)
	for _, bad := range []string{"", "a.b", "a b", "a*", "a>"} {
		_, err := namesOf(bad)
		require.Error(t, err, bad)
	}
	require.ErrorContains(t, checkURL("http://x:1"), "scheme")
	require.NoError(t, checkURL("nats://u:p@127.0.0.1:4222,tls://h:1"))
	require.Equal(t, "nats://%2A%2A%2A@h:1", redact("nats://u:secret@h:1"))
}

func TestRepeatedPathsAreSentOnce(t *testing.T) {
	c := sampleArray()
	memo := pathMemo{}
	first, err := splitColumn("ep", 1, &c, 1<<20, memo)
	require.NoError(t, err)
	again, err := splitColumn("ep", 2, &c, 1<<20, memo)
	require.NoError(t, err)
	require.Less(t, len(again[0]), len(first[0]))

	r := &Replica{known: map[memoKey]*knownPaths{}}
	for i, b := range [][]byte{first[0], again[0]} {
		_, rd, err := decodeKind(b)
		require.NoError(t, err)
		m, err := decodeData(rd)
		require.NoError(t, err)
		require.Equal(t, i == 1, m.SamePaths)
		_, err = r.pathsOf(&m)
		require.NoError(t, err)
		require.Equal(t, c.Paths, m.Changes.Paths)
	}
	// A reference to paths never seen is an error.
	_, rd, _ := decodeKind(again[0])
	m, err := decodeData(rd)
	require.NoError(t, err)
	_, err = (&Replica{known: map[memoKey]*knownPaths{}}).pathsOf(&m)
	require.ErrorIs(t, err, errCorrupt)

	c.Paths = append([]string{"/World/changed"}, c.Paths[1:]...)
	third, err := splitColumn("ep", 3, &c, 1<<20, memo)
	require.NoError(t, err)
	_, rd, _ = decodeKind(third[0])
	m, err = decodeData(rd)
	require.NoError(t, err)
	require.False(t, m.SamePaths)
}
