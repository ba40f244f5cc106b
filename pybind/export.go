package pybind

import (
	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/cuda"
)

// DLPack exports of group tensors (core/export.go), made by abi's exporter.

// CapsuleDestructorAddress is the C destructor to pass to PyCapsule_New for our exports.
func CapsuleDestructorAddress() (uintptr, error) { return abi.CapsuleDestructorAddress(), nil }

// ExportGroupTensor exports tensor index of a group as a DLManagedTensorVersioned* holding its
// own buffer reference (valid after the group and the stage are gone). A writable export of a
// read group is a private copy (flagged IS_COPIED): sealed data never changes.
func ExportGroupTensor(stageID, group uint64, index int, readonly bool) (uintptr, error) {
	return withStage(stageID, func(s *core.Stage) (uintptr, error) {
		ev, err := s.ExportView(group, index, !readonly)
		if err != nil {
			return 0, err
		}
		defer ev.Buffer.Release()
		var flags abi.Flags
		if readonly {
			flags |= abi.ReadOnly
		}
		if ev.Copied {
			flags |= abi.IsCopied
		}
		return abi.Export(ev.TensorView, ev.Semantic, flags)
	})
}

// ExportGroupView is ExportGroupTensor's read-only export (the fast path of ReadGroup.dlpack): a
// view that copies nothing, so its wrapper keeps the GIL (setup.py GIL_HELD; API.md, "The
// GIL"), which a writable export, a private copy of the whole tensor, does not.
func ExportGroupView(stageID, group uint64, index int) (uintptr, error) {
	return ExportGroupTensor(stageID, group, index, true)
}

// ManagedToCapsulePointer makes a fresh managed tensor (versioned or legacy) sharing the storage
// of an export, for exactly one capsule.
func ManagedToCapsulePointer(addr uintptr, versioned bool) (uintptr, error) {
	return call(func() (uintptr, error) { return abi.CloneForCapsule(addr, versioned) })
}

// ManagedFree runs the deleter of an export made by ExportGroupTensor.
func ManagedFree(addr uintptr) (bool, error) {
	return call(func() (bool, error) { abi.FreeExport(addr); return true, nil })
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
