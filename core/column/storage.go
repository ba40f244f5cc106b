package column

import (
	"fmt"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Placement says where a column's payload lives: host memory or one CUDA device.
type Placement struct {
	DeviceType int32 // tensor.DeviceCPU or tensor.DeviceCUDA
	DeviceID   int32
}

// Host is the placement of host (CPU) columns.
var Host = Placement{DeviceType: tensor.DeviceCPU}

// CUDA is the placement on CUDA device ordinal.
func CUDA(ordinal int32) Placement {
	return Placement{DeviceType: tensor.DeviceCUDA, DeviceID: ordinal}
}

// IsCUDA reports whether the payload is memory of a CUDA device.
func (p Placement) IsCUDA() bool { return p.DeviceType == tensor.DeviceCUDA }

// IsHost reports whether the payload is host memory.
func (p Placement) IsHost() bool { return p.DeviceType == tensor.DeviceCPU }

// String is "cpu" or "cuda:<ordinal>" (the spelling of the Python device= option).
func (p Placement) String() string {
	switch p.DeviceType {
	case tensor.DeviceCPU:
		return "cpu"
	case tensor.DeviceCUDA:
		return fmt.Sprintf("cuda:%d", p.DeviceID)
	}
	return fmt.Sprintf("device(%d, %d)", p.DeviceType, p.DeviceID)
}

// Run is one contiguous copy of Len bytes from offset Src to offset Dst.
type Run struct{ Dst, Src, Len int64 }

// Storage allocates a column's buffers and copies rows between them, in the column's
// placement. Host columns use HostStorage; device columns get theirs from core/cuda, whose
// copies are queued on the column's stream and completed by Flush.
type Storage interface {
	Placement() Placement
	// New allocates a zero-filled buffer of size bytes holding one reference.
	New(size int) (buffer.Buffer, error)
	// Copy copies runs from src into dst (both buffers of this placement), in order.
	Copy(dst, src buffer.Buffer, runs []Run) error
	// Flush returns once every copy issued so far has landed; dst is then ready for readers
	// and the sources of those copies may be released.
	Flush(dst buffer.Buffer) error
	// Close releases what the storage holds (not the buffers it made).
	Close()
}

// HostCopy returns a host buffer with the bytes of b, a buffer of this column (b itself, with
// a new reference, on the host): CPU-side consumers of GPU columns read through it.
func (c *Column) HostCopy(b buffer.Buffer) (buffer.Buffer, error) { return hostCopy(c.placer, b) }

type hostStorage struct{}

// HostStorage is the storage of host columns: C buffers and memmove.
func HostStorage() Storage { return hostStorage{} }

func (hostStorage) Placement() Placement { return Host }

func (hostStorage) New(size int) (buffer.Buffer, error) { return buffer.New(size) }

func (hostStorage) Copy(dst, src buffer.Buffer, runs []Run) error {
	d, s := dst.Bytes(), src.Bytes()
	for _, r := range runs {
		copy(d[r.Dst:r.Dst+r.Len], s[r.Src:r.Src+r.Len])
	}
	return nil
}

func (hostStorage) Flush(buffer.Buffer) error { return nil }

func (hostStorage) Close() {}

// rowCopies copies rows of rowBytes bytes from src into dst, in order, merging neighbours
// contiguous on both sides (forwards or backwards) into one run: on the host each run is copied
// as it ends (no run list for many scattered rows), elsewhere the runs go to the storage at
// flush. A row written twice keeps both copies, in order.
type rowCopies struct {
	store    Storage
	dst, src buffer.Buffer
	d, s     []byte // host bytes (nil: elsewhere)
	rb       int64
	cur      Run // the run being extended (Len 0: none)
	runs     []Run
}

func newRowCopies(store Storage, dst, src buffer.Buffer, rowBytes int) *rowCopies {
	rc := &rowCopies{store: store, dst: dst, src: src, rb: int64(rowBytes)}
	if _, host := store.(hostStorage); host {
		rc.d, rc.s = dst.Bytes(), src.Bytes()
	}
	return rc
}

// add copies row from of src to row to of dst.
func (rc *rowCopies) add(to, from int64) {
	dst, src, rb, cur := to*rc.rb, from*rc.rb, rc.rb, &rc.cur
	switch {
	case cur.Len > 0 && cur.Dst+cur.Len == dst && cur.Src+cur.Len == src:
		cur.Len += rb
	case cur.Len > 0 && cur.Dst == dst+rb && cur.Src == src+rb:
		cur.Dst, cur.Src, cur.Len = dst, src, cur.Len+rb
	default:
		rc.issue()
		*cur = Run{Dst: dst, Src: src, Len: rb}
	}
}

// issue ends the current run.
func (rc *rowCopies) issue() {
	r := rc.cur
	if r.Len == 0 {
		return
	}
	if rc.d != nil {
		copy(rc.d[r.Dst:r.Dst+r.Len:r.Dst+r.Len], rc.s[r.Src:r.Src+r.Len:r.Src+r.Len])
	} else {
		rc.runs = append(rc.runs, r)
	}
	rc.cur = Run{}
}

// flush completes the copies added so far (elsewhere: hands the runs to the storage).
func (rc *rowCopies) flush() error {
	rc.issue()
	if len(rc.runs) == 0 {
		return nil
	}
	err := rc.store.Copy(rc.dst, rc.src, rc.runs)
	rc.runs = rc.runs[:0]
	return err
}

// copyDeltaRowsLocked copies write d's rows into the sealed buffer (row Rows[i] takes source
// row i, or Src[i]).
func (c *Column) copyDeltaRowsLocked(d *Delta) error {
	copies := newRowCopies(c.store, c.sealed, d.Payload, c.rowBytes)
	for i, r := range d.Rows {
		copies.add(int64(r), int64(d.src(i)))
	}
	return copies.flush()
}
