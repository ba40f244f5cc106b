package replication

import (
	"context"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core"
)

// limitedPrimary publishes a new stage through an embedded server to a stream of at most
// maxMsgs messages (0: no limit), snapshotting every `every` advances (0: on request only).
func limitedPrimary(t *testing.T, name string, maxMsgs int64, every int) (*core.Stage, *Publisher) {
	t.Helper()
	s := core.NewStage(name, core.Config{})
	t.Cleanup(s.Destroy)
	pub, err := Publish(s, PublishOptions{MaxMsgs: maxMsgs, SnapshotEvery: every})
	require.NoError(t, err)
	t.Cleanup(pub.Close)
	return s, pub
}

// requireDropped checks that the stream no longer holds its first message.
func requireDropped(t *testing.T, pub *Publisher) {
	t.Helper()
	info, err := pub.stream.Info(context.Background())
	require.NoError(t, err)
	require.Greater(t, info.State.FirstSeq, uint64(1), "the stream's limit dropped its first messages")
}

// TestLateReplicaConvergesViaSnapshot: the stream keeps 20 messages of 80 advances; a replica
// started after them loads the newest snapshot, then the stream, and seals what the primary
// sealed at every later floor, also of advances made while it follows (each one applied
// before the next: a replica further behind than the stream holds stops, see
// docs/replication.md).
func TestLateReplicaConvergesViaSnapshot(t *testing.T) {
	primary, pub := limitedPrimary(t, "late", 20, 5)
	rng := rand.New(rand.NewPCG(3, 4))
	model := visible{}
	states := randomAdvances(t, primary, rng, model, 1, 80)
	waitFor(t, "the advances to be published", func() bool { return pub.Status().Ordinal == 80 })
	waitFor(t, "a snapshot", func() bool { return pub.Status().SnapshotOrdinal >= 70 })
	requireDropped(t, pub)

	seen, rep := mirrorOf(t, pub.URL(), "late")
	applied := func(o uint64) func() bool {
		return func() bool { st := rep.Status(); return st.Ordinal == o || st.Failed }
	}
	waitFor(t, "the late replica", applied(80))
	for o := uint64(81); o <= 95; o++ { // live, each advance within the stream's limit
		maps.Copy(states, randomAdvances(t, primary, rng, model, o, o))
		waitFor(t, "the replica to follow", applied(o))
	}
	st := rep.Status()
	require.False(t, st.Failed, st.LastError)
	require.GreaterOrEqual(t, st.SnapshotOrdinal, uint64(70))
	require.LessOrEqual(t, st.SnapshotOrdinal, uint64(80))
	requireSealed(t, states, seen, st.SnapshotOrdinal, 95)
}

// TestSnapshotOnRequest: Snapshot() stores the state at once (no periodic snapshots), and a
// late replica starts from it.
func TestSnapshotOnRequest(t *testing.T) {
	primary, pub := limitedPrimary(t, "asked", 10, 0)
	states := randomAdvances(t, primary, rand.New(rand.NewPCG(5, 6)), visible{}, 1, 30)
	waitFor(t, "the advances to be published", func() bool { return pub.Status().Ordinal == 30 })
	require.Zero(t, pub.Status().Snapshots)
	require.NoError(t, pub.Snapshot(10*time.Second))
	require.Equal(t, uint64(1), pub.Status().Snapshots)
	requireDropped(t, pub)

	seen, rep := mirrorOf(t, pub.URL(), "asked")
	waitFor(t, "the late replica", func() bool { return rep.Status().Ordinal == 30 })
	require.Equal(t, uint64(30), rep.Status().SnapshotOrdinal)
	requireSealed(t, states, seen, 30, 30)
}

// TestLateReplicaWithoutSnapshot: when the stream dropped advances and no snapshot exists,
// the replica refuses to start, saying so.
func TestLateReplicaWithoutSnapshot(t *testing.T) {
	primary, pub := limitedPrimary(t, "nosnap", 10, 0)
	randomAdvances(t, primary, rand.New(rand.NewPCG(7, 8)), visible{}, 1, 20)
	waitFor(t, "the advances to be published", func() bool { return pub.Status().Ordinal == 20 })
	mirror := core.NewStage("nosnap", core.Config{})
	t.Cleanup(mirror.Destroy)
	_, err := StartReplica(mirror, pub.URL(), "nosnap")
	require.ErrorContains(t, err, "no snapshot is published")
}
