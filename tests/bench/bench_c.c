/*
 * The C API's costs, measured the way tests/bench/bench_c_api.py measures the Python ones (it
 * builds this file against build/lib/libovstage.so, runs it and prints both side by side):
 *
 *   write_wait  write_attribute + wait_op + release_op of a 1,000-prim float32 write
 *   enqueue     write_attribute alone (the op is waited and released untimed)
 *   read_1k     latest read_attributes + fetch_read_next until END_OF_ITERATION +
 *   read_1m     release_group + release_read, every op waited and released, over 1,000 and
 *               1,000,000 prims of one float32 column
 *
 * Writes go to a fresh ordinal each; every 64 writes the pending ops are drained and the floor
 * advanced to the last ordinal (untimed), as a producer's frame would be.
 *
 * Usage: bench_c [--quick]. Prints one line per figure, "<name> <median ns> <samples>", and
 * exits 1 with a message on any failed call.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ovstage/ovstage.h>
#include <ovx/path_dictionary/path_dictionary_utils.h>

#define FRAME 64

static ovstage_instance_t* inst;
static ovstage_ordinal_t last_ordinal; /* every write takes the next ordinal */

static void fail(const char* what, ovstage_api_status_t status)
{
    ovx_string_t e = ovstage_get_last_error();
    fprintf(stderr, "bench_c: %s: status %d: %.*s\n", what, (int)status, (int)e.length,
            e.ptr != NULL ? e.ptr : "");
    exit(1);
}

static void complete_op(const char* what, ovstage_op_id_t op)
{
    ovstage_op_wait_result_t w;
    ovstage_api_status_t st = ovstage_wait_op(inst, op, OVSTAGE_TIMEOUT_INFINITE, &w);
    if (st != OVSTAGE_OK) {
        fail(what, st);
    }
    st = ovstage_release_op(inst, op);
    if (st != OVSTAGE_OK) {
        fail("ovstage_release_op", st);
    }
}

static void complete(const char* what, ovstage_enqueue_result_t e)
{
    if (e.status != OVSTAGE_OK) {
        fail(what, e.status);
    }
    complete_op(what, e.op_index);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int by_value(const void* a, const void* b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return (x > y) - (x < y);
}

static uint64_t median(uint64_t* samples, size_t n)
{
    qsort(samples, n, sizeof *samples, by_value);
    return n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

/* A query over `count` fresh prims /<prefix>/p<i>. */
static ovstage_query_handle_t make_query(const char* prefix, size_t count,
                                         ovx_primpath_list_t* out_list)
{
    path_dictionary_instance_t* pd = ovstage_get_path_dictionary(inst);
    ovx_string_t* paths = calloc(count, sizeof *paths);
    char* text = calloc(count, 32);
    ovstage_query_handle_t query = 0;
    ovx_api_result_t r;
    ovstage_api_status_t st;
    size_t i;
    if (paths == NULL || text == NULL) {
        fprintf(stderr, "bench_c: out of memory\n");
        exit(1);
    }
    for (i = 0; i < count; ++i) {
        int n = snprintf(text + 32 * i, 32, "/%s/p%zu", prefix, i);
        paths[i].ptr = text + 32 * i;
        paths[i].length = (size_t)n;
    }
    r = path_dictionary_create_path_list_from_strings(pd, paths, count, out_list);
    if (r.status != OVX_API_SUCCESS) {
        fprintf(stderr, "bench_c: path list: %.*s\n", (int)r.error.length, r.error.ptr);
        exit(1);
    }
    free(paths);
    free(text);
    st = ovstage_query_from_path_list(inst, *out_list, &query);
    if (st != OVSTAGE_OK) {
        fail("ovstage_query_from_path_list", st);
    }
    return query;
}

static void release_query(ovstage_query_handle_t query, ovx_primpath_list_t list)
{
    path_dictionary_instance_t* pd = ovstage_get_path_dictionary(inst);
    complete("ovstage_release_query", ovstage_release_query(inst, query));
    if (path_dictionary_release_path_list_reference(pd, list).status != OVX_API_SUCCESS) {
        fprintf(stderr, "bench_c: release_path_list_reference failed\n");
        exit(1);
    }
}

static void seal(ovstage_ordinal_t ordinal)
{
    ovstage_write_floor_desc_t d = {ordinal, OVSTAGE_SCOPE_ALL, NULL, 0};
    complete("ovstage_advance_write_floor", ovstage_advance_write_floor(inst, &d));
}

/* ---- writes ------------------------------------------------------------------------------ */

typedef struct {
    ovstage_query_handle_t query;
    ovstage_write_data_t data;
    ovx_string_or_token_t attribute;
} writer_t;

/* n writes at fresh ordinals; wait: time the round trip, else the enqueue alone. */
static uint64_t time_writes(writer_t* w, size_t n, int wait, uint64_t* samples)
{
    ovstage_op_id_t pending[FRAME];
    size_t held = 0, i, k;
    for (i = 0; i < n; ++i) {
        uint64_t t0, t1;
        ovstage_enqueue_result_t e;
        last_ordinal++;
        t0 = now_ns();
        e = ovstage_write_attribute(inst, w->query, w->attribute, last_ordinal, w->data,
                                    OVSTAGE_PRIM_MODE_UPSERT);
        if (wait && e.status == OVSTAGE_OK) {
            ovstage_op_wait_result_t r;
            if (ovstage_wait_op(inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &r) != OVSTAGE_OK ||
                ovstage_release_op(inst, e.op_index) != OVSTAGE_OK) {
                fail("wait_op/release_op of a write", OVSTAGE_ERROR_OP_FAILED);
            }
        }
        t1 = now_ns();
        if (e.status != OVSTAGE_OK) {
            fail("ovstage_write_attribute", e.status);
        }
        samples[i] = t1 - t0;
        if (!wait) {
            pending[held++] = e.op_index;
        }
        if (i % FRAME == FRAME - 1) { /* a producer's frame: drain, seal (not timed) */
            for (k = 0; k < held; ++k) {
                complete_op("a pending write", pending[k]);
            }
            held = 0;
            seal(last_ordinal);
        }
    }
    for (k = 0; k < held; ++k) {
        complete_op("a pending write", pending[k]);
    }
    return median(samples, n);
}

static void bench_writes(size_t samples)
{
    enum { PRIMS = 1000 };
    static float values[PRIMS];
    int64_t shape[1] = {PRIMS};
    DLTensor tensor = {values, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
    uint64_t* times = calloc(samples > 2000 ? samples : 2000, sizeof *times);
    ovx_primpath_list_t list;
    writer_t w;
    uint64_t enqueue, round_trip;
    size_t i;

    for (i = 0; i < PRIMS; ++i) {
        values[i] = (float)i;
    }
    memset(&w, 0, sizeof w);
    w.query = make_query("enq", PRIMS, &list);
    w.data.tensors = &tensor;
    w.data.tensor_count = 1;
    w.attribute.string.ptr = "w"; /* by name, as the Python figure passes "w" */
    w.attribute.string.length = 1;
    time_writes(&w, 2000, 0, times); /* warm-up */
    time_writes(&w, 2000, 1, times);
    enqueue = time_writes(&w, samples, 0, times);
    round_trip = time_writes(&w, samples, 1, times);
    printf("enqueue %llu %zu\n", (unsigned long long)enqueue, samples);
    printf("write_wait %llu %zu\n", (unsigned long long)round_trip, samples);
    release_query(w.query, list);
    free(times);
}

/* ---- reads ------------------------------------------------------------------------------- */

static volatile float sink;

static void bench_read(const char* name, size_t prims, size_t samples)
{
    float* values = calloc(prims, sizeof *values);
    uint64_t* times = calloc(samples, sizeof *times);
    int64_t shape[1];
    DLTensor tensor = {values, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
    ovstage_write_data_t data = {0};
    ovx_string_t attr_name = {name, strlen(name)};
    ovx_string_or_token_t attribute = {0, {NULL, 0}};
    ovstage_ordinal_range_t latest = {0, UINT64_MAX, false};
    ovx_primpath_list_t list;
    ovstage_query_handle_t query;
    ovx_token_t token = 0;
    size_t i;

    if (values == NULL || times == NULL) {
        fprintf(stderr, "bench_c: out of memory\n");
        exit(1);
    }
    if (path_dictionary_create_tokens_from_strings(ovstage_get_path_dictionary(inst), &attr_name,
                                                   1, &token).status != OVX_API_SUCCESS) {
        fprintf(stderr, "bench_c: token\n");
        exit(1);
    }
    shape[0] = (int64_t)prims;
    for (i = 0; i < prims; ++i) {
        values[i] = 1.0f;
    }
    query = make_query(name, prims, &list);
    data.tensors = &tensor;
    data.tensor_count = 1;
    attribute.token = token;
    last_ordinal++;
    complete("ovstage_write_attribute", ovstage_write_attribute(inst, query, attribute, last_ordinal,
                                                                data, OVSTAGE_PRIM_MODE_UPSERT));
    seal(last_ordinal);

    for (i = 0; i < samples + 20; ++i) { /* the first 20: warm-up */
        ovstage_read_handle_t read = 0;
        ovstage_read_group_t group;
        ovstage_api_status_t st;
        ovstage_enqueue_result_t e;
        size_t groups = 0;
        uint64_t t0 = now_ns();
        e = ovstage_read_attributes(inst, query, &token, 1, latest, &read);
        if (e.status != OVSTAGE_OK) {
            fail("ovstage_read_attributes", e.status);
        }
        while ((st = ovstage_fetch_read_next(inst, read, OVSTAGE_TIMEOUT_INFINITE, &group)) ==
               OVSTAGE_OK) {
            sink = ((const float*)group.data.tensors[0].data)[0]; /* the data is there */
            groups += group.prims.count;
            if ((st = ovstage_release_group(inst, &group)) != OVSTAGE_OK) {
                fail("ovstage_release_group", st);
            }
        }
        if (st != OVSTAGE_ERROR_END_OF_ITERATION) {
            fail("ovstage_fetch_read_next", st);
        }
        complete("ovstage_release_read", ovstage_release_read(inst, read));
        complete_op("the read", e.op_index);
        if (i >= 20) {
            times[i - 20] = now_ns() - t0;
        }
        if (groups != prims) {
            fprintf(stderr, "bench_c: the read covered %zu prims, not %zu\n", groups, prims);
            exit(1);
        }
    }
    printf("%s %llu %zu\n", name, (unsigned long long)median(times, samples), samples);
    release_query(query, list);
    free(times);
    free(values);
}

int main(int argc, char** argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    ovstage_instance_desc_t desc = {"bench-c"};
    ovstage_api_status_t st = ovstage_create_instance(&desc, &inst);
    if (st != OVSTAGE_OK) {
        fail("ovstage_create_instance", st);
    }
    bench_writes(quick ? 2000 : 20000);
    bench_read("read_1k", 1000, quick ? 200 : 2000);
    bench_read("read_1m", 1000000, quick ? 20 : 200);
    st = ovstage_destroy_instance(inst);
    if (st != OVSTAGE_OK) {
        fail("ovstage_destroy_instance", st);
    }
    return 0;
}
