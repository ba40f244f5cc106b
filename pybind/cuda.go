package pybind

// GPU state of the process (core/cuda). Neither function needs a GPU to be called: without one
// CudaStatus reports the reason.

import (
	"fmt"

	"github.com/ovstage-go/ovstage/core/cuda"
)

// CudaStatus loads the CUDA driver on first call and returns "1 <devices> <driver version>"
// when a GPU is usable, else "0 <reason>".
func CudaStatus() (string, error) {
	return call(func() (string, error) {
		if ok, reason := cuda.Available(); !ok {
			return "0 " + reason, nil
		}
		return fmt.Sprintf("1 %d %d", cuda.DeviceCount(), cuda.DriverVersion()), nil
	})
}

// CudaLiveBuffers is the number of device buffers not yet freed (leak tests).
func CudaLiveBuffers() (int64, error) {
	return call(func() (int64, error) { return cuda.LiveBuffers(), nil })
}
