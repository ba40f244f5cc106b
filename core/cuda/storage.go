package cuda

import (
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/status"
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

// Import takes over b: a buffer of this device is returned as is; a host buffer is uploaded
// (and released); anything else is refused (b is returned for the caller to release).
func (c *ColumnStorage) Import(b buffer.Buffer) (buffer.Buffer, error) {
	if !b.OnHost() {
		if !IsDeviceBuffer(b) || int(b.DeviceID()) != c.dev.Ordinal {
			return b, status.Errorf(status.Internal, "a payload of device %d reached a column on %s", b.DeviceID(), c.dev)
		}
		return b, nil
	}
	d, err := c.dev.Alloc(b.Size(), false, c.stream)
	if err != nil {
		return b, err
	}
	if b.Size() > 0 {
		if err := c.stream.CopyHtoD(uintptr(d.Data()), b.Data(), b.Size()); err != nil {
			d.Release()
			return b, err
		}
	}
	if err := c.stream.Sync(); err != nil {
		d.Release()
		return b, err
	}
	b.Release()
	return d, nil
}

// HostCopy downloads b (a buffer of this device) into a new host buffer.
func (c *ColumnStorage) HostCopy(b buffer.Buffer) (buffer.Buffer, error) {
	if b.OnHost() {
		return b.Retain(), nil
	}
	h, err := buffer.New(b.Size())
	if err != nil {
		return buffer.Buffer{}, err
	}
	if b.Size() > 0 {
		if err := c.stream.CopyDtoH(h.Data(), uintptr(b.Data()), b.Size()); err != nil {
			h.Release()
			return buffer.Buffer{}, err
		}
	}
	if err := c.stream.Sync(); err != nil {
		h.Release()
		return buffer.Buffer{}, err
	}
	return h, nil
}

// Close destroys the column's stream (queued work still completes).
func (c *ColumnStorage) Close() { c.stream.Destroy() }
