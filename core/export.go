package core

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/status"
)

// ExportedView is what an export of one group tensor shows: the tensor, the column's semantic
// (which decides its published shape, TypedShape) and whether the bytes are a private copy.
type ExportedView struct {
	TensorView
	Semantic int32
	Copied   bool
}

// ExportView is what an export of tensor index of group id shows, holding one buffer
// reference that the caller releases. A read group's data is a sealed version that must never
// change, so a writable export of it gets a private copy of the tensor (Copied is then true);
// a map group's staging is meant to be written, and its exports share it.
func (s *Stage) ExportView(id uint64, index int, writable bool) (ExportedView, error) {
	s.mu.Lock()
	if err := s.checkLiveLocked(); err != nil {
		s.mu.Unlock()
		return ExportedView{}, err
	}
	g, ok := s.groups[id]
	if !ok {
		s.mu.Unlock()
		return ExportedView{}, status.Errorf(status.InvalidHandle, "read group %d is not valid on stage %d (already released, or never fetched)", id, s.ID)
	}
	if index < 0 || index >= len(g.Tensors) {
		s.mu.Unlock()
		return ExportedView{}, status.Errorf(status.InvalidArgument, "tensor index %d is outside 0..%d", index, len(g.Tensors)-1)
	}
	// Retained under s.mu: a concurrent ReleaseGroup drops the group's references only after
	// removing it from s.groups.
	ev := ExportedView{TensorView: g.Tensors[index], Semantic: g.Semantic}
	ev.Buffer = ev.Buffer.Retain()
	staged := g.staged
	s.mu.Unlock()
	if !writable || staged {
		return ev, nil
	}
	private, err := copyTensorView(ev.TensorView)
	ev.Buffer.Release()
	if err != nil {
		return ExportedView{}, err
	}
	ev.Buffer, ev.ByteOffset, ev.Copied = private, 0, true
	return ev, nil
}

// copyTensorView copies the bytes tv shows into a new buffer on the same device (one
// reference). A device copy is queued after the source's last write and marks the new
// buffer's ready event, which consumers of its exports wait for.
func copyTensorView(tv TensorView) (buffer.Buffer, error) {
	size := int(tv.Rows) * tv.DType.ElemBytes()
	if tv.Buffer.OnHost() {
		dst, err := buffer.NewUninit(size)
		if err != nil {
			return buffer.Buffer{}, err
		}
		buffer.Copy(dst.Data(), unsafe.Add(tv.Buffer.Data(), tv.ByteOffset), size)
		return dst, nil
	}
	dev, err := cuda.Get(int(tv.DeviceID))
	if err != nil {
		return buffer.Buffer{}, err
	}
	stream, err := dev.CopyStream()
	if err != nil {
		return buffer.Buffer{}, err
	}
	if err := cuda.WaitReady(tv.Buffer, stream.Handle()); err != nil {
		return buffer.Buffer{}, err
	}
	dst, err := dev.Alloc(size, false, stream)
	if err != nil {
		return buffer.Buffer{}, err
	}
	if size > 0 {
		err = stream.CopyDtoD(uintptr(dst.Data()), uintptr(tv.Buffer.Data())+uintptr(tv.ByteOffset), size)
	}
	if err == nil {
		err = stream.MarkReady(dst)
	}
	if err != nil {
		_ = stream.Sync() // the copy may still be queued: let it finish before the free
		dst.Release()
		return buffer.Buffer{}, err
	}
	return dst, nil
}
