// A fake CUDA driver for CPU-only tests: the entry points ovstage resolves, implemented on host
// memory, with strict checks of how they are used. Build: gcc -shared -fPIC -o libfakecuda.so
// fakecuda.c -lpthread; load it with OVSTAGE_CUDA_LIBRARY=<path>.
//
// What it checks (each violation returns an error code and counts as "misuse"):
//   - the driver was initialised (cuInit) before use;
//   - a context is current for calls that need one (allocation, free, copies, streams, events);
//   - every push is matched by a pop on the same thread;
//   - "device" addresses passed to copies lie inside live allocations of the current context's
//     device, and "host" addresses do not;
//   - frees are of live allocations (double frees and foreign pointers are caught);
//   - streams used for copies belong to the current context.
// Freed memory is poisoned (0xDD) and kept, so a use after free reads a recognisable pattern.
// It is not the real driver: it proves ovstage's call discipline, not NVIDIA's semantics.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
	OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201, INVALID_HANDLE = 400,
};

#define MAX_DEV 8
#define STREAM_MAGIC 0x57524541u
#define EVENT_MAGIC 0x45564e54u

typedef struct { int dev; } fake_ctx;
typedef struct { uint32_t magic; int dev; int destroyed; } fake_stream;
typedef struct { uint32_t magic; int dev; int destroyed; int64_t records; } fake_event;
typedef struct alloc_s { char* base; size_t size; int dev; int freed; struct alloc_s* next; } alloc_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int inited;
static int ndev = -1;
static fake_ctx ctxs[MAX_DEV];
static alloc_t* allocs;
static __thread fake_ctx* stack[32];
static __thread int depth;

// introspection counters
static int64_t n_misuse, n_alloc, n_free, n_live, n_wait, n_stream_sync, n_event_sync, n_copy,
	n_records, n_push, n_htod, n_dtoh, n_dtod, n_peer, n_any, fail_alloc_after = -1;
static uintptr_t last_wait_stream, last_wait_event, last_sync_stream, last_sync_event;
static char last_misuse[256];

// A text trace of the calls that matter for ordering ("event_sync 0x..; stream_sync 0x..;
// dtod; ..."), so tests can check that a caller's work is waited for before its data is read.
static char trace[1 << 16];
static size_t trace_len;

#include <stdio.h>
static void note(const char* what, uintptr_t a, uintptr_t b) {
	char item[96];
	int n;
	if (b) n = snprintf(item, sizeof(item), "%s %#lx %#lx;", what, (unsigned long)a, (unsigned long)b);
	else if (a) n = snprintf(item, sizeof(item), "%s %#lx;", what, (unsigned long)a);
	else n = snprintf(item, sizeof(item), "%s;", what);
	pthread_mutex_lock(&mu);
	if (n > 0 && trace_len + (size_t)n < sizeof(trace)) {
		memcpy(trace + trace_len, item, (size_t)n);
		trace_len += (size_t)n;
		trace[trace_len] = 0;
	}
	pthread_mutex_unlock(&mu);
}

static void misuse(const char* what) {
	pthread_mutex_lock(&mu);
	n_misuse++;
	strncpy(last_misuse, what, sizeof(last_misuse) - 1);
	pthread_mutex_unlock(&mu);
}

static int devices(void) {
	if (ndev < 0) {
		const char* e = getenv("FAKECUDA_DEVICES");
		ndev = e ? atoi(e) : 2;
		if (ndev > MAX_DEV) ndev = MAX_DEV;
		for (int i = 0; i < MAX_DEV; i++) ctxs[i].dev = i;
	}
	return ndev;
}

static fake_ctx* current(void) { return depth > 0 ? stack[depth - 1] : NULL; }

#define NEED_INIT() do { if (!inited) { misuse("call before cuInit"); return NOT_INITIALIZED; } } while (0)
#define NEED_CTX(c) \
	NEED_INIT(); \
	fake_ctx* c = current(); \
	if (!c) { misuse("call without a current context"); return INVALID_CONTEXT; }

static alloc_t* find_locked(uintptr_t p, size_t n) {
	for (alloc_t* a = allocs; a; a = a->next) {
		if (!a->freed && p >= (uintptr_t)a->base && p + n <= (uintptr_t)a->base + a->size) return a;
	}
	return NULL;
}

static alloc_t* find(uintptr_t p, size_t n) {
	pthread_mutex_lock(&mu);
	alloc_t* a = find_locked(p, n);
	pthread_mutex_unlock(&mu);
	return a;
}

static int device_range(uintptr_t p, size_t n, int dev, const char* what) {
	if (n == 0) return 1;
	alloc_t* a = find(p, n);
	if (!a) { misuse(what); return 0; }
	if (dev >= 0 && a->dev != dev) { misuse("device memory of another device"); return 0; }
	return 1;
}

static int host_range(uintptr_t p, size_t n, const char* what) {
	if (n == 0) return 1;
	if (find(p, 1)) { misuse(what); return 0; }
	return 1;
}

static int stream_ok(void* s, int dev) {
	uintptr_t h = (uintptr_t)s;
	if (h == 0 || h == 1 || h == 2) return 1;
	fake_stream* fs = (fake_stream*)s;
	if (fs->magic != STREAM_MAGIC || fs->destroyed) { misuse("invalid stream handle"); return 0; }
	if (dev >= 0 && fs->dev != dev) { misuse("stream of another context"); return 0; }
	return 1;
}

static int event_ok(void* e) {
	fake_event* fe = (fake_event*)e;
	if (!fe || fe->magic != EVENT_MAGIC || fe->destroyed) { misuse("invalid event handle"); return 0; }
	return 1;
}

// ---- driver entry points -------------------------------------------------------------------

CUresult cuInit(unsigned int flags) { (void)flags; devices(); inited = 1; return OK; }
CUresult cuDriverGetVersion(int* v) { *v = 12080; return OK; }
CUresult cuDeviceGetCount(int* n) { NEED_INIT(); *n = devices(); return OK; }

CUresult cuDeviceGet(CUdevice* d, int ordinal) {
	NEED_INIT();
	if (ordinal < 0 || ordinal >= devices()) return INVALID_DEVICE;
	*d = ordinal;
	return OK;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
	NEED_INIT();
	if (d < 0 || d >= devices() || len < 1) return INVALID_DEVICE;
	strncpy(name, "Fake CUDA Device", (size_t)len - 1);
	name[len - 1] = 0;
	return OK;
}

CUresult cuDevicePrimaryCtxRetain(void** ctx, CUdevice d) {
	NEED_INIT();
	if (d < 0 || d >= devices()) return INVALID_DEVICE;
	*ctx = &ctxs[d];
	return OK;
}

CUresult cuCtxPushCurrent_v2(void* ctx) {
	NEED_INIT();
	fake_ctx* c = (fake_ctx*)ctx;
	if (c < &ctxs[0] || c >= &ctxs[devices()]) { misuse("push of an invalid context"); return INVALID_CONTEXT; }
	if (depth >= 32) { misuse("context stack overflow"); return INVALID_VALUE; }
	stack[depth++] = c;
	__atomic_add_fetch(&n_push, 1, __ATOMIC_RELAXED);
	return OK;
}

CUresult cuCtxPopCurrent_v2(void** ctx) {
	NEED_INIT();
	if (depth == 0) { misuse("pop of an empty context stack"); return INVALID_CONTEXT; }
	fake_ctx* c = stack[--depth];
	if (ctx) *ctx = c;
	return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
	NEED_CTX(c);
	if (n == 0) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (fail_alloc_after == 0) { pthread_mutex_unlock(&mu); return OUT_OF_MEMORY; }
	if (fail_alloc_after > 0) fail_alloc_after--;
	pthread_mutex_unlock(&mu);
	void* mem = NULL;
	if (posix_memalign(&mem, 256, n) != 0) return OUT_OF_MEMORY;
	memset(mem, 0xAB, n);  // uninitialised device memory is not zero
	alloc_t* a = (alloc_t*)calloc(1, sizeof(alloc_t));
	a->base = (char*)mem;
	a->size = n;
	a->dev = c->dev;
	pthread_mutex_lock(&mu);
	a->next = allocs;
	allocs = a;
	n_alloc++;
	n_live++;
	pthread_mutex_unlock(&mu);
	*p = (CUdeviceptr)(uintptr_t)mem;
	return OK;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	NEED_CTX(c);
	pthread_mutex_lock(&mu);
	alloc_t* a = NULL;
	for (alloc_t* x = allocs; x; x = x->next) {
		if ((uintptr_t)x->base == (uintptr_t)p && !x->freed) { a = x; break; }
	}
	if (!a) {
		pthread_mutex_unlock(&mu);
		misuse("cuMemFree of an address that is not a live allocation");
		return INVALID_VALUE;
	}
	if (a->dev != c->dev) {
		pthread_mutex_unlock(&mu);
		misuse("cuMemFree in another device's context");
		return INVALID_CONTEXT;
	}
	a->freed = 1;
	memset(a->base, 0xDD, a->size);
	n_free++;
	n_live--;
	pthread_mutex_unlock(&mu);
	return OK;
}

CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void* s) {
	NEED_CTX(c);
	if (!stream_ok(s, c->dev) || !device_range((uintptr_t)p, n, c->dev, "memset outside device memory")) return INVALID_VALUE;
	memset((void*)(uintptr_t)p, v, n);
	return OK;
}

static CUresult htod(CUdeviceptr dst, const void* src, size_t n, void* s) {
	NEED_CTX(c);
	if (!stream_ok(s, c->dev)) return INVALID_HANDLE;
	if (!device_range((uintptr_t)dst, n, c->dev, "HtoD destination is not device memory") ||
	    !host_range((uintptr_t)src, n, "HtoD source is device memory")) return INVALID_VALUE;
	memcpy((void*)(uintptr_t)dst, src, n);
	__atomic_add_fetch(&n_copy, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&n_htod, 1, __ATOMIC_RELAXED);
	note("htod", (uintptr_t)s, 0);
	return OK;
}

static CUresult dtoh(void* dst, CUdeviceptr src, size_t n, void* s) {
	NEED_CTX(c);
	if (!stream_ok(s, c->dev)) return INVALID_HANDLE;
	if (!device_range((uintptr_t)src, n, c->dev, "DtoH source is not device memory") ||
	    !host_range((uintptr_t)dst, n, "DtoH destination is device memory")) return INVALID_VALUE;
	memcpy(dst, (void*)(uintptr_t)src, n);
	__atomic_add_fetch(&n_copy, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&n_dtoh, 1, __ATOMIC_RELAXED);
	note("dtoh", (uintptr_t)s, 0);
	return OK;
}

static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, void* s) {
	NEED_CTX(c);
	if (!stream_ok(s, c->dev)) return INVALID_HANDLE;
	if (!device_range((uintptr_t)dst, n, c->dev, "DtoD destination is not device memory") ||
	    !device_range((uintptr_t)src, n, c->dev, "DtoD source is not device memory")) return INVALID_VALUE;
	memmove((void*)(uintptr_t)dst, (void*)(uintptr_t)src, n);
	__atomic_add_fetch(&n_copy, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&n_dtod, 1, __ATOMIC_RELAXED);
	note("dtod", (uintptr_t)s, 0);
	return OK;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { return htod(d, s, n, NULL); }
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) { return dtoh(d, s, n, NULL); }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return dtod(d, s, n, NULL); }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void* st) { return htod(d, s, n, st); }
CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void* st) { return dtoh(d, s, n, st); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) { return dtod(d, s, n, st); }

CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) {
	NEED_CTX(c);
	if (!stream_ok(st, c->dev)) return INVALID_HANDLE;
	memmove((void*)(uintptr_t)d, (void*)(uintptr_t)s, n);
	__atomic_add_fetch(&n_copy, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&n_any, 1, __ATOMIC_RELAXED);
	note("any", (uintptr_t)st, 0);
	return OK;
}

CUresult cuMemcpyPeerAsync(CUdeviceptr d, void* dctx, CUdeviceptr s, void* sctx, size_t n, void* st) {
	NEED_CTX(c);
	if (!stream_ok(st, c->dev)) return INVALID_HANDLE;
	if (!device_range((uintptr_t)d, n, ((fake_ctx*)dctx)->dev, "peer destination is not memory of its context") ||
	    !device_range((uintptr_t)s, n, ((fake_ctx*)sctx)->dev, "peer source is not memory of its context")) return INVALID_VALUE;
	memmove((void*)(uintptr_t)d, (void*)(uintptr_t)s, n);
	__atomic_add_fetch(&n_copy, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&n_peer, 1, __ATOMIC_RELAXED);
	note("peer", (uintptr_t)st, 0);
	return OK;
}

CUresult cuStreamCreate(void** s, unsigned int flags) {
	NEED_CTX(c);
	if (flags != 0 && flags != 1) return INVALID_VALUE;
	fake_stream* fs = (fake_stream*)calloc(1, sizeof(fake_stream));
	fs->magic = STREAM_MAGIC;
	fs->dev = c->dev;
	*s = fs;
	return OK;
}

CUresult cuStreamDestroy_v2(void* s) {
	NEED_CTX(c);
	if ((uintptr_t)s <= 2 || !stream_ok(s, -1)) { misuse("destroy of an invalid stream"); return INVALID_HANDLE; }
	((fake_stream*)s)->destroyed = 1;  // kept: a later use is caught
	return OK;
}

CUresult cuStreamSynchronize(void* s) {
	NEED_CTX(c);
	if (!stream_ok(s, -1)) return INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	n_stream_sync++;
	last_sync_stream = (uintptr_t)s;
	pthread_mutex_unlock(&mu);
	note("stream_sync", (uintptr_t)s, 0);
	return OK;
}

CUresult cuStreamWaitEvent(void* s, void* e, unsigned int flags) {
	NEED_CTX(c);
	if (flags != 0 || !stream_ok(s, -1) || !event_ok(e)) return INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	n_wait++;
	last_wait_stream = (uintptr_t)s;
	last_wait_event = (uintptr_t)e;
	pthread_mutex_unlock(&mu);
	note("wait", (uintptr_t)s, (uintptr_t)e);
	return OK;
}

CUresult cuEventCreate(void** e, unsigned int flags) {
	NEED_CTX(c);
	(void)flags;
	fake_event* fe = (fake_event*)calloc(1, sizeof(fake_event));
	fe->magic = EVENT_MAGIC;
	fe->dev = c->dev;
	*e = fe;
	return OK;
}

CUresult cuEventRecord(void* e, void* s) {
	NEED_CTX(c);
	if (!event_ok(e) || !stream_ok(s, c->dev)) return INVALID_HANDLE;
	if (((fake_event*)e)->dev != c->dev) { misuse("event recorded in another context"); return INVALID_CONTEXT; }
	((fake_event*)e)->records++;
	note("record", (uintptr_t)e, (uintptr_t)s);
	__atomic_add_fetch(&n_records, 1, __ATOMIC_RELAXED);
	return OK;
}

CUresult cuEventDestroy_v2(void* e) {
	NEED_CTX(c);
	if (!event_ok(e)) return INVALID_HANDLE;
	((fake_event*)e)->destroyed = 1;
	return OK;
}

CUresult cuEventSynchronize(void* e) {
	NEED_INIT();
	if (!event_ok(e)) return INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	n_event_sync++;
	last_sync_event = (uintptr_t)e;
	pthread_mutex_unlock(&mu);
	note("event_sync", (uintptr_t)e, 0);
	return OK;
}

CUresult cuPointerGetAttribute(void* data, int attribute, CUdeviceptr p) {
	NEED_INIT();
	if (attribute != 9) return INVALID_VALUE;  // only DEVICE_ORDINAL is faked
	alloc_t* a = find((uintptr_t)p, 1);
	if (!a) return INVALID_VALUE;
	*(int*)data = a->dev;
	return OK;
}

CUresult cuGetErrorName(CUresult r, const char** s) {
	switch (r) {
	case OK: *s = "CUDA_SUCCESS"; return OK;
	case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return OK;
	case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
	case NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; return OK;
	case INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return OK;
	case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
	case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; return OK;
	}
	*s = NULL;
	return INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char** s) {
	*s = r == OK ? "no error" : "fake driver error";
	return OK;
}

// ---- test helpers (not part of the driver API) ---------------------------------------------

// fakecuda_alloc allocates n bytes of "device memory" on dev without a current context.
void* fakecuda_alloc(int dev, size_t n) {
	if (!inited) cuInit(0);
	if (cuCtxPushCurrent_v2(&ctxs[dev]) != OK) return NULL;
	CUdeviceptr p = 0;
	CUresult r = cuMemAlloc_v2(&p, n);
	void* popped;
	cuCtxPopCurrent_v2(&popped);
	return r == OK ? (void*)(uintptr_t)p : NULL;
}

int fakecuda_free(void* p) {
	int dev = -1;
	alloc_t* a = find((uintptr_t)p, 1);
	if (a) dev = a->dev;
	if (dev < 0 || cuCtxPushCurrent_v2(&ctxs[dev]) != OK) return INVALID_VALUE;
	CUresult r = cuMemFree_v2((CUdeviceptr)(uintptr_t)p);
	void* popped;
	cuCtxPopCurrent_v2(&popped);
	return r;
}

void* fakecuda_new_stream(int dev) {
	if (!inited) cuInit(0);
	cuCtxPushCurrent_v2(&ctxs[dev]);
	void* s = NULL;
	cuStreamCreate(&s, 0);
	void* popped;
	cuCtxPopCurrent_v2(&popped);
	return s;
}

void* fakecuda_new_event(int dev) {
	if (!inited) cuInit(0);
	cuCtxPushCurrent_v2(&ctxs[dev]);
	void* e = NULL;
	cuEventCreate(&e, 0);
	void* popped;
	cuCtxPopCurrent_v2(&popped);
	return e;
}

// fakecuda_destroy_event destroys e (made by fakecuda_new_event on dev): later records of it fail.
int fakecuda_destroy_event(int dev, void* e) {
	cuCtxPushCurrent_v2(&ctxs[dev]);
	CUresult r = cuEventDestroy_v2(e);
	void* popped;
	cuCtxPopCurrent_v2(&popped);
	return r;
}

// fakecuda_event_records is how many times e was recorded (-1 for an invalid handle).
int64_t fakecuda_event_records(void* e) {
	fake_event* fe = (fake_event*)e;
	if (!fe || fe->magic != EVENT_MAGIC) return -1;
	return fe->records;
}

// fakecuda_stat returns a counter by name (-1 for an unknown name).
int64_t fakecuda_stat(const char* name) {
	int64_t v = -1;
	pthread_mutex_lock(&mu);
	if (!strcmp(name, "misuse")) v = n_misuse;
	else if (!strcmp(name, "alloc")) v = n_alloc;
	else if (!strcmp(name, "free")) v = n_free;
	else if (!strcmp(name, "live")) v = n_live;
	else if (!strcmp(name, "wait")) v = n_wait;
	else if (!strcmp(name, "stream_sync")) v = n_stream_sync;
	else if (!strcmp(name, "event_sync")) v = n_event_sync;
	else if (!strcmp(name, "copy")) v = n_copy;
	else if (!strcmp(name, "htod")) v = n_htod;
	else if (!strcmp(name, "dtoh")) v = n_dtoh;
	else if (!strcmp(name, "dtod")) v = n_dtod;
	else if (!strcmp(name, "peer")) v = n_peer;
	else if (!strcmp(name, "any")) v = n_any;
	else if (!strcmp(name, "records")) v = n_records;
	else if (!strcmp(name, "push")) v = n_push;
	else if (!strcmp(name, "depth")) v = depth;
	else if (!strcmp(name, "last_wait_stream")) v = (int64_t)last_wait_stream;
	else if (!strcmp(name, "last_wait_event")) v = (int64_t)last_wait_event;
	else if (!strcmp(name, "last_sync_stream")) v = (int64_t)last_sync_stream;
	else if (!strcmp(name, "last_sync_event")) v = (int64_t)last_sync_event;
	pthread_mutex_unlock(&mu);
	return v;
}

const char* fakecuda_last_misuse(void) { return last_misuse; }

// fakecuda_trace returns the call trace since the last reset (reset clears it).
const char* fakecuda_trace(int reset) {
	static char copy[sizeof(trace)];
	pthread_mutex_lock(&mu);
	memcpy(copy, trace, trace_len + 1);
	if (reset) {
		trace_len = 0;
		trace[0] = 0;
	}
	pthread_mutex_unlock(&mu);
	return copy;
}

// fakecuda_fail_alloc makes the allocation after n more succeed fail with OUT_OF_MEMORY
// (n < 0: never).
void fakecuda_fail_alloc(int64_t n) {
	pthread_mutex_lock(&mu);
	fail_alloc_after = n;
	pthread_mutex_unlock(&mu);
}
