package pybind

import (
	"runtime"
	"runtime/debug"

	"github.com/ovstage-go/ovstage/core/buffer"
)

// ReleaseMemory returns freed memory to the operating system: it runs a Go garbage collection,
// returns free heap pages (debug.FreeOSMemory) and frees the recycled-buffer cache. For
// measurements (RSS) and for callers that just dropped a large stage.
func ReleaseMemory() (bool, error) {
	return call(func() (bool, error) {
		buffer.Trim()
		debug.FreeOSMemory()
		return true, nil
	})
}

// GoHeapInUse is the Go heap's in-use bytes (runtime.MemStats.HeapInuse; call ReleaseMemory
// first for a settled figure): the engine's own tables, without the payload buffers.
func GoHeapInUse() (int64, error) {
	return call(func() (int64, error) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapInuse), nil
	})
}

// BufferLiveBytes is the payload bytes of the engine's C buffers not yet freed (the sealed
// and pending values, retained versions, buffers that reads and exports hold).
func BufferLiveBytes() (int64, error) {
	return call(func() (int64, error) { return buffer.LiveBytes(), nil })
}
