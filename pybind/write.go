package pybind

import (
	"math/bits"
	"slices"

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
// index_map/mask/count, semantic 0, UPSERT, is_array false. code/bits describe its
// one-lane dtype. The caller read all of that from the numpy array while it held the GIL:
// this function runs without it and must never read the array object itself (another
// thread may be reshaping it). It builds the request abi.Write would build from the same
// write data, checks its tensor with abi.CheckTensor (the rules of every DLTensor) and
// enqueues it through the same engine validation. Anything it does not cover, or a header
// that does not add up (dims whose product is not nbytes: read while another thread changed
// the dtype), returns "[ovstage:-1] fallback" so the caller takes the general path.
func WriteNumpy(stageID, query, attrToken, ordinal uint64, data uintptr, nbytes int64, code, bitWidth int,
	nd int, d0, d1, d2, d3 int64) (uint64, error) {
	return call(func() (uint64, error) {
		if data == 0 || nd < 1 || nd > fastMaxDims || code < 0 || code > 255 ||
			bitWidth <= 0 || bitWidth > 64 || bitWidth%8 != 0 || nbytes <= 0 {
			return 0, errFallback
		}
		// One allocation for the request's tensor list and its shape.
		box := &struct {
			t     [1]tensor.Tensor
			shape [fastMaxDims]int64
		}{shape: [fastMaxDims]int64{d0, d1, d2, d3}}
		shape := box.shape[:nd]
		size := uint64(bitWidth / 8)
		for _, d := range shape {
			if d <= 0 { // empty arrays take the general path
				return 0, errFallback
			}
			hi, lo := bits.Mul64(size, uint64(d))
			if hi != 0 {
				return 0, errFallback
			}
			size = lo
		}
		if size != uint64(nbytes) {
			return 0, errFallback
		}
		s, err := core.Lookup(stageID)
		if err != nil {
			return 0, err
		}
		box.t[0] = tensor.Tensor{
			Data:       cptr.At(data),
			DeviceType: tensor.DeviceCPU,
			DType:      tensor.DType{Code: uint8(code), Bits: uint8(bitWidth), Lanes: 1},
			Shape:      shape,
		}
		if err := abi.CheckTensor(box.t[0], data, 0, "data.tensors[0]"); err != nil {
			return 0, err
		}
		return s.WriteAttribute(core.WriteRequest{Query: query, AttrToken: attrToken, Ordinal: ordinal,
			Tensors: box.t[:]})
	})
}

// DeferCopyBytes is the payload size from which a write's copy happens in the op (the caller
// keeps the source alive until the op completes).
func DeferCopyBytes() (int, error) { return core.DeferCopyBytes, nil }
