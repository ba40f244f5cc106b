package main

/*
#include "capi.h"
*/
import "C"

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/logbus"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
	"github.com/ovstage-go/ovstage/lifecycle"
)

// Log delivery: the engine queues messages on the process-wide bus; one dispatcher goroutine,
// locked to its own OS thread, pulls them and calls the host's callback through a C trampoline,
// one message at a time and holding no engine lock. A message goes to the callback that was
// installed when the engine accepted it (the bus's configuration generation). Replacing or
// clearing the callback first delivers what is queued, and once it returns the previous
// callback is never called again (the host may free its user_data).

type logTarget struct {
	callback C.uintptr_t
	userData uintptr
}

var logging struct {
	mu sync.Mutex
	// delivering is held for reading while a callback runs: taking it for writing waits out a
	// delivery that looked up a target before it was replaced.
	delivering sync.RWMutex
	targets    map[uint64]logTarget // by configuration generation
	running    bool
	done       chan struct{} // closed when the dispatcher exits
	inflight   atomic.Uint64 // sequence number being delivered (0: none)
}

// Longest single wait of an idle dispatcher (disabling the bus wakes it at once).
const logIdleWait = 500 * time.Millisecond

func logDuration(timeout uint64) time.Duration {
	if timeout == core.TimeoutInfinite {
		return -1
	}
	return time.Duration(min(timeout, 1<<62))
}

// targetFor is the callback of generation gen; older generations are dropped.
func targetFor(gen uint64) (logTarget, bool) {
	logging.mu.Lock()
	defer logging.mu.Unlock()
	for g := range logging.targets {
		if g < gen {
			delete(logging.targets, g)
		}
	}
	t, ok := logging.targets[gen]
	return t, ok
}

func dispatchLogs(done chan struct{}) {
	runtime.LockOSThread()
	defer close(done)
	defer func() { // delivery stops; the next set_log_callback starts a new dispatcher
		if r := recover(); r != nil {
			_ = recovered("log dispatcher", r)
			logging.mu.Lock()
			logging.running = false
			logging.mu.Unlock()
		}
	}()
	bus := logbus.Global()
	ack := uint64(0)
	for {
		m, ok := bus.Next(ack, logIdleWait)
		ack = 0
		if !ok {
			logging.mu.Lock()
			if !bus.Enabled() {
				logging.running = false
				logging.mu.Unlock()
				return
			}
			logging.mu.Unlock()
			continue
		}
		logging.delivering.RLock()
		if t, found := targetFor(m.Gen); found {
			logging.inflight.Store(m.Seq)
			deliver(t, m)
		}
		logging.delivering.RUnlock()
		ack = m.Seq
		logging.inflight.Store(0)
	}
}

// deliver calls the host's callback with one message; a panic on this side is logged away.
func deliver(t logTarget, m logbus.Message) {
	defer func() {
		if r := recover(); r != nil {
			_ = recovered("log delivery", r)
		}
	}()
	sev := m.Severity
	switch {
	case sev > logbus.Error:
		sev = logbus.Error // FATAL has no C value
	case sev < logbus.Verbose:
		sev = logbus.Verbose
	}
	text := "[" + m.Channel + "] " + m.Text
	C.ovs_invoke_log(t.callback, C.int32_t(sev), C.double(m.Timestamp),
		(*C.char)(unsafe.Pointer(unsafe.StringData(text))), C.size_t(len(text)), cptr.At(t.userData))
}

//export ovsgo_set_log_callback
func ovsgo_set_log_callback(severity C.int32_t, filter unsafe.Pointer, callback C.uintptr_t, userData unsafe.Pointer,
	inCallback C.int) (code C.int) {
	const fn = "ovstage_set_log_callback"
	defer guard(fn, &code)
	text, err := abi.String(filter, "channel_filter")
	if err != nil {
		return fail(fn, err)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return fail(fn, invalid("channel_filter contains an embedded NUL"))
	}
	if callback == 0 {
		clearLogCallback(inCallback != 0)
		return 0
	}
	if !lifecycle.Global().Bootstrapped() {
		return fail(fn, status.Errorf(status.OpFailed,
			"logging needs a bootstrapped runtime: call ovstage_initialize or create an instance first"))
	}
	// Checked before anything changes: a bad argument leaves the current callback in place.
	if !logbus.Severity(severity).Valid() {
		return fail(fn, invalid("severity %d is not a log severity (VERBOSE=-2, INFO=-1, WARNING=0, ERROR=1, NONE=3)", severity))
	}
	if _, err := logbus.ParseFilter(text); err != nil {
		return fail(fn, configError(err))
	}
	bus := logbus.Global()
	if inCallback == 0 {
		bus.Flush(0, -1) // what is queued goes to the callback it was queued for
	}
	logging.mu.Lock()
	gen, err := bus.Configure(logbus.Severity(severity), text)
	if err != nil {
		logging.mu.Unlock()
		return fail(fn, configError(err))
	}
	logging.targets = map[uint64]logTarget{gen: {callback: callback, userData: uintptr(userData)}}
	if !logging.running {
		logging.running = true
		logging.done = make(chan struct{})
		go dispatchLogs(logging.done)
	}
	logging.mu.Unlock()
	if inCallback == 0 {
		logging.delivering.Lock() // a delivery to the previous callback still running ends first
		logging.delivering.Unlock()
	}
	return 0
}

// configError is a bus configuration error as INVALID_ARGUMENT.
func configError(err error) error {
	var ce *logbus.ConfigError
	if errors.As(err, &ce) {
		return invalid("%s", ce.Message)
	}
	return err
}

// clearLogCallback delivers what is queued (unless called from the callback, which cannot
// wait for itself), disables the bus and waits for the dispatcher to stop: once it returns,
// the callback is never called again.
func clearLogCallback(fromCallback bool) {
	bus := logbus.Global()
	if !fromCallback {
		bus.Flush(0, -1)
	}
	logging.mu.Lock()
	bus.Disable()
	logging.targets = nil
	done, running := logging.done, logging.running
	logging.mu.Unlock()
	if running && !fromCallback {
		<-done
	}
}

//export ovsgo_flush_log
func ovsgo_flush_log(timeout C.uint64_t, inCallback C.int) (code C.int) {
	const fn = "ovstage_flush_log"
	defer guard(fn, &code)
	bus := logbus.Global()
	target := bus.FlushTarget(0)
	if inCallback != 0 {
		// Messages go out in order, each once the previous one returned: nothing but the
		// message being delivered is pending iff it is the newest one.
		inflight := logging.inflight.Load()
		if (inflight != 0 && target <= inflight) || bus.WaitDelivered(target, 0) {
			return 0
		}
		return fail(fn, status.Errorf(status.Timeout, "messages queued after the one being delivered cannot be delivered from inside the callback"))
	}
	if bus.WaitDelivered(target, logDuration(uint64(timeout))) {
		return 0
	}
	return fail(fn, status.Errorf(status.Timeout, "queued log messages were not delivered within %d ns", timeout))
}
