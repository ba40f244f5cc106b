package cuda

import (
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
)

// ColumnStorage keeps a column's buffers on one device. Its copies are queued on the column's
// own stream; Flush records the destination's ready event and waits for the stream, so a
// sealed version is complete when the floor advance that sealed it completes.
type ColumnStorage struct {
	dev    *Device
	stream *Stream
}

// NewColumnStorage creates the storage (and its stream) of a column on dev.
func NewColumnStorage(dev *Device) (*ColumnStorage, error) {
	s, err := dev.NewStream()
	if err != nil {
		return nil, err
	}
	return &ColumnStorage{dev: dev, stream: s}, nil
}

// Placement is cuda:<ordinal>.
func (c *ColumnStorage) Placement() column.Placement { return column.CUDA(int32(c.dev.Ordinal)) }

// New allocates a zero-filled device buffer (the fill is queued on the column's stream).
func (c *ColumnStorage) New(size int) (buffer.Buffer, error) {
	return c.dev.Alloc(size, true, c.stream)
}

// Copy queues the runs as device-to-device copies on the column's stream.
func (c *ColumnStorage) Copy(dst, src buffer.Buffer, runs []column.Run) error {
	flat := make([]int64, 0, 3*len(runs))
	for _, r := range runs {
		flat = append(flat, r.Dst, r.Src, r.Len)
	}
	return c.stream.CopyRuns(dst, src, flat)
}

// Flush marks dst ready after the queued copies and waits for them.
func (c *ColumnStorage) Flush(dst buffer.Buffer) error {
	if err := c.stream.MarkReady(dst); err != nil {
		return err
	}
	return c.stream.Sync()
}

// Close destroys the column's stream (queued work still completes).
func (c *ColumnStorage) Close() { c.stream.Destroy() }

// Placer opens column storage on the host or a device and moves buffers between them
// (column.Placer): the stage's columns move to where their placed writes put them.
type Placer struct{}

// Open returns the storage of a column placed at p.
func (Placer) Open(p column.Placement) (column.Storage, error) {
	if p.IsHost() {
		return column.HostStorage(), nil
	}
	dev, err := Get(int(p.DeviceID))
	if err != nil {
		return nil, err
	}
	return NewColumnStorage(dev)
}

// Move copies b to placement to (host, or a device), taking over b's reference; b itself when
// it is already there, and b, still the caller's, on error. The copy is complete on return.
func (Placer) Move(b buffer.Buffer, to column.Placement) (buffer.Buffer, error) {
	return Move(b, to)
}

// Move is Placer.Move.
func Move(b buffer.Buffer, to column.Placement) (buffer.Buffer, error) {
	from := column.PlacementOf(b)
	if from == to {
		return b, nil
	}
	var src, dst *Device
	var err error
	if !from.IsHost() {
		if src, err = Get(int(from.DeviceID)); err != nil {
			return b, err
		}
	}
	if !to.IsHost() {
		if dst, err = Get(int(to.DeviceID)); err != nil {
			return b, err
		}
	}
	copier := src // device-to-host and peer copies run on the source's stream
	if copier == nil {
		copier = dst
	}
	stream, err := copier.CopyStream()
	if err != nil {
		return b, err
	}
	size := b.Size()
	var out buffer.Buffer
	if dst == nil {
		out, err = buffer.NewUninit(size)
	} else {
		out, err = dst.Alloc(size, false, stream)
	}
	if err != nil {
		return b, err
	}
	if size > 0 {
		switch {
		case dst == nil:
			err = stream.CopyDtoH(out.Data(), uintptr(b.Data()), size)
		case src == nil:
			err = stream.CopyHtoD(uintptr(out.Data()), b.Data(), size)
		case src == dst:
			err = stream.CopyDtoD(uintptr(out.Data()), uintptr(b.Data()), size)
		default:
			err = stream.CopyPeer(uintptr(out.Data()), dst, uintptr(b.Data()), src, size)
		}
	}
	if serr := stream.Sync(); err == nil {
		err = serr
	}
	if err != nil {
		out.Release()
		return b, err
	}
	b.Release()
	return out, nil
}

// Duplicate returns a new buffer with b's bytes in b's placement (host or device).
func Duplicate(b buffer.Buffer) (buffer.Buffer, error) {
	if b.OnHost() {
		out, err := buffer.NewUninit(b.Size())
		if err == nil {
			copy(out.Bytes(), b.Bytes())
		}
		return out, err
	}
	dev, err := Get(int(b.DeviceID()))
	if err != nil {
		return buffer.Buffer{}, err
	}
	stream, err := dev.CopyStream()
	if err != nil {
		return buffer.Buffer{}, err
	}
	out, err := dev.Alloc(b.Size(), false, stream)
	if err != nil {
		return buffer.Buffer{}, err
	}
	if b.Size() > 0 {
		err = stream.CopyDtoD(uintptr(out.Data()), uintptr(b.Data()), b.Size())
	}
	if serr := stream.Sync(); err == nil {
		err = serr
	}
	if err != nil {
		out.Release()
		return buffer.Buffer{}, err
	}
	return out, nil
}
