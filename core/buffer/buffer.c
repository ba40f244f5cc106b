#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ovs_buffer.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static int64_t live_buffers;
static int64_t live_bytes;

static void account(int64_t buffers, int64_t bytes) {
	__atomic_add_fetch(&live_buffers, buffers, __ATOMIC_RELAXED);
	__atomic_add_fetch(&live_bytes, bytes, __ATOMIC_RELAXED);
}

// Buffers below LARGE_MIN live in one 64-byte aligned block: the header, padded to 64 bytes,
// then the payload. Larger ones get page-aligned memory of their own (not huge-page advised:
// on a fragmented host the kernel's compaction made first touches several times slower),
// rounded up to LARGE_ALIGN, and go back to a small cache when freed: a producer writing a
// large column every frame then copies into warm memory instead of faulting in fresh pages
// (page faults cost several times the copy itself).
#define HEADER_BYTES 64
_Static_assert(sizeof(ovs_buffer) <= HEADER_BYTES, "the small-buffer header must fit in 64 bytes");
#define LARGE_MIN ((size_t)1 << 20)
#define LARGE_ALIGN ((size_t)4 << 10)
#define CACHE_SLOTS 64
#define CACHE_LIMIT ((size_t)1 << 30)

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
// cache[0..cache_n) in age order (oldest first).
static struct {
	void* data;
	size_t bytes;
} cache[CACHE_SLOTS];
static int cache_n;
static size_t cache_bytes;

static size_t large_bytes(size_t size) { return (size + LARGE_ALIGN - 1) & ~(LARGE_ALIGN - 1); }

static void cache_remove_locked(int i) {
	cache_bytes -= cache[i].bytes;
	memmove(&cache[i], &cache[i + 1], sizeof(cache[0]) * (size_t)(cache_n - i - 1));
	cache_n--;
}

// cache_take returns cached memory of exactly bytes (NULL if none), newest first.
static void* cache_take(size_t bytes) {
	void* data = NULL;
	pthread_mutex_lock(&cache_mu);
	for (int i = cache_n - 1; i >= 0; i--) {
		if (cache[i].bytes == bytes) {
			data = cache[i].data;
			cache_remove_locked(i);
			break;
		}
	}
	pthread_mutex_unlock(&cache_mu);
	return data;
}

// cache_put keeps memory for reuse, evicting the oldest entries over the limits.
static void cache_put(void* data, size_t bytes) {
	if (bytes > CACHE_LIMIT) {
		free(data);
		return;
	}
	void* evicted[CACHE_SLOTS];
	int n = 0;
	pthread_mutex_lock(&cache_mu);
	while (cache_n > 0 && (cache_n == CACHE_SLOTS || cache_bytes + bytes > CACHE_LIMIT)) {
		evicted[n++] = cache[0].data;
		cache_remove_locked(0);
	}
	cache[cache_n].data = data;
	cache[cache_n].bytes = bytes;
	cache_n++;
	cache_bytes += bytes;
	pthread_mutex_unlock(&cache_mu);
	for (int i = 0; i < n; i++) free(evicted[i]);
}

// Small blocks of 4 KiB and more are recycled by exact size too (a few sizes, a few blocks
// each): payloads are freed in bursts when the floor seals them, and without a cache the
// allocator returns that memory to the kernel and faults it in again on the next writes.
#define SMALL_CACHE_MIN ((size_t)4 << 10)
#define SMALL_SIZES 16
#define SMALL_DEPTH 4096
#define SMALL_LIMIT ((size_t)64 << 20)

static struct {
	size_t bytes;  // block size (header included); 0 = unused slot
	uint64_t used; // last use (LRU among sizes)
	int n;
	void* blocks[SMALL_DEPTH];
} small_cache[SMALL_SIZES];
static size_t small_bytes;
static uint64_t small_clock;

static void* small_take(size_t bytes) {
	void* block = NULL;
	pthread_mutex_lock(&cache_mu);
	for (int i = 0; i < SMALL_SIZES; i++) {
		if (small_cache[i].bytes == bytes && small_cache[i].n > 0) {
			block = small_cache[i].blocks[--small_cache[i].n];
			small_cache[i].used = ++small_clock;
			small_bytes -= bytes;
			break;
		}
	}
	pthread_mutex_unlock(&cache_mu);
	return block;
}

static void small_put(void* block, size_t bytes) {
	int kept = 0;
	pthread_mutex_lock(&cache_mu);
	int slot = -1, lru = 0;
	for (int i = 0; i < SMALL_SIZES; i++) {
		if (small_cache[i].bytes == bytes) {
			slot = i;
			break;
		}
		if (small_cache[i].used < small_cache[lru].used) lru = i;
	}
	if (slot < 0) {
		// Reuse the least recently used size's slot (its blocks are freed).
		slot = lru;
		for (int k = 0; k < small_cache[slot].n; k++) free(small_cache[slot].blocks[k]);
		small_bytes -= (size_t)small_cache[slot].n * small_cache[slot].bytes;
		small_cache[slot].n = 0;
		small_cache[slot].bytes = bytes;
	}
	small_cache[slot].used = ++small_clock;
	if (small_cache[slot].n < SMALL_DEPTH && small_bytes + bytes <= SMALL_LIMIT) {
		small_cache[slot].blocks[small_cache[slot].n++] = block;
		small_bytes += bytes;
		kept = 1;
	}
	pthread_mutex_unlock(&cache_mu);
	if (!kept) free(block);
}

static size_t small_block_bytes(size_t size) {
	size_t alloc = (size + 63) & ~(size_t)63;
	return HEADER_BYTES + (alloc ? alloc : 64);
}

static void small_destroy(ovs_buffer* b) {
	size_t bytes = small_block_bytes(b->size);
	account(-1, -(int64_t)b->size);
	if (bytes >= SMALL_CACHE_MIN) {
		small_put(b, bytes);  // header and payload are one block
	} else {
		free(b);
	}
}

static void large_destroy(ovs_buffer* b) {
	account(-1, -(int64_t)b->size);
	cache_put(b->data, large_bytes(b->size));
	free(b);
}

static void init_host(ovs_buffer* b, void* data, size_t size, void (*destroy)(ovs_buffer*)) {
	b->refs = 1;
	b->data = data;
	b->size = size;
	b->destroy = destroy;
	b->device_type = 1;  // kDLCPU (core/cuda makes the device buffers)
	b->device_id = 0;
	account(1, (int64_t)size);
}

static ovs_buffer* new_buffer(size_t size, int zero) {
	if (size < LARGE_MIN) {
		size_t bytes = small_block_bytes(size);
		void* block = bytes >= SMALL_CACHE_MIN ? small_take(bytes) : NULL;
		if (!block && posix_memalign(&block, 64, bytes) != 0) return NULL;
		char* data = (char*)block + HEADER_BYTES;
		if (zero) memset(data, 0, bytes - HEADER_BYTES);
		init_host((ovs_buffer*)block, data, size, small_destroy);
		return (ovs_buffer*)block;
	}
	ovs_buffer* b = (ovs_buffer*)malloc(sizeof(ovs_buffer));
	if (!b) return NULL;
	size_t bytes = large_bytes(size);
	void* data = cache_take(bytes);
	if (!data) {
		if (posix_memalign(&data, LARGE_ALIGN, bytes) != 0) {
			free(b);
			return NULL;
		}
	}
	if (zero) memset(data, 0, size);
	init_host(b, data, size, large_destroy);
	return b;
}

// ovs_buffer_new allocates a zero-filled host buffer with one reference; NULL when out of memory.
ovs_buffer* ovs_buffer_new(size_t size) { return new_buffer(size, 1); }

// ovs_buffer_new_uninit is ovs_buffer_new without the zero fill, for payloads that are about to
// be overwritten completely.
ovs_buffer* ovs_buffer_new_uninit(size_t size) { return new_buffer(size, 0); }

// ovs_buffer_trim frees the memory cached for reuse.
void ovs_buffer_trim(void) {
	pthread_mutex_lock(&cache_mu);
	while (cache_n > 0) {
		free(cache[cache_n - 1].data);
		cache_remove_locked(cache_n - 1);
	}
	for (int i = 0; i < SMALL_SIZES; i++) {
		for (int k = 0; k < small_cache[i].n; k++) free(small_cache[i].blocks[k]);
		small_cache[i].n = 0;
	}
	small_bytes = 0;
	pthread_mutex_unlock(&cache_mu);
}

int64_t ovs_buffer_cached_bytes(void) {
	pthread_mutex_lock(&cache_mu);
	int64_t n = (int64_t)(cache_bytes + small_bytes);
	pthread_mutex_unlock(&cache_mu);
	return n;
}

#if defined(__SSE2__)
// Copies of STREAM_MIN bytes or more into 16-byte aligned memory bypass the cache with
// non-temporal stores. Such a copy's destination is cold: with the history window a new
// version's buffer is the one released a window of ordinals ago (core/versions.go), and
// ordinary stores first read every line of it into the cache. glibc streams only copies above
// a share of the last-level cache (tens of MiB); for the 4 MiB step of tests/bench/bench_step.py
// streaming halved the copy's time (core BenchmarkIsaacStep65536).
#define STREAM_MIN ((size_t)1 << 20)
// stream_copy copies n bytes with non-temporal stores (dst 16-byte aligned).
static void stream_copy(void* dst, const void* src, size_t n) {
	char* d = (char*)dst;
	const char* s = (const char*)src;
	size_t body = n & ~(size_t)63;
	for (size_t i = 0; i < body; i += 64) {
		__m128i a = _mm_loadu_si128((const __m128i*)(s + i));
		__m128i b = _mm_loadu_si128((const __m128i*)(s + i + 16));
		__m128i c = _mm_loadu_si128((const __m128i*)(s + i + 32));
		__m128i e = _mm_loadu_si128((const __m128i*)(s + i + 48));
		_mm_stream_si128((__m128i*)(d + i), a);
		_mm_stream_si128((__m128i*)(d + i + 16), b);
		_mm_stream_si128((__m128i*)(d + i + 32), c);
		_mm_stream_si128((__m128i*)(d + i + 48), e);
	}
	_mm_sfence();
	memcpy(d + body, s + body, n - body);
}
#endif

// ovs_copy is memcpy (for large copies glibc's beats Go's copy by ~2x), streamed from
// STREAM_MIN bytes (see stream_copy).
void ovs_copy(void* dst, const void* src, size_t n) {
#if defined(__SSE2__)
	if (n >= STREAM_MIN && ((uintptr_t)dst & 15) == 0) {
		stream_copy(dst, src, n);
		return;
	}
#endif
	memcpy(dst, src, n);
}

int64_t ovs_buffer_live_count(void) { return __atomic_load_n(&live_buffers, __ATOMIC_RELAXED); }
int64_t ovs_buffer_live_bytes(void) { return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED); }
