// Managed-tensor exports of refcounted buffers, and the PyCapsule destructor for them.
// Pure C so deleters can run on any thread (including Python's) without entering Go.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <ovx/dlpack/dlpack.h>
#include "ovs_buffer.h"

// A published tensor has at most three axes (core.MaxTypedDims); a lanes axis may be added.
#define OVS_MAX_EXPORT_DIMS 4

// Versioned exports declare the header's DLPack version. Their strides are always filled,
// which DLPack 1.2 and later require for ndim > 0.
#define OVS_EXPORT_DLPACK_MINOR DLPACK_MINOR_VERSION

typedef struct {
	DLManagedTensorVersioned m;
	int64_t shape[OVS_MAX_EXPORT_DIMS];
	int64_t strides[OVS_MAX_EXPORT_DIMS];
	ovs_buffer* buf;
} ovs_export_v;

typedef struct {
	DLManagedTensor m;
	int64_t shape[OVS_MAX_EXPORT_DIMS];
	int64_t strides[OVS_MAX_EXPORT_DIMS];
	ovs_buffer* buf;
} ovs_export_l;

static void delete_v(DLManagedTensorVersioned* self) {
	ovs_export_v* e = (ovs_export_v*)self->manager_ctx;
	ovs_buffer_release(e->buf);
	free(e);
}

static void delete_l(DLManagedTensor* self) {
	ovs_export_l* e = (ovs_export_l*)self->manager_ctx;
	ovs_buffer_release(e->buf);
	free(e);
}

// fill_tensor copies the template src with compact row-major strides and, because consumers
// do not support vector lanes, turns lanes > 1 into a trailing axis of lanes 1 (published
// tensors already have lanes 1).
static void fill_tensor(DLTensor* t, int64_t* shape, int64_t* strides, const DLTensor* src) {
	int32_t ndim = src->ndim;
	*t = *src;
	t->shape = shape;
	t->strides = strides;
	for (int32_t i = 0; i < ndim; i++) shape[i] = src->shape[i];
	if (src->dtype.lanes > 1) {
		shape[ndim++] = src->dtype.lanes;
		t->dtype.lanes = 1;
	}
	t->ndim = ndim;
	int64_t step = 1;
	for (int32_t i = ndim - 1; i >= 0; i--) {
		strides[i] = step;
		step *= shape[i];
	}
}

// ovs_export_new makes the versioned managed tensor of a published tensor (ndim axes of shape,
// at most OVS_MAX_EXPORT_DIMS - 1) of buf starting at byte_offset: the template that
// ovs_export_clone copies into capsule exports. NULL when ndim is out of range or on OOM.
DLManagedTensorVersioned* ovs_export_new(ovs_buffer* buf, uint64_t byte_offset, uint8_t code,
                                         uint8_t bits, uint16_t lanes, int32_t ndim,
                                         const int64_t* shape, int32_t device_type,
                                         int32_t device_id, uint64_t flags) {
	if (ndim < 1 || ndim >= OVS_MAX_EXPORT_DIMS) return NULL;
	ovs_export_v* e = (ovs_export_v*)calloc(1, sizeof(ovs_export_v));
	if (!e) return NULL;
	ovs_buffer_retain(buf);
	e->buf = buf;
	DLTensor* t = &e->m.dl_tensor;
	t->data = (char*)buf->data + byte_offset;
	t->device.device_type = (DLDeviceType)device_type;
	t->device.device_id = device_id;
	t->ndim = ndim;
	t->dtype.code = code;
	t->dtype.bits = bits;
	t->dtype.lanes = lanes;
	t->shape = e->shape;
	t->strides = e->strides;
	t->byte_offset = 0;
	int64_t step = 1;
	for (int32_t i = ndim - 1; i >= 0; i--) {
		e->shape[i] = shape[i];
		e->strides[i] = step;
		step *= shape[i];
	}
	e->m.version.major = DLPACK_MAJOR_VERSION;
	e->m.version.minor = OVS_EXPORT_DLPACK_MINOR;
	e->m.manager_ctx = e;
	e->m.deleter = delete_v;
	e->m.flags = flags;
	return &e->m;
}

// ovs_export_clone makes a fresh managed tensor (versioned or legacy) viewing the same storage
// as the template src, for handing to exactly one capsule (lanes expanded, strides filled).
void* ovs_export_clone(DLManagedTensorVersioned* src, int versioned) {
	ovs_export_v* s = (ovs_export_v*)src->manager_ctx;
	if (versioned) {
		ovs_export_v* e = (ovs_export_v*)calloc(1, sizeof(ovs_export_v));
		if (!e) return NULL;
		*e = *s;
		fill_tensor(&e->m.dl_tensor, e->shape, e->strides, &s->m.dl_tensor);
		e->m.manager_ctx = e;
		ovs_buffer_retain(e->buf);
		return &e->m;
	}
	ovs_export_l* e = (ovs_export_l*)calloc(1, sizeof(ovs_export_l));
	if (!e) return NULL;
	e->buf = s->buf;
	fill_tensor(&e->m.dl_tensor, e->shape, e->strides, &s->m.dl_tensor);
	e->m.manager_ctx = e;
	e->m.deleter = delete_l;
	ovs_buffer_retain(e->buf);
	return &e->m;
}

void ovs_export_free(DLManagedTensorVersioned* m) {
	if (m && m->deleter) m->deleter(m);
}

// Python's capsule API, found at run time so the extension never links libpython.
typedef int (*is_valid_fn)(void*, const char*);
typedef void* (*get_pointer_fn)(void*, const char*);

// ovs_capsule_destructor runs when a capsule dies. A consumer that took the tensor renamed the
// capsule ("used_dltensor"...), so only unconsumed tensors are deleted here.
void ovs_capsule_destructor(void* capsule) {
	static is_valid_fn is_valid;
	static get_pointer_fn get_pointer;
	if (!is_valid) {
		is_valid = (is_valid_fn)dlsym(RTLD_DEFAULT, "PyCapsule_IsValid");
		get_pointer = (get_pointer_fn)dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer");
		if (!is_valid || !get_pointer) return;
	}
	if (is_valid(capsule, "dltensor")) {
		DLManagedTensor* m = (DLManagedTensor*)get_pointer(capsule, "dltensor");
		if (m && m->deleter) m->deleter(m);
	} else if (is_valid(capsule, "dltensor_versioned")) {
		DLManagedTensorVersioned* m =
			(DLManagedTensorVersioned*)get_pointer(capsule, "dltensor_versioned");
		if (m && m->deleter) m->deleter(m);
	}
}

// ovs_export_buffer is the buffer an export made by ovs_export_new views (for GPU stream
// synchronization of device exports).
ovs_buffer* ovs_export_buffer(DLManagedTensorVersioned* m) {
	return ((ovs_export_v*)m->manager_ctx)->buf;
}
