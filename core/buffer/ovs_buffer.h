// Refcounted payload buffer shared by core (Go) and the DLPack exports (C).
// Header-only retain/release so any cgo package can include it; destruction goes through the
// function pointer set at creation, so exactly one package owns allocation and accounting.
#ifndef OVS_BUFFER_H
#define OVS_BUFFER_H

#include <stddef.h>
#include <stdint.h>

typedef struct ovs_buffer {
	int64_t refs;     // atomic
	void* data;       // payload, 64-byte aligned (256 on a device), never NULL
	size_t size;      // payload bytes
	void (*destroy)(struct ovs_buffer*);
	// Where data lives (DLPack device): kDLCPU (1) for host buffers, kDLCUDA (2) + ordinal for
	// device buffers made by core/cuda (which embeds this header in a larger struct).
	int32_t device_type;
	int32_t device_id;
} ovs_buffer;

static inline void ovs_buffer_retain(ovs_buffer* b) {
	__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
}

static inline void ovs_buffer_release(ovs_buffer* b) {
	if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		b->destroy(b);
	}
}

static inline int64_t ovs_buffer_refs(ovs_buffer* b) {
	return __atomic_load_n(&b->refs, __ATOMIC_ACQUIRE);
}

#endif
