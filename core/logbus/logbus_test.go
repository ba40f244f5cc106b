package logbus

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDisabledBusQueuesNothing(t *testing.T) {
	b := New(8)
	assert.False(t, b.Enabled())
	b.Emit(Error, ChannelOps, "lost")
	_, ok := b.Next(0, 0)
	assert.False(t, ok)
	assert.True(t, b.Flush(0, 0), "no consumer: flush is trivially drained")
}

func TestThresholdAndFilter(t *testing.T) {
	b := New(16)
	_, err := b.Configure(Warning, "ovstage.stage=info, ovstage = error ,other.chan=none")
	require.NoError(t, err)
	cases := []struct {
		sev     Severity
		channel string
		want    bool
	}{
		{Info, "ovstage.stage", true},      // exact rule: info
		{Verbose, "ovstage.stage", false},  // below info
		{Warning, "ovstage.ops", false},    // "ovstage" prefix rule: error
		{Error, "ovstage.ops", true},       //
		{Warning, "ovstagex", false},       // not a dotted prefix: default warning... but Warning >= Warning
		{Info, "unfiltered", false},        // default threshold warning
		{Warning, "unfiltered", true},      //
		{Error, "other.chan", false},       // none drops everything
		{Error, "other.chan.sub", false},   // prefix of a none rule
		{Info, "ovstage.stage.sub", true},  // longest match ovstage.stage wins over ovstage
		{Warning, "ovstage.stagex", false}, // only the "ovstage" rule matches
	}
	for _, c := range cases {
		if c.channel == "ovstagex" {
			assert.True(t, b.Accepts(c.sev, c.channel), "ovstagex falls back to the default threshold")
			continue
		}
		assert.Equal(t, c.want, b.Accepts(c.sev, c.channel), "%d on %s", c.sev, c.channel)
	}
}

func TestNoneThresholdDropsAll(t *testing.T) {
	b := New(4)
	_, err := b.Configure(None, "")
	require.NoError(t, err)
	assert.False(t, b.Accepts(Error, "x"))
	assert.False(t, b.Accepts(Fatal, "x"))
}

func TestParseFilterErrors(t *testing.T) {
	for _, bad := range []string{"ovstage", "=info", "a=loud", "a=info,", "a=info,a=error"} {
		_, err := ParseFilter(bad)
		assert.Error(t, err, bad)
	}
	rules, err := ParseFilter("  ")
	require.NoError(t, err)
	assert.Empty(t, rules)
	rules, err = ParseFilter("A=WARN,a.b=Fatal,a.b.c=debug")
	require.NoError(t, err)
	require.Len(t, rules, 3)
	assert.Equal(t, "a.b.c", rules[0].channel, "longest first")
	assert.Equal(t, Verbose, rules[0].level)
	assert.Equal(t, Fatal, rules[1].level)
	assert.Equal(t, Warning, rules[2].level)

	b := New(4)
	_, err = b.Configure(Severity(7), "")
	assert.Error(t, err)
	assert.False(t, b.Enabled(), "a rejected configuration leaves the bus as it was")
}

func TestFIFOAndGenerations(t *testing.T) {
	b := New(8)
	g1, err := b.Configure(Verbose, "")
	require.NoError(t, err)
	b.Emit(Info, "c", "one")
	g2, err := b.Configure(Verbose, "")
	require.NoError(t, err)
	assert.Greater(t, g2, g1)
	b.Logf(Error, "c", "two %d", 2)

	m1, ok := b.Next(0, 0)
	require.True(t, ok)
	assert.Equal(t, "one", m1.Text)
	assert.Equal(t, g1, m1.Gen)
	assert.Equal(t, Info, m1.Severity)
	assert.InDelta(t, float64(time.Now().UnixNano())/1e9, m1.Timestamp, 60)
	m2, ok := b.Next(m1.Seq, 0)
	require.True(t, ok)
	assert.Equal(t, "two 2", m2.Text)
	assert.Equal(t, g2, m2.Gen)
	assert.Greater(t, m2.Seq, m1.Seq)
	_, ok = b.Next(m2.Seq, 0)
	assert.False(t, ok)
}

func TestFlushIsABarrierForEarlierMessages(t *testing.T) {
	b := New(8)
	_, err := b.Configure(Verbose, "")
	require.NoError(t, err)
	b.Emit(Info, "c", "a")
	b.Emit(Info, "c", "b")
	assert.False(t, b.Flush(0, 0), "nothing consumed yet")
	m, _ := b.Next(0, 0)
	assert.False(t, b.Flush(0, 0), "a is handed out but not acknowledged")

	done := make(chan bool, 1)
	target := b.FlushTarget(0) // what Flush(0, -1) would wait for, taken now
	go func() { done <- b.WaitDelivered(target, -1) }()
	m, _ = b.Next(m.Seq, 0) // ack a, take b
	b.Emit(Info, "c", "after the flush started")
	assert.False(t, b.WaitDelivered(target, 0), "b is handed out but not acknowledged")
	_, _ = b.Next(m.Seq, 0) // ack b, take the later message (not part of the barrier)
	select {
	case ok := <-done:
		assert.True(t, ok)
	case <-time.After(5 * time.Second):
		t.Fatal("flush did not return after the barrier's messages were acknowledged")
	}
	assert.False(t, b.Flush(0, time.Millisecond), "the later message is not acknowledged")
}

func TestDisableReleasesWaiters(t *testing.T) {
	b := New(8)
	_, err := b.Configure(Verbose, "")
	require.NoError(t, err)
	b.Emit(Info, "c", "pending")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		assert.True(t, b.Flush(0, -1), "disabling ends a flush (no consumer)")
	}()
	b.Disable()
	wg.Wait()
	_, ok := b.Next(0, -1)
	assert.False(t, ok, "a disabled bus hands out nothing and does not block")
	b.Emit(Error, "c", "dropped")
	_, err = b.Configure(Verbose, "")
	require.NoError(t, err)
	_, ok = b.Next(0, 0)
	assert.False(t, ok, "messages of a disabled bus are discarded")
}

func TestOverflowDropsOldestWithNotice(t *testing.T) {
	b := New(2)
	_, err := b.Configure(Verbose, "")
	require.NoError(t, err)
	for _, s := range []string{"1", "2", "3", "4"} {
		b.Emit(Info, "c", s)
	}
	notice, ok := b.Next(0, 0)
	require.True(t, ok)
	assert.Equal(t, Warning, notice.Severity)
	assert.Contains(t, notice.Text, "2 log messages were dropped")
	assert.Zero(t, notice.Seq)
	var got []string
	ack := uint64(0)
	for {
		m, ok := b.Next(ack, 0)
		if !ok {
			break
		}
		got = append(got, m.Text)
		ack = m.Seq
	}
	assert.Equal(t, []string{"3", "4"}, got)
	assert.True(t, b.Flush(0, 0))
}

func TestNextWaitsForAMessage(t *testing.T) {
	b := New(8)
	_, err := b.Configure(Verbose, "")
	require.NoError(t, err)
	got := make(chan Message, 1)
	go func() {
		m, _ := b.Next(0, 5*time.Second)
		got <- m
	}()
	b.Emit(Error, ChannelOps, "late")
	select {
	case m := <-got:
		assert.Equal(t, "late", m.Text)
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not wake up")
	}
	start := time.Now()
	_, ok := b.Next(0, 10*time.Millisecond)
	assert.False(t, ok)
	assert.GreaterOrEqual(t, time.Since(start), 10*time.Millisecond)
}

func TestNULIsReplaced(t *testing.T) {
	b := New(8)
	_, err := b.Configure(Verbose, "")
	require.NoError(t, err)
	b.Emit(Info, "c", "a\x00b")
	m, _ := b.Next(0, 0)
	assert.Equal(t, "a\uFFFDb", m.Text)
}

func TestConcurrentEmittersOneConsumer(t *testing.T) {
	b := New(64)
	_, err := b.Configure(Verbose, "")
	require.NoError(t, err)
	const emitters, each = 8, 200
	got := make(chan int, 1)
	stop := make(chan struct{})
	go func() {
		n, ack := 0, uint64(0)
		for {
			m, ok := b.Next(ack, time.Millisecond)
			ack = 0
			if ok {
				ack = m.Seq
				if m.Seq != 0 {
					n++
				}
				continue
			}
			select {
			case <-stop:
				got <- n
				return
			default:
			}
		}
	}()
	var wg sync.WaitGroup
	for e := 0; e < emitters; e++ {
		wg.Add(1)
		go func(e int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				b.Logf(Info, ChannelOps, "emitter %d message %d", e, i)
			}
		}(e)
	}
	wg.Wait()
	require.True(t, b.Flush(0, 10*time.Second), "everything emitted is delivered or dropped")
	close(stop)
	n := <-got
	assert.LessOrEqual(t, n, emitters*each)
	assert.Positive(t, n)
}
