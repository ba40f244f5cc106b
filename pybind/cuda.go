package pybind

// GPU entry points of the facade (see API.md "GPU"). None of them needs a GPU to be called:
// without one they report the reason as an error value or a status string.

import (
	"fmt"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/column"
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

// WriteAttributePlaced is WriteAttribute with a placement and a CUDA sync descriptor:
// deviceType 0 follows the source tensor, 1 = cpu, 2 = cuda:deviceID; cudaStream / cudaEvent
// are ovstage_cuda_sync_t (0 = none).
func WriteAttributePlaced(stageID, query, attrToken uint64, attrName string, ordinal uint64,
	tensorsAddr uintptr, tensorCount int, count int64, indexMapAddr uintptr, indexMapLen int,
	maskAddr uintptr, maskLen int, semantic int32, isArray bool, primMode int32,
	deviceType, deviceID int32, cudaStream, cudaEvent uintptr) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		req, err := decodeWrite("", tensorsAddr, tensorCount, count, indexMapAddr, indexMapLen, indexMapAddr != 0,
			maskAddr, maskLen, maskAddr != 0)
		if err != nil {
			return 0, err
		}
		req.Query, req.AttrToken, req.AttrName, req.Ordinal = query, attrToken, attrName, ordinal
		req.Semantic, req.IsArray, req.PrimMode = semantic, isArray, primMode
		req.Device = column.Placement{DeviceType: deviceType, DeviceID: deviceID}
		req.Sync = core.CudaSync{Stream: cudaStream, Event: cudaEvent}
		return s.WriteAttribute(req)
	})
}

// ExportStreamWait makes a consumer's CUDA stream wait for the data of an export made by
// ExportGroupTensor (its buffer's ready event): stream is a CUstream, 1 (legacy default) or 2
// (per-thread default). Host exports need no wait and return at once.
func ExportStreamWait(addr, stream uintptr) (bool, error) {
	return call(func() (bool, error) {
		buf, err := abi.ExportBuffer(addr)
		if err != nil {
			return false, err
		}
		return true, cuda.WaitReady(buf, stream)
	})
}
