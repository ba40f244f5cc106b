package abi

/*
#include <ovstage/ovstage.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
)

// decodeData fills req from the ovstage_write_data_t d. index_map and mask are read in place
// (count entries and ceil(count/64) words): the caller keeps them, like the tensors, until the
// op completes.
func decodeData(d *C.ovstage_write_data_t, prefix string, req *core.WriteRequest, firstUse map[unsafe.Pointer]string) error {
	tensors, err := tensorsOf(d, prefix, firstUse)
	if err != nil {
		return err
	}
	req.Tensors = tensors
	req.Count = uint32(d.count)
	if d.index_map != nil {
		req.HasIndexMap = true
		req.IndexMap = unsafe.Slice((*uint32)(unsafe.Pointer(d.index_map)), int(d.count))
	}
	if d.mask != nil {
		req.HasMask = true
		req.Mask = unsafe.Slice((*uint64)(unsafe.Pointer(d.mask)), (int(d.count)+63)/64)
	}
	req.Sync = Sync(uintptr(d.cuda_sync.stream), uintptr(d.cuda_sync.wait_event))
	req.Semantic = int32(d.semantic)
	req.IsArray = bool(d.is_array)
	req.AttributeMode = attributeMode(d.attribute_mode) // the engine checks it
	return nil
}

// attributeMode is an ovstage_attribute_mode_t as the engine's int32 (a value outside int32
// stays out of range: the engine refuses it, naming attribute_mode).
func attributeMode(m C.ovstage_attribute_mode_t) int32 {
	if v := int64(m); v >= -1<<31 && v < 1<<31 {
		return int32(v)
	}
	return -1
}

// attributeOf sets the token or name of a write's attribute.
func attributeOf(p unsafe.Pointer, name string, req *core.WriteRequest) error {
	tok, s, err := StringOrToken(p, name)
	if err != nil {
		return err
	}
	if tok == 0 && s == "" {
		return invalid("%s is empty: give a non-zero token or a non-empty string", name)
	}
	req.AttrToken, req.AttrName = tok, s
	return nil
}

// Write decodes write_attribute's arguments: attribute (ovx_string_or_token_t*), data
// (ovstage_write_data_t*) and placement (ovstage_placement_t*, may be NULL). The returned set
// owns the managed tensors the data names, also when an error is returned: release it once no
// work reads them (at once, if the write is not enqueued).
func Write(query uint64, attribute unsafe.Pointer, ordinal uint64, data unsafe.Pointer, primMode int32,
	placement unsafe.Pointer) (core.WriteRequest, *Managed, error) {
	req := core.WriteRequest{Query: query, Ordinal: ordinal, PrimMode: primMode}
	owned := &Managed{}
	if data == nil {
		return req, owned, invalid("data is NULL")
	}
	d := (*C.ovstage_write_data_t)(data)
	owned.collect(d)
	if err := decodeData(d, "data", &req, map[unsafe.Pointer]string{}); err != nil {
		return req, owned, err
	}
	if err := attributeOf(attribute, "attribute", &req); err != nil {
		return req, owned, err
	}
	placed, err := DecodePlacement(placement)
	if err != nil {
		return req, owned, err
	}
	req.Device, req.Avail = placed.Device, placed.Avail
	return req, owned, nil
}

// WriteBatch decodes the n ovstage_attribute_write_t entries at writes (and a placement, may
// be NULL, applied to every entry). Ownership of every managed tensor of the batch is taken
// before anything is validated, as for Write.
func WriteBatch(writes unsafe.Pointer, n uint64, placement unsafe.Pointer) ([]core.WriteRequest, *Managed, error) {
	owned := &Managed{}
	if n > MaxBatch {
		return nil, owned, invalid("write_count %d is larger than %d", n, MaxBatch)
	}
	entries, err := view[C.ovstage_attribute_write_t](writes, n, MaxBatch, "writes")
	if err != nil {
		return nil, owned, err
	}
	for i := range entries {
		owned.collect(&entries[i].data)
	}
	placed, err := DecodePlacement(placement)
	if err != nil {
		return nil, owned, err
	}
	firstUse := map[unsafe.Pointer]string{}
	reqs := make([]core.WriteRequest, len(entries))
	for i := range entries {
		e := &entries[i]
		prefix := fmt.Sprintf("writes[%d]", i)
		if err := decodeData(&e.data, prefix+".data", &reqs[i], firstUse); err != nil {
			return nil, owned, err
		}
		if err := attributeOf(unsafe.Pointer(&e.attribute), prefix+".attribute", &reqs[i]); err != nil {
			return nil, owned, err
		}
		reqs[i].Device, reqs[i].Avail = placed.Device, placed.Avail
	}
	return reqs, owned, nil
}

// Sync is the engine's view of an ovstage_cuda_sync_t {stream, wait_event} (a write's
// cuda_sync, an unmap's write_done_sync).
func Sync(stream, event uintptr) core.CudaSync { return core.CudaSync{Stream: stream, Event: event} }
