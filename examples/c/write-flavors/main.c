/*
 * write-flavors: the ways to write, and submitting ahead without waiting.
 *
 *   1. a batch: two attributes written by one op (ovstage_write_attributes);
 *   2. a sparse write with an index_map (each written prim names its payload row);
 *   3. a sparse write with a mask (only the prims whose bit is set are written);
 *   4. CPU ahead: several ordinals and a floor advance submitted with no waits, then drained
 *      with zero-timeout wait_op polls, releasing each op as it completes.
 *
 * Each step seals its ordinal and prints the sealed values of the four prims.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ovstage/ovstage.h>
#include <ovx/path_dictionary/path_dictionary_utils.h>

#define PRIMS 4
static const char* const prim_paths[PRIMS] = {"/World/A", "/World/B", "/World/C", "/World/D"};

/* Returns from the calling function with the status when it is not OK. */
#define TRY(expr)                                                                              \
    do {                                                                                       \
        ovstage_api_status_t try_status_ = (expr);                                             \
        if (try_status_ != OVSTAGE_OK) {                                                       \
            return try_status_;                                                                \
        }                                                                                      \
    } while (0)

/* Prints the calling thread's last error (the message of its latest failed call). */
static ovstage_api_status_t report(const char* what, ovstage_api_status_t status)
{
    ovx_string_t e = ovstage_get_last_error();
    fprintf(stderr, "%s: status %d: %.*s\n", what, (int)status, (int)e.length,
            e.ptr != NULL ? e.ptr : "");
    return status;
}

/* Prints the message of each failed op a wait_op listed (the chain of the waited op). */
static void report_failed_ops(ovstage_instance_t* inst, const char* what,
                             const ovstage_op_wait_result_t* waited)
{
    size_t i;
    for (i = 0; i < waited->error_op_id_count; ++i) {
        ovx_string_t m = ovstage_get_last_op_error(inst, waited->error_op_ids[i]);
        fprintf(stderr, "%s: op %llu failed: %.*s\n", what,
                (unsigned long long)waited->error_op_ids[i], (int)m.length,
                m.ptr != NULL ? m.ptr : "");
    }
}

/* Enqueue-check-wait: waits for the op of an asynchronous call, reports a failure, releases. */
static ovstage_api_status_t complete(ovstage_instance_t* inst, const char* what,
                                     ovstage_enqueue_result_t enqueued)
{
    ovstage_op_wait_result_t waited;
    ovstage_api_status_t status, released;

    if (enqueued.status != OVSTAGE_OK) { /* rejected: nothing was queued */
        return report(what, enqueued.status);
    }
    status = ovstage_wait_op(inst, enqueued.op_index, OVSTAGE_TIMEOUT_INFINITE, &waited);
    if (status == OVSTAGE_ERROR_OP_FAILED) {
        report_failed_ops(inst, what, &waited);
    } else if (status != OVSTAGE_OK) {
        return report(what, status);
    }
    released = ovstage_release_op(inst, enqueued.op_index);
    if (released != OVSTAGE_OK) {
        report("ovstage_release_op", released);
    }
    return status != OVSTAGE_OK ? status : released;
}

static ovstage_api_status_t seal(ovstage_instance_t* inst, ovstage_ordinal_t ordinal)
{
    ovstage_write_floor_desc_t desc = {ordinal, OVSTAGE_SCOPE_ALL, NULL, 0};
    return complete(inst, "ovstage_advance_write_floor", ovstage_advance_write_floor(inst, &desc));
}

/* A 1-D float32 tensor of `rows` rows of `lanes` values each (lanes 3: a float3 per row). */
static DLTensor f32_rows(float* values, int64_t* shape, int64_t rows, uint16_t lanes)
{
    DLTensor t = {values, {kDLCPU, 0}, 1, {kDLFloat, 32, lanes}, shape, NULL, 0};
    shape[0] = rows;
    return t;
}

static ovx_string_or_token_t by_token(ovx_token_t token)
{
    ovx_string_or_token_t a = {token, {NULL, 0}};
    return a;
}

/* What every step uses: the instance, a query over the four prims, and two attribute names. */
typedef struct {
    ovstage_instance_t* inst;
    ovstage_query_handle_t query;
    ovx_primpath_t prims[PRIMS];
    ovx_token_t temperature;
    ovx_token_t position;
} example_t;

/* The position in prims[] of entry `entry` of path list `list`; PRIMS if it is none of them. */
static size_t prim_index(const example_t* ex, ovx_primpath_list_t list, uint32_t entry)
{
    path_dictionary_instance_t* dictionary = ovstage_get_path_dictionary(ex->inst);
    ovx_primpath_t path = OVX_INVALID_PRIMPATH;
    size_t got = 0, i;
    ovx_api_result_t r =
        path_dictionary_get_paths_from_path_list(dictionary, list, entry, 1, &path, &got);
    if (r.status != OVX_API_SUCCESS) {
        path_dictionary_release_error(dictionary, r.error);
        return PRIMS;
    }
    for (i = 0; i < PRIMS && ex->prims[i] != path; ++i) {
    }
    return i;
}

/*
 * The floats of row `row` of a float32 group tensor, `*width` of them. Read tensors use the
 * typed layout (a float3 column is [R, 3], lanes 1, strides [3, 1]); a tensor with the tuple
 * in dtype.lanes (the layout writes take) is handled the same way.
 */
static const float* row_of(const DLTensor* t, uint32_t row, int64_t* width)
{
    const float* base = (const float*)((const char*)t->data + t->byte_offset);
    int64_t floats = t->dtype.lanes;
    int32_t axis;
    for (axis = 1; axis < t->ndim; ++axis) {
        floats *= t->shape[axis];
    }
    *width = floats;
    /* strides count elements (tuples of dtype.lanes values). */
    return base + (int64_t)row * (t->strides != NULL ? t->strides[0] * t->dtype.lanes : floats);
}

/* Prints the latest sealed values of a float32 attribute with `lanes` (1..3) values per prim. */
static ovstage_api_status_t show(const example_t* ex, const char* name, ovx_token_t attribute,
                                 int64_t lanes)
{
    ovstage_ordinal_range_t latest = {0, UINT64_MAX, false};
    ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
    ovstage_read_group_t group;
    ovstage_api_status_t status;
    float values[PRIMS][3] = {{0}};
    int64_t width, c;
    uint32_t k;
    size_t prim;

    TRY(complete(ex->inst, "ovstage_read_attributes",
                 ovstage_read_attributes(ex->inst, ex->query, &attribute, 1, latest, &read)));
    while ((status = ovstage_fetch_read_next(ex->inst, read, OVSTAGE_TIMEOUT_INFINITE,
                                             &group)) == OVSTAGE_OK) {
        /* Prims and rows are mapped as in examples/c/minimal; tombstones have no values. */
        for (k = 0; k < group.prims.count && !group.is_delete; ++k) {
            uint32_t entry = group.prims.index_map ? group.prims.index_map[k] : group.prims.offset + k;
            uint32_t r = group.data.index_map ? group.data.index_map[k] : k;
            const float* row = row_of(&group.data.tensors[0], r, &width);
            prim = prim_index(ex, group.prims.list, entry);
            for (c = 0; c < lanes && c < width && c < 3 && prim < PRIMS; ++c) {
                values[prim][c] = row[c];
            }
        }
        TRY(ovstage_release_group(ex->inst, &group));
    }
    if (status != OVSTAGE_ERROR_END_OF_ITERATION) {
        return report("ovstage_fetch_read_next", status);
    }
    TRY(complete(ex->inst, "ovstage_release_read", ovstage_release_read(ex->inst, read)));

    printf("  %-11s [", name);
    for (prim = 0; prim < PRIMS; ++prim) {
        printf("%s%s", prim ? ", " : "", lanes > 1 ? "[" : "");
        for (c = 0; c < lanes && c < 3; ++c) {
            printf("%s%.1f", c ? ", " : "", values[prim][c]);
        }
        printf("%s", lanes > 1 ? "]" : "");
    }
    printf("]\n");
    return OVSTAGE_OK;
}

/* 1. A batch: temperature and a float3 position written by one op at ordinal 1. */
static ovstage_api_status_t batch_write(const example_t* ex)
{
    float temperature[PRIMS] = {20, 21, 22, 23};
    float position[PRIMS * 3] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    int64_t shapes[2][1];
    DLTensor tensors[2];
    ovstage_attribute_write_t writes[2];

    memset(writes, 0, sizeof writes);
    tensors[0] = f32_rows(temperature, shapes[0], PRIMS, 1);
    tensors[1] = f32_rows(position, shapes[1], PRIMS, 3);
    writes[0].attribute = by_token(ex->temperature);
    writes[0].data.tensors = &tensors[0];
    writes[0].data.tensor_count = 1;
    writes[1].attribute = by_token(ex->position);
    writes[1].data.tensors = &tensors[1];
    writes[1].data.tensor_count = 1;
    writes[1].data.semantic = OVSTAGE_SEMANTIC_POINT;
    TRY(complete(ex->inst, "ovstage_write_attributes",
                 ovstage_write_attributes(ex->inst, ex->query, writes, 2, 1,
                                          OVSTAGE_PRIM_MODE_UPSERT)));
    TRY(seal(ex->inst, 1));
    printf("batch write at ordinal 1 (one op)\n");
    TRY(show(ex, "temperature", ex->temperature, 1));
    return show(ex, "position", ex->position, 3);
}

/* 2. index_map: the write covers the first `count` prims, prim i taking payload row
 *    index_map[i]: A <- row 1, B <- row 1, C <- row 0; D is not written. */
static ovstage_api_status_t index_map_write(const example_t* ex)
{
    float rows[2] = {100, 200};
    uint32_t index_map[3] = {1, 1, 0};
    int64_t shape[1];
    DLTensor tensor = f32_rows(rows, shape, 2, 1);
    ovstage_write_data_t data = {0};

    data.tensors = &tensor;
    data.tensor_count = 1;
    data.count = 3;
    data.index_map = index_map; /* read when the op runs: kept alive until it completes */
    TRY(complete(ex->inst, "ovstage_write_attribute (index_map)",
                 ovstage_write_attribute(ex->inst, ex->query, by_token(ex->temperature), 2, data,
                                         OVSTAGE_PRIM_MODE_UPSERT)));
    TRY(seal(ex->inst, 2));
    printf("index_map [1, 1, 0] at ordinal 2\n");
    return show(ex, "temperature", ex->temperature, 1);
}

/* 3. mask: of the first `count` prims, only those whose bit is set (bit i of word i / 64) are
 *    written: 0b1010 writes B and D. */
static ovstage_api_status_t mask_write(const example_t* ex)
{
    float rows[PRIMS] = {-1, -2, -3, -4};
    uint64_t mask[1] = {0xA};
    int64_t shape[1];
    DLTensor tensor = f32_rows(rows, shape, PRIMS, 1);
    ovstage_write_data_t data = {0};

    data.tensors = &tensor;
    data.tensor_count = 1;
    data.count = PRIMS;
    data.mask = mask; /* like index_map, read when the op runs */
    TRY(complete(ex->inst, "ovstage_write_attribute (mask)",
                 ovstage_write_attribute(ex->inst, ex->query, by_token(ex->temperature), 3, data,
                                         OVSTAGE_PRIM_MODE_UPSERT)));
    TRY(seal(ex->inst, 3));
    printf("mask 0b1010 at ordinal 3\n");
    return show(ex, "temperature", ex->temperature, 1);
}

/* 4. CPU ahead: ordinals FIRST..LAST and a floor advance sealing them are submitted with no
 *    waits; then every op is polled with timeout 0 and released as soon as it completed. */
enum { FIRST = 4, LAST = 7, AHEAD = LAST - FIRST + 1 };

static ovstage_api_status_t cpu_ahead(const example_t* ex)
{
    /* Client-managed tensors (payload, descriptor, shape) stay alive until their op completes:
     * one of each per ordinal. */
    float payload[AHEAD][PRIMS];
    int64_t shapes[AHEAD][1];
    DLTensor tensors[AHEAD];
    ovstage_op_id_t pending[AHEAD + 1];
    ovstage_write_floor_desc_t floor = {LAST, OVSTAGE_SCOPE_ALL, NULL, 0};
    struct timespec pause = {0, 1000000}; /* 1 ms */
    ovstage_enqueue_result_t e;
    size_t submitted = 0, drained = 0, left, i, a;

    for (a = 0; a < AHEAD; ++a) {
        ovstage_ordinal_t ordinal = FIRST + a;
        ovstage_write_data_t data = {0};
        for (i = 0; i < PRIMS; ++i) {
            payload[a][i] = (float)(ordinal * 10);
        }
        tensors[a] = f32_rows(payload[a], shapes[a], PRIMS, 1);
        data.tensors = &tensors[a];
        data.tensor_count = 1;
        e = ovstage_write_attribute(ex->inst, ex->query, by_token(ex->temperature), ordinal, data,
                                    OVSTAGE_PRIM_MODE_UPSERT);
        if (e.status != OVSTAGE_OK) {
            return report("ovstage_write_attribute", e.status);
        }
        pending[submitted++] = e.op_index;
    }
    e = ovstage_advance_write_floor(ex->inst, &floor);
    if (e.status != OVSTAGE_OK) {
        return report("ovstage_advance_write_floor", e.status);
    }
    pending[submitted++] = e.op_index;

    /* Drain. TIMEOUT: still pending (never release it then); OK or OP_FAILED: done. */
    for (left = submitted; left > 0;) {
        for (i = 0; i < submitted; ++i) {
            ovstage_op_wait_result_t waited;
            ovstage_api_status_t status;
            if (pending[i] == OVSTAGE_INVALID_OP_ID) {
                continue; /* released already */
            }
            status = ovstage_wait_op(ex->inst, pending[i], 0, &waited);
            if (status == OVSTAGE_ERROR_TIMEOUT) {
                continue; /* waited.lowest_pending_op_id names what it waits for */
            }
            if (status == OVSTAGE_ERROR_OP_FAILED) {
                report_failed_ops(ex->inst, "a CPU-ahead op", &waited);
            } else if (status != OVSTAGE_OK) {
                return report("ovstage_wait_op", status);
            }
            TRY(ovstage_release_op(ex->inst, pending[i]));
            pending[i] = OVSTAGE_INVALID_OP_ID;
            left--;
            TRY(status);
            drained++;
        }
        if (left > 0) {
            nanosleep(&pause, NULL); /* a real producer would do other work here */
        }
    }
    printf("CPU ahead: submitted %zu ops for ordinals %d..%d with no waits, drained %zu\n",
           submitted, FIRST, LAST, drained);
    return show(ex, "temperature", ex->temperature, 1);
}

static ovstage_api_status_t run(const example_t* ex)
{
    TRY(batch_write(ex));
    TRY(index_map_write(ex));
    TRY(mask_write(ex));
    return cpu_ahead(ex);
}

int main(void)
{
    ovstage_instance_desc_t desc = {"write-flavors"};
    example_t ex;
    path_dictionary_instance_t* dictionary;
    ovx_string_t paths[PRIMS];
    ovx_string_t names[2] = {literal_to_ovx_string("temperature"),
                             literal_to_ovx_string("position")};
    ovx_token_t tokens[2] = {OVX_INVALID_TOKEN, OVX_INVALID_TOKEN};
    ovx_primpath_list_t list = OVX_INVALID_PRIMPATH_LIST;
    ovx_api_result_t dict;
    ovstage_api_status_t status;
    size_t i;

    memset(&ex, 0, sizeof ex);
    status = ovstage_create_instance(&desc, &ex.inst);
    if (status != OVSTAGE_OK) {
        report("ovstage_create_instance", status);
        return 1;
    }
    dictionary = ovstage_get_path_dictionary(ex.inst);
    for (i = 0; i < PRIMS; ++i) {
        paths[i].ptr = prim_paths[i];
        paths[i].length = strlen(prim_paths[i]);
    }
    dict = path_dictionary_create_paths_from_strings(dictionary, paths, PRIMS, ex.prims);
    if (dict.status == OVX_API_SUCCESS) {
        dict = path_dictionary_create_path_list_from_paths(dictionary, ex.prims, PRIMS, &list);
    }
    if (dict.status == OVX_API_SUCCESS) {
        dict = path_dictionary_create_tokens_from_strings(dictionary, names, 2, tokens);
    }
    if (dict.status != OVX_API_SUCCESS) {
        fprintf(stderr, "path dictionary: %.*s\n", (int)dict.error.length, dict.error.ptr);
        path_dictionary_release_error(dictionary, dict.error);
        status = OVSTAGE_ERROR_INVALID_ARGUMENT;
    } else {
        ex.temperature = tokens[0];
        ex.position = tokens[1];
        status = ovstage_query_from_path_list(ex.inst, list, &ex.query);
        if (status != OVSTAGE_OK) {
            report("ovstage_query_from_path_list", status);
        }
    }
    if (status == OVSTAGE_OK) {
        status = run(&ex);
    }

    /* Release in reverse order of creation: the query, the path list, then the instance. */
    if (ex.query != OVSTAGE_INVALID_QUERY_HANDLE &&
        complete(ex.inst, "ovstage_release_query", ovstage_release_query(ex.inst, ex.query)) !=
            OVSTAGE_OK) {
        status = OVSTAGE_ERROR_INTERNAL;
    }
    if (list != OVX_INVALID_PRIMPATH_LIST) {
        dict = path_dictionary_release_path_list_reference(dictionary, list);
        if (dict.status != OVX_API_SUCCESS) {
            path_dictionary_release_error(dictionary, dict.error);
            status = OVSTAGE_ERROR_INTERNAL;
        }
    }
    if (ovstage_destroy_instance(ex.inst) != OVSTAGE_OK) {
        status = report("ovstage_destroy_instance", OVSTAGE_ERROR_INTERNAL);
    }
    return status == OVSTAGE_OK ? 0 : 1;
}
