package pybind

import (
	"strconv"
	"strings"
	"time"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/logbus"
	"github.com/ovstage-go/ovstage/core/status"
)

// logWait converts a timeout in ns (TimeoutInfinite blocks) to a Duration (-1 blocks).
func logWait(timeoutNs uint64) time.Duration {
	if timeoutNs == core.TimeoutInfinite {
		return -1
	}
	return time.Duration(min(timeoutNs, uint64(1<<62)))
}

// LogConfigure enables log delivery with a default threshold (a LogSeverity value) and a
// channel filter; it returns the configuration generation that messages will carry. It needs
// a live stage ([ovstage:12] otherwise); a bad filter or severity is [ovstage:1].
func LogConfigure(severity int32, filter string) (uint64, error) {
	return call(func() (uint64, error) {
		gen, err := logbus.Global().Configure(logbus.Severity(severity), filter)
		if err != nil {
			return 0, status.Errorf(status.InvalidArgument, "%v", err)
		}
		return gen, nil
	})
}

// LogDisable stops log delivery and discards undelivered messages.
func LogDisable() (bool, error) {
	return call(func() (bool, error) { logbus.Global().Disable(); return true, nil })
}

// LogNext acknowledges message ack (0: none) and waits up to timeoutNs for the next one:
// "<seq> <gen> <severity> <timestamp> <channel> <text>", or "" on timeout or when disabled.
func LogNext(ack, timeoutNs uint64) (string, error) {
	return call(func() (string, error) {
		m, ok := logbus.Global().Next(ack, logWait(timeoutNs))
		if !ok {
			return "", nil
		}
		var b strings.Builder
		b.Grow(len(m.Text) + len(m.Channel) + 64)
		b.WriteString(strconv.FormatUint(m.Seq, 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatUint(m.Gen, 10))
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(int(m.Severity)))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(m.Timestamp, 'f', 6, 64))
		b.WriteByte(' ')
		b.WriteString(m.Channel)
		b.WriteByte(' ')
		b.WriteString(m.Text)
		return b.String(), nil
	})
}

// LogFlushTarget acknowledges message ack (0: none) and returns the barrier of a flush
// started now: the sequence number of the last message queued so far.
func LogFlushTarget(ack uint64) (uint64, error) {
	return call(func() (uint64, error) { return logbus.Global().FlushTarget(ack), nil })
}

// LogWaitDelivered waits up to timeoutNs until message target was acknowledged; true when
// delivered or when logging is disabled (no callback), false on timeout.
func LogWaitDelivered(target, timeoutNs uint64) (bool, error) {
	return call(func() (bool, error) { return logbus.Global().WaitDelivered(target, logWait(timeoutNs)), nil })
}
