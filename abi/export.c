// Managed-tensor exports of refcounted buffers, and the PyCapsule destructor for them.
// Pure C so deleters can run on any thread (including Python's) without entering Go.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <ovx/dlpack/dlpack.h>
#include "ovs_buffer.h"

#define OVS_MAX_EXPORT_DIMS 2

// Exports describe DLPack 1.0 tensors (their layout and flags are 1.0's; consumers accept any
// 1.x), whatever minor version the header declares.
#define OVS_EXPORT_DLPACK_MINOR 0

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

// fill_tensor copies a raw 1-D tensor (values with lanes) and, because consumers do not
// support vector lanes, turns lanes > 1 into a trailing axis: (rows,) x L -> (rows, L) x 1.
static void fill_tensor(DLTensor* t, int64_t* shape, int64_t* strides, const DLTensor* src) {
	*t = *src;
	t->shape = shape;
	t->strides = strides;
	shape[0] = src->shape[0];
	if (src->dtype.lanes > 1) {
		t->ndim = 2;
		shape[1] = src->dtype.lanes;
		strides[0] = src->dtype.lanes;
		strides[1] = 1;
		t->dtype.lanes = 1;
	} else {
		t->ndim = 1;
		strides[0] = 1;
	}
}

// ovs_export_new makes the raw versioned managed tensor of rows values (with lanes) of buf
// starting at byte_offset: a 1-D template that ovs_export_clone turns into capsule exports.
DLManagedTensorVersioned* ovs_export_new(ovs_buffer* buf, uint64_t byte_offset, uint8_t code,
                                         uint8_t bits, uint16_t lanes, int64_t rows,
                                         int32_t device_type, int32_t device_id, uint64_t flags) {
	ovs_export_v* e = (ovs_export_v*)calloc(1, sizeof(ovs_export_v));
	if (!e) return NULL;
	ovs_buffer_retain(buf);
	e->buf = buf;
	DLTensor* t = &e->m.dl_tensor;
	t->data = (char*)buf->data + byte_offset;
	t->device.device_type = (DLDeviceType)device_type;
	t->device.device_id = device_id;
	t->ndim = 1;
	t->dtype.code = code;
	t->dtype.bits = bits;
	t->dtype.lanes = lanes;
	t->shape = e->shape;
	t->strides = e->strides;
	t->byte_offset = 0;
	e->shape[0] = rows;
	e->strides[0] = 1;
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
