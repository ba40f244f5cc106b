// The slice of the CUDA driver API that ovstage uses, declared here so the build needs no
// NVIDIA headers. Types and values follow the public driver API (cuda.h); functions are
// resolved with dlsym from libcuda.so.1 at first GPU use (driver.c), never linked.
#ifndef OVS_CUDA_DRIVER_H
#define OVS_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "ovs_buffer.h"

typedef int CUresult;  // CUDA_SUCCESS = 0
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;  // CUdeviceptr_v2
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;

#define OVS_CU_STREAM_LEGACY ((uintptr_t)0x1)
#define OVS_CU_STREAM_PER_THREAD ((uintptr_t)0x2)
#define OVS_CU_EVENT_DISABLE_TIMING 0x2
#define OVS_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9

// Errors of our own (not driver codes): negative so they never collide.
#define OVS_CU_NOT_LOADED (-1)
#define OVS_CU_NO_MEMORY (-2)

// ovs_cu_load dlopens path and resolves every entry point. Returns 0, or writes a reason
// (library missing, symbol missing) into err and returns -1. Not thread-safe: call once.
int ovs_cu_load(const char* path, char* err, size_t errlen);
int ovs_cu_loaded(void);
void ovs_cu_reset(void);
void* ovs_cu_symbol(const char* name);

// Thin wrappers; each returns the driver's CUresult (or OVS_CU_NOT_LOADED). Handles cross as
// uintptr_t. Functions taking a ctx make it current around the call (push/pop), so they are
// correct on any thread, including foreign ones (Go worker threads, Python threads).
CUresult ovs_cu_init(void);
CUresult ovs_cu_driver_version(int* version);
CUresult ovs_cu_device_count(int* count);
CUresult ovs_cu_primary_ctx(int ordinal, uintptr_t* ctx);
CUresult ovs_cu_device_name(int ordinal, char* name, int len);
const char* ovs_cu_error_name(CUresult r);
const char* ovs_cu_error_string(CUresult r);

CUresult ovs_cu_stream_create(uintptr_t ctx, uintptr_t* stream);
CUresult ovs_cu_stream_destroy(uintptr_t ctx, uintptr_t stream);
CUresult ovs_cu_stream_sync(uintptr_t ctx, uintptr_t stream);
CUresult ovs_cu_event_sync(uintptr_t ctx, uintptr_t event);
CUresult ovs_cu_stream_wait_event(uintptr_t ctx, uintptr_t stream, uintptr_t event);
CUresult ovs_cu_event_record(uintptr_t ctx, uintptr_t event, uintptr_t stream);

// Copies queued on stream (all asynchronous; synchronize the stream to complete them).
CUresult ovs_cu_copy_htod(uintptr_t ctx, uintptr_t dst, const void* src, size_t n, uintptr_t stream);
CUresult ovs_cu_copy_dtoh(uintptr_t ctx, void* dst, uintptr_t src, size_t n, uintptr_t stream);
CUresult ovs_cu_copy_dtod(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t stream);
// Unified-addressing copy (either side may be host, device or managed memory).
CUresult ovs_cu_copy_any(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t stream);
CUresult ovs_cu_copy_peer(uintptr_t ctx, uintptr_t dst, uintptr_t dst_ctx, uintptr_t src,
                          uintptr_t src_ctx, size_t n, uintptr_t stream);
// Batched device-to-device copies: n_runs (dst offset, src offset, bytes) triples.
CUresult ovs_cu_copy_runs(uintptr_t ctx, uintptr_t dst, uintptr_t src, const int64_t* runs,
                          size_t n_runs, uintptr_t stream);

// Device ordinal owning ptr (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL).
CUresult ovs_cu_pointer_device(uintptr_t ctx, uintptr_t ptr, int* ordinal);

// Device buffers: an ovs_buffer whose data is device memory of one context, with a ready event
// recorded after the last write into it. destroy (cuMemFree in the context) runs on whatever
// thread drops the last reference.
typedef struct {
	ovs_buffer base;  // first: an ovs_dev_buffer* is an ovs_buffer*
	uintptr_t ctx;
	CUdeviceptr ptr;
	uintptr_t ready;  // CUevent
	size_t alloc;
} ovs_dev_buffer;

// ovs_cu_buffer_new allocates size bytes on the context's device (zero-filled on stream when
// zero is set) with one reference. NULL with *res set on failure.
ovs_dev_buffer* ovs_cu_buffer_new(uintptr_t ctx, int ordinal, size_t size, int zero,
                                  uintptr_t stream, CUresult* res);
int ovs_cu_is_device_buffer(const ovs_buffer* b);
int64_t ovs_cu_live_buffers(void);
int64_t ovs_cu_live_bytes(void);
int64_t ovs_cu_free_failures(void);

#endif
