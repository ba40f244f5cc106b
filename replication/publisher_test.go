package replication

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core"
)

// TestResendStoresEachMessageOnceInOrder: after a failure the window is published again;
// the messages the stream already holds (their acknowledgements lost) are not stored twice,
// the rest follow them in order.
func TestResendStoresEachMessageOnceInOrder(t *testing.T) {
	s := core.NewStage("resend", core.Config{})
	t.Cleanup(s.Destroy)
	pub, err := Publish(s, PublishOptions{})
	require.NoError(t, err)
	t.Cleanup(pub.Close)
	msgs := make([]message, 4)
	for i := range msgs {
		msgs[i] = message{subject: pub.n.data, id: fmt.Sprintf("test.%d", i), data: []byte{byte(i)}}
	}
	ctx := context.Background()
	last := pub.startSeq
	for _, m := range msgs[:2] { // these two reached the stream
		ack, err := pub.js.Publish(ctx, m.subject, m.data, jetstream.WithMsgID(m.id), jetstream.WithExpectLastSequence(last))
		require.NoError(t, err)
		last = ack.Sequence
	}
	w := &window{last: last + 7} // a prediction gone wrong, as after a failure
	for _, m := range msgs {
		w.flights = append(w.flights, flight{m: m, adv: &sentAdvance{ordinal: uint64(len(w.flights) + 1)}})
	}
	require.True(t, pub.resend(w, errors.New("acknowledgements lost")))
	require.Empty(t, w.flights)
	info, err := pub.stream.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, pub.startSeq+4, info.State.LastSeq, "each message stored once")
	for i := range msgs {
		m, err := pub.stream.GetMsg(ctx, pub.startSeq+uint64(i)+1)
		require.NoError(t, err)
		require.Equal(t, msgs[i].data, m.Data, "message %d in order", i)
	}
	st := pub.Status()
	require.Equal(t, uint64(4), st.Advances)
	require.Equal(t, uint64(4), st.Ordinal)
}

// TestPublishingResumesAfterTheServerReturns: advances sealed while the server is away are
// published once it is back at the same address with its storage, in order, and a replica
// applies all of them.
func TestPublishingResumesAfterTheServerReturns(t *testing.T) {
	dir := t.TempDir()
	emb, err := StartEmbedded(dir)
	require.NoError(t, err)
	u, err := url.Parse(emb.URL())
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	s := core.NewStage("resume", core.Config{})
	t.Cleanup(s.Destroy)
	pub, err := Publish(s, PublishOptions{URL: emb.URL()})
	require.NoError(t, err)
	t.Cleanup(pub.Close)
	q := queryOf(t, s, []string{"/A"})
	step := func(o uint64) { writeAndSeal(t, s, q, o, float32(o)) }
	step(1)
	waitFor(t, "the first advance", func() bool { return pub.Status().Advances == 1 })
	emb.Shutdown()
	for o := uint64(2); o <= 4; o++ {
		step(o)
	}
	emb, err = startEmbedded(dir, port)
	require.NoError(t, err)
	t.Cleanup(emb.Shutdown)
	waitFor(t, "the advances sealed during the outage", func() bool { return pub.Status().Advances == 4 })
	require.Zero(t, pub.Status().Dropped)
	seen, rep := mirrorOf(t, emb.URL(), "resume")
	waitFor(t, "the replica", func() bool { return rep.Status().Ordinal == 4 })
	require.False(t, rep.Status().Failed, rep.Status().LastError)
	for o := uint64(1); o <= 4; o++ {
		got, _ := seen(o)
		require.Equal(t, visible{"x": {"/A": string(bytesOf([]float32{float32(o)}))}}, got, "ordinal %d", o)
	}
}
