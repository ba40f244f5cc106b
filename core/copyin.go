package core

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// DeferCopyBytes is the payload size from which a write copies its host payload in the op, on
// a worker, instead of on the enqueuing thread: writes submitted ahead then copy in parallel
// (one per worker) while the caller keeps submitting. Below it the copy costs less than handing
// the op to another thread, so it happens at enqueue and the caller may reuse its buffer at
// once. A deferred write reads the caller's memory when it runs: the caller keeps the source
// alive and unchanged until the op completes, however the op id is waited, released or
// detached. The Python layer holds the source of every write with an entry of this size or
// more, and learns from Stage.TakeSourcesDone when the op no longer needs it.
const DeferCopyBytes = 1 << 20

// holdsSource reports whether the caller keeps a write entry's source alive until the op
// completes (see DeferCopyBytes; also for device writes, which copy at enqueue, so that the
// caller has one size rule).
func holdsSource(size int64) bool { return size >= DeferCopyBytes }

// parallelCopyMin is the compact payload size from which a copy is split across free worker
// slots (each chunk is at least half of it). A variable so tests can lower it.
var parallelCopyMin = 16 << 20

// deferCopy reports whether a write of these tensors copies in the op (see DeferCopyBytes).
func deferCopy(tensors []tensor.Tensor, size int64) bool {
	if !holdsSource(size) {
		return false
	}
	for _, t := range tensors {
		if t.DeviceType != tensor.DeviceCPU && t.DeviceType != tensor.DeviceCUDAHost {
			return false
		}
	}
	return true
}

// memcpyMin is the copy size from which the C library's memcpy is used (see buffer.Copy).
const memcpyMin = 256 << 10

// copyTensor copies t compactly into dst; a large compact copy is split across worker slots
// of pool that are free (never more than the pool's size, so Workers=1 copies on one thread).
func copyTensor(dst []byte, t tensor.Tensor, pool *sched.Pool) error {
	if len(dst) < memcpyMin || !t.Compact() || int64(len(dst)) != t.ByteSize() {
		return t.CopyCompact(dst)
	}
	src := unsafe.Slice((*byte)(t.Data), len(dst))
	helpers := 0
	if pool != nil && len(dst) >= parallelCopyMin {
		helpers = pool.TryAcquire(min(pool.Workers(), len(dst)/(parallelCopyMin/2)) - 1)
	}
	if helpers <= 0 {
		buffer.Copy(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), len(dst))
		return nil
	}
	defer pool.Release(helpers)
	parts := helpers + 1
	chunk := (len(dst) + parts - 1) / parts
	chunk = (chunk + 4095) &^ 4095
	part := func(i int) error {
		// A helper goroutine must not die of a panic (it would take the process down):
		// the copy fails instead.
		return sched.SafeRun(func() error {
			if h := copyPartHook.Load(); h != nil {
				(*h)(i)
			}
			lo := min(i*chunk, len(dst))
			hi := min(lo+chunk, len(dst))
			if lo < hi {
				buffer.Copy(unsafe.Pointer(&dst[lo]), unsafe.Pointer(&src[lo]), hi-lo)
			}
			return nil
		})
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := 1; i < parts; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = part(i)
		}()
	}
	errs[0] = part(0)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// copyPartHook, when a test sets it, runs at the start of each part of a split copy (nil in
// production: one atomic load per part).
var copyPartHook atomic.Pointer[func(part int)]
