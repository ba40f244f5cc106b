package pybind

import (
	"math/bits"
	"slices"
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// copySparsity copies a decoded write's index_map and mask out of the caller's memory. The C
// API reads them in place while the op runs; the Python package promises that only a large
// payload's tensors are read after the call returns (API.md).
func copySparsity(req *core.WriteRequest) {
	req.IndexMap = slices.Clone(req.IndexMap)
	req.Mask = slices.Clone(req.Mask)
}

// WriteAttribute enqueues write_attribute: attribute is an ovx_string_or_token_t*, data an
// ovstage_write_data_t*, placement an ovstage_placement_t* (0: none), decoded by abi.Write as
// the C library decodes them.
func WriteAttribute(stageID, query uint64, attribute uintptr, ordinal uint64, data uintptr, primMode int32,
	placement uintptr) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		req, owned, err := abi.Write(query, cptr.At(attribute), ordinal, cptr.At(data), primMode, cptr.At(placement))
		var op uint64
		if err == nil {
			copySparsity(&req)
			op, err = s.WriteAttribute(req)
		}
		owned.Settle(s, op, err, nil)
		return op, err
	})
}

// WriteAttributes enqueues write_attributes: n ovstage_attribute_write_t at writes, one
// ordinal, prim mode and placement (ovstage_placement_t*, 0: none) for all, decoded by
// abi.WriteBatch.
func WriteAttributes(stageID, query uint64, writes uintptr, n int, ordinal uint64, primMode int32,
	placement uintptr) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		if n < 0 {
			return 0, status.Errorf(status.InvalidArgument, "write_count %d is negative", n)
		}
		reqs, owned, err := abi.WriteBatch(cptr.At(writes), uint64(n), cptr.At(placement))
		var op uint64
		if err == nil {
			for i := range reqs {
				copySparsity(&reqs[i])
			}
			op, err = s.WriteAttributes(query, ordinal, primMode, reqs)
		}
		owned.Settle(s, op, err, nil)
		return op, err
	})
}

var errFallback = status.Errorf(fallbackCode, "fallback")

// fastMaxDims is the most dimensions WriteNumpy takes (d0..d3); more take the general path.
const fastMaxDims = 4

// WriteNumpy is write_attribute's fast path for the common case: one C-contiguous host array
// of nbytes bytes at data with nd dims d0..d3 (unused ones 0), an attribute token, no
// index_map/mask/count, a semantic, UPSERT, is_array false. code/bits describe its
// one-lane dtype. The caller read all of that from the numpy array while it held the GIL:
// this function runs without it and must never read the array object itself (another
// thread may be reshaping it). It builds the request abi.Write would build from the same
// write data, checks its tensor with abi.CheckTensor (the rules of every DLTensor) and
// enqueues it through the same engine validation. Anything it does not cover, or a header
// that does not add up (dims whose product is not nbytes: read while another thread changed
// the dtype), returns "[ovstage:-1] fallback" so the caller takes the general path.
func WriteNumpy(stageID, query, attrToken, ordinal uint64, data uintptr, nbytes int64, code, bitWidth int,
	nd int, d0, d1, d2, d3 int64, semantic int32) (uint64, error) {
	return call(func() (uint64, error) {
		// One allocation for the request's tensor list and its shape.
		box := &numpyBox{}
		if err := box.fill(data, nbytes, code, bitWidth, nd, [fastMaxDims]int64{d0, d1, d2, d3}); err != nil {
			return 0, err
		}
		s, err := core.Lookup(stageID)
		if err != nil {
			return 0, err
		}
		return s.WriteAttribute(core.WriteRequest{Query: query, AttrToken: attrToken, Ordinal: ordinal,
			Tensors: box.t[:], Semantic: semantic})
	})
}

// numpyBox holds the one tensor of a fast-path write and its shape.
type numpyBox struct {
	t     [1]tensor.Tensor
	shape [fastMaxDims]int64
}

// fill describes the host array WriteNumpy takes as the box's tensor, checked by the rules of
// every DLTensor; errFallback when the fast path does not cover it or the header does not
// add up.
func (box *numpyBox) fill(data uintptr, nbytes int64, code, bitWidth, nd int, dims [fastMaxDims]int64) error {
	if data == 0 || nd < 1 || nd > fastMaxDims || code < 0 || code > 255 ||
		bitWidth <= 0 || bitWidth > 64 || bitWidth%8 != 0 || nbytes <= 0 {
		return errFallback
	}
	box.shape = dims
	shape := box.shape[:nd]
	size := uint64(bitWidth / 8)
	for _, d := range shape {
		if d <= 0 { // empty arrays take the general path
			return errFallback
		}
		hi, lo := bits.Mul64(size, uint64(d))
		if hi != 0 {
			return errFallback
		}
		size = lo
	}
	if size != uint64(nbytes) {
		return errFallback
	}
	box.t[0] = tensor.Tensor{
		Data:       cptr.At(data),
		DeviceType: tensor.DeviceCPU,
		DType:      tensor.DType{Code: uint8(code), Bits: uint8(bitWidth), Lanes: 1},
		Shape:      shape,
	}
	return abi.CheckTensor(box.t[0], data, 0, "data.tensors[0]")
}

// numpyEntryWords is the length of one WriteNumpyBatch entry: token, data, nbytes, code, bits,
// nd, d0..d3.
const numpyEntryWords = 6 + fastMaxDims

// WriteNumpyBatch is write_attributes' fast path, WriteNumpy for each of n entries: uint64
// words at entries, numpyEntryWords per entry (see there). The entries go to the engine as one
// batch exactly as the general path hands them over; any entry the fast path does not cover
// (or whose tensor check fails, so that the general path names it) sends the whole batch down
// the general path ("[ovstage:-1] fallback").
func WriteNumpyBatch(stageID, query uint64, entries uintptr, n int, ordinal uint64, primMode int32) (uint64, error) {
	return call(func() (uint64, error) {
		if n <= 0 || entries == 0 {
			return 0, errFallback
		}
		words := unsafe.Slice((*uint64)(cptr.At(entries)), n*numpyEntryWords)
		boxes := make([]numpyBox, n)
		reqs := make([]core.WriteRequest, n)
		for i := range reqs {
			w := words[i*numpyEntryWords : (i+1)*numpyEntryWords]
			var dims [fastMaxDims]int64
			for k := range dims {
				dims[k] = int64(w[6+k])
			}
			if w[0] == 0 || w[5] > fastMaxDims || w[2] > 1<<62 || w[3] > 255 || w[4] > 64 {
				return 0, errFallback
			}
			if err := boxes[i].fill(uintptr(w[1]), int64(w[2]), int(w[3]), int(w[4]), int(w[5]), dims); err != nil {
				return 0, errFallback
			}
			reqs[i] = core.WriteRequest{Query: query, AttrToken: w[0], Tensors: boxes[i].t[:]}
		}
		s, err := core.Lookup(stageID)
		if err != nil {
			return 0, err
		}
		return s.WriteAttributes(query, ordinal, primMode, reqs)
	})
}

// DeferCopyBytes is the payload size from which a write's copy happens in the op (the caller
// keeps the source alive until the op completes).
func DeferCopyBytes() (int, error) { return core.DeferCopyBytes, nil }
