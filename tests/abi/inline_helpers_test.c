/*
 * Behaviour of the header-only helpers of include/: the ovstage_<slot> and path_dictionary_<slot>
 * forwarders (against fake vtables that record which slot ran and with what), the placement
 * lookup and its wrappers, ovstage_tensor_to_write, the config builders, the predicate
 * constructors, the typed-hierarchy export descriptor and the string helpers.
 *
 * Valid C99/C11 and C++17; tests/python/test_abi_layout.py builds and runs it in each.
 * Prints "N passed, M failed" and exits non-zero when anything failed.
 */
#include <ovstage/ovstage.h>
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>
#include <ovstage/ovstage_population_export.h>
#include <ovx/path_dictionary/path_dictionary_helper.h>
#include <ovx/path_dictionary/path_dictionary_utils.h>

#include <stdio.h>
#include <string.h>

static int g_passed;
static int g_failed;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (cond) {                                                                   \
            ++g_passed;                                                               \
        } else {                                                                      \
            ++g_failed;                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);  \
        }                                                                             \
    } while (0)

/* The last call a fake received: which slot, the context, and its arguments. */
static struct {
    int slot;
    const void* context;
    uint64_t u[6];
    const void* p[4];
} g_call;

static void begin(int slot, const void* context)
{
    memset(&g_call, 0, sizeof g_call);
    g_call.slot = slot;
    g_call.context = context;
}

static char g_stage_context_storage;
static char g_dictionary_context_storage;
#define STAGE_CONTEXT ((ovstage_context_t*)(void*)&g_stage_context_storage)
#define DICTIONARY_CONTEXT ((path_dictionary_context_t*)(void*)&g_dictionary_context_storage)

/* Every fake status slot returns this, so a forwarded return value is recognisable. */
#define FAKE_STATUS OVSTAGE_ERROR_OUT_OF_RANGE

static ovstage_enqueue_result_t enqueued(int slot)
{
    ovstage_enqueue_result_t result;
    result.status = OVSTAGE_OK;
    result.op_index = (ovstage_op_id_t)(1000 + slot);
    return result;
}

/* Fake ovstage vtable: slot n records n (1-based, table order). --------------------------- */

static ovstage_api_status_t fake_wait_op(ovstage_context_t* c, ovstage_op_id_t op,
                                         ovstage_timeout_ns_t timeout,
                                         ovstage_op_wait_result_t* out)
{
    begin(1, c);
    g_call.u[0] = op;
    g_call.u[1] = timeout;
    g_call.p[0] = out;
    return FAKE_STATUS;
}

static ovstage_api_status_t fake_release_op(ovstage_context_t* c, ovstage_op_id_t op)
{
    begin(2, c);
    g_call.u[0] = op;
    return FAKE_STATUS;
}

static ovstage_enqueue_result_t fake_advance_write_floor(ovstage_context_t* c,
                                                         const ovstage_write_floor_desc_t* desc)
{
    begin(3, c);
    g_call.p[0] = desc;
    return enqueued(3);
}

static ovstage_enqueue_result_t fake_get_oldest_preserved_ordinal(
    ovstage_context_t* c, ovstage_ordinal_query_handle_t* out)
{
    begin(4, c);
    g_call.p[0] = out;
    return enqueued(4);
}

static ovstage_enqueue_result_t fake_get_attribute_write_floor(
    ovstage_context_t* c, ovx_string_or_token_t attribute, ovstage_ordinal_query_handle_t* out)
{
    begin(5, c);
    g_call.u[0] = attribute.token;
    g_call.u[1] = attribute.string.length;
    g_call.p[0] = attribute.string.ptr;
    g_call.p[1] = out;
    return enqueued(5);
}

static ovstage_api_status_t fake_fetch_ordinal(ovstage_context_t* c,
                                               ovstage_ordinal_query_handle_t handle,
                                               ovstage_timeout_ns_t timeout,
                                               ovstage_ordinal_t* out)
{
    begin(6, c);
    g_call.u[0] = handle;
    g_call.u[1] = timeout;
    g_call.p[0] = out;
    return FAKE_STATUS;
}

static ovstage_enqueue_result_t fake_release_ordinal_query(ovstage_context_t* c,
                                                           ovstage_ordinal_query_handle_t handle)
{
    begin(7, c);
    g_call.u[0] = handle;
    return enqueued(7);
}

static ovstage_enqueue_result_t fake_query(ovstage_context_t* c, const ovstage_filter_t* filter,
                                           const ovx_token_t* attrs, size_t attr_count,
                                           ovstage_query_handle_t* out)
{
    begin(8, c);
    g_call.p[0] = filter;
    g_call.p[1] = attrs;
    g_call.u[0] = attr_count;
    g_call.p[2] = out;
    return enqueued(8);
}

static ovstage_api_status_t fake_query_from_path_list(ovstage_context_t* c,
                                                      ovx_primpath_list_t list,
                                                      ovstage_query_handle_t* out)
{
    begin(9, c);
    g_call.u[0] = list;
    g_call.p[0] = out;
    return FAKE_STATUS;
}

static ovstage_api_status_t fake_fetch_query_result(ovstage_context_t* c,
                                                    ovstage_query_handle_t handle,
                                                    ovstage_timeout_ns_t timeout,
                                                    ovstage_query_result_t* out)
{
    begin(10, c);
    g_call.u[0] = handle;
    g_call.u[1] = timeout;
    g_call.p[0] = out;
    return FAKE_STATUS;
}

static ovstage_api_status_t fake_release_query_result(ovstage_context_t* c,
                                                      const ovstage_query_result_t* result)
{
    begin(11, c);
    g_call.p[0] = result;
    return FAKE_STATUS;
}

static ovstage_enqueue_result_t fake_release_query(ovstage_context_t* c,
                                                   ovstage_query_handle_t handle)
{
    begin(12, c);
    g_call.u[0] = handle;
    return enqueued(12);
}

static ovstage_enqueue_result_t fake_read_attributes(ovstage_context_t* c,
                                                     ovstage_query_handle_t handle,
                                                     const ovx_token_t* attrs, size_t attr_count,
                                                     ovstage_ordinal_range_t range,
                                                     ovstage_read_handle_t* out)
{
    begin(13, c);
    g_call.u[0] = handle;
    g_call.p[0] = attrs;
    g_call.u[1] = attr_count;
    g_call.u[2] = range.start_ordinal;
    g_call.u[3] = range.end_ordinal;
    g_call.u[4] = range.has_start_ordinal ? 1 : 0;
    g_call.p[1] = out;
    return enqueued(13);
}

static ovstage_api_status_t fake_fetch_read_next(ovstage_context_t* c,
                                                 ovstage_read_handle_t handle,
                                                 ovstage_timeout_ns_t timeout,
                                                 ovstage_read_group_t* out)
{
    begin(14, c);
    g_call.u[0] = handle;
    g_call.u[1] = timeout;
    g_call.p[0] = out;
    return FAKE_STATUS;
}

static ovstage_api_status_t fake_release_group(ovstage_context_t* c,
                                               const ovstage_read_group_t* group)
{
    begin(15, c);
    g_call.p[0] = group;
    return FAKE_STATUS;
}

static ovstage_enqueue_result_t fake_release_read(ovstage_context_t* c,
                                                  ovstage_read_handle_t handle)
{
    begin(16, c);
    g_call.u[0] = handle;
    return enqueued(16);
}

static ovstage_enqueue_result_t fake_write_attribute(ovstage_context_t* c,
                                                     ovstage_query_handle_t handle,
                                                     ovx_string_or_token_t attribute,
                                                     ovstage_ordinal_t ordinal,
                                                     ovstage_write_data_t data,
                                                     ovstage_prim_mode_t prim_mode)
{
    begin(17, c);
    g_call.u[0] = handle;
    g_call.u[1] = attribute.token;
    g_call.u[2] = ordinal;
    g_call.u[3] = data.count;
    g_call.u[4] = (uint64_t)prim_mode;
    g_call.u[5] = (uint64_t)data.attribute_mode;
    g_call.p[0] = attribute.string.ptr;
    g_call.p[1] = data.tensors;
    g_call.p[2] = data.index_map;
    g_call.p[3] = data.mask;
    return enqueued(17);
}

static ovstage_enqueue_result_t fake_map_attribute(ovstage_context_t* c,
                                                   ovstage_query_handle_t handle,
                                                   const ovstage_map_desc_t* desc,
                                                   ovstage_ordinal_t ordinal,
                                                   const size_t* element_sizes,
                                                   size_t element_count,
                                                   ovstage_map_handle_t* out)
{
    begin(18, c);
    g_call.u[0] = handle;
    g_call.p[0] = desc;
    g_call.u[1] = ordinal;
    g_call.p[1] = element_sizes;
    g_call.u[2] = element_count;
    g_call.p[2] = out;
    return enqueued(18);
}

static ovstage_api_status_t fake_fetch_map_next(ovstage_context_t* c, ovstage_map_handle_t handle,
                                                ovstage_timeout_ns_t timeout,
                                                ovstage_map_group_t* out)
{
    begin(19, c);
    g_call.u[0] = handle;
    g_call.u[1] = timeout;
    g_call.p[0] = out;
    return FAKE_STATUS;
}

static ovstage_enqueue_result_t fake_unmap_group(ovstage_context_t* c,
                                                 ovstage_map_handle_t handle,
                                                 const ovstage_map_group_t* group,
                                                 ovstage_cuda_sync_t sync)
{
    begin(20, c);
    g_call.u[0] = handle;
    g_call.p[0] = group;
    g_call.u[1] = sync.stream;
    g_call.u[2] = sync.wait_event;
    return enqueued(20);
}

static ovstage_enqueue_result_t fake_unmap_attribute(ovstage_context_t* c,
                                                     ovstage_map_handle_t handle,
                                                     ovstage_cuda_sync_t sync)
{
    begin(21, c);
    g_call.u[0] = handle;
    g_call.u[1] = sync.stream;
    g_call.u[2] = sync.wait_event;
    return enqueued(21);
}

static ovstage_enqueue_result_t fake_delete_attributes(ovstage_context_t* c,
                                                       ovstage_query_handle_t handle,
                                                       const ovx_string_or_token_t* attributes,
                                                       size_t attribute_count,
                                                       ovstage_ordinal_t ordinal)
{
    begin(22, c);
    g_call.u[0] = handle;
    g_call.p[0] = attributes;
    g_call.u[1] = attribute_count;
    g_call.u[2] = ordinal;
    return enqueued(22);
}

static void fake_get_version(ovstage_context_t* c, uint32_t* major, uint32_t* minor,
                             uint32_t* patch)
{
    begin(23, c);
    *major = OVSTAGE_VERSION_MAJOR;
    *minor = OVSTAGE_VERSION_MINOR;
    *patch = OVSTAGE_VERSION_PATCH;
}

static const char* fake_get_error_string(ovstage_context_t* c, ovstage_api_status_t error)
{
    begin(24, c);
    g_call.u[0] = (uint64_t)error;
    return "fake error text";
}

static ovx_string_t fake_get_last_op_error(ovstage_context_t* c, ovstage_op_id_t op)
{
    ovx_string_t text;
    begin(25, c);
    g_call.u[0] = op;
    text.ptr = "op failed";
    text.length = 9;
    return text;
}

static path_dictionary_instance_t g_dictionary;

static path_dictionary_instance_t* fake_get_path_dictionary(ovstage_context_t* c)
{
    begin(26, c);
    return &g_dictionary;
}

static ovstage_enqueue_result_t fake_write_attributes(ovstage_context_t* c,
                                                      ovstage_query_handle_t handle,
                                                      const ovstage_attribute_write_t* writes,
                                                      size_t write_count,
                                                      ovstage_ordinal_t ordinal,
                                                      ovstage_prim_mode_t prim_mode)
{
    begin(27, c);
    g_call.u[0] = handle;
    g_call.p[0] = writes;
    g_call.u[1] = write_count;
    g_call.u[2] = ordinal;
    g_call.u[3] = (uint64_t)prim_mode;
    return enqueued(27);
}

/* Placement table handed out by the fake query_extension; g_extension_answer picks the case. */
enum extension_answer {
    ANSWER_TABLE,        /* OK, a valid v1 table */
    ANSWER_LARGER_TABLE, /* OK, struct_size larger than v1 (appended entries) */
    ANSWER_NOT_FOUND,    /* NOT_FOUND */
    ANSWER_NULL_TABLE,   /* OK but a NULL table */
    ANSWER_VERSION_2,    /* OK, version 2 */
    ANSWER_TOO_SMALL     /* OK, struct_size 32 */
};
static enum extension_answer g_extension_answer;
static ovstage_placement_extension_v1_t g_placement_table;
static const char* g_queried_name;

static ovstage_api_status_t fake_query_extension(ovstage_context_t* c, const char* name,
                                                 const void** out)
{
    begin(28, c);
    g_queried_name = name;
    g_placement_table.header.version = OVSTAGE_PLACEMENT_EXTENSION_VERSION;
    g_placement_table.header.struct_size = (uint32_t)sizeof g_placement_table;
    *out = &g_placement_table;
    switch (g_extension_answer) {
    case ANSWER_TABLE:
        break;
    case ANSWER_LARGER_TABLE:
        g_placement_table.header.struct_size += 8;
        break;
    case ANSWER_NOT_FOUND:
        *out = NULL;
        return OVSTAGE_ERROR_NOT_FOUND;
    case ANSWER_NULL_TABLE:
        *out = NULL;
        break;
    case ANSWER_VERSION_2:
        g_placement_table.header.version = 2;
        break;
    case ANSWER_TOO_SMALL:
        g_placement_table.header.struct_size = 32;
        break;
    }
    return OVSTAGE_OK;
}

static ovstage_enqueue_result_t fake_write_attribute_on_device(
    ovstage_context_t* c, ovstage_query_handle_t handle, ovx_string_or_token_t attribute,
    ovstage_ordinal_t ordinal, ovstage_write_data_t data, ovstage_prim_mode_t prim_mode,
    const ovstage_placement_t* placement)
{
    begin(101, c);
    g_call.u[0] = handle;
    g_call.u[1] = attribute.token;
    g_call.u[2] = ordinal;
    g_call.u[3] = data.count;
    g_call.u[4] = (uint64_t)prim_mode;
    g_call.p[0] = placement;
    return enqueued(101);
}

static ovstage_enqueue_result_t fake_write_attributes_on_device(
    ovstage_context_t* c, ovstage_query_handle_t handle, const ovstage_attribute_write_t* writes,
    size_t write_count, ovstage_ordinal_t ordinal, ovstage_prim_mode_t prim_mode,
    const ovstage_placement_t* placement)
{
    begin(102, c);
    g_call.u[0] = handle;
    g_call.p[0] = writes;
    g_call.u[1] = write_count;
    g_call.u[2] = ordinal;
    g_call.u[3] = (uint64_t)prim_mode;
    g_call.p[1] = placement;
    return enqueued(102);
}

static ovstage_enqueue_result_t fake_map_attribute_on_device(
    ovstage_context_t* c, ovstage_query_handle_t handle, const ovstage_map_desc_t* desc,
    ovstage_ordinal_t ordinal, const size_t* element_sizes, size_t element_count,
    const ovstage_placement_t* placement, ovstage_map_handle_t* out)
{
    begin(103, c);
    g_call.u[0] = handle;
    g_call.p[0] = desc;
    g_call.u[1] = ordinal;
    g_call.p[1] = element_sizes;
    g_call.u[2] = element_count;
    g_call.p[2] = placement;
    g_call.p[3] = out;
    return enqueued(103);
}

static ovstage_enqueue_result_t fake_read_attributes_on_device(
    ovstage_context_t* c, ovstage_query_handle_t handle, const ovx_token_t* attrs,
    size_t attr_count, ovstage_ordinal_range_t range, const ovstage_placement_t* placement,
    ovstage_read_handle_t* out)
{
    begin(104, c);
    g_call.u[0] = handle;
    g_call.p[0] = attrs;
    g_call.u[1] = attr_count;
    g_call.u[2] = range.end_ordinal;
    g_call.p[1] = placement;
    g_call.p[2] = out;
    return enqueued(104);
}

static ovstage_vtable_t g_vtable;
static ovstage_instance_t g_instance;

static void install_fake_instance(void)
{
    g_vtable.wait_op = fake_wait_op;
    g_vtable.release_op = fake_release_op;
    g_vtable.advance_write_floor = fake_advance_write_floor;
    g_vtable.get_oldest_preserved_ordinal = fake_get_oldest_preserved_ordinal;
    g_vtable.get_attribute_write_floor = fake_get_attribute_write_floor;
    g_vtable.fetch_ordinal = fake_fetch_ordinal;
    g_vtable.release_ordinal_query = fake_release_ordinal_query;
    g_vtable.query = fake_query;
    g_vtable.query_from_path_list = fake_query_from_path_list;
    g_vtable.fetch_query_result = fake_fetch_query_result;
    g_vtable.release_query_result = fake_release_query_result;
    g_vtable.release_query = fake_release_query;
    g_vtable.read_attributes = fake_read_attributes;
    g_vtable.fetch_read_next = fake_fetch_read_next;
    g_vtable.release_group = fake_release_group;
    g_vtable.release_read = fake_release_read;
    g_vtable.write_attribute = fake_write_attribute;
    g_vtable.map_attribute = fake_map_attribute;
    g_vtable.fetch_map_next = fake_fetch_map_next;
    g_vtable.unmap_group = fake_unmap_group;
    g_vtable.unmap_attribute = fake_unmap_attribute;
    g_vtable.delete_attributes = fake_delete_attributes;
    g_vtable.get_version = fake_get_version;
    g_vtable.get_error_string = fake_get_error_string;
    g_vtable.get_last_op_error = fake_get_last_op_error;
    g_vtable.get_path_dictionary = fake_get_path_dictionary;
    g_vtable.write_attributes = fake_write_attributes;
    g_vtable.query_extension = fake_query_extension;
    g_instance.vtable = &g_vtable;
    g_instance.context = STAGE_CONTEXT;

    g_placement_table.write_attribute_on_device = fake_write_attribute_on_device;
    g_placement_table.write_attributes_on_device = fake_write_attributes_on_device;
    g_placement_table.map_attribute_on_device = fake_map_attribute_on_device;
    g_placement_table.read_attributes_on_device = fake_read_attributes_on_device;
}

/* The fake for `slot` ran, with the instance's context. */
static int ran(int slot)
{
    return g_call.slot == slot && g_call.context == (const void*)STAGE_CONTEXT;
}

static int enqueued_by(ovstage_enqueue_result_t result, int slot)
{
    return result.status == OVSTAGE_OK && result.op_index == (ovstage_op_id_t)(1000 + slot);
}

static ovx_string_or_token_t named(ovx_token_t token, const char* text)
{
    ovx_string_or_token_t name;
    name.token = token;
    name.string.ptr = text;
    name.string.length = text != NULL ? strlen(text) : 0;
    return name;
}

static void test_vtable_wrappers(void)
{
    ovstage_instance_t* inst = &g_instance;
    ovstage_op_wait_result_t wait_result;
    ovstage_write_floor_desc_t floor_desc;
    ovstage_ordinal_query_handle_t ordinal_query;
    ovstage_ordinal_t ordinal;
    ovstage_filter_t filter;
    ovx_token_t attrs[2] = {11, 12};
    ovstage_query_handle_t query_handle;
    ovstage_query_result_t query_result;
    ovstage_ordinal_range_t range;
    ovstage_read_handle_t read_handle;
    ovstage_read_group_t read_group;
    ovstage_write_data_t data;
    DLTensor tensor;
    uint32_t index_map[2] = {1, 0};
    uint64_t mask[1] = {3};
    ovstage_map_desc_t map_desc;
    size_t element_sizes[2] = {4, 8};
    ovstage_map_handle_t map_handle;
    ovstage_map_group_t map_group;
    ovstage_cuda_sync_t sync;
    ovx_string_or_token_t names[2];
    uint32_t major = 9, minor = 9, patch = 9;
    ovx_string_t text;
    ovstage_attribute_write_t writes[3];
    const void* extension = NULL;

    /* The fakes only compare addresses, but the compiler rightly wants initialised inputs. */
    memset(&floor_desc, 0, sizeof floor_desc);
    memset(&filter, 0, sizeof filter);
    memset(&query_result, 0, sizeof query_result);
    memset(&read_group, 0, sizeof read_group);
    memset(&map_desc, 0, sizeof map_desc);
    memset(&map_group, 0, sizeof map_group);
    memset(writes, 0, sizeof writes);
    memset(&tensor, 0, sizeof tensor);

    CHECK(ovstage_wait_op(inst, 41, 42, &wait_result) == FAKE_STATUS);
    CHECK(ran(1) && g_call.u[0] == 41 && g_call.u[1] == 42 && g_call.p[0] == &wait_result);

    CHECK(ovstage_release_op(inst, 43) == FAKE_STATUS);
    CHECK(ran(2) && g_call.u[0] == 43);

    CHECK(enqueued_by(ovstage_advance_write_floor(inst, &floor_desc), 3));
    CHECK(ran(3) && g_call.p[0] == &floor_desc);

    CHECK(enqueued_by(ovstage_get_oldest_preserved_ordinal(inst, &ordinal_query), 4));
    CHECK(ran(4) && g_call.p[0] == &ordinal_query);

    names[0] = named(0, "points");
    CHECK(enqueued_by(ovstage_get_attribute_write_floor(inst, names[0], &ordinal_query), 5));
    CHECK(ran(5) && g_call.u[0] == 0 && g_call.u[1] == 6 && g_call.p[0] == names[0].string.ptr &&
          g_call.p[1] == &ordinal_query);

    CHECK(ovstage_fetch_ordinal(inst, 44, OVSTAGE_TIMEOUT_INFINITE, &ordinal) == FAKE_STATUS);
    CHECK(ran(6) && g_call.u[0] == 44 && g_call.u[1] == OVSTAGE_TIMEOUT_INFINITE &&
          g_call.p[0] == &ordinal);

    CHECK(enqueued_by(ovstage_release_ordinal_query(inst, 45), 7));
    CHECK(ran(7) && g_call.u[0] == 45);

    CHECK(enqueued_by(ovstage_query(inst, &filter, attrs, 2, &query_handle), 8));
    CHECK(ran(8) && g_call.p[0] == &filter && g_call.p[1] == attrs && g_call.u[0] == 2 &&
          g_call.p[2] == &query_handle);

    CHECK(ovstage_query_from_path_list(inst, 46, &query_handle) == FAKE_STATUS);
    CHECK(ran(9) && g_call.u[0] == 46 && g_call.p[0] == &query_handle);

    CHECK(ovstage_fetch_query_result(inst, 47, 0, &query_result) == FAKE_STATUS);
    CHECK(ran(10) && g_call.u[0] == 47 && g_call.u[1] == 0 && g_call.p[0] == &query_result);

    CHECK(ovstage_release_query_result(inst, &query_result) == FAKE_STATUS);
    CHECK(ran(11) && g_call.p[0] == &query_result);

    CHECK(enqueued_by(ovstage_release_query(inst, 48), 12));
    CHECK(ran(12) && g_call.u[0] == 48);

    range.start_ordinal = 3;
    range.end_ordinal = 6;
    range.has_start_ordinal = true;
    CHECK(enqueued_by(ovstage_read_attributes(inst, 49, attrs, 1, range, &read_handle), 13));
    CHECK(ran(13) && g_call.u[0] == 49 && g_call.p[0] == attrs && g_call.u[1] == 1 &&
          g_call.u[2] == 3 && g_call.u[3] == 6 && g_call.u[4] == 1 && g_call.p[1] == &read_handle);

    CHECK(ovstage_fetch_read_next(inst, 50, 5, &read_group) == FAKE_STATUS);
    CHECK(ran(14) && g_call.u[0] == 50 && g_call.u[1] == 5 && g_call.p[0] == &read_group);

    CHECK(ovstage_release_group(inst, &read_group) == FAKE_STATUS);
    CHECK(ran(15) && g_call.p[0] == &read_group);

    CHECK(enqueued_by(ovstage_release_read(inst, 51), 16));
    CHECK(ran(16) && g_call.u[0] == 51);

    memset(&data, 0, sizeof data);
    data.tensors = &tensor;
    data.tensor_count = 1;
    data.count = 2;
    data.index_map = index_map;
    data.mask = mask;
    data.attribute_mode = OVSTAGE_ATTRIBUTE_MODE_FORCE;
    names[1] = named(77, NULL);
    CHECK(enqueued_by(ovstage_write_attribute(inst, 52, names[1], 8, data,
                                              OVSTAGE_PRIM_MODE_INSERT),
                      17));
    CHECK(ran(17) && g_call.u[0] == 52 && g_call.u[1] == 77 && g_call.u[2] == 8 &&
          g_call.u[3] == 2 && g_call.u[4] == OVSTAGE_PRIM_MODE_INSERT &&
          g_call.u[5] == OVSTAGE_ATTRIBUTE_MODE_FORCE && g_call.p[0] == NULL &&
          g_call.p[1] == &tensor && g_call.p[2] == index_map && g_call.p[3] == mask);

    CHECK(enqueued_by(ovstage_map_attribute(inst, 53, &map_desc, 9, element_sizes, 2,
                                            &map_handle),
                      18));
    CHECK(ran(18) && g_call.u[0] == 53 && g_call.p[0] == &map_desc && g_call.u[1] == 9 &&
          g_call.p[1] == element_sizes && g_call.u[2] == 2 && g_call.p[2] == &map_handle);

    CHECK(ovstage_fetch_map_next(inst, 54, 6, &map_group) == FAKE_STATUS);
    CHECK(ran(19) && g_call.u[0] == 54 && g_call.u[1] == 6 && g_call.p[0] == &map_group);

    sync.stream = 0x51;
    sync.wait_event = 0xE1;
    CHECK(enqueued_by(ovstage_unmap_group(inst, 55, &map_group, sync), 20));
    CHECK(ran(20) && g_call.u[0] == 55 && g_call.p[0] == &map_group && g_call.u[1] == 0x51 &&
          g_call.u[2] == 0xE1);

    CHECK(enqueued_by(ovstage_unmap_attribute(inst, 56, sync), 21));
    CHECK(ran(21) && g_call.u[0] == 56 && g_call.u[1] == 0x51 && g_call.u[2] == 0xE1);

    CHECK(enqueued_by(ovstage_delete_attributes(inst, 57, names, 2, 10), 22));
    CHECK(ran(22) && g_call.u[0] == 57 && g_call.p[0] == names && g_call.u[1] == 2 &&
          g_call.u[2] == 10);

    ovstage_get_version(inst, &major, &minor, &patch);
    CHECK(ran(23) && major == 0 && minor == 3 && patch == 0);

    CHECK(strcmp(ovstage_get_error_string(inst, OVSTAGE_ERROR_TIMEOUT), "fake error text") == 0);
    CHECK(ran(24) && g_call.u[0] == OVSTAGE_ERROR_TIMEOUT);

    text = ovstage_get_last_op_error(inst, 58);
    CHECK(ran(25) && g_call.u[0] == 58 && text.length == 9 && memcmp(text.ptr, "op failed", 9) == 0);

    CHECK(ovstage_get_path_dictionary(inst) == &g_dictionary);
    CHECK(ran(26));
    begin(0, NULL);
    CHECK(ovstage_get_path_dictionary(NULL) == NULL);
    CHECK(g_call.slot == 0); /* no slot ran */

    CHECK(enqueued_by(ovstage_write_attributes(inst, 59, writes, 3, 11, OVSTAGE_PRIM_MODE_UPSERT),
                      27));
    CHECK(ran(27) && g_call.u[0] == 59 && g_call.p[0] == writes && g_call.u[1] == 3 &&
          g_call.u[2] == 11 && g_call.u[3] == OVSTAGE_PRIM_MODE_UPSERT);

    g_extension_answer = ANSWER_TABLE;
    CHECK(ovstage_query_extension(inst, "some.name", &extension) == OVSTAGE_OK);
    CHECK(ran(28) && strcmp(g_queried_name, "some.name") == 0 &&
          extension == &g_placement_table);
}

/* Fake path dictionary ------------------------------------------------------------------------ */

static ovx_api_result_t dictionary_result(int slot)
{
    ovx_api_result_t result;
    result.status = OVX_API_ERROR;
    result.error.ptr = "fake";
    result.error.length = (size_t)slot; /* identifies the slot that answered */
    return result;
}

static int dictionary_ran(int slot)
{
    return g_call.slot == slot && g_call.context == (const void*)DICTIONARY_CONTEXT;
}

static int answered_by(ovx_api_result_t result, int slot)
{
    return result.status == OVX_API_ERROR && result.error.length == (size_t)slot;
}

static ovx_api_result_t fake_create_tokens_from_strings(path_dictionary_context_t* c,
                                                        const ovx_string_t* strings, size_t n,
                                                        ovx_token_t* out)
{
    begin(1, c);
    g_call.p[0] = strings;
    g_call.u[0] = n;
    g_call.p[1] = out;
    return dictionary_result(1);
}

static ovx_api_result_t fake_create_paths_from_tokens(path_dictionary_context_t* c,
                                                      const ovx_token_t* tokens,
                                                      const size_t* counts, size_t n,
                                                      ovx_primpath_t* out)
{
    begin(2, c);
    g_call.p[0] = tokens;
    g_call.p[1] = counts;
    g_call.u[0] = n;
    g_call.p[2] = out;
    return dictionary_result(2);
}

static ovx_api_result_t fake_create_paths_from_strings(path_dictionary_context_t* c,
                                                       const ovx_string_t* strings, size_t n,
                                                       ovx_primpath_t* out)
{
    begin(3, c);
    g_call.p[0] = strings;
    g_call.u[0] = n;
    g_call.p[1] = out;
    return dictionary_result(3);
}

static ovx_api_result_t fake_create_path_list_from_paths(path_dictionary_context_t* c,
                                                         const ovx_primpath_t* paths, size_t n,
                                                         ovx_primpath_list_t* out)
{
    begin(4, c);
    g_call.p[0] = paths;
    g_call.u[0] = n;
    g_call.p[1] = out;
    return dictionary_result(4);
}

static ovx_api_result_t fake_create_path_list_from_strings(path_dictionary_context_t* c,
                                                           const ovx_string_t* strings, size_t n,
                                                           ovx_primpath_list_t* out)
{
    begin(5, c);
    g_call.p[0] = strings;
    g_call.u[0] = n;
    g_call.p[1] = out;
    return dictionary_result(5);
}

static ovx_api_result_t fake_add_path_list_reference(path_dictionary_context_t* c,
                                                     ovx_primpath_list_t list)
{
    begin(6, c);
    g_call.u[0] = list;
    return dictionary_result(6);
}

static ovx_api_result_t fake_release_path_list_reference(path_dictionary_context_t* c,
                                                         ovx_primpath_list_t list)
{
    begin(7, c);
    g_call.u[0] = list;
    return dictionary_result(7);
}

static ovx_api_result_t fake_get_strings_from_tokens(path_dictionary_context_t* c,
                                                     const ovx_token_t* tokens, size_t n,
                                                     ovx_string_t* out)
{
    begin(8, c);
    g_call.p[0] = tokens;
    g_call.u[0] = n;
    g_call.p[1] = out;
    return dictionary_result(8);
}

static ovx_api_result_t fake_get_tokens_from_paths(path_dictionary_context_t* c,
                                                   const ovx_primpath_t* paths, size_t n,
                                                   ovx_token_t* buffer, size_t buffer_size,
                                                   ovx_token_t** per_path, size_t* counts,
                                                   size_t* processed)
{
    begin(9, c);
    g_call.p[0] = paths;
    g_call.u[0] = n;
    g_call.p[1] = buffer;
    g_call.u[1] = buffer_size;
    g_call.p[2] = per_path;
    g_call.p[3] = counts;
    g_call.u[2] = (uint64_t)(uintptr_t)processed;
    return dictionary_result(9);
}

static ovx_api_result_t fake_get_num_paths_from_path_list(path_dictionary_context_t* c,
                                                          ovx_primpath_list_t list, size_t* out)
{
    begin(10, c);
    g_call.u[0] = list;
    g_call.p[0] = out;
    return dictionary_result(10);
}

static ovx_api_result_t fake_get_paths_from_path_list(path_dictionary_context_t* c,
                                                      ovx_primpath_list_t list, size_t start,
                                                      size_t max, ovx_primpath_t* out,
                                                      size_t* count)
{
    begin(11, c);
    g_call.u[0] = list;
    g_call.u[1] = start;
    g_call.u[2] = max;
    g_call.p[0] = out;
    g_call.p[1] = count;
    return dictionary_result(11);
}

static void fake_release_error(path_dictionary_context_t* c, ovx_string_t error)
{
    begin(12, c);
    g_call.p[0] = error.ptr;
    g_call.u[0] = error.length;
}

static void test_path_dictionary_wrappers(void)
{
    static path_dictionary_vtable_t vtable;
    path_dictionary_instance_t* pd = &g_dictionary;
    ovx_string_t strings[2];
    ovx_token_t tokens[4];
    size_t counts[2];
    ovx_primpath_t paths[2];
    ovx_primpath_list_t list;
    ovx_token_t* per_path[2];
    size_t processed;
    size_t n;

    memset(strings, 0, sizeof strings);
    memset(tokens, 0, sizeof tokens);
    memset(counts, 0, sizeof counts);
    memset(paths, 0, sizeof paths);

    vtable.create_tokens_from_strings = fake_create_tokens_from_strings;
    vtable.create_paths_from_tokens = fake_create_paths_from_tokens;
    vtable.create_paths_from_strings = fake_create_paths_from_strings;
    vtable.create_path_list_from_paths = fake_create_path_list_from_paths;
    vtable.create_path_list_from_strings = fake_create_path_list_from_strings;
    vtable.add_path_list_reference = fake_add_path_list_reference;
    vtable.release_path_list_reference = fake_release_path_list_reference;
    vtable.get_strings_from_tokens = fake_get_strings_from_tokens;
    vtable.get_tokens_from_paths = fake_get_tokens_from_paths;
    vtable.get_num_paths_from_path_list = fake_get_num_paths_from_path_list;
    vtable.get_paths_from_path_list = fake_get_paths_from_path_list;
    vtable.release_error = fake_release_error;
    g_dictionary.vtable = &vtable;
    g_dictionary.context = DICTIONARY_CONTEXT;

    CHECK(answered_by(path_dictionary_create_tokens_from_strings(pd, strings, 2, tokens), 1));
    CHECK(dictionary_ran(1) && g_call.p[0] == strings && g_call.u[0] == 2 &&
          g_call.p[1] == tokens);
    CHECK(answered_by(path_dictionary_create_paths_from_tokens(pd, tokens, counts, 2, paths), 2));
    CHECK(dictionary_ran(2) && g_call.p[0] == tokens && g_call.p[1] == counts &&
          g_call.u[0] == 2 && g_call.p[2] == paths);
    CHECK(answered_by(path_dictionary_create_paths_from_strings(pd, strings, 1, paths), 3));
    CHECK(dictionary_ran(3) && g_call.p[0] == strings && g_call.u[0] == 1 &&
          g_call.p[1] == paths);
    CHECK(answered_by(path_dictionary_create_path_list_from_paths(pd, paths, 2, &list), 4));
    CHECK(dictionary_ran(4) && g_call.p[0] == paths && g_call.u[0] == 2 && g_call.p[1] == &list);
    CHECK(answered_by(path_dictionary_create_path_list_from_strings(pd, strings, 2, &list), 5));
    CHECK(dictionary_ran(5) && g_call.p[0] == strings && g_call.u[0] == 2 &&
          g_call.p[1] == &list);
    CHECK(answered_by(path_dictionary_add_path_list_reference(pd, 61), 6));
    CHECK(dictionary_ran(6) && g_call.u[0] == 61);
    CHECK(answered_by(path_dictionary_release_path_list_reference(pd, 62), 7));
    CHECK(dictionary_ran(7) && g_call.u[0] == 62);
    CHECK(answered_by(path_dictionary_get_strings_from_tokens(pd, tokens, 3, strings), 8));
    CHECK(dictionary_ran(8) && g_call.p[0] == tokens && g_call.u[0] == 3 &&
          g_call.p[1] == strings);
    CHECK(answered_by(path_dictionary_get_tokens_from_paths(pd, paths, 2, tokens, 4, per_path,
                                                            counts, &processed),
                      9));
    CHECK(dictionary_ran(9) && g_call.p[0] == paths && g_call.u[0] == 2 && g_call.p[1] == tokens &&
          g_call.u[1] == 4 && g_call.p[2] == per_path && g_call.p[3] == counts &&
          g_call.u[2] == (uint64_t)(uintptr_t)&processed);
    CHECK(answered_by(path_dictionary_get_num_paths_from_path_list(pd, 63, &n), 10));
    CHECK(dictionary_ran(10) && g_call.u[0] == 63 && g_call.p[0] == &n);
    CHECK(answered_by(path_dictionary_get_paths_from_path_list(pd, 64, 1, 2, paths, &n), 11));
    CHECK(dictionary_ran(11) && g_call.u[0] == 64 && g_call.u[1] == 1 && g_call.u[2] == 2 &&
          g_call.p[0] == paths && g_call.p[1] == &n);
    strings[0].ptr = "err";
    strings[0].length = 3;
    path_dictionary_release_error(pd, strings[0]);
    CHECK(dictionary_ran(12) && g_call.p[0] == strings[0].ptr && g_call.u[0] == 3);
}

/* Placement lookup and wrappers ------------------------------------------------------------------ */

static void test_placement(void)
{
    ovstage_instance_t* inst = &g_instance;
    const ovstage_placement_extension_v1_t* ext;
    ovstage_placement_t placement = OVSTAGE_PLACEMENT_INIT;
    ovstage_write_data_t data;
    ovstage_attribute_write_t writes[2];
    ovstage_map_desc_t desc;
    size_t element_sizes[1] = {12};
    ovx_token_t attrs[1] = {5};
    ovstage_ordinal_range_t range;
    ovstage_map_handle_t map_handle;
    ovstage_read_handle_t read_handle;
    ovstage_enqueue_result_t result;
    int answer;

    memset(&data, 0, sizeof data);
    memset(&range, 0, sizeof range);
    memset(writes, 0, sizeof writes);
    memset(&desc, 0, sizeof desc);
    range.end_ordinal = 4;

    CHECK(ovstage_query_placement_extension(inst, NULL) == OVSTAGE_ERROR_INVALID_ARGUMENT);
    ext = &g_placement_table;
    CHECK(ovstage_query_placement_extension(NULL, &ext) == OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(ext == NULL);

    g_extension_answer = ANSWER_TABLE;
    CHECK(ovstage_query_placement_extension(inst, &ext) == OVSTAGE_OK);
    CHECK(ext == &g_placement_table && ran(28) &&
          strcmp(g_queried_name, OVSTAGE_PLACEMENT_EXTENSION_NAME) == 0);

    g_extension_answer = ANSWER_LARGER_TABLE;
    CHECK(ovstage_query_placement_extension(inst, &ext) == OVSTAGE_OK && ext != NULL);

    for (answer = ANSWER_NOT_FOUND; answer <= ANSWER_TOO_SMALL; ++answer) {
        g_extension_answer = (enum extension_answer)answer;
        ext = &g_placement_table;
        CHECK(ovstage_query_placement_extension(inst, &ext) == OVSTAGE_ERROR_NOT_FOUND);
        CHECK(ext == NULL);

        result = ovstage_write_attribute_on_device(inst, 1, named(2, NULL), 3, data,
                                                   OVSTAGE_PRIM_MODE_UPSERT, &placement);
        CHECK(result.status == OVSTAGE_ERROR_NOT_FOUND && result.op_index == 0 && ran(28));
        result = ovstage_write_attributes_on_device(inst, 1, writes, 2, 3,
                                                    OVSTAGE_PRIM_MODE_UPSERT, &placement);
        CHECK(result.status == OVSTAGE_ERROR_NOT_FOUND && result.op_index == 0 && ran(28));
        map_handle = 99;
        result = ovstage_map_attribute_on_device(inst, 1, &desc, 3, element_sizes, 1, &placement,
                                                 &map_handle);
        CHECK(result.status == OVSTAGE_ERROR_NOT_FOUND && result.op_index == 0 &&
              map_handle == 0 && ran(28));
        result = ovstage_map_attribute_on_device(inst, 1, &desc, 3, element_sizes, 1, &placement,
                                                 NULL);
        CHECK(result.status == OVSTAGE_ERROR_NOT_FOUND);
        read_handle = 99;
        result = ovstage_read_attributes_on_device(inst, 1, attrs, 1, range, &placement,
                                                   &read_handle);
        CHECK(result.status == OVSTAGE_ERROR_NOT_FOUND && result.op_index == 0 &&
              read_handle == 0 && ran(28));
        result = ovstage_read_attributes_on_device(inst, 1, attrs, 1, range, &placement, NULL);
        CHECK(result.status == OVSTAGE_ERROR_NOT_FOUND);
    }

    g_extension_answer = ANSWER_TABLE;
    data.count = 7;
    CHECK(enqueued_by(ovstage_write_attribute_on_device(inst, 71, named(72, NULL), 73, data,
                                                        OVSTAGE_PRIM_MODE_INSERT, &placement),
                      101));
    CHECK(ran(101) && g_call.u[0] == 71 && g_call.u[1] == 72 && g_call.u[2] == 73 &&
          g_call.u[3] == 7 && g_call.u[4] == OVSTAGE_PRIM_MODE_INSERT &&
          g_call.p[0] == &placement);
    CHECK(enqueued_by(ovstage_write_attributes_on_device(inst, 74, writes, 2, 75,
                                                         OVSTAGE_PRIM_MODE_UPSERT, NULL),
                      102));
    CHECK(ran(102) && g_call.u[0] == 74 && g_call.p[0] == writes && g_call.u[1] == 2 &&
          g_call.u[2] == 75 && g_call.p[1] == NULL);
    CHECK(enqueued_by(ovstage_map_attribute_on_device(inst, 76, &desc, 77, element_sizes, 1,
                                                      &placement, &map_handle),
                      103));
    CHECK(ran(103) && g_call.u[0] == 76 && g_call.p[0] == &desc && g_call.u[1] == 77 &&
          g_call.p[1] == element_sizes && g_call.u[2] == 1 && g_call.p[2] == &placement &&
          g_call.p[3] == &map_handle);
    CHECK(enqueued_by(ovstage_read_attributes_on_device(inst, 78, attrs, 1, range, &placement,
                                                        &read_handle),
                      104));
    CHECK(ran(104) && g_call.u[0] == 78 && g_call.p[0] == attrs && g_call.u[1] == 1 &&
          g_call.u[2] == 4 && g_call.p[1] == &placement && g_call.p[2] == &read_handle);

    CHECK(placement.device.device_id == 0 && placement.stream == 0 &&
          placement.availability_event == 0 && (int)placement.device.device_type == 0);
}

/* ovstage_tensor_to_write ----------------------------------------------------------------------- */

static float g_payload[64];

static DLTensor typed_tensor(int32_t ndim, int64_t* shape, int64_t* strides)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = g_payload;
    t.device.device_type = kDLCPU;
    t.device.device_id = 0;
    t.ndim = ndim;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = shape;
    t.strides = strides;
    t.byte_offset = 8;
    return t;
}

/* Converts and checks the folded descriptor: rows, lanes and row stride. */
static int folds_to(DLTensor source, int64_t rows, uint16_t lanes, int64_t row_stride)
{
    DLTensor out;
    int64_t layout[2] = {-7, -7};
    if (ovstage_tensor_to_write(&source, &out, layout) != OVSTAGE_OK) {
        return 0;
    }
    return out.ndim == 1 && out.shape == &layout[0] && out.strides == &layout[1] &&
           layout[0] == rows && layout[1] == row_stride && out.dtype.lanes == lanes &&
           out.dtype.code == kDLFloat && out.dtype.bits == 32 && out.data == g_payload &&
           out.byte_offset == 8 && out.device.device_type == kDLCPU;
}

/* Rejected with INVALID_ARGUMENT, output and layout untouched. */
static int rejected(const DLTensor* source)
{
    DLTensor out;
    DLTensor before;
    int64_t layout[2] = {-7, -9};
    memset(&out, 0xA5, sizeof out);
    before = out;
    return ovstage_tensor_to_write(source, &out, layout) == OVSTAGE_ERROR_INVALID_ARGUMENT &&
           memcmp(&out, &before, sizeof out) == 0 && layout[0] == -7 && layout[1] == -9;
}

static void test_tensor_to_write(void)
{
    int64_t s23[2] = {2, 3};
    int64_t s244[3] = {2, 4, 4};
    int64_t st244[3] = {16, 4, 1};
    int64_t s233[3] = {2, 3, 3};
    int64_t s3[1] = {3};
    int64_t st_broadcast[2] = {0, 1};
    int64_t st_slice[2] = {6, 1};
    int64_t s2_255[2] = {2, 255};
    int64_t s2_15_17[3] = {2, 15, 17};
    int64_t s2_16_16[3] = {2, 16, 16};
    int64_t s2_16_17[3] = {2, 16, 17};
    int64_t s2_0[2] = {2, 0};
    int64_t s_neg[2] = {-1, 3};
    int64_t st_loose[2] = {3, 2};
    int64_t st_odd[2] = {4, 1};
    int64_t st_negative[2] = {-3, 1};
    int64_t s4[4] = {1, 1, 1, 1};
    int64_t layout[2];
    DLTensor t;
    DLTensor out;

    CHECK(folds_to(typed_tensor(2, s23, NULL), 2, 3, 1));
    CHECK(folds_to(typed_tensor(3, s244, st244), 2, 16, 1));
    CHECK(folds_to(typed_tensor(3, s233, NULL), 2, 9, 1));
    CHECK(folds_to(typed_tensor(1, s3, NULL), 3, 1, 1));
    CHECK(folds_to(typed_tensor(2, s23, st_broadcast), 2, 3, 0));
    CHECK(folds_to(typed_tensor(2, s23, st_slice), 2, 3, 2));
    CHECK(folds_to(typed_tensor(2, s2_255, NULL), 2, 255, 1));
    CHECK(folds_to(typed_tensor(3, s2_15_17, NULL), 2, 255, 1));

    t = typed_tensor(2, s23, NULL);
    CHECK(ovstage_tensor_to_write(NULL, &out, layout) == OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(ovstage_tensor_to_write(&t, NULL, layout) == OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(ovstage_tensor_to_write(&t, &out, NULL) == OVSTAGE_ERROR_INVALID_ARGUMENT);
    t = typed_tensor(2, NULL, NULL);
    CHECK(rejected(&t));
    t = typed_tensor(2, s23, NULL);
    t.dtype.lanes = 3;
    CHECK(rejected(&t));
    t = typed_tensor(0, s23, NULL);
    CHECK(rejected(&t));
    t = typed_tensor(4, s4, NULL);
    CHECK(rejected(&t));
    t = typed_tensor(2, s_neg, NULL);
    CHECK(rejected(&t));
    t = typed_tensor(2, s2_0, NULL);
    CHECK(rejected(&t));
    t = typed_tensor(3, s2_16_16, NULL); /* 256 components */
    CHECK(rejected(&t));
    t = typed_tensor(3, s2_16_17, NULL);
    CHECK(rejected(&t));
    t = typed_tensor(2, s23, st_loose); /* trailing axis not compact */
    CHECK(rejected(&t));
    t = typed_tensor(2, s23, st_odd); /* row stride not a multiple of 3 */
    CHECK(rejected(&t));
    t = typed_tensor(2, s23, st_negative);
    CHECK(rejected(&t));

    /* Folding in place (output == source) reads everything before writing. */
    t = typed_tensor(3, s244, st244);
    CHECK(ovstage_tensor_to_write(&t, &t, layout) == OVSTAGE_OK && t.ndim == 1 &&
          t.dtype.lanes == 16 && layout[0] == 2 && layout[1] == 1);
}

/* Config builders ---------------------------------------------------------------------------- */

static void test_config_builders(void)
{
    ovx_string_t root = literal_to_ovx_string(OVX_CONFIG_EXECUTABLE_DIR_TOKEN "/pkg");
    ovstage_config_entry_t e;

    e = ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY, 42);
    CHECK(e.key_type == OVSTAGE_CONFIG_KEY_TYPE_UINT64 &&
          e.key.uint64_key == OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY &&
          e.value.uint_value == 42);

    e = ovstage_config_entry_runtime_default_ordinal_admission_policy(
        OVSTAGE_ORDINAL_ADMISSION_STRICTLY_INCREASING);
    CHECK(e.key_type == OVSTAGE_CONFIG_KEY_TYPE_UINT64 && e.key.uint64_key == 1 &&
          e.value.uint_value == OVSTAGE_ORDINAL_ADMISSION_STRICTLY_INCREASING);

    e = ovstage_config_entry_runtime_default_hierarchy_computation_model(
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_GLOBAL);
    CHECK(e.key_type == OVSTAGE_CONFIG_KEY_TYPE_UINT64 && e.key.uint64_key == 0 &&
          e.value.uint_value == OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_GLOBAL);

    e = ovstage_config_entry_history_window_ordinals(3);
    CHECK(e.key_type == OVSTAGE_CONFIG_KEY_TYPE_UINT64 && e.key.uint64_key == 2 &&
          e.key.uint64_key == OVSTAGE_CONFIG_HISTORY_WINDOW_ORDINALS && e.value.uint_value == 3);

    e = ovstage_config_entry_history_window_bytes(1u << 20);
    CHECK(e.key_type == OVSTAGE_CONFIG_KEY_TYPE_UINT64 && e.key.uint64_key == 3 &&
          e.key.uint64_key == OVSTAGE_CONFIG_HISTORY_WINDOW_BYTES && e.value.uint_value == 1u << 20);

    e = ovstage_config_entry_binary_package_root_path(root);
    CHECK(e.key_type == OVSTAGE_CONFIG_KEY_TYPE_STRING &&
          e.key.string_key == OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH &&
          e.value.string_value.ptr == root.ptr && e.value.string_value.length == 21);

    e = ovstage_config_entry_string(OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH, root);
    CHECK(e.key_type == OVSTAGE_CONFIG_KEY_TYPE_STRING && e.value.string_value.length == 21);
}

/* Predicate constructors ------------------------------------------------------------------------- */

#define PRIM(kind) OVSTAGE_POPULATION_PRIM_PREDICATE_##kind
#define PROPERTY(kind) OVSTAGE_POPULATION_PROPERTY_PREDICATE_##kind

static int prim_is(ovstage_population_prim_predicate_t p,
                   ovstage_population_prim_predicate_kind_t kind, const void* member, size_t count)
{
    const void* live = p.values.strings;
    if (kind == PRIM(AND) || kind == PRIM(OR) || kind == PRIM(NOT) || kind == PRIM(HAS_PARENT) ||
        kind == PRIM(HAS_ANCESTOR)) {
        live = p.values.subpredicates;
    } else if (kind == PRIM(HAS_PROPERTY)) {
        live = p.values.property_predicate;
    }
    return p.kind == kind && live == member && p.value_count == count;
}

static int property_is(ovstage_population_property_predicate_t p,
                       ovstage_population_property_predicate_kind_t kind, const void* member,
                       size_t count)
{
    const void* live = p.values.strings;
    if (kind == PROPERTY(AND) || kind == PROPERTY(OR) || kind == PROPERTY(NOT)) {
        live = p.values.subpredicates;
    }
    return p.kind == kind && live == member && p.value_count == count;
}

static void test_predicates(void)
{
    ovx_string_t strings[2];
    ovstage_population_prim_predicate_t prims[2];
    ovstage_population_property_predicate_t props[2];

    strings[0] = literal_to_ovx_string("Mesh");
    strings[1] = literal_to_ovx_string("Xform");
    prims[0] = ovstage_population_prim_predicate_all();
    prims[1] = ovstage_population_prim_predicate_none();
    props[0] = ovstage_population_property_predicate_all();
    props[1] = ovstage_population_property_predicate_none();

    CHECK(prim_is(ovstage_population_prim_predicate_none(), PRIM(NONE), NULL, 0));
    CHECK(prim_is(ovstage_population_prim_predicate_all(), PRIM(ALL), NULL, 0));
    CHECK(prim_is(ovstage_population_prim_predicate_and(prims, 2), PRIM(AND), prims, 2));
    CHECK(prim_is(ovstage_population_prim_predicate_or(prims, 2), PRIM(OR), prims, 2));
    CHECK(prim_is(ovstage_population_prim_predicate_not(prims), PRIM(NOT), prims, 1));
    CHECK(prim_is(ovstage_population_prim_predicate_has_parent(prims), PRIM(HAS_PARENT), prims, 1));
    CHECK(prim_is(ovstage_population_prim_predicate_has_ancestor(&prims[1]), PRIM(HAS_ANCESTOR),
                  &prims[1], 1));
    CHECK(prim_is(ovstage_population_prim_predicate_has_property(props), PRIM(HAS_PROPERTY),
                  props, 1));
    CHECK(prim_is(ovstage_population_prim_predicate_has_type(strings, 2), PRIM(HAS_TYPE), strings,
                  2));
    CHECK(prim_is(ovstage_population_prim_predicate_is_a_type(strings, 1), PRIM(IS_A_TYPE),
                  strings, 1));
    CHECK(prim_is(ovstage_population_prim_predicate_has_schema(strings, 2), PRIM(HAS_SCHEMA),
                  strings, 2));
    CHECK(prim_is(ovstage_population_prim_predicate_has_applied_schema(strings, 2),
                  PRIM(HAS_APPLIED_SCHEMA), strings, 2));
    CHECK(prim_is(ovstage_population_prim_predicate_has_applied_schema_in_namespace(strings, 1),
                  PRIM(HAS_APPLIED_SCHEMA_IN_NAMESPACE), strings, 1));
    CHECK(prim_is(ovstage_population_prim_predicate_has_path(strings, 2), PRIM(HAS_PATH), strings,
                  2));
    CHECK(prim_is(ovstage_population_prim_predicate_is_under_path(strings, 1), PRIM(IS_UNDER_PATH),
                  strings, 1));
    CHECK(prim_is(ovstage_population_prim_predicate_has_kind(strings, 2), PRIM(HAS_KIND), strings,
                  2));
    CHECK(prim_is(ovstage_population_prim_predicate_has_purpose(strings, 1), PRIM(HAS_PURPOSE),
                  strings, 1));
    CHECK(prim_is(ovstage_population_prim_predicate_has_metadata(strings, 2), PRIM(HAS_METADATA),
                  strings, 2));

    CHECK(property_is(ovstage_population_property_predicate_none(), PROPERTY(NONE), NULL, 0));
    CHECK(property_is(ovstage_population_property_predicate_all(), PROPERTY(ALL), NULL, 0));
    CHECK(property_is(ovstage_population_property_predicate_and(props, 2), PROPERTY(AND), props,
                      2));
    CHECK(property_is(ovstage_population_property_predicate_or(props, 2), PROPERTY(OR), props, 2));
    CHECK(property_is(ovstage_population_property_predicate_not(props), PROPERTY(NOT), props, 1));
    CHECK(property_is(ovstage_population_property_predicate_declared_by_schema(strings, 2),
                      PROPERTY(DECLARED_BY_SCHEMA), strings, 2));
    CHECK(property_is(ovstage_population_property_predicate_has_name(strings, 1),
                      PROPERTY(HAS_NAME), strings, 1));
    CHECK(property_is(ovstage_population_property_predicate_in_namespace(strings, 2),
                      PROPERTY(IN_NAMESPACE), strings, 2));
    CHECK(property_is(ovstage_population_property_predicate_has_metadata(strings, 1),
                      PROPERTY(HAS_METADATA), strings, 1));
    CHECK(property_is(ovstage_population_property_predicate_is_attribute(),
                      PROPERTY(IS_ATTRIBUTE), NULL, 0));
    CHECK(property_is(ovstage_population_property_predicate_is_relationship(),
                      PROPERTY(IS_RELATIONSHIP), NULL, 0));
    CHECK(property_is(ovstage_population_property_predicate_is_custom(), PROPERTY(IS_CUSTOM), NULL,
                      0));
    CHECK(property_is(ovstage_population_property_predicate_is_authored(), PROPERTY(IS_AUTHORED),
                      NULL, 0));

    CHECK(ovstage_population_is_default_time(OVSTAGE_POPULATION_DEFAULT_TIME));
    CHECK(!ovstage_population_is_default_time(0.0));
    CHECK(!ovstage_population_is_default_time(-1.5));
}

/* Typed-hierarchy export descriptor -------------------------------------------------------------- */

/*
 * Stand-in for the library's ovstage_population_export_desc_init_snapshot (this program does not
 * link libovstage): what the reference's desc_init produces, then the ordinal.
 */
static int g_init_snapshot_calls;

ovstage_api_status_t ovstage_population_export_desc_init_snapshot(
    ovstage_population_export_desc_t* desc, ovstage_ordinal_t ordinal)
{
    ++g_init_snapshot_calls;
    if (desc == NULL) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    memset(desc, 0, sizeof *desc);
    desc->struct_size = (uint32_t)sizeof *desc;
    desc->prim_predicate.kind = OVSTAGE_POPULATION_PRIM_PREDICATE_ALL;
    desc->property_predicate.kind = OVSTAGE_POPULATION_PROPERTY_PREDICATE_ALL;
    desc->ordinal = ordinal;
    return OVSTAGE_OK;
}

static void test_typed_hierarchy(void)
{
    ovstage_population_export_desc_t desc;
    ovx_string_t root = literal_to_ovx_string("/World");

    CHECK(ovstage_population_export_desc_init_typed_hierarchy(&desc, 7, &root) == OVSTAGE_OK);
    CHECK(g_init_snapshot_calls == 1 && desc.struct_size == 176 && desc.ordinal == 7 &&
          desc.since_ordinal == 0);
    CHECK(desc.layer_mode == OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF &&
          desc.source_api_schema_policy ==
              OVSTAGE_POPULATION_EXPORT_SOURCE_API_SCHEMAS_APPLY_RECORDED &&
          desc.projection == OVSTAGE_POPULATION_EXPORT_PROJECTION_SCHEMA_DECLARED);
    CHECK(desc.selection == OVSTAGE_POPULATION_EXPORT_SELECTION_EXPLICIT_PREDICATE &&
          desc.transform_policy == OVSTAGE_POPULATION_EXPORT_TRANSFORM_USD_XFORM_OP &&
          desc.unknown_metadata_policy == OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_DROP);
    CHECK(desc.prim_predicate.kind == OVSTAGE_POPULATION_PRIM_PREDICATE_IS_UNDER_PATH &&
          desc.prim_predicate.values.strings == &root && desc.prim_predicate.value_count == 1);
    CHECK(desc.property_predicate.kind == OVSTAGE_POPULATION_PROPERTY_PREDICATE_ALL);
    CHECK(ovstage_population_export_desc_init_typed_hierarchy(NULL, 7, &root) ==
          OVSTAGE_ERROR_INVALID_ARGUMENT);
}

/* String helpers and macros ------------------------------------------------------------------------ */

OVSTAGE_DEPRECATED("declared only to show the macro compiles on a declaration")
static inline int deprecated_example(void)
{
    return 0;
}

static ovx_string_t view(const char* ptr, size_t length)
{
    ovx_string_t s;
    s.ptr = ptr;
    s.length = length;
    return s;
}

static void test_string_helpers(void)
{
    ovx_string_t s;
    ovx_string_t empty_literal = literal_to_ovx_string("");

    s = literal_to_ovx_string("abc");
    CHECK(s.length == 3 && memcmp(s.ptr, "abc", 3) == 0 && s.ptr[3] == 0);
    CHECK(empty_literal.length == 0 && empty_literal.ptr != NULL);

    CHECK(is_ovx_string_empty(NULL));
    s = view(NULL, 0);
    CHECK(is_ovx_string_empty(&s) && !ovx_string_has_null_data(&s) &&
          !ovx_string_contains_embedded_nul(&s));
    s = view("a", 0);
    CHECK(is_ovx_string_empty(&s));
    s = view("ab", 2);
    CHECK(!is_ovx_string_empty(&s) && !ovx_string_contains_embedded_nul(&s) &&
          !ovx_string_has_null_data(&s));
    s = view("a\0b", 3);
    CHECK(ovx_string_contains_embedded_nul(&s));
    s = view("a\0b", 1); /* the NUL lies beyond the view */
    CHECK(!ovx_string_contains_embedded_nul(&s));
    s = view(NULL, 3);
    CHECK(ovx_string_has_null_data(&s) && is_ovx_string_empty(&s) &&
          !ovx_string_contains_embedded_nul(&s));
    CHECK(!ovx_string_has_null_data(NULL) && !ovx_string_contains_embedded_nul(NULL));
}

int main(void)
{
    install_fake_instance();
    test_vtable_wrappers();
    test_path_dictionary_wrappers();
    test_placement();
    test_tensor_to_write();
    test_config_builders();
    test_predicates();
    test_typed_hierarchy();
    test_string_helpers();
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
