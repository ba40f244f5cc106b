package pybind

import (
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
