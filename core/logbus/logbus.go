// Package logbus is the process-wide log queue of the engine. Go never calls
// Python: the engine pushes messages into a bounded FIFO and a consumer (the Python
// dispatcher thread) pulls them with Next, delivering them serially to the user callback.
//
// Nothing is queued while no consumer is configured; Enabled is one atomic load, so call
// sites stay cheap when nobody listens. Each message passes a threshold chosen per channel
// (the filter) or the default threshold for channels the filter does not match.
//
// Flush is a barrier: it waits until every message queued before the call was handed out by
// Next and acknowledged (the consumer acknowledges a message by passing its sequence number
// to its next Next or Flush call).
package logbus

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Severity is an ovstage_log_severity_t value; as a threshold, messages below it are dropped.
type Severity int32

// Severities. Fatal is accepted as a filter level; None is a threshold only.
const (
	Verbose Severity = -2
	Info    Severity = -1
	Warning Severity = 0
	Error   Severity = 1
	Fatal   Severity = 2
	None    Severity = 3
)

// Valid reports whether s is a severity a caller may pass as a threshold.
func (s Severity) Valid() bool {
	switch s {
	case Verbose, Info, Warning, Error, Fatal, None:
		return true
	}
	return false
}

// Channels used by the engine.
const (
	ChannelOps       = "ovstage.ops"
	ChannelStage     = "ovstage.stage"
	ChannelHierarchy = "ovstage.hierarchy"
	ChannelInternal  = "ovstage.internal"
)

// DefaultCapacity bounds the queue; when it is full the oldest message is dropped and a
// warning saying how many were dropped precedes the next delivered message.
const DefaultCapacity = 4096

// Message is one log record.
type Message struct {
	Seq       uint64 // 0 for the bus's own "messages dropped" notice
	Gen       uint64 // configuration generation the message was accepted under
	Severity  Severity
	Channel   string
	Timestamp float64 // seconds since the Unix epoch
	Text      string
}

// ConfigError reports a malformed configuration (a filter parse error).
type ConfigError struct{ Message string }

func (e *ConfigError) Error() string { return e.Message }

type config struct {
	gen       uint64
	threshold Severity
	filter    []rule // longest channel first
}

type rule struct {
	channel string
	level   Severity
}

var levels = map[string]Severity{
	"verbose": Verbose, "debug": Verbose, "info": Info, "warn": Warning, "warning": Warning,
	"error": Error, "fatal": Fatal, "none": None,
}

// ParseFilter parses "<channel>=<level>,..." (levels verbose|debug|info|warn|warning|error|
// fatal|none, case-insensitive; blanks around names are ignored). An empty string is no filter.
func ParseFilter(filter string) ([]rule, error) {
	if strings.TrimSpace(filter) == "" {
		return nil, nil
	}
	var rules []rule
	seen := map[string]bool{}
	for i, entry := range strings.Split(filter, ",") {
		name, level, ok := strings.Cut(entry, "=")
		name, level = strings.TrimSpace(name), strings.ToLower(strings.TrimSpace(level))
		switch {
		case !ok:
			return nil, &ConfigError{fmt.Sprintf("channel_filter entry %d %q is not <channel>=<level>", i, entry)}
		case name == "":
			return nil, &ConfigError{fmt.Sprintf("channel_filter entry %d %q has an empty channel name", i, entry)}
		case seen[name]:
			return nil, &ConfigError{fmt.Sprintf("channel_filter names channel %q twice", name)}
		}
		sev, known := levels[level]
		if !known {
			return nil, &ConfigError{fmt.Sprintf("channel_filter entry %d %q: level %q is not one of verbose, debug, info, warn, warning, error, fatal, none", i, entry, level)}
		}
		seen[name] = true
		rules = append(rules, rule{channel: name, level: sev})
	}
	// Longest (most specific) channel first, so the first match wins.
	for i := 1; i < len(rules); i++ {
		for j := i; j > 0 && len(rules[j].channel) > len(rules[j-1].channel); j-- {
			rules[j], rules[j-1] = rules[j-1], rules[j]
		}
	}
	return rules, nil
}

// thresholdFor is the level of the most specific rule matching channel (the channel itself, or
// a dotted prefix of it: "ovstage" matches "ovstage.ops"), else the default threshold.
func (c *config) thresholdFor(channel string) Severity {
	for _, r := range c.filter {
		if channel == r.channel || (strings.HasPrefix(channel, r.channel) && channel[len(r.channel)] == '.') {
			return r.level
		}
	}
	return c.threshold
}

// Bus is a bounded message queue with one consumer. The zero value is not usable; use New.
type Bus struct {
	enabled atomic.Bool
	cfg     atomic.Pointer[config]

	mu        sync.Mutex
	queue     []Message // FIFO: queue[head:]
	head      int
	capacity  int
	lastSeq   uint64 // last sequence number queued
	delivered uint64 // highest acknowledged sequence number
	dropped   uint64 // dropped since the last notice
	gen       uint64
	wake      chan struct{} // closed and replaced on every state change
}

// New makes a disabled bus holding at most capacity messages (<= 0: DefaultCapacity).
func New(capacity int) *Bus {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Bus{capacity: capacity, wake: make(chan struct{})}
}

var global = New(DefaultCapacity)

// Global is the process-wide bus the engine logs to.
func Global() *Bus { return global }

// signalLocked wakes every waiter. b.mu must be held.
func (b *Bus) signalLocked() {
	close(b.wake)
	b.wake = make(chan struct{})
}

// Enabled reports whether a consumer is configured (one atomic load).
func (b *Bus) Enabled() bool { return b.enabled.Load() }

// Configure enables the bus with a default threshold and a channel filter and returns the new
// configuration generation (messages carry the generation they were accepted under).
func (b *Bus) Configure(threshold Severity, filter string) (uint64, error) {
	if !threshold.Valid() {
		return 0, &ConfigError{fmt.Sprintf("severity %d is not a log severity (VERBOSE=-2, INFO=-1, WARNING=0, ERROR=1, NONE=3)", threshold)}
	}
	rules, err := ParseFilter(filter)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	b.cfg.Store(&config{gen: b.gen, threshold: threshold, filter: rules})
	b.enabled.Store(true)
	b.signalLocked()
	return b.gen, nil
}

// Disable stops accepting messages and discards any still queued (flush first to deliver
// them); a consumer blocked in Next returns at once.
func (b *Bus) Disable() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enabled.Store(false)
	b.cfg.Store(nil)
	b.queue, b.head, b.dropped = nil, 0, 0
	b.delivered = b.lastSeq
	b.signalLocked()
}

// Accepts reports whether a message of sev on channel would be queued now.
func (b *Bus) Accepts(sev Severity, channel string) bool {
	if !b.enabled.Load() {
		return false
	}
	c := b.cfg.Load()
	if c == nil {
		return false
	}
	th := c.thresholdFor(channel)
	return th != None && sev >= th
}

// Emit queues a message if a consumer is configured and the message passes its threshold.
func (b *Bus) Emit(sev Severity, channel, text string) {
	if !b.Accepts(sev, channel) {
		return
	}
	b.push(sev, channel, text)
}

// Logf formats and emits; the arguments are only formatted when the message is accepted.
func (b *Bus) Logf(sev Severity, channel, format string, args ...any) {
	if !b.Accepts(sev, channel) {
		return
	}
	b.push(sev, channel, fmt.Sprintf(format, args...))
}

func (b *Bus) push(sev Severity, channel, text string) {
	text = strings.ReplaceAll(text, "\x00", "\uFFFD") // the text crosses as a C string
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled.Load() {
		return
	}
	// Stamped under the lock, so queue order is timestamp order.
	ts := float64(time.Now().UnixNano()) / 1e9
	if len(b.queue)-b.head >= b.capacity {
		b.head++ // drop the oldest; the notice precedes the next delivered message
		b.dropped++
	}
	if b.head > 0 && b.head >= len(b.queue)/2 {
		b.queue = append(b.queue[:0], b.queue[b.head:]...)
		b.head = 0
	}
	b.lastSeq++
	b.queue = append(b.queue, Message{Seq: b.lastSeq, Gen: b.gen, Severity: sev, Channel: channel,
		Timestamp: ts, Text: text})
	b.signalLocked()
}

// ackLocked records that the consumer finished message seq (0: nothing).
func (b *Bus) ackLocked(seq uint64) {
	if seq > b.delivered && seq <= b.lastSeq {
		b.delivered = seq
		b.signalLocked()
	}
}

// Next acknowledges message ack (0: none), then waits up to timeout for the next message.
// ok is false on timeout or when the bus is disabled. A negative timeout waits forever.
func (b *Bus) Next(ack uint64, timeout time.Duration) (msg Message, ok bool) {
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	for {
		msg, ok, wake := b.take(ack)
		ack = 0
		if ok || wake == nil || timeout == 0 {
			return msg, ok
		}
		select {
		case <-wake:
		case <-timer:
			return Message{}, false
		}
	}
}

// take acknowledges ack, then hands out the next message (preceded by a notice of dropped
// ones). Without one it returns the channel closed at the next change (nil when the bus is
// disabled).
func (b *Bus) take(ack uint64) (Message, bool, chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ackLocked(ack)
	if !b.enabled.Load() {
		return Message{}, false, nil
	}
	if b.head >= len(b.queue) {
		return Message{}, false, b.wake
	}
	if b.dropped > 0 {
		n := b.dropped
		b.dropped = 0
		first := b.queue[b.head]
		return Message{Gen: first.Gen, Severity: Warning, Channel: "ovstage.log",
			Timestamp: first.Timestamp,
			Text:      fmt.Sprintf("%d log messages were dropped (the queue holds %d; the callback is slower than the engine logs)", n, b.capacity)}, true, nil
	}
	msg := b.queue[b.head]
	b.queue[b.head] = Message{}
	b.head++
	return msg, true, nil
}

// Flush acknowledges message ack (0: none), then waits up to timeout until every message
// queued before the call was acknowledged. It reports true when drained or when the bus is
// disabled (no consumer), false on timeout. A negative timeout waits forever.
func (b *Bus) Flush(ack uint64, timeout time.Duration) bool {
	return b.WaitDelivered(b.FlushTarget(ack), timeout)
}

// FlushTarget acknowledges ack (0: none) and returns the sequence number of the last message
// queued so far: what a flush started now waits for. Waiting in slices with WaitDelivered on
// one target keeps the barrier fixed while the engine goes on logging.
func (b *Bus) FlushTarget(ack uint64) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ackLocked(ack)
	return b.lastSeq
}

// WaitDelivered waits up to timeout until message target was acknowledged (true), or the bus
// is disabled (true: no consumer). A negative timeout waits forever.
func (b *Bus) WaitDelivered(target uint64, timeout time.Duration) bool {
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	for {
		delivered, wake := b.deliveredUpTo(target)
		if delivered {
			return true
		}
		if timeout == 0 {
			return false
		}
		select {
		case <-wake:
		case <-timer:
			return false
		}
	}
}

// deliveredUpTo reports whether message target was acknowledged (or the bus is disabled), and
// the channel closed at the next change.
func (b *Bus) deliveredUpTo(target uint64) (bool, chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.enabled.Load() || b.delivered >= target, b.wake
}

// Global-bus shorthands used by the engine.

// Enabled reports whether the global bus has a consumer.
func Enabled() bool { return global.Enabled() }

// Logf logs to the global bus.
func Logf(sev Severity, channel, format string, args ...any) {
	global.Logf(sev, channel, format, args...)
}
