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
