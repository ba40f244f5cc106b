/*
 * The 28 slots of ovstage_vtable_t. Each shim takes the slot's exact C types (by-value structs
 * included), clears the thread's last error, and hands pointers to a Go export (ovsgo_*).
 * The context is the instance's id, never dereferenced: the Go side looks it up.
 */
#include <string.h>

#include "capi.h"
#include "_cgo_export.h"

#define CTX(context) ((uintptr_t)(context))

static ovstage_api_status_t slot_wait_op(ovstage_context_t* context, ovstage_op_id_t op_id,
                                         ovstage_timeout_ns_t timeout,
                                         ovstage_op_wait_result_t* out_wait_result)
{
    ovs_enter();
    ovs_wait_reset(CTX(context));
    return (ovstage_api_status_t)ovsgo_wait_op(CTX(context), op_id, timeout, out_wait_result);
}

static ovstage_api_status_t slot_release_op(ovstage_context_t* context, ovstage_op_id_t op_id)
{
    ovstage_api_status_t status;
    ovs_enter();
    status = (ovstage_api_status_t)ovsgo_release_op(CTX(context), op_id);
    if (status == OVSTAGE_OK) {
        ovs_wait_forget(CTX(context), op_id);
    }
    return status;
}

static ovstage_enqueue_result_t slot_advance_write_floor(ovstage_context_t* context,
                                                         const ovstage_write_floor_desc_t* desc)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_advance_write_floor(CTX(context), (void*)desc, &r);
    return r;
}

static ovstage_enqueue_result_t slot_get_oldest_preserved_ordinal(
    ovstage_context_t* context, ovstage_ordinal_query_handle_t* out_handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_get_oldest_preserved_ordinal(CTX(context), out_handle, &r);
    return r;
}

static ovstage_enqueue_result_t slot_get_attribute_write_floor(
    ovstage_context_t* context, ovx_string_or_token_t attribute,
    ovstage_ordinal_query_handle_t* out_handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_get_attribute_write_floor(CTX(context), &attribute, out_handle, &r);
    return r;
}

static ovstage_api_status_t slot_fetch_ordinal(ovstage_context_t* context,
                                               ovstage_ordinal_query_handle_t handle,
                                               ovstage_timeout_ns_t timeout,
                                               ovstage_ordinal_t* out_ordinal)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_fetch_ordinal(CTX(context), handle, timeout, out_ordinal);
}

static ovstage_enqueue_result_t slot_release_ordinal_query(ovstage_context_t* context,
                                                           ovstage_ordinal_query_handle_t handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_release_ordinal_query(CTX(context), handle, &r);
    return r;
}

static ovstage_enqueue_result_t slot_query(ovstage_context_t* context,
                                           const ovstage_filter_t* filter,
                                           const ovx_token_t* attrs, size_t attr_count,
                                           ovstage_query_handle_t* out_query_handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_query(CTX(context), (void*)filter, (void*)attrs, attr_count, out_query_handle, &r);
    return r;
}

static ovstage_api_status_t slot_query_from_path_list(ovstage_context_t* context,
                                                      ovx_primpath_list_t path_list,
                                                      ovstage_query_handle_t* out_handle)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_query_from_path_list(CTX(context), path_list, out_handle);
}

static ovstage_api_status_t slot_fetch_query_result(ovstage_context_t* context,
                                                    ovstage_query_handle_t query_handle,
                                                    ovstage_timeout_ns_t timeout,
                                                    ovstage_query_result_t* out_result)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_fetch_query_result(CTX(context), query_handle, timeout,
                                                          out_result);
}

static ovstage_api_status_t slot_release_query_result(ovstage_context_t* context,
                                                      const ovstage_query_result_t* result)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_release_query_result(CTX(context), (void*)result);
}

static ovstage_enqueue_result_t slot_release_query(ovstage_context_t* context,
                                                   ovstage_query_handle_t handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_release_query(CTX(context), handle, &r);
    return r;
}

static ovstage_enqueue_result_t slot_read_attributes(ovstage_context_t* context,
                                                     ovstage_query_handle_t handle,
                                                     const ovx_token_t* attrs, size_t attr_count,
                                                     ovstage_ordinal_range_t range,
                                                     ovstage_read_handle_t* out_read_handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_read_attributes(CTX(context), handle, (void*)attrs, attr_count, &range, NULL,
                          out_read_handle, &r);
    return r;
}

static ovstage_api_status_t slot_fetch_read_next(ovstage_context_t* context,
                                                 ovstage_read_handle_t read_handle,
                                                 ovstage_timeout_ns_t timeout,
                                                 ovstage_read_group_t* out_group)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_fetch_read_next(CTX(context), read_handle, timeout,
                                                       out_group);
}

static ovstage_api_status_t slot_release_group(ovstage_context_t* context,
                                               const ovstage_read_group_t* group)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_release_group(CTX(context), (void*)group);
}

static ovstage_enqueue_result_t slot_release_read(ovstage_context_t* context,
                                                  ovstage_read_handle_t read_handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_release_read(CTX(context), read_handle, &r);
    return r;
}

static ovstage_enqueue_result_t slot_write_attribute(ovstage_context_t* context,
                                                     ovstage_query_handle_t handle,
                                                     ovx_string_or_token_t attribute,
                                                     ovstage_ordinal_t ordinal,
                                                     ovstage_write_data_t data,
                                                     ovstage_prim_mode_t prim_mode)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_write_attribute(CTX(context), handle, &attribute, ordinal, &data, (int32_t)prim_mode,
                          NULL, &r);
    return r;
}

static ovstage_enqueue_result_t slot_map_attribute(ovstage_context_t* context,
                                                   ovstage_query_handle_t handle,
                                                   const ovstage_map_desc_t* desc,
                                                   ovstage_ordinal_t ordinal,
                                                   const size_t* element_sizes,
                                                   size_t element_count,
                                                   ovstage_map_handle_t* out_map_handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_map_attribute(CTX(context), handle, (void*)desc, ordinal, (void*)element_sizes,
                        element_count, NULL, out_map_handle, &r);
    return r;
}

static ovstage_api_status_t slot_fetch_map_next(ovstage_context_t* context,
                                                ovstage_map_handle_t map_handle,
                                                ovstage_timeout_ns_t timeout,
                                                ovstage_map_group_t* out_group)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_fetch_map_next(CTX(context), map_handle, timeout,
                                                      out_group);
}

static ovstage_enqueue_result_t slot_unmap_group(ovstage_context_t* context,
                                                 ovstage_map_handle_t map_handle,
                                                 const ovstage_map_group_t* group,
                                                 ovstage_cuda_sync_t write_done_sync)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_unmap_group(CTX(context), map_handle, (void*)group, write_done_sync.stream,
                      write_done_sync.wait_event, &r);
    return r;
}

static ovstage_enqueue_result_t slot_unmap_attribute(ovstage_context_t* context,
                                                     ovstage_map_handle_t map_handle,
                                                     ovstage_cuda_sync_t write_done_sync)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_unmap_attribute(CTX(context), map_handle, write_done_sync.stream,
                          write_done_sync.wait_event, &r);
    return r;
}

static ovstage_enqueue_result_t slot_delete_attributes(ovstage_context_t* context,
                                                       ovstage_query_handle_t handle,
                                                       const ovx_string_or_token_t* attributes,
                                                       size_t attribute_count,
                                                       ovstage_ordinal_t ordinal)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_delete_attributes(CTX(context), handle, (void*)attributes, attribute_count, ordinal,
                            &r);
    return r;
}

static void slot_get_version(ovstage_context_t* context, uint32_t* out_major,
                             uint32_t* out_minor, uint32_t* out_patch)
{
    (void)context;
    if (out_major != NULL) {
        *out_major = OVSTAGE_VERSION_MAJOR;
    }
    if (out_minor != NULL) {
        *out_minor = OVSTAGE_VERSION_MINOR;
    }
    if (out_patch != NULL) {
        *out_patch = OVSTAGE_VERSION_PATCH;
    }
}

static const char* slot_get_error_string(ovstage_context_t* context, ovstage_api_status_t error)
{
    (void)context;
    switch (error) {
    case OVSTAGE_OK:
        return "success";
    case OVSTAGE_ERROR_INVALID_ARGUMENT:
        return "invalid argument";
    case OVSTAGE_ERROR_INVALID_HANDLE:
        return "invalid handle";
    case OVSTAGE_ERROR_NOT_FOUND:
        return "not found";
    case OVSTAGE_ERROR_PRIM_NOT_FOUND:
        return "prim not found";
    case OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION:
        return "write floor violation";
    case OVSTAGE_ERROR_NOT_SUPPORTED:
        return "not supported";
    case OVSTAGE_ERROR_QUEUE_FULL:
        return "queue full";
    case OVSTAGE_ERROR_END_OF_ITERATION:
        return "end of iteration";
    case OVSTAGE_ERROR_OUT_OF_MEMORY:
        return "out of memory";
    case OVSTAGE_ERROR_LAYOUT_CHANGED:
        return "layout changed";
    case OVSTAGE_ERROR_TIMEOUT:
        return "timeout";
    case OVSTAGE_ERROR_OP_FAILED:
        return "operation failed";
    case OVSTAGE_ERROR_OUT_OF_RANGE:
        return "out of range";
    case OVSTAGE_ERROR_INTERNAL:
        return "internal error";
    }
    return "unknown error";
}

ovx_string_t ovs_slot_get_last_op_error(ovstage_context_t* context, ovstage_op_id_t op_id);

static path_dictionary_instance_t* slot_get_path_dictionary(ovstage_context_t* context)
{
    ovs_enter();
    return (path_dictionary_instance_t*)ovsgo_get_path_dictionary(CTX(context));
}

static ovstage_enqueue_result_t slot_write_attributes(ovstage_context_t* context,
                                                      ovstage_query_handle_t handle,
                                                      const ovstage_attribute_write_t* writes,
                                                      size_t write_count,
                                                      ovstage_ordinal_t ordinal,
                                                      ovstage_prim_mode_t prim_mode)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_write_attributes(CTX(context), handle, (void*)writes, write_count, ordinal,
                           (int32_t)prim_mode, NULL, &r);
    return r;
}

ovstage_api_status_t ovs_query_extension(ovstage_context_t* context, const char* name,
                                         const void** out_extension);

const ovstage_vtable_t ovs_instance_vtable = {
    slot_wait_op,
    slot_release_op,
    slot_advance_write_floor,
    slot_get_oldest_preserved_ordinal,
    slot_get_attribute_write_floor,
    slot_fetch_ordinal,
    slot_release_ordinal_query,
    slot_query,
    slot_query_from_path_list,
    slot_fetch_query_result,
    slot_release_query_result,
    slot_release_query,
    slot_read_attributes,
    slot_fetch_read_next,
    slot_release_group,
    slot_release_read,
    slot_write_attribute,
    slot_map_attribute,
    slot_fetch_map_next,
    slot_unmap_group,
    slot_unmap_attribute,
    slot_delete_attributes,
    slot_get_version,
    slot_get_error_string,
    ovs_slot_get_last_op_error,
    slot_get_path_dictionary,
    slot_write_attributes,
    ovs_query_extension,
};
