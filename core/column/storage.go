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

// rowRuns turns a delta's row copies (row rows[i] takes payload row src[i], or row i when src
// is nil) into byte runs, merging neighbours that are contiguous on both sides. Order is kept,
// so a row written twice still ends with the later value.
func rowRuns(rows, src []int32, rowBytes int) []Run {
	rb := int64(rowBytes)
	runs := make([]Run, 0, 1)
	for i, r := range rows {
		s := int64(i)
		if src != nil {
			s = int64(src[i])
		}
		dst, from := int64(r)*rb, s*rb
		if n := len(runs); n > 0 {
			last := &runs[n-1]
			if last.Dst+last.Len == dst && last.Src+last.Len == from {
				last.Len += rb
				continue
			}
		}
		runs = append(runs, Run{Dst: dst, Src: from, Len: rb})
	}
	return runs
}

// rowCopies copies rows of rowBytes bytes from src into dst one by one, in order: directly
// on the host (no run list for many scattered rows), else batched into runs for the storage,
// merging neighbours contiguous on both sides (forwards or backwards).
type rowCopies struct {
	store    Storage
	dst, src buffer.Buffer
	d, s     []byte // host bytes (nil: elsewhere)
	rb       int64
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
	dst, src, rb := to*rc.rb, from*rc.rb, rc.rb
	if rc.d != nil {
		copy(rc.d[dst:dst+rb:dst+rb], rc.s[src:src+rb:src+rb])
		return
	}
	if n := len(rc.runs); n > 0 {
		last := &rc.runs[n-1]
		switch {
		case last.Dst+last.Len == dst && last.Src+last.Len == src:
			last.Len += rb
			return
		case last.Dst == dst+rb && last.Src == src+rb:
			last.Dst, last.Src, last.Len = dst, src, last.Len+rb
			return
		}
	}
	rc.runs = append(rc.runs, Run{Dst: dst, Src: src, Len: rb})
}

// flush issues the batched copies.
func (rc *rowCopies) flush() error {
	if len(rc.runs) == 0 {
		return nil
	}
	err := rc.store.Copy(rc.dst, rc.src, rc.runs)
	rc.runs = rc.runs[:0]
	return err
}
