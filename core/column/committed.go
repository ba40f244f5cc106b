package column

import "unsafe"

// Committed calls fn for each of prims whose latest committed change (sealed or still pending)
// is a write, with the committed value: a fixed row's bytes, or an array row's element bytes.
// Queries, clone and map see this committed state; value is valid only during the call.
func (c *Column) Committed(prims []uint64, fn func(i int, value []byte)) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
	sealed := c.sealed.Bytes()
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
			payload := src.d.Payload.Bytes()
			if c.Schema.IsArray {
				off, n := src.d.RowOff[s], src.d.RowLen[s]
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
			a := c.arrays[r]
			if a.n == 0 {
				fn(i, nil)
				continue
			}
			fn(i, unsafe.Slice((*byte)(unsafe.Add(a.buf.Data(), a.off)), int(a.n)*rb))
		} else {
			fn(i, sealed[int(r)*rb:int(r+1)*rb])
		}
	}
}
