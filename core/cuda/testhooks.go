package cuda

/*
#cgo CFLAGS: -I${SRCDIR}/../buffer
#include <stdint.h>
#include <stdlib.h>
#include "driver.h"
typedef int64_t (*ovs_stat_fn)(const char*);
static int64_t ovs_call_stat(void* fn, const char* name) { return ((ovs_stat_fn)fn)(name); }
typedef const char* (*ovs_trace_fn)(int);
static const char* ovs_call_trace(void* fn, int reset) { return ((ovs_trace_fn)fn)(reset); }
typedef void* (*ovs_new_event_fn)(int);
static void* ovs_call_new_event(void* fn, int dev) { return ((ovs_new_event_fn)fn)(dev); }
typedef int (*ovs_destroy_event_fn)(int, void*);
static int ovs_call_destroy_event(void* fn, int dev, uintptr_t e) { return ((ovs_destroy_event_fn)fn)(dev, (void*)e); }
typedef int64_t (*ovs_event_records_fn)(void*);
static int64_t ovs_call_event_records(void* fn, uintptr_t e) { return ((ovs_event_records_fn)fn)((void*)e); }
typedef void (*ovs_fail_fn)(int64_t);
static void ovs_call_fail(void* fn, int64_t n) { ((ovs_fail_fn)fn)(n); }
*/
import "C"

import "unsafe"

// Test hooks: they let tests load a fake driver (internal/fakecuda) and read its counters. Not
// for production use.

// ReloadForTesting forgets the loaded driver and every device, so the next GPU use loads lib
// ("" = OVSTAGE_CUDA_LIBRARY or libcuda.so.1). No device buffer or stream may be alive.
func ReloadForTesting(lib string) {
	state.mu.Lock()
	defer state.mu.Unlock()
	C.ovs_cu_reset()
	state.done, state.err, state.count, state.version, state.devices = false, nil, 0, 0, nil
	state.lib = lib
}

// FakeStat reads a counter of the fake driver (-1 when the loaded driver is not the fake).
func FakeStat(name string) int64 {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	sym := C.CString("fakecuda_stat")
	defer C.free(unsafe.Pointer(sym))
	fn := C.ovs_cu_symbol(sym)
	if fn == nil {
		return -1
	}
	return int64(C.ovs_call_stat(fn, cname))
}

// FakeFailAlloc makes the fake driver's allocation after n more fail (n < 0: never).
func FakeFailAlloc(n int64) bool {
	sym := C.CString("fakecuda_fail_alloc")
	defer C.free(unsafe.Pointer(sym))
	fn := C.ovs_cu_symbol(sym)
	if fn == nil {
		return false
	}
	C.ovs_call_fail(fn, C.int64_t(n))
	return true
}

// FakeTrace returns the fake driver's call trace since the last reset, then resets it ("" when
// the loaded driver is not the fake). Items are "name;", "name 0xA;" or "name 0xA 0xB;" (handles).
func FakeTrace() string {
	sym := C.CString("fakecuda_trace")
	defer C.free(unsafe.Pointer(sym))
	fn := C.ovs_cu_symbol(sym)
	if fn == nil {
		return ""
	}
	return C.GoString(C.ovs_call_trace(fn, 1))
}

// fakeSymbol resolves a test helper of the fake driver (nil when the driver is not the fake).
func fakeSymbol(name string) unsafe.Pointer {
	sym := C.CString(name)
	defer C.free(unsafe.Pointer(sym))
	return C.ovs_cu_symbol(sym)
}

// FakeNewEvent creates a CUevent on device dev of the fake driver (0 when not the fake).
func FakeNewEvent(dev int) uintptr {
	fn := fakeSymbol("fakecuda_new_event")
	if fn == nil {
		return 0
	}
	return uintptr(C.ovs_call_new_event(fn, C.int(dev)))
}

// FakeDestroyEvent destroys an event made by FakeNewEvent on dev.
func FakeDestroyEvent(dev int, event uintptr) {
	if fn := fakeSymbol("fakecuda_destroy_event"); fn != nil {
		C.ovs_call_destroy_event(fn, C.int(dev), C.uintptr_t(event))
	}
}

// FakeEventRecords is how many times the fake driver recorded event (-1 when not the fake).
func FakeEventRecords(event uintptr) int64 {
	fn := fakeSymbol("fakecuda_event_records")
	if fn == nil {
		return -1
	}
	return int64(C.ovs_call_event_records(fn, C.uintptr_t(event)))
}
