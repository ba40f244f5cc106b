package pybind

import (
	"sync/atomic"
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/dlpack"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// numpyLayout holds the byte offsets of the fields of numpy's PyArrayObject that WriteNumpy
// reads (data pointer, ndim, dims pointer, flags). python/ovstage measures them once at import
// against numpy's own accessors and sets them only if every check passes; until then WriteNumpy
// always falls back.
type numpyLayout struct{ data, nd, dims, flags uintptr }

var layout atomic.Pointer[numpyLayout]

// fallback tells the Python layer to take the general write path (not an error of the write).
const fallbackCode = -1

var errFallback = status.Errorf(fallbackCode, "fallback")

// SetNumpyLayout records the PyArrayObject field offsets (see numpyLayout); all zero disables
// the fast path.
func SetNumpyLayout(data, nd, dims, flags int) (bool, error) {
	return call(func() (bool, error) {
		if data <= 0 || nd <= 0 || dims <= 0 || flags <= 0 {
			layout.Store(nil)
			return false, nil
		}
		layout.Store(&numpyLayout{data: uintptr(data), nd: uintptr(nd), dims: uintptr(dims), flags: uintptr(flags)})
		return true, nil
	})
}

const npyCContiguous = 0x0001

// WriteNumpy is write_attribute's fast path for the common case: one C-contiguous numpy array
// (the PyArrayObject at arrAddr, which the caller keeps alive), an attribute token, no
// index_map/mask/count, semantic 0, UPSERT, is_array false. code/bits/lanes describe the
// array's (native byte order) dtype. It builds the same request as WriteAttribute and goes
// through the same validation; anything it does not cover returns "[ovstage:-1] fallback" so
// the caller takes the general path.
func WriteNumpy(stageID, query, attrToken, ordinal uint64, arrAddr uintptr, code, bits, lanes int) (uint64, error) {
	return call(func() (uint64, error) {
		l := layout.Load()
		if l == nil || arrAddr == 0 || code < 0 || code > 255 || bits <= 0 || bits > 255 || lanes <= 0 || lanes > 0xFFFF {
			return 0, errFallback
		}
		base := cptr.At(arrAddr)
		nd := int(*(*int32)(unsafe.Add(base, l.nd)))
		flags := *(*int32)(unsafe.Add(base, l.flags))
		if nd < 1 || nd > dlpack.MaxDims || flags&npyCContiguous == 0 {
			return 0, errFallback
		}
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		dims := unsafe.Slice(*(**int64)(unsafe.Add(base, l.dims)), nd)
		// One allocation for the request's tensor list and a small shape.
		box := &struct {
			t     [1]dlpack.Tensor
			shape [4]int64
		}{}
		shape := box.shape[:0]
		if nd > len(box.shape) {
			shape = make([]int64, 0, nd)
		}
		for _, d := range dims {
			if d <= 0 {
				return 0, errFallback // empty arrays take the general path
			}
			shape = append(shape, d)
		}
		box.t[0] = dlpack.Tensor{
			Data:       *(*unsafe.Pointer)(unsafe.Add(base, l.data)),
			DeviceType: dlpack.DeviceCPU,
			DType:      dlpack.DType{Code: uint8(code), Bits: uint8(bits), Lanes: uint16(lanes)},
			Shape:      shape,
		}
		return s.WriteAttribute(core.WriteRequest{Query: query, AttrToken: attrToken, Ordinal: ordinal,
			Tensors: box.t[:]})
	})
}

// DeferCopyBytes is the payload size from which a write's copy happens in the op (the caller
// keeps the source alive until the op completes).
func DeferCopyBytes() (int, error) { return core.DeferCopyBytes, nil }
