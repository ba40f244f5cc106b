#include <stdlib.h>
#include <string.h>
#include "ovs_buffer.h"

static int64_t live_buffers;
static int64_t live_bytes;

static void host_destroy(ovs_buffer* b) {
	__atomic_sub_fetch(&live_buffers, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&live_bytes, (int64_t)b->size, __ATOMIC_RELAXED);
	free(b->data);
	free(b);
}

// ovs_buffer_new allocates a zero-filled host buffer with one reference; NULL when out of memory.
ovs_buffer* ovs_buffer_new(size_t size) {
	ovs_buffer* b = (ovs_buffer*)malloc(sizeof(ovs_buffer));
	if (!b) return NULL;
	size_t alloc = size ? size : 64;
	alloc = (alloc + 63) & ~(size_t)63;
	void* data = NULL;
	if (posix_memalign(&data, 64, alloc) != 0) {
		free(b);
		return NULL;
	}
	memset(data, 0, alloc);
	b->refs = 1;
	b->data = data;
	b->size = size;
	b->destroy = host_destroy;
	b->device_type = 1;  // kDLCPU
	b->device_id = 0;
	__atomic_add_fetch(&live_buffers, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&live_bytes, (int64_t)size, __ATOMIC_RELAXED);
	return b;
}

int64_t ovs_buffer_live_count(void) { return __atomic_load_n(&live_buffers, __ATOMIC_RELAXED); }
int64_t ovs_buffer_live_bytes(void) { return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED); }
