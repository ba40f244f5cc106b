/*
 * The ovstage instance vtable: 28 slots reached through ovstage_instance_t.vtable, each taking
 * ovstage_instance_t.context first. Asynchronous slots return an ovstage_enqueue_result_t and
 * complete later (wait_op); synchronous slots return a status. Slot order is part of the ABI:
 * append only.
 */
#ifndef OVSTAGE_API_H
#define OVSTAGE_API_H

#include "../../ovx/path_dictionary/path_dictionary.h"
#include "ovstage_api_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ovstage_vtable_t {
    /* Operations ----------------------------------------------------------------------- */
    ovstage_api_status_t (*wait_op)(ovstage_context_t* context, ovstage_op_id_t op_id,
                                    ovstage_timeout_ns_t timeout,
                                    ovstage_op_wait_result_t* out_wait_result);
    ovstage_api_status_t (*release_op)(ovstage_context_t* context, ovstage_op_id_t op_id);

    /* Write floor and ordinal queries ---------------------------------------------------- */
    ovstage_enqueue_result_t (*advance_write_floor)(ovstage_context_t* context,
                                                    const ovstage_write_floor_desc_t* desc);
    ovstage_enqueue_result_t (*get_oldest_preserved_ordinal)(
        ovstage_context_t* context, ovstage_ordinal_query_handle_t* out_handle);
    ovstage_enqueue_result_t (*get_attribute_write_floor)(
        ovstage_context_t* context, ovx_string_or_token_t attribute,
        ovstage_ordinal_query_handle_t* out_handle);
    ovstage_api_status_t (*fetch_ordinal)(ovstage_context_t* context,
                                          ovstage_ordinal_query_handle_t handle,
                                          ovstage_timeout_ns_t timeout,
                                          ovstage_ordinal_t* out_ordinal);
    ovstage_enqueue_result_t (*release_ordinal_query)(ovstage_context_t* context,
                                                      ovstage_ordinal_query_handle_t handle);

    /* Queries ------------------------------------------------------------------------------ */
    ovstage_enqueue_result_t (*query)(ovstage_context_t* context, const ovstage_filter_t* filter,
                                      const ovx_token_t* attrs, size_t attr_count,
                                      ovstage_query_handle_t* out_query_handle);
    ovstage_api_status_t (*query_from_path_list)(ovstage_context_t* context,
                                                 ovx_primpath_list_t path_list,
                                                 ovstage_query_handle_t* out_handle);
    ovstage_api_status_t (*fetch_query_result)(ovstage_context_t* context,
                                               ovstage_query_handle_t query_handle,
                                               ovstage_timeout_ns_t timeout,
                                               ovstage_query_result_t* out_result);
    ovstage_api_status_t (*release_query_result)(ovstage_context_t* context,
                                                 const ovstage_query_result_t* result);
    ovstage_enqueue_result_t (*release_query)(ovstage_context_t* context,
                                              ovstage_query_handle_t handle);

    /* Reads -------------------------------------------------------------------------------- */
    ovstage_enqueue_result_t (*read_attributes)(ovstage_context_t* context,
                                                ovstage_query_handle_t handle,
                                                const ovx_token_t* attrs, size_t attr_count,
                                                ovstage_ordinal_range_t range,
                                                ovstage_read_handle_t* out_read_handle);
    ovstage_api_status_t (*fetch_read_next)(ovstage_context_t* context,
                                            ovstage_read_handle_t read_handle,
                                            ovstage_timeout_ns_t timeout,
                                            ovstage_read_group_t* out_group);
    ovstage_api_status_t (*release_group)(ovstage_context_t* context,
                                          const ovstage_read_group_t* group);
    ovstage_enqueue_result_t (*release_read)(ovstage_context_t* context,
                                             ovstage_read_handle_t read_handle);

    /* Writes and maps ---------------------------------------------------------------------- */
    ovstage_enqueue_result_t (*write_attribute)(ovstage_context_t* context,
                                                ovstage_query_handle_t handle,
                                                ovx_string_or_token_t attribute,
                                                ovstage_ordinal_t ordinal,
                                                ovstage_write_data_t data,
                                                ovstage_prim_mode_t prim_mode);
    ovstage_enqueue_result_t (*map_attribute)(ovstage_context_t* context,
                                              ovstage_query_handle_t handle,
                                              const ovstage_map_desc_t* desc,
                                              ovstage_ordinal_t ordinal,
                                              const size_t* element_sizes, size_t element_count,
                                              ovstage_map_handle_t* out_map_handle);
    ovstage_api_status_t (*fetch_map_next)(ovstage_context_t* context,
                                           ovstage_map_handle_t map_handle,
                                           ovstage_timeout_ns_t timeout,
                                           ovstage_map_group_t* out_group);
    ovstage_enqueue_result_t (*unmap_group)(ovstage_context_t* context,
                                            ovstage_map_handle_t map_handle,
                                            const ovstage_map_group_t* group,
                                            ovstage_cuda_sync_t write_done_sync);
    ovstage_enqueue_result_t (*unmap_attribute)(ovstage_context_t* context,
                                                ovstage_map_handle_t map_handle,
                                                ovstage_cuda_sync_t write_done_sync);
    ovstage_enqueue_result_t (*delete_attributes)(ovstage_context_t* context,
                                                  ovstage_query_handle_t handle,
                                                  const ovx_string_or_token_t* attributes,
                                                  size_t attribute_count,
                                                  ovstage_ordinal_t ordinal);

    /* Diagnostics -------------------------------------------------------------------------- */
    void (*get_version)(ovstage_context_t* context, uint32_t* out_major, uint32_t* out_minor,
                        uint32_t* out_patch);
    /* Static text, never NULL. */
    const char* (*get_error_string)(ovstage_context_t* context, ovstage_api_status_t error);
    /* Thread-local: valid until this thread's next wait_op or release_op(op_id). */
    ovx_string_t (*get_last_op_error)(ovstage_context_t* context, ovstage_op_id_t op_id);
    /* Owned by the instance. */
    path_dictionary_instance_t* (*get_path_dictionary)(ovstage_context_t* context);

    /* Later additions ---------------------------------------------------------------------- */
    ovstage_enqueue_result_t (*write_attributes)(ovstage_context_t* context,
                                                 ovstage_query_handle_t handle,
                                                 const ovstage_attribute_write_t* writes,
                                                 size_t write_count, ovstage_ordinal_t ordinal,
                                                 ovstage_prim_mode_t prim_mode);
    /* `name` is NUL-terminated UTF-8; tables are immutable and live as long as the process. */
    ovstage_api_status_t (*query_extension)(ovstage_context_t* context, const char* name,
                                            const void** out_extension);
};

/*
 * Detail of the latest failed synchronous call or rejected enqueue on this thread (any
 * instance); {NULL, 0} when nothing failed. Valid until this thread's next ovstage call.
 */
OVSTAGE_API ovx_string_t ovstage_get_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_API_H */
