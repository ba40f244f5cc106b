package column

import (
	"fmt"
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
)

// Committed calls fn for each of prims whose latest committed change (sealed or still pending)
// is a write, with the committed value: a fixed row's bytes, or an array row's element bytes.
// Queries, clone and map see this committed state; value is valid only during the call.
func (c *Column) Committed(prims []uint64, fn func(i int, value []byte)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	views := hostViews{placer: c.placer}
	defer views.release()
	type source struct {
		d *Delta
		i int // index in d.Rows
	}
	latest := map[int32]source{}
	for _, d := range c.pending { // (ordinal, seq) order: later entries win
		for i, r := range d.Rows {
			latest[r] = source{d, i}
		}
	}
	rb := c.rowBytes
	for i, p := range prims {
		r, ok := c.rows.lookup(p)
		if !ok {
			continue
		}
		if src, pending := latest[r]; pending {
			if src.d.Tombstone {
				continue
			}
			s := src.d.src(src.i)
			payload := views.bytes(src.d.Payload)
			if c.Schema.IsArray {
				off, n := src.d.row(s)
				fn(i, payload[off:off+n*int64(rb)])
			} else {
				fn(i, payload[int(s)*rb:int(s+1)*rb])
			}
			continue
		}
		if !c.keys.get(r).visible() {
			continue
		}
		if c.Schema.IsArray {
			a := c.arrays.get(r)
			if a.n == 0 {
				fn(i, nil)
				continue
			}
			fn(i, views.bytes(a.buf)[a.off:a.off+a.n*int64(rb)])
		} else {
			fn(i, views.bytes(c.sealed)[int(r)*rb:int(r+1)*rb])
		}
	}
}

// hostViews hands out the host bytes of buffers during one call, copying a device buffer to
// the host at most once (GPU columns: queries, clones and maps read values on the CPU).
type hostViews struct {
	placer Placer
	copies map[unsafe.Pointer]buffer.Buffer
}

func (h *hostViews) bytes(b buffer.Buffer) []byte {
	if b.OnHost() {
		return b.Bytes()
	}
	if c, ok := h.copies[b.Raw()]; ok {
		return c.Bytes()
	}
	c, err := hostCopy(h.placer, b)
	if err != nil {
		// Committed has no error path: the op running it recovers this into an INTERNAL error.
		panic(fmt.Sprintf("reading a GPU column's values on the host: %v", err))
	}
	if h.copies == nil {
		h.copies = map[unsafe.Pointer]buffer.Buffer{}
	}
	h.copies[b.Raw()] = c
	return c.Bytes()
}

func (h *hostViews) release() {
	for _, c := range h.copies {
		c.Release()
	}
}
