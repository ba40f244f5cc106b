/*
 * Tests of libovstage.so through its C API: every vtable slot, every flat function, the path
 * dictionary slots, the extension tables, and bad input (NULL and forged pointers, released
 * handles, token 0, mismatched tensor counts, NULL data, absurd shapes, unsupported modes).
 *
 * Built with -Wall -Wextra -Werror against build/include and build/lib/libovstage.so and run by
 * tests/python/test_c_api.py (which sets OVSTAGE_TEST_HOOKS=1 so the test gates are served);
 * prints one line per test and "N passed, N failed". A test that hangs is stopped by alarm().
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ovstage/ovstage.h>
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>
#include <ovstage/ovstage_population_export.h>
#include <ovx/path_dictionary/path_dictionary_utils.h>

/* ---- a small test runner -------------------------------------------------------------- */

static int failures_in_test;
static int passed_tests;
static int failed_tests;
static const char* current_test;

static void check_failed(const char* file, int line, const char* what, const char* detail)
{
    fprintf(stderr, "  %s:%d: %s: CHECK(%s) failed%s%s\n", file, line, current_test, what,
            detail[0] ? ": " : "", detail);
    failures_in_test++;
}

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            check_failed(__FILE__, __LINE__, #cond, "");                                     \
        }                                                                                      \
    } while (0)

/* The last error of this thread as a printable C string (static buffer). */
static const char* last_error_text(void)
{
    static _Thread_local char text[1024];
    ovx_string_t e = ovstage_get_last_error();
    if (e.ptr == NULL) {
        return "";
    }
    snprintf(text, sizeof text, "%.*s", (int)e.length, e.ptr);
    return text;
}

static int last_error_contains(const char* needle)
{
    return strstr(last_error_text(), needle) != NULL;
}

/* CHECK_STATUS(expr, want): expr returns an ovstage_api_status_t. */
#define CHECK_STATUS(expr, want)                                                               \
    do {                                                                                       \
        ovstage_api_status_t got_ = (expr);                                                    \
        if (got_ != (want)) {                                                                  \
            char d_[1200];                                                                     \
            snprintf(d_, sizeof d_, "status %d, want %d (last error: %s)", (int)got_,         \
                     (int)(want), last_error_text());                                          \
            check_failed(__FILE__, __LINE__, #expr, d_);                                       \
        }                                                                                      \
    } while (0)

/* CHECK_REJECTED(result, want): a rejected enqueue has the status and op id 0. */
#define CHECK_REJECTED(result, want)                                                           \
    do {                                                                                       \
        ovstage_enqueue_result_t r_ = (result);                                                \
        if (r_.status != (want) || r_.op_index != OVSTAGE_INVALID_OP_ID) {                     \
            char d_[1200];                                                                     \
            snprintf(d_, sizeof d_, "status %d op %" PRIu64 ", want %d op 0 (last error: %s)", \
                     (int)r_.status, r_.op_index, (int)(want), last_error_text());             \
            check_failed(__FILE__, __LINE__, #result, d_);                                     \
        }                                                                                      \
    } while (0)

#define CHECK_LAST_ERROR(needle)                                                               \
    do {                                                                                       \
        if (!last_error_contains(needle)) {                                                    \
            char d_[1200];                                                                     \
            snprintf(d_, sizeof d_, "last error \"%s\" does not mention \"%s\"",              \
                     last_error_text(), needle);                                               \
            check_failed(__FILE__, __LINE__, "last error", d_);                               \
        }                                                                                      \
    } while (0)

typedef void (*test_fn)(void);

static void run_test(const char* name, test_fn fn)
{
    current_test = name;
    failures_in_test = 0;
    fn();
    if (failures_in_test == 0) {
        passed_tests++;
        printf("ok    %s\n", name);
    } else {
        failed_tests++;
        printf("FAIL  %s\n", name);
    }
    fflush(stdout);
}

static void on_alarm(int sig)
{
    static const char msg[] = "\ntimeout: a test did not finish in time\n";
    (void)sig;
    (void)!write(2, msg, sizeof msg - 1);
    _exit(2);
}

/* ---- fixtures ------------------------------------------------------------------------ */

typedef struct {
    ovstage_instance_t* inst;
    path_dictionary_instance_t* pd;
} stage_t;

static stage_t new_stage(const char* name)
{
    stage_t s = {NULL, NULL};
    ovstage_instance_desc_t desc = {name};
    CHECK_STATUS(ovstage_create_instance(&desc, &s.inst), OVSTAGE_OK);
    if (s.inst != NULL) {
        s.pd = ovstage_get_path_dictionary(s.inst);
        CHECK(s.pd != NULL);
    }
    return s;
}

static void destroy_stage(stage_t* s)
{
    if (s->inst != NULL) {
        CHECK_STATUS(ovstage_destroy_instance(s->inst), OVSTAGE_OK);
    }
    s->inst = NULL;
    s->pd = NULL;
}

static ovx_string_t str(const char* s)
{
    ovx_string_t v;
    v.ptr = s;
    v.length = strlen(s);
    return v;
}

static ovx_string_or_token_t named(const char* s)
{
    ovx_string_or_token_t v;
    v.token = 0;
    v.string = str(s);
    return v;
}

static ovx_string_or_token_t by_token(ovx_token_t t)
{
    ovx_string_or_token_t v;
    memset(&v, 0, sizeof v);
    v.token = t;
    return v;
}

static ovx_token_t token(stage_t* s, const char* text)
{
    ovx_string_t v = str(text);
    ovx_token_t t = 0;
    ovx_api_result_t r = path_dictionary_create_tokens_from_strings(s->pd, &v, 1, &t);
    CHECK(r.status == OVX_API_SUCCESS);
    return t;
}

static ovx_primpath_t path(stage_t* s, const char* text)
{
    ovx_string_t v = str(text);
    ovx_primpath_t p = 0;
    ovx_api_result_t r = path_dictionary_create_paths_from_strings(s->pd, &v, 1, &p);
    CHECK(r.status == OVX_API_SUCCESS);
    return p;
}

/* A path list of n paths; the caller releases it with release_list. */
static ovx_primpath_list_t list_of(stage_t* s, const char* const* paths, size_t n)
{
    ovx_string_t v[16];
    ovx_primpath_list_t list = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        v[i] = str(paths[i]);
    }
    CHECK(path_dictionary_create_path_list_from_strings(s->pd, v, n, &list).status ==
          OVX_API_SUCCESS);
    return list;
}

static void release_list(stage_t* s, ovx_primpath_list_t list)
{
    CHECK(path_dictionary_release_path_list_reference(s->pd, list).status == OVX_API_SUCCESS);
}

static ovstage_query_handle_t query_of(stage_t* s, ovx_primpath_list_t list)
{
    ovstage_query_handle_t q = 0;
    CHECK_STATUS(ovstage_query_from_path_list(s->inst, list, &q), OVSTAGE_OK);
    CHECK(q != 0);
    return q;
}

/* Waits for op (which must succeed) and releases it. */
#define WAIT_OK(s, result)                                                                     \
    do {                                                                                       \
        ovstage_enqueue_result_t e_ = (result);                                                \
        ovstage_op_wait_result_t w_;                                                           \
        CHECK_STATUS(e_.status, OVSTAGE_OK);                                                   \
        if (e_.status == OVSTAGE_OK) {                                                         \
            CHECK(e_.op_index != 0);                                                           \
            CHECK_STATUS(ovstage_wait_op((s)->inst, e_.op_index, OVSTAGE_TIMEOUT_INFINITE, &w_), \
                         OVSTAGE_OK);                                                          \
            CHECK(w_.error_op_id_count == 0);                                                  \
            CHECK_STATUS(ovstage_release_op((s)->inst, e_.op_index), OVSTAGE_OK);              \
        }                                                                                      \
    } while (0)

static DLTensor f32_tensor(float* values, int64_t* shape, int64_t rows, uint16_t lanes)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    shape[0] = rows;
    t.data = values;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = lanes;
    t.shape = shape;
    return t;
}

static ovstage_write_data_t data_of(const DLTensor* tensors, uint32_t count)
{
    ovstage_write_data_t d;
    memset(&d, 0, sizeof d);
    d.tensors = tensors;
    d.tensor_count = count;
    return d;
}

static ovstage_enqueue_result_t write_f32(stage_t* s, ovstage_query_handle_t q, const char* attr,
                                          ovstage_ordinal_t ordinal, float* values, int64_t rows)
{
    int64_t shape[1];
    DLTensor t = f32_tensor(values, shape, rows, 1);
    return ovstage_write_attribute(s->inst, q, named(attr), ordinal, data_of(&t, 1),
                                   OVSTAGE_PRIM_MODE_UPSERT);
}

static void seal(stage_t* s, ovstage_ordinal_t ordinal)
{
    ovstage_write_floor_desc_t d = {ordinal, OVSTAGE_SCOPE_ALL, NULL, 0};
    WAIT_OK(s, ovstage_advance_write_floor(s->inst, &d));
}

static ovstage_ordinal_range_t latest(ovstage_ordinal_t n)
{
    ovstage_ordinal_range_t r;
    memset(&r, 0, sizeof r);
    r.end_ordinal = n;
    return r;
}

static ovstage_ordinal_range_t between(ovstage_ordinal_t a, ovstage_ordinal_t b)
{
    ovstage_ordinal_range_t r;
    memset(&r, 0, sizeof r);
    r.start_ordinal = a;
    r.end_ordinal = b;
    r.has_start_ordinal = true;
    return r;
}

/*
 * Reads attr (float32 scalar) over q and stores the value of each query prim in out (NAN-free
 * callers pass a sentinel in out first); returns the number of value groups, -1 on error.
 */
static int read_f32_at(stage_t* s, ovstage_query_handle_t q, ovx_token_t attr, float* out,
                       size_t nprims, ovstage_ordinal_range_t range, ovstage_api_status_t* refused);

static int read_f32(stage_t* s, ovstage_query_handle_t q, ovx_token_t attr, float* out,
                    size_t nprims)
{
    return read_f32_at(s, q, attr, out, nprims, latest(UINT64_MAX), NULL);
}

/* read_f32 over range; a read refused at enqueue returns -1 with its status in *refused (a
 * NULL refused makes the refusal a failed check). */
static int read_f32_at(stage_t* s, ovstage_query_handle_t q, ovx_token_t attr, float* out,
                       size_t nprims, ovstage_ordinal_range_t range, ovstage_api_status_t* refused)
{
    ovstage_read_handle_t r = 0;
    ovstage_read_group_t g;
    ovstage_api_status_t st;
    int groups = 0;
    ovstage_enqueue_result_t e = ovstage_read_attributes(s->inst, q, &attr, 1, range, &r);
    if (refused != NULL) {
        *refused = e.status;
    } else {
        CHECK_STATUS(e.status, OVSTAGE_OK);
    }
    if (e.status != OVSTAGE_OK) {
        return -1;
    }
    while ((st = ovstage_fetch_read_next(s->inst, r, OVSTAGE_TIMEOUT_INFINITE, &g)) == OVSTAGE_OK) {
        uint32_t k;
        groups++;
        CHECK(g.attribute == attr);
        CHECK(g.data.tensor_count == 1);
        CHECK(g.data.mask == NULL);
        if (g.data.tensor_count == 1) {
            const DLTensor* t = &g.data.tensors[0];
            const float* v = (const float*)t->data;
            CHECK(t->strides != NULL);
            for (k = 0; k < g.prims.count; ++k) {
                uint32_t prim = g.prims.index_map ? g.prims.index_map[k] : g.prims.offset + k;
                uint32_t row = g.data.index_map ? g.data.index_map[k] : k;
                if (prim < nprims) {
                    out[prim] = v[row];
                }
            }
        }
        CHECK_STATUS(ovstage_release_group(s->inst, &g), OVSTAGE_OK);
    }
    CHECK_STATUS(st, OVSTAGE_ERROR_END_OF_ITERATION);
    WAIT_OK(s, ovstage_release_read(s->inst, r));
    WAIT_OK(s, e);
    return groups;
}

/* Releases a query handle and waits for it. */
static void release_query(stage_t* s, ovstage_query_handle_t q)
{
    WAIT_OK(s, ovstage_release_query(s->inst, q));
}

/* The test-hooks extension (OVSTAGE_TEST_HOOKS=1): the reference's 12 gate entries, then ours. */
typedef struct {
    ovstage_extension_header_t header;
    void (*query_gate_enable)(void);
    void (*query_gate_wait_until_entered)(void);
    void (*query_gate_release)(void);
    void (*query_gate_reset)(void);
    uint32_t (*query_gate_entered_count)(void);
    void (*query_gate_fail_next)(void);
    void (*write_gate_enable)(void);
    void (*write_gate_wait_until_entered)(void);
    void (*write_gate_release)(void);
    void (*write_gate_reset)(void);
    uint32_t (*write_gate_entered_count)(void);
    void (*write_gate_fail_next)(void);
    uint32_t (*go_panic_probe)(void);
} test_hooks_t;

static const test_hooks_t* hooks(stage_t* s)
{
    const void* table = NULL;
    CHECK_STATUS(s->inst->vtable->query_extension(s->inst->context, "ovstage.test.hooks", &table),
                 OVSTAGE_OK);
    CHECK(table != NULL);
    if (table != NULL) {
        const test_hooks_t* h = (const test_hooks_t*)table;
        CHECK(h->header.version == 1);
        CHECK(h->header.struct_size == sizeof(test_hooks_t));
    }
    return (const test_hooks_t*)table;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- build information, version, process lifetime ------------------------------------ */

static void test_build_info_and_version(void)
{
    const ovstage_build_info_t* bi = ovstage_get_build_info();
    uint32_t major = 9, minor = 9, patch = 9;
    char semver[32];
    char whole[512];
    stage_t s;
    CHECK(bi != NULL);
    if (bi == NULL) {
        return;
    }
    CHECK(bi == ovstage_get_build_info());
    CHECK(bi->struct_size == 72 && sizeof(ovstage_build_info_t) == 72);
    CHECK(bi->build_string.ptr != NULL && bi->build_string.ptr[bi->build_string.length] == '\0');
    CHECK(bi->git_hash.length > 0 && bi->git_branch.length > 0 && bi->build_location.length > 0);
    s = new_stage("version");
    s.inst->vtable->get_version(s.inst->context, &major, &minor, &patch);
    CHECK(major == OVSTAGE_VERSION_MAJOR && minor == OVSTAGE_VERSION_MINOR &&
          patch == OVSTAGE_VERSION_PATCH);
    CHECK(major == 0 && minor == 3 && patch == 0);
    snprintf(semver, sizeof semver, "%u.%u.%u+", major, minor, patch);
    CHECK(strncmp(bi->build_string.ptr, semver, strlen(semver)) == 0);
    /* The build string is assembled from the fields: <semver>+<branch>.<number>.<hash>.<location>. */
    snprintf(whole, sizeof whole, "%s%.*s.%u.%.*s.%.*s", semver, (int)bi->git_branch.length,
             bi->git_branch.ptr, bi->build_number, (int)bi->git_hash.length, bi->git_hash.ptr,
             (int)bi->build_location.length, bi->build_location.ptr);
    CHECK(bi->build_string.length == strlen(whole) && strcmp(bi->build_string.ptr, whole) == 0);
    CHECK(bi->git_hash.ptr[bi->git_hash.length] == '\0');
    destroy_stage(&s);
}

static void test_error_strings(void)
{
    stage_t s = new_stage("errors");
    static const ovstage_api_status_t codes[] = {
        OVSTAGE_OK, OVSTAGE_ERROR_INVALID_ARGUMENT, OVSTAGE_ERROR_INVALID_HANDLE,
        OVSTAGE_ERROR_NOT_FOUND, OVSTAGE_ERROR_PRIM_NOT_FOUND, OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION,
        OVSTAGE_ERROR_NOT_SUPPORTED, OVSTAGE_ERROR_QUEUE_FULL, OVSTAGE_ERROR_END_OF_ITERATION,
        OVSTAGE_ERROR_OUT_OF_MEMORY, OVSTAGE_ERROR_LAYOUT_CHANGED, OVSTAGE_ERROR_TIMEOUT,
        OVSTAGE_ERROR_OP_FAILED, OVSTAGE_ERROR_OUT_OF_RANGE, OVSTAGE_ERROR_INTERNAL};
    size_t n = sizeof codes / sizeof codes[0], i, j;
    for (i = 0; i < n; ++i) {
        const char* a = s.inst->vtable->get_error_string(s.inst->context, codes[i]);
        CHECK(a != NULL && a[0] != '\0');
        for (j = 0; j < i; ++j) {
            CHECK(strcmp(a, s.inst->vtable->get_error_string(s.inst->context, codes[j])) != 0);
        }
    }
    CHECK(strcmp(s.inst->vtable->get_error_string(s.inst->context, (ovstage_api_status_t)77),
                 "unknown error") == 0);
    CHECK(strcmp(ovstage_get_error_string(s.inst, OVSTAGE_ERROR_OP_FAILED), "operation failed") == 0);
    destroy_stage(&s);
}

static void test_initialize_shutdown(void)
{
    ovstage_config_entry_t e[3];
    ovstage_config_t cfg;
    ovstage_config_t got;
    stage_t s;

    /* Nothing holds a reference: an unmatched shutdown is refused. */
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("ovstage_shutdown");

    CHECK_STATUS(ovstage_initialize(NULL), OVSTAGE_OK);
    CHECK(ovstage_get_last_error().ptr == NULL); /* a successful call clears it */
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_OK);

    /* The first reference's entries start the lifetime and are what get_config reports. */
    e[0] = ovstage_config_entry_runtime_default_ordinal_admission_policy(
        OVSTAGE_ORDINAL_ADMISSION_FLOOR_ONLY);
    e[1] = ovstage_config_entry_runtime_default_hierarchy_computation_model(
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_CPU_INCREMENTAL);
    e[2] = ovstage_config_entry_binary_package_root_path(str("/opt/ovstage"));
    cfg.entries = e;
    cfg.entry_count = 3;
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_OK);
    s = new_stage("configured");
    CHECK_STATUS(ovstage_get_config(s.inst, &got), OVSTAGE_OK);
    CHECK(got.entry_count == 3);
    if (got.entry_count == 3) {
        CHECK(got.entries[0].key_type == OVSTAGE_CONFIG_KEY_TYPE_UINT64);
        CHECK(got.entries[0].key.uint64_key == OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY);
        CHECK(got.entries[0].value.uint_value == OVSTAGE_ORDINAL_ADMISSION_FLOOR_ONLY);
        CHECK(got.entries[1].value.uint_value == OVSTAGE_HIERARCHY_COMPUTATION_MODEL_CPU_INCREMENTAL);
        CHECK(got.entries[2].key_type == OVSTAGE_CONFIG_KEY_TYPE_STRING);
        CHECK(got.entries[2].value.string_value.length == strlen("/opt/ovstage"));
        CHECK(memcmp(got.entries[2].value.string_value.ptr, "/opt/ovstage", 12) == 0);
        CHECK(got.entries != e); /* owned by the instance, not the caller's array */
    }

    /* Later references: a conflicting concrete value fails as a unit and takes no reference. */
    e[0] = ovstage_config_entry_runtime_default_hierarchy_computation_model(
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_GLOBAL);
    cfg.entry_count = 1;
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("conflicts with active process state");
    e[0] = ovstage_config_entry_runtime_default_ordinal_admission_policy(
        OVSTAGE_ORDINAL_ADMISSION_DEFAULT);
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_OK); /* DEFAULT inherits */
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_OK);
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_OK);
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_ERROR_INVALID_ARGUMENT); /* the conflict took none */
    destroy_stage(&s);

    /* Malformed, duplicate, unknown and unsupported entries. */
    e[0] = ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL, 0);
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("config->entries[0]");
    e[0] = ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY, 4);
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("ordinal admission policy 4 is not a policy");
    e[0] = ovstage_config_entry_uint64((ovstage_config_uint64_t)7, 1);
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_ERROR_INVALID_ARGUMENT);
    memset(&e[0], 0, sizeof e[0]);
    e[0].key_type = (ovstage_config_key_type_t)42;
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_ERROR_INVALID_ARGUMENT);
    e[0] = ovstage_config_entry_runtime_default_ordinal_admission_policy(
        OVSTAGE_ORDINAL_ADMISSION_FLOOR_ONLY);
    e[1] = e[0];
    cfg.entry_count = 2;
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("repeats");
    e[1].key_type = OVSTAGE_CONFIG_KEY_TYPE_STRING;
    e[1].key.string_key = OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH;
    e[1].value.string_value.ptr = NULL;
    e[1].value.string_value.length = 5;
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("string_value");
    cfg.entries = NULL;
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_ERROR_INVALID_ARGUMENT); /* none of those took one */

    /* An instance without initialize starts a lifetime with no entries. */
    s = new_stage("unconfigured");
    CHECK_STATUS(ovstage_get_config(s.inst, &got), OVSTAGE_OK);
    CHECK(got.entry_count == 0);
    CHECK_STATUS(ovstage_get_config(NULL, &got), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_get_config(s.inst, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    destroy_stage(&s);
}

static void test_instances_and_bad_handles(void)
{
    ovstage_instance_t* out = (ovstage_instance_t*)&out;
    ovstage_instance_t forged;
    ovstage_op_wait_result_t w;
    stage_t s, t;
    uint64_t id = 7;

    CHECK_STATUS(ovstage_create_instance(NULL, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("out_instance");
    CHECK_STATUS(ovstage_create_instance(NULL, &out), OVSTAGE_OK); /* no desc: no name */
    CHECK(out != NULL);
    CHECK_STATUS(ovstage_destroy_instance(out), OVSTAGE_OK);
    CHECK_STATUS(ovstage_destroy_instance(NULL), OVSTAGE_OK);

    s = new_stage("a");
    t = new_stage("b");
    CHECK(s.inst != t.inst && s.inst->context != t.inst->context);
    CHECK(s.inst->vtable == t.inst->vtable);
    CHECK(ovstage_get_path_dictionary(s.inst) == s.pd); /* the same pointer on every call */

    /* A forged bundle (a copy the library did not hand out) and a forged context. */
    forged = *s.inst;
    CHECK_STATUS(ovstage_get_usd_stage_id(&forged, &id), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_LAST_ERROR("not a live instance");
    CHECK_STATUS(s.inst->vtable->wait_op((ovstage_context_t*)(uintptr_t)0xdead, 1, 0, &w),
                 OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_STATUS(s.inst->vtable->wait_op(NULL, 1, 0, &w), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(s.inst->vtable->get_path_dictionary((ovstage_context_t*)(uintptr_t)0xdead) == NULL);

    /* The temporary USD accessor. */
    CHECK_STATUS(ovstage_get_usd_stage_id(s.inst, &id), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(id == 0);
    CHECK_STATUS(ovstage_get_usd_stage_id(NULL, &id), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_get_usd_stage_id(s.inst, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);

    /* A destroyed instance is never dereferenced: its bundle is unknown. */
    {
        ovstage_instance_t* gone = t.inst;
        destroy_stage(&t);
        CHECK_STATUS(ovstage_destroy_instance(gone), OVSTAGE_ERROR_INVALID_HANDLE);
        CHECK_STATUS(ovstage_get_usd_stage_id(gone, &id), OVSTAGE_ERROR_INVALID_HANDLE);
    }
    destroy_stage(&s);
}

/* ---- path dictionary slots ----------------------------------------------------------- */

static void check_dict_error(path_dictionary_instance_t* pd, ovx_api_result_t r, const char* needle)
{
    CHECK(r.status == OVX_API_ERROR);
    CHECK(r.error.ptr != NULL && r.error.length > 0);
    if (r.error.ptr != NULL) {
        char text[512];
        snprintf(text, sizeof text, "%.*s", (int)r.error.length, r.error.ptr);
        if (strstr(text, needle) == NULL) {
            check_failed(__FILE__, __LINE__, "dictionary error text", text);
        }
        path_dictionary_release_error(pd, r.error);
    }
}

static void test_path_dictionary_slots(void)
{
    stage_t s = new_stage("dictionary");
    path_dictionary_instance_t* pd = s.pd;
    ovx_string_t strs[3] = {str("World"), str("Box"), str("World")};
    ovx_token_t toks[3] = {0, 0, 0};
    ovx_string_t back[3];
    ovx_primpath_t p1 = 0, p2 = 0, p3 = 0, root = 0;
    size_t counts[2];
    ovx_primpath_t paths[2];
    ovx_primpath_list_t list = 0, list2 = 0;
    size_t n = 0;
    ovx_primpath_t got[4];
    ovx_token_t buffer[8];
    ovx_token_t* per_path[3];
    size_t per_count[3];
    size_t processed = 0;
    ovx_string_t bad[2] = {str(""), {"a\0b", 3}};

    CHECK(path_dictionary_create_tokens_from_strings(pd, strs, 3, toks).status == OVX_API_SUCCESS);
    CHECK(toks[0] != 0 && toks[1] != 0 && toks[0] == toks[2] && toks[0] != toks[1]);
    check_dict_error(pd, path_dictionary_create_tokens_from_strings(pd, bad, 1, toks), "non-empty");
    check_dict_error(pd, path_dictionary_create_tokens_from_strings(pd, bad + 1, 1, toks), "NUL");
    check_dict_error(pd, path_dictionary_create_tokens_from_strings(pd, NULL, 2, toks), "NULL");

    CHECK(path_dictionary_get_strings_from_tokens(pd, toks, 2, back).status == OVX_API_SUCCESS);
    CHECK(back[0].length == 5 && memcmp(back[0].ptr, "World", 5) == 0 && back[0].ptr[5] == '\0');
    CHECK(back[1].length == 3 && memcmp(back[1].ptr, "Box", 3) == 0);
    {
        ovx_token_t unknown = 0x7fffffffffffull;
        check_dict_error(pd, path_dictionary_get_strings_from_tokens(pd, &unknown, 1, back), "not found");
    }

    /* Paths from tokens and from strings agree; zero tokens is the root. */
    counts[0] = 2;
    counts[1] = 0;
    CHECK(path_dictionary_create_paths_from_tokens(pd, toks, counts, 2, paths).status == OVX_API_SUCCESS);
    p1 = path(&s, "/World/Box");
    root = path(&s, "/");
    CHECK(paths[0] == p1 && paths[1] == root);
    p2 = path(&s, "/World");
    CHECK(p2 != p1);
    {
        /* The path grammar: absolute, single separators, no trailing one. */
        ovx_string_t rel = str("World"), trailing = str("/World/Box/"), doubled = str("//");
        check_dict_error(pd, path_dictionary_create_paths_from_strings(pd, &rel, 1, &p3), "absolute");
        check_dict_error(pd, path_dictionary_create_paths_from_strings(pd, &trailing, 1, &p3), "/World/Box/");
        check_dict_error(pd, path_dictionary_create_paths_from_strings(pd, &doubled, 1, &p3), "//");
    }

    /* Lists: create, count, slice, references. */
    paths[0] = p1;
    paths[1] = p2;
    CHECK(path_dictionary_create_path_list_from_paths(pd, paths, 2, &list).status == OVX_API_SUCCESS);
    CHECK(list != 0);
    CHECK(path_dictionary_get_num_paths_from_path_list(pd, list, &n).status == OVX_API_SUCCESS && n == 2);
    CHECK(path_dictionary_get_paths_from_path_list(pd, list, 1, 4, got, &n).status == OVX_API_SUCCESS);
    CHECK(n == 1 && got[0] == p2);
    CHECK(path_dictionary_create_path_list_from_paths(pd, NULL, 0, &list2).status == OVX_API_SUCCESS);
    CHECK(path_dictionary_get_num_paths_from_path_list(pd, list2, &n).status == OVX_API_SUCCESS && n == 0);
    release_list(&s, list2);
    CHECK(path_dictionary_add_path_list_reference(pd, list).status == OVX_API_SUCCESS);
    CHECK(path_dictionary_add_path_list_reference(pd, 0).status == OVX_API_SUCCESS);
    CHECK(path_dictionary_release_path_list_reference(pd, 0).status == OVX_API_SUCCESS);
    release_list(&s, list);
    CHECK(path_dictionary_get_num_paths_from_path_list(pd, list, &n).status == OVX_API_SUCCESS);
    release_list(&s, list); /* the last reference erases the list */
    check_dict_error(pd, path_dictionary_get_num_paths_from_path_list(pd, list, &n), "Path list handle was not found");
    check_dict_error(pd, path_dictionary_release_path_list_reference(pd, list), "not found");
    {
        const char* both[2] = {"/A", "/B"};
        list2 = list_of(&s, both, 2);
        CHECK(path_dictionary_get_paths_from_path_list(pd, list2, 0, 2, got, &n).status == OVX_API_SUCCESS);
        CHECK(n == 2 && got[0] == path(&s, "/A") && got[1] == path(&s, "/B"));
        release_list(&s, list2);
    }

    /* get_tokens_from_paths stops before the first path that does not fit. */
    paths[0] = p1;   /* 2 tokens */
    paths[1] = root; /* 0 tokens */
    {
        ovx_primpath_t three[3] = {p1, root, p1};
        CHECK(path_dictionary_get_tokens_from_paths(pd, three, 3, buffer, 3, per_path, per_count,
                                                    &processed).status == OVX_API_SUCCESS);
        CHECK(processed == 2);
        CHECK(per_count[0] == 2 && per_path[0] == buffer && buffer[0] == toks[0] && buffer[1] == toks[1]);
        CHECK(per_count[1] == 0);
        CHECK(path_dictionary_get_tokens_from_paths(pd, three, 3, buffer, 8, per_path, per_count,
                                                    &processed).status == OVX_API_SUCCESS);
        CHECK(processed == 3 && per_path[2] == buffer + 2);
        three[1] = 0x7fffffffffull;
        check_dict_error(pd, path_dictionary_get_tokens_from_paths(pd, three, 3, buffer, 8, per_path,
                                                                   per_count, &processed),
                         "not found");
    }

    /* A forged dictionary context is an error result, never a crash. */
    {
        path_dictionary_instance_t forged = *pd;
        forged.context = (path_dictionary_context_t*)(uintptr_t)0xdead;
        check_dict_error(pd, path_dictionary_create_tokens_from_strings(&forged, strs, 1, toks),
                         "not the context of a live instance");
    }
    destroy_stage(&s);
}

/* Each instance owns its dictionary: another instance refuses its lists, tokens and paths, the
 * refusals change nothing, and a token is never taken for a path. */
static void test_path_dictionary_per_instance(void)
{
    stage_t a = new_stage("dictionary a");
    stage_t b = new_stage("dictionary b");
    const char* const world[1] = {"/World"};
    ovx_primpath_list_t list_a = list_of(&a, world, 1);
    ovx_primpath_t path_a = path(&a, "/World");
    ovx_primpath_t path_b = path(&b, "/World");
    ovx_token_t tok_a = token(&a, "World");
    ovx_token_t tok_b = token(&b, "World");
    ovstage_query_handle_t q = 0;
    ovx_string_t back;
    ovx_primpath_t got = 0;
    ovx_primpath_list_t l = 0;
    size_t n = 0, counts[1] = {1};

    CHECK(a.pd != b.pd);
    CHECK(ovstage_get_path_dictionary(b.inst) == b.pd); /* the same pointer on every call */
    CHECK(ovstage_get_path_dictionary(NULL) == NULL);
    CHECK(tok_a != tok_b && path_a != path_b);

    /* B rejects A's list: query_from_path_list INVALID_HANDLE, the dictionary slots an error. */
    CHECK_STATUS(ovstage_query_from_path_list(b.inst, list_a, &q), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_LAST_ERROR("another stage's path dictionary");
    CHECK(q == 0);
    check_dict_error(b.pd, path_dictionary_get_num_paths_from_path_list(b.pd, list_a, &n),
                     "Path list handle was not found");
    check_dict_error(b.pd, path_dictionary_add_path_list_reference(b.pd, list_a), "another stage's");
    check_dict_error(b.pd, path_dictionary_release_path_list_reference(b.pd, list_a), "another stage's");

    /* B rejects A's tokens and paths. */
    check_dict_error(b.pd, path_dictionary_get_strings_from_tokens(b.pd, &tok_a, 1, &back),
                     "it is a token of another stage's path dictionary");
    check_dict_error(b.pd, path_dictionary_create_path_list_from_paths(b.pd, &path_a, 1, &l),
                     "it is a path of another stage's path dictionary");
    check_dict_error(b.pd, path_dictionary_create_paths_from_tokens(b.pd, &tok_a, counts, 1, &got),
                     "was not found");
    {
        ovx_token_t buffer[4];
        ovx_token_t* per_path[1];
        size_t per_count[1], processed = 0;
        check_dict_error(b.pd, path_dictionary_get_tokens_from_paths(b.pd, &path_a, 1, buffer, 4, per_path,
                                                                     per_count, &processed),
                         "another stage's");
    }

    /* A token is not a path, a path is not a list (in one dictionary). */
    check_dict_error(b.pd, path_dictionary_create_path_list_from_paths(b.pd, &tok_b, 1, &l),
                     "it is a token handle, not a path");
    check_dict_error(b.pd, path_dictionary_get_num_paths_from_path_list(b.pd, path_b, &n),
                     "it is a path handle, not a path list");

    /* Nothing changed: A's list still has one reference and resolves in A. */
    CHECK(path_dictionary_get_paths_from_path_list(a.pd, list_a, 0, 1, &got, &n).status == OVX_API_SUCCESS);
    CHECK(n == 1 && got == path_a);
    q = query_of(&a, list_a);
    release_list(&a, list_a);
    check_dict_error(a.pd, path_dictionary_get_num_paths_from_path_list(a.pd, list_a, &n),
                     "Path list handle was not found");

    /* A's tokens stay valid after B is destroyed, and A's texts too. */
    destroy_stage(&b);
    CHECK(path_dictionary_get_strings_from_tokens(a.pd, &tok_a, 1, &back).status == OVX_API_SUCCESS);
    CHECK(back.length == 5 && memcmp(back.ptr, "World", 5) == 0 && back.ptr[5] == '\0');
    destroy_stage(&a);
}

/* ---- writes and reads ---------------------------------------------------------------- */

static const char* const ABC[3] = {"/A", "/B", "/C"};

static void test_write_read_round_trip(void)
{
    stage_t s = new_stage("round trip");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t pos = token(&s, "pos");
    float xyz[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int64_t shape[1];
    DLTensor t = f32_tensor(xyz, shape, 3, 3);
    ovstage_write_data_t d = data_of(&t, 1);
    ovstage_read_handle_t r = 0;
    ovstage_read_group_t g;
    ovstage_enqueue_result_t e;

    d.semantic = OVSTAGE_SEMANTIC_POINT;
    WAIT_OK(&s, ovstage_write_attribute(s.inst, q, by_token(pos), 2, d, OVSTAGE_PRIM_MODE_UPSERT));
    seal(&s, 2);
    e = ovstage_read_attributes(s.inst, q, &pos, 1, latest(UINT64_MAX), &r);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK(r != 0);
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
    CHECK(sizeof g == 120);
    CHECK(g.read_group_id != 0 && g.attribute == pos && g.ordinal == 2);
    CHECK(!g.is_delete && !g.is_array && g.semantic == OVSTAGE_SEMANTIC_POINT);
    CHECK(g.prims.list != 0 && g.prims.count == 3 && g.prims.offset == 0 && g.prims.index_map == NULL);
    CHECK(g.data.tensor_count == 1 && g.data.index_map == NULL && g.data.mask == NULL);
    CHECK(g.data.cuda_sync.stream == 0 && g.data.cuda_sync.wait_event == 0);
    CHECK(g.meta.attribute_write_floor_ordinal == 2);
    if (g.data.tensor_count == 1) {
        const DLTensor* rt = &g.data.tensors[0];
        /* Typed layout: scalar lanes, the tuple as a component axis, explicit strides. */
        CHECK(rt->device.device_type == kDLCPU && rt->ndim == 2 && rt->shape[0] == 3 &&
              rt->shape[1] == 3);
        CHECK(rt->dtype.code == kDLFloat && rt->dtype.bits == 32 && rt->dtype.lanes == 1);
        CHECK(rt->strides != NULL && rt->strides[0] == 3 && rt->strides[1] == 1);
        CHECK(memcmp(rt->data, xyz, sizeof xyz) == 0);
        CHECK(rt->data != (void*)xyz); /* a copy owned by the stage */
    }
    {
        /* The group's prim list resolves through the dictionary to the query's prims. */
        ovx_primpath_t got[3];
        size_t n = 0;
        CHECK(path_dictionary_get_paths_from_path_list(s.pd, g.prims.list, 0, 3, got, &n).status ==
              OVX_API_SUCCESS);
        CHECK(n == 3 && got[0] == path(&s, "/A") && got[2] == path(&s, "/C"));
    }
    CHECK_STATUS(ovstage_release_group(s.inst, &g), OVSTAGE_OK);
    CHECK_STATUS(ovstage_release_group(s.inst, &g), OVSTAGE_ERROR_INVALID_HANDLE); /* released */
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, 0, &g), OVSTAGE_ERROR_END_OF_ITERATION);
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, 0, &g), OVSTAGE_ERROR_END_OF_ITERATION);
    WAIT_OK(&s, ovstage_release_read(s.inst, r));
    WAIT_OK(&s, e);
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, 0, &g), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_REJECTED(ovstage_release_read(s.inst, 0), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_release_read(s.inst, r), OVSTAGE_ERROR_INVALID_HANDLE);

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* A MATRIX column of 16 lanes reads as [R, 4, 4] with lanes 1; ovstage_tensor_to_write turns
 * the read tensor back into the lane layout ([R], lanes 16), which writes back unchanged. */
static void test_typed_matrix_read_and_tensor_to_write(void)
{
    stage_t s = new_stage("typed matrix");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t xf = token(&s, "xf");
    float m[48];
    int64_t shape[1], layout[2];
    DLTensor t, back;
    ovstage_write_data_t d;
    ovstage_read_handle_t r = 0;
    ovstage_read_group_t g;
    int i;

    for (i = 0; i < 48; ++i) m[i] = (float)i;
    t = f32_tensor(m, shape, 3, 16);
    d = data_of(&t, 1);
    d.semantic = OVSTAGE_SEMANTIC_MATRIX;
    WAIT_OK(&s, ovstage_write_attribute(s.inst, q, by_token(xf), 1, d, OVSTAGE_PRIM_MODE_UPSERT));
    seal(&s, 1);
    WAIT_OK(&s, ovstage_read_attributes(s.inst, q, &xf, 1, latest(1), &r));
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
    CHECK(g.data.tensor_count == 1);
    if (g.data.tensor_count == 1) {
        const DLTensor* rt = &g.data.tensors[0];
        CHECK(rt->ndim == 3 && rt->shape[0] == 3 && rt->shape[1] == 4 && rt->shape[2] == 4);
        CHECK(rt->dtype.lanes == 1 && rt->strides != NULL);
        CHECK(rt->strides[0] == 16 && rt->strides[1] == 4 && rt->strides[2] == 1);
        CHECK_STATUS(ovstage_tensor_to_write(rt, &back, layout), OVSTAGE_OK);
        CHECK(back.ndim == 1 && back.dtype.lanes == 16 && back.shape[0] == 3 && back.strides[0] == 1);
        d = data_of(&back, 1);
        d.semantic = OVSTAGE_SEMANTIC_MATRIX;
        /* Copy-on-write: the group's storage stays readable while a write replaces it. */
        WAIT_OK(&s, ovstage_write_attribute(s.inst, q, by_token(xf), 2, d, OVSTAGE_PRIM_MODE_UPSERT));
    }
    CHECK_STATUS(ovstage_release_group(s.inst, &g), OVSTAGE_OK);
    WAIT_OK(&s, ovstage_release_read(s.inst, r));
    seal(&s, 2);
    WAIT_OK(&s, ovstage_read_attributes(s.inst, q, &xf, 1, latest(2), &r));
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
    CHECK(g.ordinal == 2 && g.data.tensor_count == 1);
    if (g.data.tensor_count == 1) {
        CHECK(g.data.tensors[0].ndim == 3 && memcmp(g.data.tensors[0].data, m, sizeof m) == 0);
    }
    CHECK_STATUS(ovstage_release_group(s.inst, &g), OVSTAGE_OK);
    WAIT_OK(&s, ovstage_release_read(s.inst, r));
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

static void test_write_attributes_batch(void)
{
    stage_t s = new_stage("batch");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    float a[3] = {1, 2, 3}, b[3] = {10, 20, 30}, got[3];
    int64_t sa[1], sb[1];
    DLTensor ta = f32_tensor(a, sa, 3, 1), tb = f32_tensor(b, sb, 3, 1);
    ovstage_attribute_write_t w[2];

    memset(w, 0, sizeof w);
    w[0].attribute = named("a");
    w[0].data = data_of(&ta, 1);
    w[1].attribute = by_token(token(&s, "b"));
    w[1].data = data_of(&tb, 1);
    WAIT_OK(&s, ovstage_write_attributes(s.inst, q, w, 2, 1, OVSTAGE_PRIM_MODE_UPSERT));
    seal(&s, 1);
    CHECK(read_f32(&s, q, token(&s, "a"), got, 3) == 1);
    CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3);
    CHECK(read_f32(&s, q, token(&s, "b"), got, 3) == 1);
    CHECK(got[0] == 10 && got[2] == 30);

    /* A bad entry rejects the whole batch before anything is queued. */
    w[1].data.tensor_count = 0;
    CHECK_REJECTED(ovstage_write_attributes(s.inst, q, w, 2, 5, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("writes[1].data.tensor_count is 0");
    CHECK_REJECTED(ovstage_write_attributes(s.inst, q, NULL, 2, 5, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("writes is NULL");
    w[1] = w[0];
    CHECK_REJECTED(ovstage_write_attributes(s.inst, q, w, 2, 5, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT); /* the same attribute twice */
    seal(&s, 5);
    CHECK(read_f32(&s, q, token(&s, "a"), got, 3) == 1);
    CHECK(got[0] == 1); /* nothing of the rejected batches applied */

    /* An empty batch is accepted; one attribute in two entries over disjoint prims is too. */
    WAIT_OK(&s, ovstage_write_attributes(s.inst, q, w, 0, 6, OVSTAGE_PRIM_MODE_UPSERT));
    {
        uint64_t first = 0x1, rest = 0x6; /* prim 0; prims 1 and 2 */
        w[0].data = data_of(&ta, 1);
        w[0].data.mask = &first;
        w[0].data.count = 3;
        w[1].attribute = named("a");
        w[1].data = data_of(&tb, 1);
        w[1].data.mask = &rest;
        w[1].data.count = 3;
        WAIT_OK(&s, ovstage_write_attributes(s.inst, q, w, 2, 6, OVSTAGE_PRIM_MODE_UPSERT));
        rest = 0x3; /* prim 0 again: one cell twice */
        CHECK_REJECTED(ovstage_write_attributes(s.inst, q, w, 2, 7, OVSTAGE_PRIM_MODE_UPSERT),
                       OVSTAGE_ERROR_INVALID_ARGUMENT);
        CHECK_LAST_ERROR("repeated concrete write target for prim '/A' and canonical attribute 'a'");
    }
    seal(&s, 7);
    CHECK(read_f32(&s, q, token(&s, "a"), got, 3) == 1);
    CHECK(got[0] == 1 && got[1] == 20 && got[2] == 30);

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

static void test_sparse_writes(void)
{
    stage_t s = new_stage("sparse");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t x = token(&s, "x");
    float base[3] = {1, 2, 3}, two[2] = {50, 60}, three[3] = {7, 8, 9}, got[3];
    uint32_t index_map[3] = {1, 1, 0};
    uint64_t mask = 0x5; /* prims 0 and 2 */
    int64_t shape[1];
    DLTensor t;
    ovstage_write_data_t d;

    WAIT_OK(&s, write_f32(&s, q, "x", 1, base, 3));
    /* index_map gathers source rows: prim k takes row index_map[k]. */
    t = f32_tensor(two, shape, 2, 1);
    d = data_of(&t, 1);
    d.count = 3;
    d.index_map = index_map;
    WAIT_OK(&s, ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT));
    seal(&s, 2);
    CHECK(read_f32(&s, q, x, got, 3) == 1);
    CHECK(got[0] == 60 && got[1] == 60 && got[2] == 50);

    /* A mask of ceil(count/64) words selects rows; the others keep their values. */
    t = f32_tensor(three, shape, 3, 1);
    d = data_of(&t, 1);
    d.count = 3;
    d.mask = &mask;
    WAIT_OK(&s, ovstage_write_attribute(s.inst, q, by_token(x), 3, d, OVSTAGE_PRIM_MODE_UPSERT));
    seal(&s, 3);
    CHECK(read_f32(&s, q, x, got, 3) == 1);
    CHECK(got[0] == 7 && got[1] == 60 && got[2] == 9);

    /* index_map and mask together, or either without count, are refused. */
    d.index_map = index_map;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 4, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("mutually exclusive");
    d.index_map = NULL;
    d.count = 0;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 4, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("count must be non-zero");
    index_map[0] = 9;
    t = f32_tensor(two, shape, 2, 1);
    d = data_of(&t, 1);
    d.count = 3;
    d.index_map = index_map;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 4, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("index_map[0] = 9");

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- managed tensors: ownership moves at call entry; each deleter runs exactly once ---- */

typedef struct {
    DLManagedTensorVersioned m;
    float values[3];
    int64_t shape[1];
    int deleted;
} managed_t;

static pthread_mutex_t deleted_mu = PTHREAD_MUTEX_INITIALIZER;

static void managed_deleter(DLManagedTensorVersioned* self)
{
    managed_t* t = (managed_t*)self->manager_ctx;
    pthread_mutex_lock(&deleted_mu);
    t->deleted++;
    pthread_mutex_unlock(&deleted_mu);
}

static void managed_init(managed_t* t, float v0)
{
    memset(t, 0, sizeof *t);
    t->values[0] = v0;
    t->values[1] = v0 + 1;
    t->values[2] = v0 + 2;
    t->m.version.major = DLPACK_MAJOR_VERSION;
    t->m.version.minor = DLPACK_MINOR_VERSION;
    t->m.manager_ctx = t;
    t->m.deleter = managed_deleter;
    t->m.dl_tensor = f32_tensor(t->values, t->shape, 3, 1);
}

static int deleted_count(managed_t* t)
{
    int n;
    pthread_mutex_lock(&deleted_mu);
    n = t->deleted;
    pthread_mutex_unlock(&deleted_mu);
    return n;
}

static void test_managed_tensors(void)
{
    stage_t s = new_stage("managed");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    managed_t a, b, bad;
    const DLManagedTensorVersioned* ptrs[2];
    ovstage_write_data_t d;
    ovstage_attribute_write_t w[2];
    float got[3];
    int i;

    managed_init(&a, 1);
    ptrs[0] = &a.m;
    memset(&d, 0, sizeof d);
    d.managed_tensors = ptrs;
    d.tensor_count = 1;
    WAIT_OK(&s, ovstage_write_attribute(s.inst, q, named("m"), 1, d, OVSTAGE_PRIM_MODE_UPSERT));
    for (i = 0; i < 500 && deleted_count(&a) == 0; ++i) {
        usleep(2000); /* released on an implementation thread once the op completed */
    }
    CHECK(deleted_count(&a) == 1);
    seal(&s, 1);
    CHECK(read_f32(&s, q, token(&s, "m"), got, 3) == 1);
    CHECK(got[0] == 1 && got[2] == 3);

    /* Rejected at enqueue: the deleter still runs, once, before the call returns. */
    managed_init(&bad, 5);
    bad.m.dl_tensor.data = NULL; /* NULL data with a non-zero size */
    ptrs[0] = &bad.m;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, named("m"), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("data.managed_tensors[0]->dl_tensor: data pointer is NULL");
    CHECK(deleted_count(&bad) == 1);

    /* The same pointer twice in a batch: refused, and released once. */
    managed_init(&b, 9);
    ptrs[0] = &b.m;
    memset(w, 0, sizeof w);
    w[0].attribute = named("m1");
    w[0].data = d;
    w[1].attribute = named("m2");
    w[1].data = d;
    CHECK_REJECTED(ovstage_write_attributes(s.inst, q, w, 2, 3, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("same managed tensor");
    CHECK(deleted_count(&b) == 1);

    /* Both tensor kinds set, and a NULL managed pointer. */
    managed_init(&b, 9);
    ptrs[0] = &b.m;
    d.tensors = &a.m.dl_tensor;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, named("m"), 4, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("both set");
    CHECK(deleted_count(&b) == 1);
    d.tensors = NULL;
    ptrs[0] = NULL;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, named("m"), 4, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("data.managed_tensors[0] is NULL");

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- bad input: a status and a message naming the argument; nothing applied ---------- */

static void test_bad_write_input(void)
{
    stage_t s = new_stage("bad input");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t x = token(&s, "x");
    float v[3] = {1, 2, 3}, w3[3] = {4, 5, 6}, got[3];
    int64_t shape[1];
    int64_t huge[40];
    DLTensor t = f32_tensor(v, shape, 3, 1), two[2];
    ovstage_write_data_t d;
    int i;

    WAIT_OK(&s, write_f32(&s, q, "x", 1, v, 3));
    seal(&s, 1);

    /* NULL tensors with a count, a count with no tensors, tensors with count 0. */
    d = data_of(NULL, 1);
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("data.tensors and data.managed_tensors are both NULL");
    d = data_of(&t, 0);
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("data.tensor_count is 0 but data.tensors is set");
    /* A fixed write takes exactly one tensor. */
    two[0] = t;
    two[1] = f32_tensor(w3, shape, 3, 1);
    d = data_of(two, 2);
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("exactly 1 tensor");
    d = data_of(&t, 1u << 30);
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("tensor_count");

    /* A DLTensor with NULL data and a non-zero size. */
    t.data = NULL;
    d = data_of(&t, 1);
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("data.tensors[0]: data pointer is NULL");
    t.data = w3;

    /* Absurd shapes: too many dims, a negative extent, a size beyond any memory, no shape. */
    for (i = 0; i < 40; ++i) {
        huge[i] = 1;
    }
    t.shape = huge;
    t.ndim = 40;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("ndim 40");
    t.ndim = 2;
    huge[0] = 3;
    huge[1] = -1;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("negative");
    huge[0] = INT64_C(1) << 40;
    huge[1] = INT64_C(1) << 40;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("too large");
    t.shape = NULL;
    t.ndim = 1;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("shape pointer is NULL");
    t = f32_tensor(w3, shape, 2, 1); /* 2 rows for 3 prims */
    d = data_of(&t, 1);
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("do not match the 3 prims");
    t = f32_tensor(w3, shape, 3, 1);
    d = data_of(&t, 1);

    /* Attribute: token 0 without a string, an unknown token, a NULL string with a length. */
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(0), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("attribute is empty");
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(0x7fffffffffull), 2, d,
                                           OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("not a token");
    {
        ovx_string_or_token_t bad = {0, {NULL, 4}};
        CHECK_REJECTED(ovstage_write_attribute(s.inst, q, bad, 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                       OVSTAGE_ERROR_INVALID_ARGUMENT);
        CHECK_LAST_ERROR("attribute.string: ptr is NULL with length 4");
    }

    /* Modes: out-of-range enums; a derived built-in. */
    d.attribute_mode = (ovstage_attribute_mode_t)5;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("attribute_mode: 5 is not an attribute mode (REJECT=0, FORCE=1)");
    d.attribute_mode = OVSTAGE_ATTRIBUTE_MODE_REJECT;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, (ovstage_prim_mode_t)9),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("prim_mode 9");
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, named("usd-path"), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_NOT_SUPPORTED);
    /* A different type for an existing column (REJECT). */
    {
        double dv[3] = {1, 2, 3};
        DLTensor dt = t;
        dt.data = dv;
        dt.dtype.bits = 64;
        CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, data_of(&dt, 1),
                                               OVSTAGE_PRIM_MODE_UPSERT),
                       OVSTAGE_ERROR_INVALID_ARGUMENT);
        CHECK_LAST_ERROR("delete the attribute first");
    }

    /* Handles: query 0, a forged query handle, a released one; a forged context. */
    CHECK_REJECTED(ovstage_write_attribute(s.inst, 0, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("handle is 0");
    CHECK_REJECTED(ovstage_write_attribute(s.inst, 0xabcdef, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_REJECTED(s.inst->vtable->write_attribute((ovstage_context_t*)(uintptr_t)0xdead, q,
                                                   by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_HANDLE);
    /* INSERT of prims that exist. */
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_INSERT),
                   OVSTAGE_ERROR_PRIM_NOT_FOUND);

    /* Nothing of the above was applied. */
    seal(&s, 2);
    got[0] = got[1] = got[2] = -1;
    CHECK(read_f32(&s, q, x, got, 3) == 1);
    CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3);

    /* A write at or below the floor is rejected at enqueue. */
    CHECK_REJECTED(write_f32(&s, q, "x", 2, w3, 3), OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION);
    CHECK_LAST_ERROR("write floor");

    release_query(&s, q);
    CHECK_REJECTED(write_f32(&s, q, "x", 9, w3, 3), OVSTAGE_ERROR_INVALID_HANDLE);
    release_list(&s, list);
    destroy_stage(&s);
}

static void test_bad_slot_arguments(void)
{
    stage_t s = new_stage("bad slot arguments");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list), q2 = 5;
    ovstage_read_handle_t r = 5;
    ovstage_map_handle_t m = 5;
    ovstage_ordinal_query_handle_t oh = 5;
    ovstage_ordinal_t ord = 5;
    ovstage_query_result_t qr;
    ovstage_op_wait_result_t w;
    ovx_token_t zero = 0;
    ovstage_write_floor_desc_t fd = {1, (ovstage_scope_t)9, NULL, 0};
    ovstage_map_desc_t md;
    ovstage_filter_t filter;
    ovstage_predicate_t pred;
    ovx_string_or_token_t empty = by_token(0);

    CHECK_REJECTED(ovstage_read_attributes(s.inst, q, &zero, 1, latest(UINT64_MAX), &r),
                   OVSTAGE_ERROR_INVALID_ARGUMENT); /* token 0 */
    CHECK(r == 0);
    CHECK_REJECTED(ovstage_read_attributes(s.inst, q, NULL, 2, latest(UINT64_MAX), &r),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("attrs is NULL");
    CHECK_REJECTED(ovstage_read_attributes(s.inst, q, &zero, 0, between(5, 4), &r),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_read_attributes(s.inst, q, &zero, 0, latest(1), NULL),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("out_read_handle is NULL");
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, 12345, 0, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_release_group(s.inst, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);

    CHECK_REJECTED(ovstage_advance_write_floor(s.inst, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("desc is NULL");
    CHECK_REJECTED(ovstage_advance_write_floor(s.inst, &fd), OVSTAGE_ERROR_INVALID_ARGUMENT);
    fd.scope = OVSTAGE_SCOPE_INCLUDE;
    fd.attribute_count = 3;
    CHECK_REJECTED(ovstage_advance_write_floor(s.inst, &fd), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("desc->attributes is NULL");
    CHECK_REJECTED(ovstage_get_oldest_preserved_ordinal(s.inst, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_get_attribute_write_floor(s.inst, empty, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_fetch_ordinal(s.inst, 0, 0, &ord), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(ord == 0);
    CHECK_STATUS(ovstage_fetch_ordinal(s.inst, 99999, 0, &ord), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_STATUS(ovstage_fetch_ordinal(s.inst, 99999, 0, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_release_ordinal_query(s.inst, 0), OVSTAGE_ERROR_INVALID_ARGUMENT);
    (void)oh;

    CHECK_REJECTED(ovstage_query(s.inst, NULL, NULL, 0, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    memset(&pred, 0, sizeof pred);
    pred.op = OVSTAGE_FILTER_OP_HAS;
    filter.predicates = &pred;
    filter.count = 1;
    CHECK_REJECTED(ovstage_query(s.inst, &filter, NULL, 0, &q2), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("filter->predicates[0].attribute is empty");
    CHECK(q2 == 0);
    filter.predicates = NULL;
    CHECK_REJECTED(ovstage_query(s.inst, &filter, NULL, 0, &q2), OVSTAGE_ERROR_INVALID_ARGUMENT);
    pred.attribute = named("x");
    pred.op = (ovstage_filter_op_t)77;
    filter.predicates = &pred;
    CHECK_REJECTED(ovstage_query(s.inst, &filter, NULL, 0, &q2), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_query_from_path_list(s.inst, 0, &q2), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_query_from_path_list(s.inst, 0x7fffffff, &q2), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_STATUS(ovstage_query_from_path_list(s.inst, list, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_fetch_query_result(s.inst, q, 0, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_fetch_query_result(s.inst, 0xabcdef, 0, &qr), OVSTAGE_ERROR_INVALID_HANDLE);
    /* The null query handle is a bad argument, a stale one a bad handle. */
    CHECK_STATUS(ovstage_fetch_query_result(s.inst, 0, 0, &qr), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("never a valid handle");
    {
        float one[3] = {1, 2, 3};
        CHECK_STATUS(write_f32(&s, 0, "x", 1, one, 3).status, OVSTAGE_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(write_f32(&s, 0xabcdef, "x", 1, one, 3).status, OVSTAGE_ERROR_INVALID_HANDLE);
    }
    CHECK_STATUS(ovstage_release_query_result(s.inst, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_release_query(s.inst, 0), OVSTAGE_ERROR_INVALID_ARGUMENT);

    memset(&md, 0, sizeof md);
    CHECK_REJECTED(ovstage_map_attribute(s.inst, q, NULL, 1, NULL, 0, &m), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(m == 0);
    CHECK_REJECTED(ovstage_map_attribute(s.inst, q, &md, 1, NULL, 0, &m), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("desc->attribute is empty");
    md.attribute = named("x");
    md.attribute_mode = OVSTAGE_ATTRIBUTE_MODE_FORCE;
    CHECK_REJECTED(ovstage_map_attribute(s.inst, q, &md, 1, NULL, 0, &m), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("map_attribute: attribute_mode FORCE requires dtype");
    md.attribute_mode = OVSTAGE_ATTRIBUTE_MODE_REJECT;
    CHECK_REJECTED(ovstage_map_attribute(s.inst, q, &md, 1, NULL, 3, &m), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("element_sizes is NULL");
    CHECK_REJECTED(ovstage_map_attribute(s.inst, q, &md, 1, NULL, 0, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_unmap_attribute(s.inst, 0, (ovstage_cuda_sync_t){0, 0}),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_unmap_attribute(s.inst, 777, (ovstage_cuda_sync_t){0, 0}),
                   OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_REJECTED(ovstage_unmap_group(s.inst, 777, NULL, (ovstage_cuda_sync_t){0, 0}),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_fetch_map_next(s.inst, 777, 0, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);

    CHECK_REJECTED(ovstage_delete_attributes(s.inst, q, NULL, 2, 1), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_delete_attributes(s.inst, q, &empty, 1, 1), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("attributes[0] is empty");
    CHECK_REJECTED(ovstage_delete_attributes(s.inst, 0, &empty, 1, 1), OVSTAGE_ERROR_INVALID_ARGUMENT);

    CHECK_STATUS(ovstage_wait_op(s.inst, 1, 0, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("out_wait_result is NULL");
    (void)w;

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- op tracking: wait_op, release_op, get_last_op_error ------------------------------ */

static void test_wait_timeouts_and_release(void)
{
    stage_t s = new_stage("waits");
    const test_hooks_t* h = hooks(&s);
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    float v[3] = {1, 2, 3};
    ovstage_op_wait_result_t w;
    ovstage_enqueue_result_t e;
    uint64_t t0;
    if (h == NULL) {
        return;
    }

    h->write_gate_reset();
    h->write_gate_enable();
    e = write_f32(&s, q, "x", 1, v, 3);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    h->write_gate_wait_until_entered();
    CHECK(h->write_gate_entered_count() == 1);

    /* Timeout 0 polls: TIMEOUT with the lowest pending op of the chain. */
    memset(&w, 0xff, sizeof w);
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, 0, &w), OVSTAGE_ERROR_TIMEOUT);
    CHECK(w.lowest_pending_op_id == e.op_index);
    CHECK(w.error_op_id_count == 0);
    /* A finite timeout waits about that long. */
    t0 = now_ns();
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, 20000000, &w), OVSTAGE_ERROR_TIMEOUT);
    CHECK(now_ns() - t0 >= 15000000);
    /* Releasing a pending op is refused and the op stays tracked. */
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_ERROR_OP_FAILED);
    CHECK_LAST_ERROR("still pending");
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, 0, &w), OVSTAGE_ERROR_TIMEOUT);

    h->write_gate_release();
    /* An infinite timeout blocks until the op completes. */
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_OK);
    CHECK(w.error_op_id_count == 0 && w.error_op_ids == NULL);
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, 0, &w), OVSTAGE_OK); /* repeatable */
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_STATUS(ovstage_release_op(s.inst, 0), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_release_op(s.inst, 987654), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, 0, &w), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_wait_op(s.inst, 0, 0, &w), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_wait_op(s.inst, 987654, 0, &w), OVSTAGE_ERROR_INVALID_ARGUMENT);
    h->write_gate_reset();

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

static void test_failed_op_errors(void)
{
    stage_t s = new_stage("failures");
    const test_hooks_t* h = hooks(&s);
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    float v[3] = {1, 2, 3};
    ovstage_op_wait_result_t w;
    ovstage_enqueue_result_t bad, good;
    ovx_string_t text;
    if (h == NULL) {
        return;
    }

    h->write_gate_reset();
    h->write_gate_fail_next();
    bad = write_f32(&s, q, "x", 1, v, 3);
    good = write_f32(&s, q, "x", 1, v, 3); /* the same ordinal, after the failed one */
    CHECK_STATUS(bad.status, OVSTAGE_OK);
    CHECK_STATUS(ovstage_wait_op(s.inst, bad.op_index, OVSTAGE_TIMEOUT_INFINITE, &w),
                 OVSTAGE_ERROR_OP_FAILED);
    CHECK(w.error_op_id_count == 1 && w.error_op_ids != NULL && w.error_op_ids[0] == bad.op_index);
    text = ovstage_get_last_op_error(s.inst, bad.op_index);
    CHECK(text.ptr != NULL && text.length > 0 && strstr(text.ptr, "fail_next") != NULL);
    CHECK(text.ptr[text.length] == '\0');
    CHECK(ovstage_get_last_op_error(s.inst, good.op_index).ptr == NULL);
    /* Other calls leave the texts alone; the next wait_op ends them. */
    CHECK(ovstage_get_path_dictionary(s.inst) != NULL);
    CHECK(ovstage_get_last_op_error(s.inst, bad.op_index).ptr == text.ptr);
    CHECK_STATUS(ovstage_wait_op(s.inst, bad.op_index, 0, &w), OVSTAGE_ERROR_OP_FAILED); /* same answer */
    CHECK(w.error_op_id_count == 1 && w.error_op_ids[0] == bad.op_index);
    /* op2 at the same ordinal succeeded: op1's failure is not reported through it. */
    CHECK_STATUS(ovstage_wait_op(s.inst, good.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_OK);
    CHECK(w.error_op_id_count == 0);
    CHECK(ovstage_get_last_op_error(s.inst, bad.op_index).ptr == NULL);
    /* release_op ends the text too. */
    CHECK_STATUS(ovstage_wait_op(s.inst, bad.op_index, 0, &w), OVSTAGE_ERROR_OP_FAILED);
    CHECK(ovstage_get_last_op_error(s.inst, bad.op_index).ptr != NULL);
    CHECK_STATUS(ovstage_release_op(s.inst, bad.op_index), OVSTAGE_OK);
    CHECK(ovstage_get_last_op_error(s.inst, bad.op_index).ptr == NULL);
    CHECK_STATUS(ovstage_release_op(s.inst, good.op_index), OVSTAGE_OK);
    /* Another instance's context never sees this thread's texts. */
    CHECK(s.inst->vtable->get_last_op_error(NULL, 1).ptr == NULL);
    h->write_gate_reset();

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

static void test_last_error_is_thread_local(void)
{
    stage_t s = new_stage("last error");
    CHECK_STATUS(ovstage_query_from_path_list(s.inst, 0, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(ovstage_get_last_error().length > 0);
    CHECK(ovstage_get_last_error().ptr[ovstage_get_last_error().length] == '\0');
    /* The next call on the thread overwrites it (success clears it). */
    CHECK(ovstage_get_path_dictionary(s.inst) != NULL);
    CHECK(ovstage_get_last_error().ptr == NULL && ovstage_get_last_error().length == 0);
    /* A failure after a failed create (no instance) is still reported. */
    CHECK_STATUS(ovstage_create_instance(NULL, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("ovstage_create_instance");
    destroy_stage(&s);
}

static void test_go_panic_becomes_internal(void)
{
    stage_t s = new_stage("panic");
    const test_hooks_t* h = hooks(&s);
    if (h == NULL) {
        return;
    }
    CHECK(h->go_panic_probe() == OVSTAGE_ERROR_INTERNAL);
    CHECK_LAST_ERROR("panic");
    CHECK(h->go_panic_probe() == OVSTAGE_ERROR_INTERNAL); /* the library still works */
    destroy_stage(&s);
}

/* ---- fetches: timeouts, END_OF_ITERATION ------------------------------------------------ */

static void test_fetch_timeouts(void)
{
    stage_t s = new_stage("fetch timeouts");
    const test_hooks_t* h = hooks(&s);
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list), fq = 0;
    ovx_token_t x = token(&s, "x");
    float v[3] = {1, 2, 3};
    ovstage_read_handle_t r = 0;
    ovstage_read_group_t g;
    ovstage_query_result_t qr;
    ovstage_enqueue_result_t e, qe;
    ovstage_op_wait_result_t w;
    ovstage_predicate_t pred;
    ovstage_filter_t filter;
    uint64_t t0;
    if (h == NULL) {
        return;
    }
    WAIT_OK(&s, write_f32(&s, q, "x", 1, v, 3));
    seal(&s, 1);

    h->query_gate_reset();
    h->query_gate_enable();
    e = ovstage_read_attributes(s.inst, q, &x, 1, latest(UINT64_MAX), &r);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    memset(&pred, 0, sizeof pred);
    pred.attribute = by_token(x);
    pred.op = OVSTAGE_FILTER_OP_HAS;
    filter.predicates = &pred;
    filter.count = 1;
    qe = ovstage_query(s.inst, &filter, NULL, 0, &fq);
    CHECK_STATUS(qe.status, OVSTAGE_OK);
    h->query_gate_wait_until_entered();

    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, 0, &g), OVSTAGE_ERROR_TIMEOUT);
    CHECK(g.read_group_id == 0 && g.data.tensors == NULL); /* cleared on failure */
    t0 = now_ns();
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, 20000000, &g), OVSTAGE_ERROR_TIMEOUT);
    CHECK(now_ns() - t0 >= 15000000);
    CHECK_STATUS(ovstage_fetch_query_result(s.inst, fq, 0, &qr), OVSTAGE_ERROR_TIMEOUT);
    CHECK_STATUS(ovstage_wait_op(s.inst, qe.op_index, 0, &w), OVSTAGE_ERROR_TIMEOUT);

    h->query_gate_release();
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
    CHECK(g.prims.count == 3);
    CHECK_STATUS(ovstage_release_group(s.inst, &g), OVSTAGE_OK);
    CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, OVSTAGE_TIMEOUT_INFINITE, &g),
                 OVSTAGE_ERROR_END_OF_ITERATION);
    CHECK_STATUS(ovstage_fetch_query_result(s.inst, fq, OVSTAGE_TIMEOUT_INFINITE, &qr), OVSTAGE_OK);
    CHECK(qr.total_prim_count == 3 && qr.all_handle == fq);
    CHECK_STATUS(ovstage_release_query_result(s.inst, &qr), OVSTAGE_OK);
    WAIT_OK(&s, qe);
    WAIT_OK(&s, e);
    WAIT_OK(&s, ovstage_release_read(s.inst, r));
    release_query(&s, fq);

    /* A failed producer: the fetch reports OP_FAILED (or its own status). */
    h->query_gate_fail_next();
    e = ovstage_read_attributes(s.inst, q, &x, 1, latest(UINT64_MAX), &r);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK(ovstage_fetch_read_next(s.inst, r, OVSTAGE_TIMEOUT_INFINITE, &g) != OVSTAGE_OK);
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_ERROR_OP_FAILED);
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
    WAIT_OK(&s, ovstage_release_read(s.inst, r));
    h->query_gate_reset();

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- queries ------------------------------------------------------------------------- */

static void test_filter_queries(void)
{
    stage_t s = new_stage("queries");
    const char* const four[4] = {"/World/A", "/World/B", "/Other/C", "/World"};
    ovx_primpath_list_t list = list_of(&s, four, 4);
    ovstage_query_handle_t all = query_of(&s, list), fq = 0;
    ovx_token_t x = token(&s, "x"), y = token(&s, "y");
    float v[4] = {1, 2, 3, 4};
    ovstage_predicate_t pred[2];
    ovstage_filter_t filter;
    ovx_string_t prefix = str("/World/");
    ovstage_query_result_t qr;
    ovstage_enqueue_result_t e;
    float got[4] = {0, 0, 0, 0};

    WAIT_OK(&s, write_f32(&s, all, "x", 1, v, 4));
    WAIT_OK(&s, write_f32(&s, all, "y", 1, v, 4));
    seal(&s, 1);

    memset(pred, 0, sizeof pred);
    pred[0].attribute = named("usd-path");
    pred[0].op = OVSTAGE_FILTER_OP_PREFIX;
    pred[0].values = &prefix;
    pred[0].value_count = 1;
    pred[1].attribute = by_token(x);
    pred[1].op = OVSTAGE_FILTER_OP_HAS;
    filter.predicates = pred;
    filter.count = 2;
    e = ovstage_query(s.inst, &filter, &x, 1, &fq);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK(fq != 0);
    /* The handle is usable at once, before its op ran. */
    CHECK(read_f32(&s, fq, x, got, 4) == 1);
    CHECK(got[0] == 1 && got[1] == 2);
    CHECK_STATUS(ovstage_fetch_query_result(s.inst, fq, OVSTAGE_TIMEOUT_INFINITE, &qr), OVSTAGE_OK);
    CHECK(qr.query_result_id != 0 && qr.all_handle == fq && qr.total_prim_count == 2);
    CHECK(qr.attribute_count == 1 && qr.attributes[0] == x); /* discovery scoped to attrs */
    CHECK_STATUS(ovstage_release_query_result(s.inst, &qr), OVSTAGE_OK);
    CHECK_STATUS(ovstage_release_query_result(s.inst, &qr), OVSTAGE_ERROR_INVALID_HANDLE);
    WAIT_OK(&s, e);

    /* A path-list query discovers every attribute of its prims. */
    CHECK_STATUS(ovstage_fetch_query_result(s.inst, all, 0, &qr), OVSTAGE_OK);
    CHECK(qr.total_prim_count == 4 && qr.attribute_count == 2);
    CHECK((qr.attributes[0] == x && qr.attributes[1] == y) || (qr.attributes[0] == y && qr.attributes[1] == x));
    CHECK_STATUS(ovstage_release_query_result(s.inst, &qr), OVSTAGE_OK);

    /* Unsupported predicates are NOT_SUPPORTED at enqueue. */
    pred[0].attribute = named("usd-active");
    CHECK_REJECTED(ovstage_query(s.inst, &filter, NULL, 0, &fq), OVSTAGE_ERROR_NOT_SUPPORTED);
    pred[0].attribute = by_token(y);
    pred[0].op = OVSTAGE_FILTER_OP_CONTAINS;
    CHECK_REJECTED(ovstage_query(s.inst, &filter, NULL, 0, &fq), OVSTAGE_ERROR_NOT_SUPPORTED);
    /* A NULL filter selects every prim. */
    e = ovstage_query(s.inst, NULL, NULL, 0, &fq);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK_STATUS(ovstage_fetch_query_result(s.inst, fq, OVSTAGE_TIMEOUT_INFINITE, &qr), OVSTAGE_OK);
    CHECK(qr.total_prim_count == 4);
    CHECK_STATUS(ovstage_release_query_result(s.inst, &qr), OVSTAGE_OK);
    WAIT_OK(&s, e);
    release_query(&s, fq);

    release_query(&s, all);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- floors and ordinal queries -------------------------------------------------------- */

/* Fetches the value of the ordinal query h that e reserved, then releases both. */
static ovstage_ordinal_t fetch_and_release_ordinal(stage_t* s, ovstage_enqueue_result_t e,
                                                   const ovstage_ordinal_query_handle_t* hp)
{
    ovstage_ordinal_t v = 0;
    ovstage_ordinal_query_handle_t h = *hp;
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK(h != 0);
    CHECK_STATUS(ovstage_fetch_ordinal(s->inst, h, OVSTAGE_TIMEOUT_INFINITE, &v), OVSTAGE_OK);
    WAIT_OK(s, e);
    WAIT_OK(s, ovstage_release_ordinal_query(s->inst, h));
    return v;
}

static void test_floors_and_ordinal_queries(void)
{
    stage_t s = new_stage("floors");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t x = token(&s, "x"), y = token(&s, "y");
    float v[3] = {1, 2, 3};
    ovstage_ordinal_query_handle_t h = 0;
    ovstage_write_floor_desc_t fd;
    ovstage_ordinal_t floor_x, floor_y, frontier;
    ovstage_enqueue_result_t e;

    WAIT_OK(&s, write_f32(&s, q, "x", 3, v, 3));
    WAIT_OK(&s, write_f32(&s, q, "y", 3, v, 3));
    fd.ordinal = 4;
    fd.scope = OVSTAGE_SCOPE_INCLUDE;
    fd.attributes = &x;
    fd.attribute_count = 1;
    WAIT_OK(&s, ovstage_advance_write_floor(s.inst, &fd));

    e = ovstage_get_attribute_write_floor(s.inst, by_token(x), &h);
    floor_x = fetch_and_release_ordinal(&s, e, &h);
    e = ovstage_get_attribute_write_floor(s.inst, named("y"), &h);
    floor_y = fetch_and_release_ordinal(&s, e, &h);
    CHECK(floor_x == 4 && floor_y == 0);
    e = ovstage_get_attribute_write_floor(s.inst, by_token(0), &h); /* the global floor */
    CHECK(fetch_and_release_ordinal(&s, e, &h) == 0);
    e = ovstage_get_oldest_preserved_ordinal(s.inst, &h);
    frontier = fetch_and_release_ordinal(&s, e, &h);
    CHECK(frontier <= 4);
    CHECK_REJECTED(write_f32(&s, q, "x", 4, v, 3), OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION);
    WAIT_OK(&s, write_f32(&s, q, "y", 4, v, 3)); /* y's floor is still 0 */
    CHECK_REJECTED(ovstage_release_ordinal_query(s.inst, h), OVSTAGE_ERROR_INVALID_HANDLE);
    (void)y;

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- deletes -------------------------------------------------------------------------- */

static void test_delete_attributes(void)
{
    stage_t s = new_stage("deletes");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t x = token(&s, "x");
    float v[3] = {1, 2, 3};
    ovx_string_or_token_t attrs[1];
    ovstage_read_handle_t r = 0;
    ovstage_read_group_t g;
    ovstage_enqueue_result_t e;
    int tombstones = 0, values = 0;

    WAIT_OK(&s, write_f32(&s, q, "x", 1, v, 3));
    seal(&s, 1);
    attrs[0] = named("x");
    WAIT_OK(&s, ovstage_delete_attributes(s.inst, q, attrs, 1, 2));
    seal(&s, 2);
    e = ovstage_read_attributes(s.inst, q, &x, 1, between(2, 2), &r);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    while (ovstage_fetch_read_next(s.inst, r, OVSTAGE_TIMEOUT_INFINITE, &g) == OVSTAGE_OK) {
        if (g.is_delete) {
            tombstones++;
            CHECK(g.data.tensor_count == 0 && g.data.tensors == NULL && g.prims.count == 3);
        } else {
            values++;
        }
        CHECK_STATUS(ovstage_release_group(s.inst, &g), OVSTAGE_OK);
    }
    CHECK(tombstones == 1 && values == 0);
    WAIT_OK(&s, e);
    WAIT_OK(&s, ovstage_release_read(s.inst, r));
    CHECK(read_f32(&s, q, x, v, 3) == 0); /* a latest read has no values left */
    attrs[0] = named("usd-path");
    CHECK_REJECTED(ovstage_delete_attributes(s.inst, q, attrs, 1, 3), OVSTAGE_ERROR_NOT_SUPPORTED);
    attrs[0] = by_token(x);
    CHECK_REJECTED(ovstage_delete_attributes(s.inst, q, attrs, 1, 2), OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION);

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- map sessions ---------------------------------------------------------------------- */

static void test_map_sessions(void)
{
    stage_t s = new_stage("maps");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t x = token(&s, "x");
    float v[3] = {1, 2, 3}, got[3];
    ovstage_map_desc_t md;
    ovstage_map_handle_t m = 0;
    ovstage_map_group_t g, copy;
    ovstage_enqueue_result_t e;
    ovstage_cuda_sync_t none = {0, 0}, some = {1, 0};

    WAIT_OK(&s, write_f32(&s, q, "x", 1, v, 3));
    seal(&s, 1);
    memset(&md, 0, sizeof md);
    md.attribute = by_token(x); /* dtype {0}: the existing column's schema */
    e = ovstage_map_attribute(s.inst, q, &md, 2, NULL, 0, &m);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK(m != 0);
    WAIT_OK(&s, e); /* releasing the op keeps the map handle */
    CHECK_STATUS(ovstage_fetch_map_next(s.inst, m, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
    CHECK(g.prims.count == 3 && g.data.tensor_count == 1 && g.data.tensors != NULL);
    if (g.data.tensor_count == 1) {
        float* buf = (float*)g.data.tensors[0].data;
        CHECK(g.data.tensors[0].shape[0] == 3 && g.data.tensors[0].dtype.lanes == 1);
        buf[0] = 10;
        buf[1] = 20;
        buf[2] = 30;
    }
    CHECK_STATUS(ovstage_fetch_map_next(s.inst, m, 0, &copy), OVSTAGE_ERROR_END_OF_ITERATION);
    {
        ovstage_map_group_t forged;
        memset(&forged, 0, sizeof forged);
        CHECK_REJECTED(ovstage_unmap_group(s.inst, m, &forged, none), OVSTAGE_ERROR_INVALID_HANDLE);
    }
    copy = g; /* a copy of the struct names the same group */
    WAIT_OK(&s, ovstage_unmap_group(s.inst, m, &copy, none));
    CHECK_REJECTED(ovstage_unmap_group(s.inst, m, &g, none), OVSTAGE_ERROR_INVALID_HANDLE);
    /* Nothing is left to commit: the final unmap only closes, and never looks at the sync. */
    WAIT_OK(&s, ovstage_unmap_attribute(s.inst, m, some));
    CHECK_REJECTED(ovstage_unmap_attribute(s.inst, m, none), OVSTAGE_ERROR_INVALID_HANDLE);
    seal(&s, 2);
    CHECK(read_f32(&s, q, x, got, 3) == 1);
    CHECK(got[0] == 10 && got[1] == 20 && got[2] == 30);

    /* A ragged session: element_sizes per prim, one tensor per prim. */
    memset(&md, 0, sizeof md);
    md.attribute = named("ragged");
    md.dtype.code = kDLFloat;
    md.dtype.bits = 32;
    md.dtype.lanes = 1;
    {
        size_t sizes[3] = {1, 2, 3};
        e = ovstage_map_attribute(s.inst, q, &md, 3, sizes, 3, &m);
        CHECK_STATUS(e.status, OVSTAGE_OK);
        CHECK_STATUS(ovstage_fetch_map_next(s.inst, m, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
        CHECK(g.data.tensor_count == 3);
        if (g.data.tensor_count == 3) {
            CHECK(g.data.tensors[2].shape[0] == 3);
        }
        WAIT_OK(&s, e);
        WAIT_OK(&s, ovstage_unmap_attribute(s.inst, m, none));
    }

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* An accepted enqueue whose op fails: wait_op is OP_FAILED, the op's text mentions needle. */
#define WAIT_FAILS(s, result, needle)                                                          \
    do {                                                                                       \
        ovstage_enqueue_result_t e_ = (result);                                                \
        ovstage_op_wait_result_t w_;                                                           \
        CHECK_STATUS(e_.status, OVSTAGE_OK);                                                   \
        if (e_.status == OVSTAGE_OK) {                                                         \
            ovx_string_t t_;                                                                   \
            CHECK_STATUS(ovstage_wait_op((s)->inst, e_.op_index, OVSTAGE_TIMEOUT_INFINITE, &w_), \
                         OVSTAGE_ERROR_OP_FAILED);                                             \
            t_ = ovstage_get_last_op_error((s)->inst, e_.op_index);                            \
            CHECK(t_.ptr != NULL && strstr(t_.ptr, (needle)) != NULL);                         \
            CHECK_STATUS(ovstage_release_op((s)->inst, e_.op_index), OVSTAGE_OK);              \
        }                                                                                      \
    } while (0)

/* Map sessions: commits re-validate; a commit that fails while executing makes the session
 * terminal, and the final unmap then reports that failure, writes nothing and consumes the
 * handle. A non-zero write_done_sync is accepted and fails a host session's commit. */
static void test_map_session_terminal_failures(void)
{
    stage_t s = new_stage("map terminal");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t x = token(&s, "x");
    float v[3] = {1, 2, 3}, got[3];
    ovstage_map_desc_t md;
    ovstage_map_handle_t m = 0;
    ovstage_map_group_t g;
    ovstage_cuda_sync_t none = {0, 0}, stream = {1, 0}, event = {0, 0x1234};

    WAIT_OK(&s, write_f32(&s, q, "x", 1, v, 3));
    seal(&s, 1);
    memset(&md, 0, sizeof md);
    md.attribute = by_token(x);

    /* A commit with a CUDA sync on a host session fails when it executes: terminal. */
    WAIT_OK(&s, ovstage_map_attribute(s.inst, q, &md, 2, NULL, 0, &m));
    CHECK_STATUS(ovstage_fetch_map_next(s.inst, m, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
    if (g.data.tensor_count == 1) {
        ((float*)g.data.tensors[0].data)[0] = 99;
    }
    WAIT_FAILS(&s, ovstage_unmap_group(s.inst, m, &g, stream), "CUDA completion sync");
    WAIT_FAILS(&s, ovstage_unmap_attribute(s.inst, m, none), "CUDA completion sync");
    CHECK_REJECTED(ovstage_unmap_attribute(s.inst, m, none), OVSTAGE_ERROR_INVALID_HANDLE);

    /* A final unmap with a group still to commit and a sync fails and consumes the handle. */
    WAIT_OK(&s, ovstage_map_attribute(s.inst, q, &md, 2, NULL, 0, &m));
    CHECK_STATUS(ovstage_fetch_map_next(s.inst, m, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
    WAIT_FAILS(&s, ovstage_unmap_attribute(s.inst, m, event), "CUDA completion sync");
    CHECK_REJECTED(ovstage_unmap_attribute(s.inst, m, none), OVSTAGE_ERROR_INVALID_HANDLE);

    /* The floor passed the session ordinal before the commit: the commit fails (terminal). */
    WAIT_OK(&s, ovstage_map_attribute(s.inst, q, &md, 3, NULL, 0, &m));
    CHECK_STATUS(ovstage_fetch_map_next(s.inst, m, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
    if (g.data.tensor_count == 1) {
        ((float*)g.data.tensors[0].data)[1] = 77;
    }
    seal(&s, 3);
    WAIT_FAILS(&s, ovstage_unmap_group(s.inst, m, &g, none), "floor");
    WAIT_FAILS(&s, ovstage_unmap_attribute(s.inst, m, none), "floor");
    CHECK_REJECTED(ovstage_unmap_attribute(s.inst, m, none), OVSTAGE_ERROR_INVALID_HANDLE);

    /* None of the failed commits wrote anything. */
    CHECK(read_f32(&s, q, x, got, 3) == 1);
    CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3);
    /* Unmapping handle 0 (what a rejected setup leaves) is INVALID_ARGUMENT. */
    CHECK_REJECTED(ovstage_unmap_attribute(s.inst, 0, none), OVSTAGE_ERROR_INVALID_ARGUMENT);

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* Reserved names: recorded built-ins take their canonical kind only, derived ones are never
 * written, mapped or deleted; the recorded ones can be deleted like any attribute. */
static void test_reserved_attributes(void)
{
    stage_t s = new_stage("reserved");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    float f[3] = {1, 2, 3};
    uint64_t types[3];
    int64_t shape[1] = {3}, one[1] = {1};
    DLTensor t, rows[3];
    ovstage_write_data_t d;
    ovstage_map_desc_t md;
    ovstage_map_handle_t m = 7;
    ovx_string_or_token_t prim_type = named("usd-prim-type");
    int i;

    types[0] = types[1] = types[2] = token(&s, "Xform");
    memset(&t, 0, sizeof t);
    t.data = f;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = shape;
    d = data_of(&t, 1);
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, prim_type, 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("reserved attribute 'usd-prim-type' requires its canonical kind");
    t.data = types;
    t.dtype.code = kDLUInt;
    t.dtype.bits = 64;
    d.semantic = OVSTAGE_SEMANTIC_TOKEN_ID;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, prim_type, 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("semantic NONE");
    d.semantic = OVSTAGE_SEMANTIC_NONE;
    WAIT_OK(&s, ovstage_write_attribute(s.inst, q, prim_type, 2, d, OVSTAGE_PRIM_MODE_UPSERT));
    /* usd-ancestor-types: one token-id array per prim. */
    for (i = 0; i < 3; ++i) {
        rows[i] = t;
        rows[i].data = &types[i];
        rows[i].shape = one;
    }
    d = data_of(rows, 3);
    d.is_array = true;
    WAIT_OK(&s, ovstage_write_attribute(s.inst, q, named("usd-ancestor-types"), 2, d, OVSTAGE_PRIM_MODE_UPSERT));
    d.is_array = false;
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, named("usd-schemas"), 2, data_of(&t, 1), OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("is_array=true");

    /* Maps follow the same rules. */
    memset(&md, 0, sizeof md);
    md.attribute = named("usd-children");
    md.dtype = t.dtype;
    CHECK_REJECTED(ovstage_map_attribute(s.inst, q, &md, 3, NULL, 0, &m), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_LAST_ERROR("derived on demand");
    CHECK(m == 0);
    md.attribute = named("usd-schemas");
    CHECK_REJECTED(ovstage_map_attribute(s.inst, q, &md, 3, NULL, 0, &m), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("reserved attribute 'usd-schemas'");

    /* Deletes: the recorded names like any attribute, the derived ones never. */
    {
        ovx_string_or_token_t del[1] = {named("usd-prim-type")};
        WAIT_OK(&s, ovstage_delete_attributes(s.inst, q, del, 1, 3));
        del[0] = named("usd-parent");
        CHECK_REJECTED(ovstage_delete_attributes(s.inst, q, del, 1, 4), OVSTAGE_ERROR_NOT_SUPPORTED);
    }

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- clone ------------------------------------------------------------------------------ */

static void test_clone_and_report(void)
{
    stage_t s = new_stage("clone");
    const char* const src[2] = {"/Src", "/Src/Child"};
    ovx_primpath_list_t list = list_of(&s, src, 2);
    ovstage_query_handle_t q = query_of(&s, list);
    float v[2] = {5, 6};
    ovx_string_t targets[2] = {str("/T1"), str("/T2")};
    ovstage_clone_result_t cr;
    ovstage_enqueue_result_t e;
    ovstage_op_wait_result_t w;

    WAIT_OK(&s, write_f32(&s, q, "x", 1, v, 2));
    e = ovstage_clone(s.inst, str("/Src"), targets, 2, 2);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_OK);
    memset(&cr, 0xff, sizeof cr);
    CHECK_STATUS(ovstage_fetch_clone_result(s.inst, e.op_index, 0, &cr), OVSTAGE_OK);
    CHECK(cr.ordinal == 2 && cr.target_count == 2 && cr.source_prim_count == 2 && cr.prims_cloned == 4);
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
    CHECK_STATUS(ovstage_fetch_clone_result(s.inst, e.op_index, 0, &cr), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK(cr.ordinal == 0 && cr.prims_cloned == 0); /* zeroed on failure */

    /* A target that exists fails at execution; the report gives the specific code. */
    e = ovstage_clone(s.inst, str("/Src"), targets, 1, 3);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_ERROR_OP_FAILED);
    CHECK(strstr(ovstage_get_last_op_error(s.inst, e.op_index).ptr, "already exists") != NULL);
    CHECK_STATUS(ovstage_fetch_clone_result(s.inst, e.op_index, 0, &cr), OVSTAGE_ERROR_PRIM_NOT_FOUND);
    CHECK_LAST_ERROR("already exists");
    /* fetch_clone_result is no wait_op: the op's text stays valid. */
    CHECK(ovstage_get_last_op_error(s.inst, e.op_index).ptr != NULL);
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
    e = ovstage_clone(s.inst, str("/Missing"), targets, 1, 3);
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_ERROR_OP_FAILED);
    CHECK_STATUS(ovstage_fetch_clone_result(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &cr),
                 OVSTAGE_ERROR_NOT_FOUND);
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);

    /* Zero targets (NULL, 0) only check admission; the report still counts the source. */
    e = ovstage_clone(s.inst, str("/Src"), NULL, 0, 5);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK_STATUS(ovstage_fetch_clone_result(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &cr), OVSTAGE_OK);
    CHECK(cr.ordinal == 5 && cr.target_count == 0 && cr.source_prim_count == 2 && cr.prims_cloned == 0);
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);

    /* The report is the engine's, fixed when the clone completed: deleting a cloned prim
     * before the first fetch does not change it. */
    targets[0] = str("/T3");
    e = ovstage_clone(s.inst, str("/Src"), targets, 1, 6);
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_OK);
    {
        const char* const child[1] = {"/T3/Child"};
        ovx_primpath_list_t cl = list_of(&s, child, 1);
        ovstage_query_handle_t cq = query_of(&s, cl);
        WAIT_OK(&s, ovstage_delete_attributes(s.inst, cq, NULL, 0, 7));
        release_query(&s, cq);
        release_list(&s, cl);
    }
    CHECK_STATUS(ovstage_fetch_clone_result(s.inst, e.op_index, 0, &cr), OVSTAGE_OK);
    CHECK(cr.ordinal == 6 && cr.target_count == 1 && cr.source_prim_count == 2 && cr.prims_cloned == 2);
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);

    /* A pending clone: TIMEOUT, and the op stays waitable. */
    {
        const test_hooks_t* h = hooks(&s);
        if (h != NULL) {
            h->write_gate_reset();
            h->write_gate_enable();
            targets[0] = str("/T4");
            e = ovstage_clone(s.inst, str("/Src"), targets, 1, 8);
            CHECK_STATUS(e.status, OVSTAGE_OK);
            h->write_gate_wait_until_entered();
            CHECK_STATUS(ovstage_fetch_clone_result(s.inst, e.op_index, 0, &cr), OVSTAGE_ERROR_TIMEOUT);
            CHECK_STATUS(ovstage_fetch_clone_result(s.inst, e.op_index, 1000000, &cr), OVSTAGE_ERROR_TIMEOUT);
            CHECK(cr.ordinal == 0 && cr.target_count == 0);
            h->write_gate_release();
            CHECK_STATUS(ovstage_fetch_clone_result(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &cr), OVSTAGE_OK);
            CHECK(cr.ordinal == 8 && cr.prims_cloned == 2);
            CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_OK);
            CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
            h->write_gate_reset();
        }
    }

    /* Synchronous rejections and bad arguments. */
    targets[1] = str("/T9");
    targets[0] = str("/T9");
    CHECK_REJECTED(ovstage_clone(s.inst, str("/Src"), targets, 2, 4), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("target_paths[0] and [1]");
    CHECK_REJECTED(ovstage_clone(s.inst, str("/Src"), NULL, 2, 4), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_clone(NULL, str("/Src"), targets, 1, 4), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_clone(s.inst, str("relative"), targets, 1, 4), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_fetch_clone_result(s.inst, 0, 0, &cr), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_STATUS(ovstage_fetch_clone_result(s.inst, 1, 0, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    {
        /* A write op is not a clone op. */
        ovstage_enqueue_result_t we = write_f32(&s, q, "x", 9, v, 2);
        CHECK_STATUS(ovstage_fetch_clone_result(s.inst, we.op_index, 0, &cr), OVSTAGE_ERROR_INVALID_HANDLE);
        WAIT_OK(&s, we);
    }

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- hierarchy --------------------------------------------------------------------------- */

static void test_hierarchy(void)
{
    stage_t s = new_stage("hierarchy");
    const char* const prims[4] = {"/World", "/World/A", "/World/B", "/Lone"};
    const char* const ask[3] = {"/World", "/World/A", "/Nowhere"};
    ovx_primpath_list_t list = list_of(&s, prims, 4), asked = list_of(&s, ask, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    float v[4] = {1, 2, 3, 4};
    ovstage_hierarchy_handle_t h = 0;
    ovstage_hierarchy_result_t res;
    const ovstage_hierarchy_computation_model_desc_t* models = NULL;
    size_t nmodels = 0, i;
    ovstage_enqueue_result_t e;
    int cpu = 0;

    WAIT_OK(&s, write_f32(&s, q, "x", 1, v, 4));
    e = ovstage_get_hierarchy(s.inst, asked, 1, OVSTAGE_HIERARCHY_CHILDREN, &h);
    CHECK_STATUS(e.status, OVSTAGE_OK);
    CHECK(h != 0);
    release_list(&s, asked); /* copied at enqueue */
    WAIT_OK(&s, e);
    CHECK_STATUS(ovstage_fetch_hierarchy_result(s.inst, h, &res), OVSTAGE_OK);
    CHECK(res.hierarchy_result_id != 0 && res.ordinal == 1 && res.input_count == 3);
    if (res.input_count == 3) {
        CHECK(res.items[0].status == OVSTAGE_OK && res.items[0].path_count == 2);
        CHECK(res.items[1].status == OVSTAGE_OK && res.items[1].path_count == 0);
        CHECK(res.items[2].status == OVSTAGE_ERROR_NOT_FOUND);
        CHECK(res.path_count == 2);
        if (res.path_count == 2) {
            const ovx_string_or_token_t* p = &res.paths[res.items[0].path_offset];
            CHECK(p[0].token == 0 && p[0].string.length == 8 && strcmp(p[0].string.ptr, "/World/A") == 0);
            CHECK(strcmp(p[1].string.ptr, "/World/B") == 0);
        }
    }
    CHECK_STATUS(ovstage_release_hierarchy_result(s.inst, &res), OVSTAGE_OK);
    CHECK_STATUS(ovstage_release_hierarchy_result(s.inst, &res), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_STATUS(ovstage_release_hierarchy_result(s.inst, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    WAIT_OK(&s, ovstage_release_hierarchy(s.inst, h));
    CHECK_STATUS(ovstage_fetch_hierarchy_result(s.inst, h, &res), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_REJECTED(ovstage_release_hierarchy(s.inst, h), OVSTAGE_ERROR_INVALID_HANDLE);
    CHECK_REJECTED(ovstage_get_hierarchy(s.inst, list, 1, (ovstage_hierarchy_relation_t)7, &h),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(h == 0);
    CHECK_REJECTED(ovstage_get_hierarchy(s.inst, list, 1, OVSTAGE_HIERARCHY_PARENT, NULL),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_REJECTED(ovstage_get_hierarchy(s.inst, 0, 1, OVSTAGE_HIERARCHY_PARENT, &h),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_fetch_hierarchy_result(s.inst, 5, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);

    /* Models, and compute_hierarchy with the captured runtime default. */
    CHECK_STATUS(ovstage_get_hierarchy_computation_models(s.inst, &models, &nmodels), OVSTAGE_OK);
    CHECK(models != NULL && nmodels >= 1);
    for (i = 0; i < nmodels; ++i) {
        CHECK(models[i].name.ptr != NULL && models[i].name.ptr[models[i].name.length] == '\0');
        cpu |= models[i].model_id == OVSTAGE_HIERARCHY_COMPUTATION_MODEL_CPU_INCREMENTAL;
    }
    CHECK(cpu);
    CHECK_STATUS(ovstage_get_hierarchy_computation_models(s.inst, NULL, &nmodels),
                 OVSTAGE_ERROR_INVALID_ARGUMENT);
    WAIT_OK(&s, ovstage_compute_hierarchy(s.inst, OVSTAGE_HIERARCHY_COMPUTATION_MODEL_RUNTIME_DEFAULT, 1, 2));
    WAIT_OK(&s, ovstage_compute_hierarchy(s.inst, OVSTAGE_HIERARCHY_COMPUTATION_MODEL_CPU_INCREMENTAL, 1, 2));
    CHECK_REJECTED(ovstage_compute_hierarchy(s.inst, OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_GLOBAL, 1, 2),
                   OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_REJECTED(ovstage_compute_hierarchy(s.inst, OVSTAGE_HIERARCHY_COMPUTATION_MODEL_INVALID, 1, 2),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* Writes one 4x4 float64 matrix per prim (row-major, translation (x, 0, 0) in element 12). */
static ovstage_enqueue_result_t write_matrices(stage_t* s, ovstage_query_handle_t q, const char* attr,
                                               ovstage_ordinal_t ordinal, const double* tx, int64_t rows)
{
    double m[2][16];
    int64_t shape[1] = {rows};
    DLTensor t;
    int64_t r;
    int k;
    for (r = 0; r < rows && r < 2; ++r) {
        for (k = 0; k < 16; ++k) {
            m[r][k] = (k % 5 == 0) ? 1.0 : 0.0;
        }
        m[r][12] = tx[r];
    }
    memset(&t, 0, sizeof t);
    t.data = m;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 64;
    t.dtype.lanes = 16;
    t.shape = shape;
    return ovstage_write_attribute(s->inst, q, named(attr), ordinal, data_of(&t, 1), OVSTAGE_PRIM_MODE_UPSERT);
}

/* The translation x (element 12) of the first prim's world matrix in a read of rng; *rows is the
 * number of prims the read returned. */
static double world_x(stage_t* s, ovstage_query_handle_t q, ovx_token_t world, ovstage_ordinal_range_t rng,
                      uint32_t* rows)
{
    ovstage_read_handle_t r = 0;
    ovstage_read_group_t g;
    double x = -1;
    ovstage_enqueue_result_t e = ovstage_read_attributes(s->inst, q, &world, 1, rng, &r);
    *rows = 0;
    CHECK_STATUS(e.status, OVSTAGE_OK);
    if (e.status != OVSTAGE_OK) {
        return x;
    }
    while (ovstage_fetch_read_next(s->inst, r, OVSTAGE_TIMEOUT_INFINITE, &g) == OVSTAGE_OK) {
        if (!g.is_delete && g.data.tensor_count == 1 && g.prims.count > 0) {
            const DLTensor* t = &g.data.tensors[0];
            x = ((const double*)((const char*)t->data + t->byte_offset))[12];
            *rows += g.prims.count;
        }
        CHECK_STATUS(ovstage_release_group(s->inst, &g), OVSTAGE_OK);
    }
    WAIT_OK(s, ovstage_release_read(s->inst, r));
    WAIT_OK(s, e);
    return x;
}

/* The runtime-default model the instance captured is what RUNTIME_DEFAULT and a floor advance
 * run; a sealed output ordinal is accepted; get_hierarchy echoes its ordinal. */
static void test_hierarchy_models_and_automatic_computation(void)
{
    const char* const w[1] = {"/W"};
    const char* const four[4] = {"cpu-incremental", "gpu-incremental", "gpu-global", "runtime-default"};
    const ovstage_hierarchy_computation_model_desc_t* models = NULL;
    size_t nmodels = 0, i;
    ovstage_config_entry_t entry;
    ovstage_config_t cfg;
    ovstage_hierarchy_handle_t h = 0;
    ovstage_hierarchy_result_t res;
    ovstage_enqueue_result_t e;
    double one = 1, five = 5, seven = 7;
    uint32_t rows = 0;
    stage_t s = new_stage("hierarchy models");
    ovx_primpath_list_t list = list_of(&s, w, 1);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t world = token(&s, "omni:fabric:worldMatrix");

    CHECK_STATUS(ovstage_get_hierarchy_computation_models(s.inst, &models, &nmodels), OVSTAGE_OK);
    CHECK(nmodels == 4);
    for (i = 0; i < nmodels && i < 4; ++i) {
        CHECK(models[i].model_id == (ovstage_hierarchy_computation_model_id_t)(i + 1));
        CHECK(strcmp(models[i].name.ptr, four[i]) == 0);
    }

    /* The default model (CPU) runs on advance and records the rows it changes at the advance. */
    WAIT_OK(&s, write_matrices(&s, q, "omni:xform", 1, &one, 1));
    WAIT_OK(&s, write_matrices(&s, q, "omni:fabric:worldMatrix", 1, &seven, 1));
    seal(&s, 1);
    CHECK(world_x(&s, q, world, latest(1), &rows) == 1 && rows == 1);
    WAIT_OK(&s, write_matrices(&s, q, "omni:xform", 2, &five, 1));
    seal(&s, 2);
    CHECK(world_x(&s, q, world, between(2, 2), &rows) == 5 && rows == 1);
    /* A sealed output ordinal is accepted and folded in at once. */
    WAIT_OK(&s, write_matrices(&s, q, "omni:xform", 3, &seven, 1));
    WAIT_OK(&s, ovstage_compute_hierarchy(s.inst, OVSTAGE_HIERARCHY_COMPUTATION_MODEL_RUNTIME_DEFAULT, 3, 2));
    CHECK(world_x(&s, q, world, latest(2), &rows) == 7 && rows == 1);

    /* get_hierarchy: the ordinal selects nothing and comes back as given. */
    e = ovstage_get_hierarchy(s.inst, list, 99, OVSTAGE_HIERARCHY_PARENT, &h);
    WAIT_OK(&s, e);
    CHECK_STATUS(ovstage_fetch_hierarchy_result(s.inst, h, &res), OVSTAGE_OK);
    CHECK(res.ordinal == 99 && res.input_count == 1 && res.path_count == 0);
    if (res.input_count == 1) {
        CHECK(res.items[0].status == OVSTAGE_OK && res.items[0].path_count == 0); /* top level */
    }
    CHECK_STATUS(ovstage_release_hierarchy_result(s.inst, &res), OVSTAGE_OK);
    WAIT_OK(&s, ovstage_release_hierarchy(s.inst, h));
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);

    /* An instance created under a GPU runtime default (not in this build): RUNTIME_DEFAULT is
     * NOT_SUPPORTED and the advance leaves the world matrices alone. */
    entry = ovstage_config_entry_runtime_default_hierarchy_computation_model(
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_GLOBAL);
    cfg.entries = &entry;
    cfg.entry_count = 1;
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_OK);
    s = new_stage("gpu default");
    list = list_of(&s, w, 1);
    q = query_of(&s, list);
    world = token(&s, "omni:fabric:worldMatrix");
    WAIT_OK(&s, write_matrices(&s, q, "omni:xform", 1, &five, 1));
    WAIT_OK(&s, write_matrices(&s, q, "omni:fabric:worldMatrix", 1, &seven, 1));
    seal(&s, 1);
    CHECK(world_x(&s, q, world, latest(1), &rows) == 7 && rows == 1);
    CHECK_REJECTED(ovstage_compute_hierarchy(s.inst, OVSTAGE_HIERARCHY_COMPUTATION_MODEL_RUNTIME_DEFAULT, 1, 2),
                   OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_LAST_ERROR("GPU_GLOBAL");
    WAIT_OK(&s, ovstage_compute_hierarchy(s.inst, OVSTAGE_HIERARCHY_COMPUTATION_MODEL_CPU_INCREMENTAL, 1, 2));
    seal(&s, 2);
    CHECK(world_x(&s, q, world, latest(2), &rows) == 5 && rows == 1);
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_OK);
}

/* ---- logging ---------------------------------------------------------------------------- */

typedef struct {
    pthread_mutex_t mu;
    int count;
    int saw_ops_channel;
    int on_caller_thread;
    pthread_t caller;
    int flush_inside;
} log_sink_t;

static void log_callback(ovstage_log_severity_t severity, double timestamp, ovx_string_t message,
                         void* user_data)
{
    log_sink_t* sink = (log_sink_t*)user_data;
    char text[512];
    snprintf(text, sizeof text, "%.*s", (int)message.length, message.ptr);
    pthread_mutex_lock(&sink->mu);
    sink->count++;
    if (strstr(text, "[ovstage.ops]") != NULL && severity == OVSTAGE_LOG_ERROR && timestamp > 1e9) {
        sink->saw_ops_channel = 1;
    }
    if (pthread_equal(pthread_self(), sink->caller)) {
        sink->on_caller_thread = 1;
    }
    pthread_mutex_unlock(&sink->mu);
    /* Flushing from inside the callback returns at once (it cannot wait for itself). */
    (void)ovstage_flush_log(OVSTAGE_TIMEOUT_INFINITE);
    pthread_mutex_lock(&sink->mu);
    sink->flush_inside++;
    pthread_mutex_unlock(&sink->mu);
}

static void test_logging(void)
{
    log_sink_t sink;
    stage_t s;
    const test_hooks_t* h;
    ovx_primpath_list_t list;
    ovstage_query_handle_t q;
    ovstage_op_wait_result_t w;
    ovstage_enqueue_result_t e;
    float v[3] = {1, 2, 3};
    ovx_string_t filter = str("ovstage.ops=error");
    ovx_string_t bad_filter = str("ovstage.ops=loud");
    int count_after;

    memset(&sink, 0, sizeof sink);
    pthread_mutex_init(&sink.mu, NULL);
    sink.caller = pthread_self();
    /* No initialize reference and no instance: the runtime is not bootstrapped. */
    CHECK_STATUS(ovstage_set_log_callback(OVSTAGE_LOG_WARNING, NULL, log_callback, &sink),
                 OVSTAGE_ERROR_OP_FAILED);
    CHECK_STATUS(ovstage_flush_log(0), OVSTAGE_OK); /* no callback: nothing to wait for */

    s = new_stage("logging");
    h = hooks(&s);
    CHECK_STATUS(ovstage_set_log_callback(OVSTAGE_LOG_WARNING, &bad_filter, log_callback, &sink),
                 OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_set_log_callback((ovstage_log_severity_t)17, NULL, log_callback, &sink),
                 OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_set_log_callback(OVSTAGE_LOG_NONE, &filter, log_callback, &sink), OVSTAGE_OK);
    list = list_of(&s, ABC, 3);
    q = query_of(&s, list);
    if (h != NULL) {
        /* A failed op is logged on ovstage.ops at ERROR. */
        h->write_gate_reset();
        h->write_gate_fail_next();
        e = write_f32(&s, q, "x", 1, v, 3);
        CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_ERROR_OP_FAILED);
        CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
        h->write_gate_reset();
    }
    CHECK_STATUS(ovstage_flush_log(OVSTAGE_TIMEOUT_INFINITE), OVSTAGE_OK);
    pthread_mutex_lock(&sink.mu);
    CHECK(sink.count >= 1 && sink.saw_ops_channel);
    CHECK(!sink.on_caller_thread); /* delivered on the library's dispatcher thread */
    CHECK(sink.flush_inside == sink.count);
    pthread_mutex_unlock(&sink.mu);

    /* Replacing the callback: once the call returns the previous one is never called again. */
    {
        log_sink_t second;
        int first_count;
        memset(&second, 0, sizeof second);
        pthread_mutex_init(&second.mu, NULL);
        second.caller = pthread_self();
        if (h != NULL) {
            h->write_gate_fail_next();
            e = write_f32(&s, q, "x", 1, v, 3); /* logged for the first callback */
            CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_ERROR_OP_FAILED);
            CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
        }
        CHECK_STATUS(ovstage_set_log_callback(OVSTAGE_LOG_NONE, &filter, log_callback, &second), OVSTAGE_OK);
        pthread_mutex_lock(&sink.mu);
        first_count = sink.count;
        pthread_mutex_unlock(&sink.mu);
        CHECK(first_count >= 2); /* what was queued went to the first callback */
        if (h != NULL) {
            h->write_gate_fail_next();
            e = write_f32(&s, q, "x", 1, v, 3);
            CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_ERROR_OP_FAILED);
            CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
            h->write_gate_reset();
        }
        CHECK_STATUS(ovstage_flush_log(OVSTAGE_TIMEOUT_INFINITE), OVSTAGE_OK);
        pthread_mutex_lock(&sink.mu);
        CHECK(sink.count == first_count);
        pthread_mutex_unlock(&sink.mu);
        pthread_mutex_lock(&second.mu);
        CHECK(second.count >= 1 && second.saw_ops_channel);
        pthread_mutex_unlock(&second.mu);
        /* A bad filter leaves the current callback in place. */
        CHECK_STATUS(ovstage_set_log_callback(OVSTAGE_LOG_WARNING, &bad_filter, log_callback, &sink),
                     OVSTAGE_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(ovstage_set_log_callback(OVSTAGE_LOG_WARNING, NULL, NULL, NULL), OVSTAGE_OK);
        pthread_mutex_destroy(&second.mu);
    }

    /* NULL flushes and disables: no call afterwards. */
    CHECK_STATUS(ovstage_set_log_callback(OVSTAGE_LOG_WARNING, NULL, NULL, NULL), OVSTAGE_OK);
    pthread_mutex_lock(&sink.mu);
    count_after = sink.count;
    pthread_mutex_unlock(&sink.mu);
    if (h != NULL) {
        h->write_gate_fail_next();
        e = write_f32(&s, q, "x", 2, v, 3);
        CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_ERROR_OP_FAILED);
        CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
        h->write_gate_reset();
    }
    CHECK_STATUS(ovstage_flush_log(OVSTAGE_TIMEOUT_INFINITE), OVSTAGE_OK);
    usleep(20000);
    pthread_mutex_lock(&sink.mu);
    CHECK(sink.count == count_after);
    pthread_mutex_unlock(&sink.mu);

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
    pthread_mutex_destroy(&sink.mu);
}

/* ---- features not in this build --------------------------------------------------------- */

static int population_error_contains(const char* needle)
{
    char text[512];
    ovx_string_t e = ovstage_population_get_last_error();
    if (e.ptr == NULL) {
        return 0;
    }
    snprintf(text, sizeof text, "%.*s", (int)e.length, e.ptr);
    return strstr(text, needle) != NULL;
}

/* Waits for op and returns its status; releases it. */
static ovstage_api_status_t wait_status(stage_t* s, ovstage_enqueue_result_t e)
{
    ovstage_op_wait_result_t w;
    ovstage_api_status_t st;
    if (e.status != OVSTAGE_OK) {
        return e.status;
    }
    st = ovstage_wait_op(s->inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w);
    CHECK_STATUS(ovstage_release_op(s->inst, e.op_index), OVSTAGE_OK);
    return st;
}

/* An ordinal conflict is reported when the op runs (OP_FAILED) or at enqueue (status 5). */
#define CHECK_CONFLICT(s, result)                                                              \
    do {                                                                                       \
        ovstage_api_status_t st_ = wait_status((s), (result));                                 \
        CHECK(st_ == OVSTAGE_ERROR_OP_FAILED || st_ == OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION);  \
    } while (0)

/* The admission policy is process-scoped: a fresh lifetime is NONDECREASING, a configured one
 * takes its policy, and each instance enforces the policy of the lifetime it was created in. */
static void test_ordinal_admission_policies(void)
{
    float v[3] = {1, 2, 3}, older[3] = {4, 5, 6}, got[3];
    ovstage_config_entry_t e[1];
    ovstage_config_t cfg;
    stage_t s = new_stage("nondecreasing");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);

    cfg.entries = e;
    cfg.entry_count = 1;
    WAIT_OK(&s, write_f32(&s, q, "x", 5, v, 3));
    CHECK_CONFLICT(&s, write_f32(&s, q, "x", 3, v, 3)); /* below a change of the cells */
    WAIT_OK(&s, write_f32(&s, q, "x", 5, v, 3));        /* equal is allowed */
    WAIT_OK(&s, write_f32(&s, q, "other", 2, v, 3));    /* another cell */
    {
        ovx_string_or_token_t del = named("x");
        CHECK_CONFLICT(&s, ovstage_delete_attributes(s.inst, q, &del, 1, 4));
    }
    /* While this instance lives, another concrete policy conflicts with the lifetime's. */
    e[0] = ovstage_config_entry_runtime_default_ordinal_admission_policy(
        OVSTAGE_ORDINAL_ADMISSION_FLOOR_ONLY);
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("conflicts with active process state");
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);

    /* A new lifetime under FLOOR_ONLY: only the floors refuse; the newest ordinal's value wins. */
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_OK);
    s = new_stage("floor only");
    list = list_of(&s, ABC, 3);
    q = query_of(&s, list);
    WAIT_OK(&s, write_f32(&s, q, "x", 5, v, 3));
    WAIT_OK(&s, write_f32(&s, q, "x", 3, older, 3));
    seal(&s, 5);
    CHECK(read_f32(&s, q, token(&s, "x"), got, 3) == 1);
    CHECK(got[0] == 1 && got[2] == 3);
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_OK);

    /* STRICTLY_INCREASING refuses the same ordinal again. */
    e[0] = ovstage_config_entry_runtime_default_ordinal_admission_policy(
        OVSTAGE_ORDINAL_ADMISSION_STRICTLY_INCREASING);
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_OK);
    s = new_stage("strict");
    list = list_of(&s, ABC, 3);
    q = query_of(&s, list);
    WAIT_OK(&s, write_f32(&s, q, "x", 5, v, 3));
    CHECK_CONFLICT(&s, write_f32(&s, q, "x", 5, v, 3));
    WAIT_OK(&s, write_f32(&s, q, "x", 6, v, 3));
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_OK);
}

/* The history window: latest(N) behind the floor is the state at N while N is at or above
 * get_oldest_preserved_ordinal; a window of 0 (our config entry) answers as the reference. */
static void history_writes(stage_t* s, ovstage_query_handle_t q)
{
    ovstage_ordinal_t o;
    for (o = 1; o <= 3; ++o) {
        float v[3] = {(float)o, (float)(10 * o), (float)(100 * o)};
        WAIT_OK(s, write_f32(s, q, "x", o, v, 3));
        seal(s, o);
    }
}

static ovstage_ordinal_t oldest_preserved(stage_t* s)
{
    ovstage_ordinal_query_handle_t h = 0;
    ovstage_enqueue_result_t e = ovstage_get_oldest_preserved_ordinal(s->inst, &h);
    return fetch_and_release_ordinal(s, e, &h);
}

static void test_history_window(void)
{
    float got[3] = {0, 0, 0};
    ovstage_api_status_t refused = OVSTAGE_OK;
    ovstage_config_entry_t e[2];
    ovstage_config_t cfg;
    stage_t s = new_stage("default window");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);

    history_writes(&s, q);
    CHECK(read_f32_at(&s, q, token(&s, "x"), got, 3, latest(1), NULL) == 1);
    CHECK(got[0] == 1 && got[1] == 10 && got[2] == 100);
    CHECK(read_f32_at(&s, q, token(&s, "x"), got, 3, latest(2), NULL) == 1);
    CHECK(got[0] == 2 && got[1] == 20 && got[2] == 200);
    CHECK(read_f32_at(&s, q, token(&s, "x"), got, 3, latest(0), NULL) == 0); /* nothing at 0 */
    CHECK(oldest_preserved(&s) == 0);
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);

    /* Window 0: the reference's answer. */
    cfg.entries = e;
    cfg.entry_count = 1;
    e[0] = ovstage_config_entry_history_window_ordinals(0);
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_OK);
    s = new_stage("parity");
    list = list_of(&s, ABC, 3);
    q = query_of(&s, list);
    history_writes(&s, q);
    CHECK(read_f32_at(&s, q, token(&s, "x"), got, 3, latest(2), &refused) == -1);
    CHECK_STATUS(refused, OVSTAGE_ERROR_OUT_OF_RANGE);
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);

    /* A later initialize names another window (no conflict): window 1, a small budget. */
    e[0] = ovstage_config_entry_history_window_ordinals(1);
    e[1] = ovstage_config_entry_history_window_bytes(1 << 20);
    cfg.entry_count = 2;
    CHECK_STATUS(ovstage_initialize(&cfg), OVSTAGE_OK);
    s = new_stage("window 1");
    list = list_of(&s, ABC, 3);
    q = query_of(&s, list);
    history_writes(&s, q);
    CHECK(oldest_preserved(&s) == 2);
    CHECK(read_f32_at(&s, q, token(&s, "x"), got, 3, latest(2), NULL) == 1);
    CHECK(got[0] == 2 && got[1] == 20 && got[2] == 200);
    CHECK(read_f32_at(&s, q, token(&s, "x"), got, 3, latest(1), &refused) == -1);
    CHECK_STATUS(refused, OVSTAGE_ERROR_OUT_OF_RANGE);
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_OK);
    CHECK_STATUS(ovstage_shutdown(), OVSTAGE_OK);
}

/* FORCE replaces the schema of the target prims on writes, batch entries and map commits;
 * REJECT refuses the change. */
static void test_attribute_mode_force(void)
{
    stage_t s = new_stage("force");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    float v[3] = {1, 2, 3};
    int32_t ints[3] = {7, 8, 9};
    int64_t shape[1] = {3};
    DLTensor t;
    ovstage_write_data_t d;
    ovstage_attribute_write_t w[1];
    ovstage_map_desc_t md;
    ovstage_map_handle_t m = 0;
    ovx_token_t x = token(&s, "x");

    WAIT_OK(&s, write_f32(&s, q, "x", 1, v, 3));
    WAIT_OK(&s, write_f32(&s, q, "y", 1, v, 3));
    WAIT_OK(&s, write_f32(&s, q, "z", 1, v, 3));
    memset(&t, 0, sizeof t);
    t.data = ints;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.dtype.code = kDLInt;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = shape;
    d = data_of(&t, 1);
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT); /* REJECT: the schema change */
    d.attribute_mode = OVSTAGE_ATTRIBUTE_MODE_FORCE;
    WAIT_OK(&s, ovstage_write_attribute(s.inst, q, by_token(x), 2, d, OVSTAGE_PRIM_MODE_UPSERT));
    memset(w, 0, sizeof w);
    w[0].attribute = named("y");
    w[0].data = d;
    WAIT_OK(&s, ovstage_write_attributes(s.inst, q, w, 1, 2, OVSTAGE_PRIM_MODE_UPSERT));
    memset(&md, 0, sizeof md);
    md.attribute = named("z");
    md.dtype = t.dtype;
    md.attribute_mode = OVSTAGE_ATTRIBUTE_MODE_FORCE;
    WAIT_OK(&s, ovstage_map_attribute(s.inst, q, &md, 2, NULL, 0, &m));
    CHECK(m != 0);
    WAIT_OK(&s, ovstage_unmap_attribute(s.inst, m, (ovstage_cuda_sync_t){0, 0}));
    seal(&s, 2);
    {
        const char* names[3] = {"x", "y", "z"};
        int k;
        for (k = 0; k < 3; k++) {
            ovx_token_t a = token(&s, names[k]);
            ovstage_read_handle_t r = 0;
            ovstage_read_group_t g;
            ovstage_enqueue_result_t e = ovstage_read_attributes(s.inst, q, &a, 1, latest(2), &r);
            CHECK_STATUS(e.status, OVSTAGE_OK);
            CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
            CHECK(g.data.tensor_count == 1 && g.data.tensors[0].dtype.code == kDLInt);
            CHECK(g.prims.count == 3);
            if (k < 2) {
                CHECK(memcmp(g.data.tensors[0].data, ints, sizeof ints) == 0);
            }
            CHECK_STATUS(ovstage_release_group(s.inst, &g), OVSTAGE_OK);
            CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, 0, &g), OVSTAGE_ERROR_END_OF_ITERATION);
            WAIT_OK(&s, ovstage_release_read(s.inst, r));
            WAIT_OK(&s, e);
        }
    }
    /* Reserved metadata never takes FORCE. */
    CHECK_REJECTED(ovstage_write_attribute(s.inst, q, named("usd-prim-type"), 3, d, OVSTAGE_PRIM_MODE_UPSERT),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

static void test_not_in_this_build(void)
{
    stage_t s = new_stage("unsupported");
    ovx_primpath_list_t roots = 5;
    ovx_primpath_t root = 5;
    ovstage_population_enqueue_result_t pe;
    ovstage_population_op_wait_result_t pw;
    ovstage_population_usd_reference_handle_t ref = 5;
    ovstage_population_export_desc_t desc;
    ovstage_population_export_report_t report;
    ovstage_population_export_destination_handle_t dest = 5;

    CHECK_STATUS(ovstage_instancing_get_prototype_roots(s.inst, &roots), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(roots == 0);
    CHECK_LAST_ERROR("instancing is not in this build");
    CHECK_STATUS(ovstage_instancing_get_instance_roots(s.inst, 1, &roots), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_instancing_get_prototype_root(s.inst, 1, &root), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(root == 0);
    CHECK_STATUS(ovstage_instancing_get_prototype_roots(s.inst, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_instancing_get_prototype_roots(NULL, &roots), OVSTAGE_ERROR_INVALID_ARGUMENT);

    pe = ovstage_population_open_usd_from_string(s.inst, str("#usda 1.0"), 1, 0.0, OVSTAGE_POPULATION_DOMAIN_ALL);
    CHECK(pe.status == OVSTAGE_ERROR_NOT_SUPPORTED && pe.op_index == 0);
    CHECK(population_error_contains("ovstage_population_open_usd_from_string: USD population is not in this build"));
    pe = ovstage_population_open_usd_from_file(NULL, str("a.usda"), 1, 0.0, 1);
    CHECK(pe.status == OVSTAGE_ERROR_INVALID_ARGUMENT);
    pe = ovstage_population_add_usd_reference_from_file(s.inst, str("a.usda"), str("/R"), &ref);
    CHECK(pe.status == OVSTAGE_ERROR_NOT_SUPPORTED && ref == 0);
    CHECK(ovstage_population_open_usd_from_file_with_desc(s.inst, str("a"), 1, 0.0, NULL, 0).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_open_usd_from_string_with_desc(s.inst, str("a"), 1, 0.0, NULL, 0).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_repopulate_usd_with_desc(s.inst, 1, 0.0, NULL, 0).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_add_usd_reference_from_string(s.inst, str("a"), str("/R"), &ref).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_remove_usd_reference(s.inst, 1).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_reset_usd(s.inst).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_apply_usd_time(s.inst, 1, 0.5).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_apply_usd_changes(s.inst, 1).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_population_register_usd_schemas(NULL, 0), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_population_wait_op(s.inst, 3, 0, &pw), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(pw.error_op_id_count == 0);
    CHECK(population_error_contains("unknown population operation id"));
    CHECK(ovstage_population_get_last_op_error(3).ptr == NULL);

    /* Export: the descriptor initialisers work; every export is NOT_SUPPORTED. */
    memset(&desc, 0x5a, sizeof desc);
    CHECK_STATUS(ovstage_population_export_desc_init_snapshot(&desc, 7), OVSTAGE_OK);
    CHECK(desc.struct_size == sizeof desc && sizeof desc == 176 && desc.ordinal == 7);
    CHECK(desc.prim_predicate.kind == OVSTAGE_POPULATION_PRIM_PREDICATE_ALL);
    CHECK(desc.property_predicate.kind == OVSTAGE_POPULATION_PROPERTY_PREDICATE_ALL);
    CHECK(desc.since_ordinal == 0 && desc.prim_rules == NULL && desc.metadata_rule_count == 0);
    CHECK_STATUS(ovstage_population_export_desc_init(NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_population_export_to_usd_file(s.inst, str("/tmp/x.usda"), &desc, &report),
                 OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(population_error_contains("USD export is not in this build"));
    CHECK(report.prims_examined == 0);
    CHECK_STATUS(ovstage_population_export_destination_create(s.inst, str("x.usda"),
                                                              (ovstage_population_export_destination_mode_t)0, &dest),
                 OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(dest == 0);
    CHECK(ovstage_population_export_destination_enqueue_create(s.inst, str("x"), (ovstage_population_export_destination_mode_t)0, &dest).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_population_export_to_destination(s.inst, 1, &desc, NULL), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_export_enqueue_to_destination(s.inst, 1, &desc).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_population_export_destination_save(s.inst, 1), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_export_destination_enqueue_save(s.inst, 1).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_population_export_destination_destroy(s.inst, 1), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_export_destination_enqueue_destroy(s.inst, 1).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_export_enqueue_to_usd_file(s.inst, str("x"), &desc).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_population_export_to_usd_layer_identifier(s.inst, str("x"), &desc, NULL), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_population_export_to_usd_stage_identifier(s.inst, str("x"), &desc, NULL), OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_export_enqueue_to_usd_layer_identifier(s.inst, str("x"), &desc).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(ovstage_population_export_enqueue_to_usd_stage_identifier(s.inst, str("x"), &desc).status == OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_population_export_wait_op(s.inst, 3, 0, &report), OVSTAGE_ERROR_INVALID_HANDLE);
    destroy_stage(&s);
}

/* ---- extensions and placement ------------------------------------------------------------ */

static void test_extensions_and_placement(void)
{
    stage_t s = new_stage("extensions");
    const ovstage_placement_extension_v1_t* ext = NULL;
    const void* table = (const void*)&table;
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    ovx_token_t x = token(&s, "x");
    float v[3] = {1, 2, 3}, got[3];
    int64_t shape[1];
    DLTensor t = f32_tensor(v, shape, 3, 1);
    ovstage_placement_t cpu = OVSTAGE_PLACEMENT_INIT, cuda = OVSTAGE_PLACEMENT_INIT;
    ovstage_read_handle_t r = 5;
    ovstage_map_handle_t m = 5;
    ovstage_map_desc_t md;
    ovstage_attribute_write_t w;

    CHECK_STATUS(ovstage_query_extension(s.inst, "no.such.extension", &table), OVSTAGE_ERROR_NOT_FOUND);
    CHECK(table == NULL);
    CHECK_STATUS(ovstage_query_extension(s.inst, NULL, &table), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_query_extension(s.inst, OVSTAGE_PLACEMENT_EXTENSION_NAME, NULL),
                 OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovstage_query_placement_extension(s.inst, &ext), OVSTAGE_OK);
    CHECK(ext != NULL && ext->header.version == 1 && ext->header.struct_size == 40);
    CHECK_STATUS(ovstage_query_placement_extension(NULL, &ext), OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(ext == NULL);

    /* A CPU placement (and NULL) is an ordinary write; a stream with no event records nothing.
     * (CUDA placements and events depend on the driver: capi_cuda_test.c.) */
    cpu.device.device_type = kDLCPU;
    WAIT_OK(&s, ovstage_write_attribute_on_device(s.inst, q, by_token(x), 1, data_of(&t, 1),
                                                  OVSTAGE_PRIM_MODE_UPSERT, &cpu));
    WAIT_OK(&s, ovstage_write_attribute_on_device(s.inst, q, by_token(x), 1, data_of(&t, 1),
                                                  OVSTAGE_PRIM_MODE_UPSERT, NULL));
    memset(&w, 0, sizeof w);
    w.attribute = named("y");
    w.data = data_of(&t, 1);
    WAIT_OK(&s, ovstage_write_attributes_on_device(s.inst, q, &w, 1, 1, OVSTAGE_PRIM_MODE_UPSERT, &cpu));
    cpu.stream = 1;
    WAIT_OK(&s, ovstage_write_attributes_on_device(s.inst, q, &w, 1, 1, OVSTAGE_PRIM_MODE_UPSERT, &cpu));
    cpu.stream = 0;
    cuda.device.device_type = (DLDeviceType)99;
    CHECK_REJECTED(ovstage_write_attribute_on_device(s.inst, q, by_token(x), 2, data_of(&t, 1),
                                                     OVSTAGE_PRIM_MODE_UPSERT, &cuda),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK_LAST_ERROR("write_attribute_on_device: placement->device.device_type 99 is not one of");
    cuda.device.device_type = kDLCUDA;
    cuda.device.device_id = -1;
    CHECK_REJECTED(ovstage_read_attributes_on_device(s.inst, q, &x, 1, latest(UINT64_MAX), &cuda, &r),
                   OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(r == 0);
    CHECK_LAST_ERROR("read_attributes_on_device: placement->device.device_id -1 is negative");

    /* Placed reads serve the requested device's copy: here the host column itself. */
    seal(&s, 1);
    {
        ovstage_placement_t empty = OVSTAGE_PLACEMENT_INIT;
        ovstage_placement_t* placements[2] = {&empty, &cpu};
        for (int i = 0; i < 2; i++) {
            ovstage_read_group_t g;
            ovstage_enqueue_result_t e =
                ovstage_read_attributes_on_device(s.inst, q, &x, 1, latest(UINT64_MAX), placements[i], &r);
            CHECK_STATUS(e.status, OVSTAGE_OK);
            CHECK_STATUS(ovstage_fetch_read_next(s.inst, r, OVSTAGE_TIMEOUT_INFINITE, &g), OVSTAGE_OK);
            CHECK(g.data.tensors[0].device.device_type == kDLCPU);
            CHECK(((const float*)g.data.tensors[0].data)[1] == 2);
            CHECK_STATUS(ovstage_release_group(s.inst, &g), OVSTAGE_OK);
            WAIT_OK(&s, e);
            WAIT_OK(&s, ovstage_release_read(s.inst, r));
        }
    }
    /* A host-placed map stages in host memory and commits like an unplaced one. */
    memset(&md, 0, sizeof md);
    md.attribute = by_token(x);
    {
        ovstage_map_group_t mg;
        ovstage_enqueue_result_t e = ovstage_map_attribute_on_device(s.inst, q, &md, 2, NULL, 0, &cpu, &m);
        CHECK_STATUS(e.status, OVSTAGE_OK);
        CHECK(m != 0);
        CHECK_STATUS(ovstage_fetch_map_next(s.inst, m, OVSTAGE_TIMEOUT_INFINITE, &mg), OVSTAGE_OK);
        CHECK(mg.data.tensors[0].device.device_type == kDLCPU);
        ((float*)mg.data.tensors[0].data)[1] = 20;
        WAIT_OK(&s, ovstage_unmap_attribute(s.inst, m, (ovstage_cuda_sync_t){0, 0}));
        WAIT_OK(&s, e);
        seal(&s, 2);
    }
    CHECK(read_f32(&s, q, x, got, 3) == 1);
    CHECK(got[1] == 20);

    /* The test hooks are served only with OVSTAGE_TEST_HOOKS=1 (the runner sets it). */
    CHECK(hooks(&s) != NULL);
    unsetenv("OVSTAGE_TEST_HOOKS");
    CHECK_STATUS(ovstage_query_extension(s.inst, "ovstage.test.hooks", &table), OVSTAGE_ERROR_NOT_FOUND);
    setenv("OVSTAGE_TEST_HOOKS", "1", 1);

    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- several threads on one instance ------------------------------------------------------ */

#define THREADS 4
#define WRITES_PER_THREAD 200

typedef struct {
    stage_t* s;
    ovstage_query_handle_t q;
    int index;
    int errors;
    int saw_other_threads_error;
} worker_t;

static void* worker(void* arg)
{
    worker_t* wk = (worker_t*)arg;
    char name[16];
    float v[3];
    int i;
    snprintf(name, sizeof name, "t%d", wk->index);
    for (i = 0; i < WRITES_PER_THREAD; ++i) {
        ovstage_op_wait_result_t w;
        ovstage_enqueue_result_t e;
        v[0] = (float)i;
        v[1] = (float)(i + 1);
        v[2] = (float)(i + 2);
        e = write_f32(wk->s, wk->q, name, (ovstage_ordinal_t)(i + 1), v, 3);
        if (e.status != OVSTAGE_OK ||
            ovstage_wait_op(wk->s->inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w) != OVSTAGE_OK ||
            ovstage_release_op(wk->s->inst, e.op_index) != OVSTAGE_OK) {
            wk->errors++;
        }
        /* This thread's last error is its own: a rejected call here, never another's. */
        if (ovstage_query_from_path_list(wk->s->inst, 0, NULL) != OVSTAGE_ERROR_INVALID_ARGUMENT ||
            !last_error_contains("out_handle is NULL")) {
            wk->saw_other_threads_error++;
        }
    }
    return NULL;
}

static void test_threads_on_one_instance(void)
{
    stage_t s = new_stage("threads");
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    pthread_t th[THREADS];
    worker_t wk[THREADS];
    float got[3];
    int i;

    for (i = 0; i < THREADS; ++i) {
        memset(&wk[i], 0, sizeof wk[i]);
        wk[i].s = &s;
        wk[i].q = q;
        wk[i].index = i;
        CHECK(pthread_create(&th[i], NULL, worker, &wk[i]) == 0);
    }
    for (i = 0; i < THREADS; ++i) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK(wk[i].errors == 0);
        CHECK(wk[i].saw_other_threads_error == 0);
    }
    seal(&s, WRITES_PER_THREAD);
    for (i = 0; i < THREADS; ++i) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        got[0] = got[2] = -1;
        CHECK(read_f32(&s, q, token(&s, name), got, 3) == 1);
        CHECK(got[0] == WRITES_PER_THREAD - 1 && got[2] == WRITES_PER_THREAD + 1);
    }
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* Each thread's wait_op keeps its own error_op_ids and texts. */
typedef struct {
    stage_t* s;
    ovstage_op_id_t op;
    int ok;
} waiter_t;

static void* wait_failed(void* arg)
{
    waiter_t* wt = (waiter_t*)arg;
    ovstage_op_wait_result_t w;
    wt->ok = ovstage_wait_op(wt->s->inst, wt->op, OVSTAGE_TIMEOUT_INFINITE, &w) == OVSTAGE_ERROR_OP_FAILED &&
             w.error_op_id_count == 1 && w.error_op_ids[0] == wt->op &&
             ovstage_get_last_op_error(wt->s->inst, wt->op).ptr != NULL;
    return NULL;
}

static void test_wait_results_are_thread_local(void)
{
    stage_t s = new_stage("thread-local waits");
    const test_hooks_t* h = hooks(&s);
    ovx_primpath_list_t list = list_of(&s, ABC, 3);
    ovstage_query_handle_t q = query_of(&s, list);
    float v[3] = {1, 2, 3};
    ovstage_op_wait_result_t w;
    ovstage_enqueue_result_t e;
    pthread_t th;
    waiter_t wt;
    if (h == NULL) {
        return;
    }
    h->write_gate_reset();
    h->write_gate_fail_next();
    e = write_f32(&s, q, "x", 1, v, 3);
    CHECK_STATUS(ovstage_wait_op(s.inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_ERROR_OP_FAILED);
    wt.s = &s;
    wt.op = e.op_index;
    wt.ok = 0;
    CHECK(pthread_create(&th, NULL, wait_failed, &wt) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(wt.ok);
    /* The other thread's wait did not touch this thread's result. */
    CHECK(w.error_op_id_count == 1 && w.error_op_ids[0] == e.op_index);
    CHECK(ovstage_get_last_op_error(s.inst, e.op_index).ptr != NULL);
    CHECK_STATUS(ovstage_release_op(s.inst, e.op_index), OVSTAGE_OK);
    h->write_gate_reset();
    release_query(&s, q);
    release_list(&s, list);
    destroy_stage(&s);
}

/* ---- the library's exported symbols -------------------------------------------------------- */

/* Every exported function, taken as a pointer of its header type (link errors name misses). */
static void test_every_export_links(void)
{
    const void* exports[] = {
        (const void*)ovstage_get_build_info, (const void*)ovstage_initialize,
        (const void*)ovstage_get_config, (const void*)ovstage_shutdown,
        (const void*)ovstage_set_log_callback, (const void*)ovstage_flush_log,
        (const void*)ovstage_create_instance, (const void*)ovstage_destroy_instance,
        (const void*)ovstage_get_usd_stage_id, (const void*)ovstage_get_last_error,
        (const void*)ovstage_clone, (const void*)ovstage_fetch_clone_result,
        (const void*)ovstage_get_hierarchy, (const void*)ovstage_fetch_hierarchy_result,
        (const void*)ovstage_release_hierarchy_result, (const void*)ovstage_release_hierarchy,
        (const void*)ovstage_get_hierarchy_computation_models, (const void*)ovstage_compute_hierarchy,
        (const void*)ovstage_instancing_get_instance_roots,
        (const void*)ovstage_instancing_get_prototype_root,
        (const void*)ovstage_instancing_get_prototype_roots,
        (const void*)ovstage_population_register_usd_schemas,
        (const void*)ovstage_population_open_usd_from_file,
        (const void*)ovstage_population_open_usd_from_string,
        (const void*)ovstage_population_open_usd_from_file_with_desc,
        (const void*)ovstage_population_open_usd_from_string_with_desc,
        (const void*)ovstage_population_repopulate_usd_with_desc,
        (const void*)ovstage_population_add_usd_reference_from_file,
        (const void*)ovstage_population_add_usd_reference_from_string,
        (const void*)ovstage_population_remove_usd_reference, (const void*)ovstage_population_reset_usd,
        (const void*)ovstage_population_apply_usd_time, (const void*)ovstage_population_apply_usd_changes,
        (const void*)ovstage_population_wait_op, (const void*)ovstage_population_get_last_error,
        (const void*)ovstage_population_get_last_op_error,
        (const void*)ovstage_population_export_desc_init,
        (const void*)ovstage_population_export_desc_init_snapshot,
        (const void*)ovstage_population_export_destination_create,
        (const void*)ovstage_population_export_destination_enqueue_create,
        (const void*)ovstage_population_export_to_destination,
        (const void*)ovstage_population_export_enqueue_to_destination,
        (const void*)ovstage_population_export_destination_save,
        (const void*)ovstage_population_export_destination_enqueue_save,
        (const void*)ovstage_population_export_destination_destroy,
        (const void*)ovstage_population_export_destination_enqueue_destroy,
        (const void*)ovstage_population_export_to_usd_file,
        (const void*)ovstage_population_export_enqueue_to_usd_file,
        (const void*)ovstage_population_export_to_usd_layer_identifier,
        (const void*)ovstage_population_export_to_usd_stage_identifier,
        (const void*)ovstage_population_export_enqueue_to_usd_layer_identifier,
        (const void*)ovstage_population_export_enqueue_to_usd_stage_identifier,
        (const void*)ovstage_population_export_wait_op,
    };
    size_t i, n = sizeof exports / sizeof exports[0];
    CHECK(n == 53);
    for (i = 0; i < n; ++i) {
        CHECK(exports[i] != NULL);
    }
    {
        /* Every vtable slot is filled. */
        stage_t s = new_stage("slots");
        const void* const* slots = (const void* const*)s.inst->vtable;
        const void* const* dict = (const void* const*)s.pd->vtable;
        CHECK(sizeof(ovstage_vtable_t) == 28 * sizeof(void*));
        for (i = 0; i < 28; ++i) {
            CHECK(slots[i] != NULL);
        }
        for (i = 0; i < 12; ++i) {
            CHECK(dict[i] != NULL);
        }
        destroy_stage(&s);
    }
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(240);
    if (getenv("OVSTAGE_TEST_HOOKS") == NULL) {
        setenv("OVSTAGE_TEST_HOOKS", "1", 1);
    }
    run_test("build_info_and_version", test_build_info_and_version);
    run_test("error_strings", test_error_strings);
    run_test("initialize_shutdown", test_initialize_shutdown);
    run_test("instances_and_bad_handles", test_instances_and_bad_handles);
    run_test("path_dictionary_slots", test_path_dictionary_slots);
    run_test("path_dictionary_per_instance", test_path_dictionary_per_instance);
    run_test("write_read_round_trip", test_write_read_round_trip);
    run_test("typed_matrix_read_and_tensor_to_write", test_typed_matrix_read_and_tensor_to_write);
    run_test("write_attributes_batch", test_write_attributes_batch);
    run_test("sparse_writes", test_sparse_writes);
    run_test("managed_tensors", test_managed_tensors);
    run_test("bad_write_input", test_bad_write_input);
    run_test("bad_slot_arguments", test_bad_slot_arguments);
    run_test("wait_timeouts_and_release", test_wait_timeouts_and_release);
    run_test("failed_op_errors", test_failed_op_errors);
    run_test("last_error_is_thread_local", test_last_error_is_thread_local);
    run_test("go_panic_becomes_internal", test_go_panic_becomes_internal);
    run_test("fetch_timeouts", test_fetch_timeouts);
    run_test("filter_queries", test_filter_queries);
    run_test("floors_and_ordinal_queries", test_floors_and_ordinal_queries);
    run_test("delete_attributes", test_delete_attributes);
    run_test("map_sessions", test_map_sessions);
    run_test("map_session_terminal_failures", test_map_session_terminal_failures);
    run_test("reserved_attributes", test_reserved_attributes);
    run_test("clone_and_report", test_clone_and_report);
    run_test("hierarchy", test_hierarchy);
    run_test("hierarchy_models_and_automatic_computation", test_hierarchy_models_and_automatic_computation);
    run_test("logging", test_logging);
    run_test("ordinal_admission_policies", test_ordinal_admission_policies);
    run_test("history_window", test_history_window);
    run_test("attribute_mode_force", test_attribute_mode_force);
    run_test("not_in_this_build", test_not_in_this_build);
    run_test("extensions_and_placement", test_extensions_and_placement);
    run_test("threads_on_one_instance", test_threads_on_one_instance);
    run_test("wait_results_are_thread_local", test_wait_results_are_thread_local);
    run_test("every_export_links", test_every_export_links);
    printf("%d passed, %d failed\n", passed_tests, failed_tests);
    return failed_tests == 0 ? 0 : 1;
}
