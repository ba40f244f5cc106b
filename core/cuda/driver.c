// Lazily loaded CUDA driver: dlopen + dlsym, and context-correct wrappers. Pure C so buffer
// destructors can run on any thread without entering Go.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static struct {
	void* lib;
	CUresult (*cuInit)(unsigned int);
	CUresult (*cuDriverGetVersion)(int*);
	CUresult (*cuDeviceGetCount)(int*);
	CUresult (*cuDeviceGet)(CUdevice*, int);
	CUresult (*cuDeviceGetName)(char*, int, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
	CUresult (*cuCtxPushCurrent_v2)(CUcontext);
	CUresult (*cuCtxPopCurrent_v2)(CUcontext*);
	CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t);
	CUresult (*cuMemFree_v2)(CUdeviceptr);
	CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, size_t);
	CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, size_t);
	CUresult (*cuMemcpyDtoD_v2)(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void*, size_t, CUstream);
	CUresult (*cuMemcpyDtoHAsync_v2)(void*, CUdeviceptr, size_t, CUstream);
	CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*cuMemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
	CUresult (*cuStreamCreate)(CUstream*, unsigned int);
	CUresult (*cuStreamDestroy_v2)(CUstream);
	CUresult (*cuStreamSynchronize)(CUstream);
	CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned int);
	CUresult (*cuEventCreate)(CUevent*, unsigned int);
	CUresult (*cuEventRecord)(CUevent, CUstream);
	CUresult (*cuEventDestroy_v2)(CUevent);
	CUresult (*cuEventSynchronize)(CUevent);
	CUresult (*cuPointerGetAttribute)(void*, int, CUdeviceptr);
	CUresult (*cuGetErrorName)(CUresult, const char**);
	CUresult (*cuGetErrorString)(CUresult, const char**);
} F;

static int loaded;

#define SYM(name) {#name, (void**)&F.name}

int ovs_cu_load(const char* path, char* err, size_t errlen) {
	if (loaded) return 0;
	void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char* why = dlerror();
		snprintf(err, errlen, "%s not found (dlopen: %s)", path, why ? why : "unknown error");
		return -1;
	}
	struct { const char* name; void** slot; } syms[] = {
		SYM(cuInit), SYM(cuDriverGetVersion), SYM(cuDeviceGetCount), SYM(cuDeviceGet),
		SYM(cuDeviceGetName), SYM(cuDevicePrimaryCtxRetain), SYM(cuCtxPushCurrent_v2),
		SYM(cuCtxPopCurrent_v2), SYM(cuMemAlloc_v2), SYM(cuMemFree_v2), SYM(cuMemsetD8Async),
		SYM(cuMemcpyHtoD_v2), SYM(cuMemcpyDtoH_v2), SYM(cuMemcpyDtoD_v2),
		SYM(cuMemcpyHtoDAsync_v2), SYM(cuMemcpyDtoHAsync_v2), SYM(cuMemcpyDtoDAsync_v2),
		SYM(cuMemcpyAsync), SYM(cuMemcpyPeerAsync), SYM(cuStreamCreate),
		SYM(cuStreamDestroy_v2), SYM(cuStreamSynchronize), SYM(cuStreamWaitEvent),
		SYM(cuEventCreate), SYM(cuEventRecord), SYM(cuEventDestroy_v2),
		SYM(cuEventSynchronize), SYM(cuPointerGetAttribute), SYM(cuGetErrorName),
		SYM(cuGetErrorString),
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void* p = dlsym(lib, syms[i].name);
		if (!p) {
			snprintf(err, errlen, "%s has no symbol %s (driver too old, or not the CUDA driver)",
			         path, syms[i].name);
			memset(&F, 0, sizeof(F));
			dlclose(lib);
			return -1;
		}
		*syms[i].slot = p;
	}
	F.lib = lib;
	__atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
	return 0;
}

int ovs_cu_loaded(void) { return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE); }

// ovs_cu_reset forgets the loaded driver (tests only: no device buffer may be alive). The
// library stays mapped, so a destructor that still runs cannot jump into unmapped code.
void ovs_cu_reset(void) {
	__atomic_store_n(&loaded, 0, __ATOMIC_RELEASE);
	memset(&F, 0, sizeof(F));
}

// ovs_cu_symbol finds a symbol of the loaded driver library (tests reach a fake driver's
// introspection functions this way).
void* ovs_cu_symbol(const char* name) { return ovs_cu_loaded() ? dlsym(F.lib, name) : NULL; }

#define REQUIRE_LOADED() \
	do { \
		if (!ovs_cu_loaded()) return OVS_CU_NOT_LOADED; \
	} while (0)

// IN_CTX runs expr with ctx current on this thread and restores the previous state.
#define IN_CTX(ctx, expr) \
	do { \
		REQUIRE_LOADED(); \
		CUresult r_ = F.cuCtxPushCurrent_v2((CUcontext)(ctx)); \
		if (r_ != 0) return r_; \
		r_ = (expr); \
		CUcontext popped_; \
		CUresult p_ = F.cuCtxPopCurrent_v2(&popped_); \
		return r_ != 0 ? r_ : p_; \
	} while (0)

CUresult ovs_cu_init(void) {
	REQUIRE_LOADED();
	return F.cuInit(0);
}

CUresult ovs_cu_driver_version(int* version) {
	REQUIRE_LOADED();
	return F.cuDriverGetVersion(version);
}

CUresult ovs_cu_device_count(int* count) {
	REQUIRE_LOADED();
	return F.cuDeviceGetCount(count);
}

CUresult ovs_cu_primary_ctx(int ordinal, uintptr_t* ctx) {
	REQUIRE_LOADED();
	CUdevice dev;
	CUresult r = F.cuDeviceGet(&dev, ordinal);
	if (r != 0) return r;
	CUcontext c = NULL;
	r = F.cuDevicePrimaryCtxRetain(&c, dev);
	*ctx = (uintptr_t)c;
	return r;
}

CUresult ovs_cu_device_name(int ordinal, char* name, int len) {
	REQUIRE_LOADED();
	CUdevice dev;
	CUresult r = F.cuDeviceGet(&dev, ordinal);
	if (r != 0) return r;
	return F.cuDeviceGetName(name, len, dev);
}

const char* ovs_cu_error_name(CUresult r) {
	const char* s = NULL;
	if (r == OVS_CU_NOT_LOADED) return "OVS_CU_NOT_LOADED";
	if (r == OVS_CU_NO_MEMORY) return "OVS_CU_NO_MEMORY";
	if (!ovs_cu_loaded() || F.cuGetErrorName(r, &s) != 0 || !s) return "CUDA_ERROR_UNKNOWN_CODE";
	return s;
}

const char* ovs_cu_error_string(CUresult r) {
	const char* s = NULL;
	if (r == OVS_CU_NOT_LOADED) return "the CUDA driver is not loaded";
	if (r == OVS_CU_NO_MEMORY) return "out of host memory";
	if (!ovs_cu_loaded() || F.cuGetErrorString(r, &s) != 0 || !s) return "unrecognized error code";
	return s;
}

CUresult ovs_cu_stream_create(uintptr_t ctx, uintptr_t* stream) {
	// A blocking stream (flags 0): it orders after work on the legacy default stream, which is
	// where DLPack producers (torch, cupy) make pending work visible when asked for stream=None.
	IN_CTX(ctx, F.cuStreamCreate((CUstream*)stream, 0));
}

CUresult ovs_cu_stream_destroy(uintptr_t ctx, uintptr_t stream) {
	IN_CTX(ctx, F.cuStreamDestroy_v2((CUstream)stream));
}

CUresult ovs_cu_stream_sync(uintptr_t ctx, uintptr_t stream) {
	IN_CTX(ctx, F.cuStreamSynchronize((CUstream)stream));
}

CUresult ovs_cu_event_sync(uintptr_t ctx, uintptr_t event) {
	IN_CTX(ctx, F.cuEventSynchronize((CUevent)event));
}

CUresult ovs_cu_stream_wait_event(uintptr_t ctx, uintptr_t stream, uintptr_t event) {
	IN_CTX(ctx, F.cuStreamWaitEvent((CUstream)stream, (CUevent)event, 0));
}

CUresult ovs_cu_event_record(uintptr_t ctx, uintptr_t event, uintptr_t stream) {
	IN_CTX(ctx, F.cuEventRecord((CUevent)event, (CUstream)stream));
}

CUresult ovs_cu_copy_htod(uintptr_t ctx, uintptr_t dst, const void* src, size_t n, uintptr_t stream) {
	IN_CTX(ctx, F.cuMemcpyHtoDAsync_v2((CUdeviceptr)dst, src, n, (CUstream)stream));
}

CUresult ovs_cu_copy_dtoh(uintptr_t ctx, void* dst, uintptr_t src, size_t n, uintptr_t stream) {
	IN_CTX(ctx, F.cuMemcpyDtoHAsync_v2(dst, (CUdeviceptr)src, n, (CUstream)stream));
}

CUresult ovs_cu_copy_dtod(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t stream) {
	IN_CTX(ctx, F.cuMemcpyDtoDAsync_v2((CUdeviceptr)dst, (CUdeviceptr)src, n, (CUstream)stream));
}

CUresult ovs_cu_copy_any(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t stream) {
	IN_CTX(ctx, F.cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, (CUstream)stream));
}

CUresult ovs_cu_copy_peer(uintptr_t ctx, uintptr_t dst, uintptr_t dst_ctx, uintptr_t src,
                          uintptr_t src_ctx, size_t n, uintptr_t stream) {
	IN_CTX(ctx, F.cuMemcpyPeerAsync((CUdeviceptr)dst, (CUcontext)dst_ctx, (CUdeviceptr)src,
	                                (CUcontext)src_ctx, n, (CUstream)stream));
}

static CUresult copy_runs(uintptr_t dst, uintptr_t src, const int64_t* runs, size_t n_runs,
                          uintptr_t stream) {
	for (size_t i = 0; i < n_runs; i++) {
		const int64_t* run = runs + 3 * i;
		CUresult r = F.cuMemcpyDtoDAsync_v2((CUdeviceptr)(dst + (uintptr_t)run[0]),
		                                    (CUdeviceptr)(src + (uintptr_t)run[1]),
		                                    (size_t)run[2], (CUstream)stream);
		if (r != 0) return r;
	}
	return 0;
}

CUresult ovs_cu_copy_runs(uintptr_t ctx, uintptr_t dst, uintptr_t src, const int64_t* runs,
                          size_t n_runs, uintptr_t stream) {
	IN_CTX(ctx, copy_runs(dst, src, runs, n_runs, stream));
}

CUresult ovs_cu_pointer_device(uintptr_t ctx, uintptr_t ptr, int* ordinal) {
	IN_CTX(ctx, F.cuPointerGetAttribute(ordinal, OVS_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
	                                    (CUdeviceptr)ptr));
}

// ---------------------------------------------------------------------------------------------
// Device buffers

static int64_t live_buffers, live_bytes, free_failures;

static void dev_destroy(ovs_buffer* b) {
	ovs_dev_buffer* d = (ovs_dev_buffer*)b;
	__atomic_sub_fetch(&live_buffers, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&live_bytes, (int64_t)b->size, __ATOMIC_RELAXED);
	// Any thread (a DLPack deleter on a Python thread, a Go worker): make the context current
	// for the calls. cuMemFree synchronizes with outstanding device work before releasing the
	// memory (CUDA's implicit synchronization on free), so a consumer kernel still queued on
	// another stream is not cut short. A failure (e.g. the driver already shut down at process
	// exit) is counted, never fatal.
	CUresult r = F.cuCtxPushCurrent_v2((CUcontext)d->ctx);
	if (r == 0) {
		if (d->ready) F.cuEventDestroy_v2((CUevent)d->ready);
		r = F.cuMemFree_v2(d->ptr);
		CUcontext popped;
		F.cuCtxPopCurrent_v2(&popped);
	}
	if (r != 0) __atomic_add_fetch(&free_failures, 1, __ATOMIC_RELAXED);
	free(d);
}

static CUresult buffer_alloc(ovs_dev_buffer* d, size_t alloc, int zero, uintptr_t stream) {
	CUresult r = F.cuMemAlloc_v2(&d->ptr, alloc);
	if (r != 0) return r;
	CUevent ev = NULL;
	r = F.cuEventCreate(&ev, OVS_CU_EVENT_DISABLE_TIMING);
	if (r == 0 && zero) r = F.cuMemsetD8Async(d->ptr, 0, alloc, (CUstream)stream);
	if (r != 0) {
		if (ev) F.cuEventDestroy_v2(ev);
		F.cuMemFree_v2(d->ptr);
		return r;
	}
	d->ready = (uintptr_t)ev;
	return 0;
}

static CUresult buffer_alloc_in(uintptr_t ctx, ovs_dev_buffer* d, size_t alloc, int zero,
                                uintptr_t stream) {
	IN_CTX(ctx, buffer_alloc(d, alloc, zero, stream));
}

ovs_dev_buffer* ovs_cu_buffer_new(uintptr_t ctx, int ordinal, size_t size, int zero,
                                  uintptr_t stream, CUresult* res) {
	ovs_dev_buffer* d = (ovs_dev_buffer*)calloc(1, sizeof(ovs_dev_buffer));
	if (!d) {
		*res = OVS_CU_NO_MEMORY;
		return NULL;
	}
	// 256-byte granularity (cuMemAlloc aligns to at least 256); never a zero-byte allocation.
	size_t alloc = size ? size : 256;
	alloc = (alloc + 255) & ~(size_t)255;
	*res = buffer_alloc_in(ctx, d, alloc, zero, stream);
	if (*res != 0) {
		free(d);
		return NULL;
	}
	d->ctx = ctx;
	d->alloc = alloc;
	d->base.refs = 1;
	d->base.data = (void*)(uintptr_t)d->ptr;
	d->base.size = size;
	d->base.destroy = dev_destroy;
	d->base.device_type = 2;  // kDLCUDA
	d->base.device_id = ordinal;
	__atomic_add_fetch(&live_buffers, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&live_bytes, (int64_t)size, __ATOMIC_RELAXED);
	return d;
}

int ovs_cu_is_device_buffer(const ovs_buffer* b) { return b && b->destroy == dev_destroy; }
int64_t ovs_cu_live_buffers(void) { return __atomic_load_n(&live_buffers, __ATOMIC_RELAXED); }
int64_t ovs_cu_live_bytes(void) { return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED); }
int64_t ovs_cu_free_failures(void) { return __atomic_load_n(&free_failures, __ATOMIC_RELAXED); }
