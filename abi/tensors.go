package abi

/*
#include <ovstage/ovstage.h>

// Runs a managed tensor's deleter (a NULL deleter means the producer needs no notice).
static void ovs_abi_delete_managed(DLManagedTensorVersioned* m) {
	if (m->deleter != NULL) {
		m->deleter(m);
	}
}
*/
import "C"

import (
	"fmt"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/logbus"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Managed is the set of DLPack managed tensors whose ownership a call took (at call entry,
// whether or not the call is then accepted). Release runs each deleter exactly once; call it
// when no work reads the tensors any more.
type Managed struct {
	ptrs []*C.DLManagedTensorVersioned
	seen map[*C.DLManagedTensorVersioned]struct{}
}

// Len is the number of distinct managed tensors held.
func (m *Managed) Len() int { return len(m.ptrs) }

// add takes p (NULL pointers and repeats are ignored here; decoding reports them).
func (m *Managed) add(p *C.DLManagedTensorVersioned) {
	if p == nil {
		return
	}
	if m.seen == nil {
		m.seen = map[*C.DLManagedTensorVersioned]struct{}{}
	}
	if _, dup := m.seen[p]; dup {
		return
	}
	m.seen[p] = struct{}{}
	m.ptrs = append(m.ptrs, p)
}

// collect takes every managed tensor a write data names, before anything is validated. A count
// above MaxTensors is not read (it cannot describe a real array).
func (m *Managed) collect(d *C.ovstage_write_data_t) {
	n := uint64(d.tensor_count)
	if d.managed_tensors == nil || n == 0 || n > MaxTensors {
		return
	}
	for _, p := range unsafe.Slice(d.managed_tensors, int(n)) {
		m.add((*C.DLManagedTensorVersioned)(unsafe.Pointer(p)))
	}
}

// Release runs the deleters (once each) and empties the set. A nil set is a no-op.
func (m *Managed) Release() {
	if m == nil {
		return
	}
	ptrs := m.ptrs
	m.ptrs, m.seen = nil, nil
	for _, p := range ptrs {
		C.ovs_abi_delete_managed(p)
	}
}

// Settle hands the set over once the enqueue of its write is decided: a rejected write (err
// set) releases the tensors now, an accepted one once its op completed (the op may copy the
// payload), on a goroutine counted in pending (nil: not counted), so that an owner destroying
// the stage can wait until every deleter ran.
func (m *Managed) Settle(s *core.Stage, op uint64, err error, pending *sync.WaitGroup) {
	if err != nil || s == nil || m.Len() == 0 {
		m.Release()
		return
	}
	if pending != nil {
		pending.Add(1)
	}
	go func() {
		if pending != nil {
			defer pending.Done()
		}
		defer func() {
			if r := recover(); r != nil {
				logbus.Logf(logbus.Error, logbus.ChannelInternal, "internal panic in a managed tensor release: %v\n%s", r, debug.Stack())
			}
		}()
		_, _ = s.WaitOp(op, core.TimeoutInfinite)
		m.Release()
	}()
}

var dlTensorSize = unsafe.Sizeof(C.DLTensor{})

// tensorAt decodes and validates a DLTensor (the checks of FromAddress, shared with
// every other way a tensor enters the engine).
func tensorAt(p unsafe.Pointer, name string) (tensor.Tensor, error) {
	return FromAddress(uintptr(p), name)
}

// tensorsOf decodes the tensors of a write data (prefix names the data struct in messages).
// firstUse records, for managed tensors, where each pointer first appeared across a batch.
func tensorsOf(d *C.ovstage_write_data_t, prefix string, firstUse map[unsafe.Pointer]string) ([]tensor.Tensor, error) {
	n := uint64(d.tensor_count)
	client, managed := d.tensors != nil, d.managed_tensors != nil
	switch {
	case client && managed:
		return nil, invalid("%s.tensors and %s.managed_tensors are both set: give exactly one", prefix, prefix)
	case n == 0 && (client || managed):
		which := "tensors"
		if managed {
			which = "managed_tensors"
		}
		return nil, invalid("%s.tensor_count is 0 but %s.%s is set", prefix, prefix, which)
	case n == 0:
		return nil, invalid("%s: tensor_count is 0: a write needs at least one tensor", prefix)
	case n > MaxTensors:
		return nil, invalid("%s.tensor_count %d is larger than %d", prefix, n, MaxTensors)
	case !client && !managed:
		return nil, invalid("%s.tensors and %s.managed_tensors are both NULL with tensor_count %d", prefix, prefix, n)
	}
	out := make([]tensor.Tensor, n)
	if client {
		base := unsafe.Pointer(d.tensors)
		for i := range out {
			t, err := tensorAt(unsafe.Add(base, uintptr(i)*dlTensorSize), fmt.Sprintf("%s.tensors[%d]", prefix, i))
			if err != nil {
				return nil, err
			}
			out[i] = t
		}
		return out, nil
	}
	for i, p := range unsafe.Slice(d.managed_tensors, int(n)) {
		name := fmt.Sprintf("%s.managed_tensors[%d]", prefix, i)
		if p == nil {
			return nil, invalid("%s is NULL", name)
		}
		key := unsafe.Pointer(p)
		if first, dup := firstUse[key]; dup {
			return nil, invalid("%s is the same managed tensor as %s: every managed tensor pointer must be unique", name, first)
		}
		firstUse[key] = name
		if v := p.version; v.major != C.DLPACK_MAJOR_VERSION {
			return nil, invalid("%s: DLPack version %d.%d is not 1.x", name, v.major, v.minor)
		}
		t, err := tensorAt(unsafe.Pointer(&p.dl_tensor), name+"->dl_tensor")
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}
