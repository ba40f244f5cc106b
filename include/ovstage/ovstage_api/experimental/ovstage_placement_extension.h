/*
 * EXPERIMENTAL: the "ovstage.placement" extension, which lets a write, map or read name the
 * device whose copy of the data should be current. Its layout may change in any release; an
 * incompatible change bumps OVSTAGE_PLACEMENT_EXTENSION_VERSION.
 *
 * Each table entry takes the arguments of the vtable slot it mirrors plus one placement,
 * appended last for the writes and placed just before the out-handle for the map and the read.
 * A NULL placement makes an entry behave like its unplaced slot. ovstage copies the placement
 * while enqueuing.
 */
#ifndef OVSTAGE_PLACEMENT_EXTENSION_H
#define OVSTAGE_PLACEMENT_EXTENSION_H

#include <stddef.h>
#include <stdint.h>

#include "../ovstage_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OVSTAGE_PLACEMENT_EXTENSION_NAME "ovstage.placement"
#define OVSTAGE_PLACEMENT_EXTENSION_VERSION 1u

/*
 * device: the copy to bring up to date (writes, maps) or to read from; {0, 0} = unspecified.
 * stream: CUDA stream for the op's device work (0 and 1: legacy default stream; 2: per-thread
 * default stream of the thread that runs the op). availability_event: a caller-owned
 * cudaEvent_t that ovstage records when the data is available; 0 = none.
 */
typedef struct ovstage_placement_t {
    DLDevice device;
    uintptr_t stream;
    uintptr_t availability_event;
} ovstage_placement_t;

#ifdef __cplusplus
#define OVSTAGE_PLACEMENT_INIT {{}, 0, 0}
#else
#define OVSTAGE_PLACEMENT_INIT {{0, 0}, 0, 0}
#endif

/* Version 1 of the table; usable when header.version == 1 and header.struct_size >= 40. */
typedef struct ovstage_placement_extension_v1_t {
    ovstage_extension_header_t header;
    ovstage_enqueue_result_t (*write_attribute_on_device)(
        ovstage_context_t* context, ovstage_query_handle_t handle,
        ovx_string_or_token_t attribute, ovstage_ordinal_t ordinal, ovstage_write_data_t data,
        ovstage_prim_mode_t prim_mode, const ovstage_placement_t* placement);
    ovstage_enqueue_result_t (*write_attributes_on_device)(
        ovstage_context_t* context, ovstage_query_handle_t handle,
        const ovstage_attribute_write_t* writes, size_t write_count, ovstage_ordinal_t ordinal,
        ovstage_prim_mode_t prim_mode, const ovstage_placement_t* placement);
    ovstage_enqueue_result_t (*map_attribute_on_device)(
        ovstage_context_t* context, ovstage_query_handle_t handle, const ovstage_map_desc_t* desc,
        ovstage_ordinal_t ordinal, const size_t* element_sizes, size_t element_count,
        const ovstage_placement_t* placement, ovstage_map_handle_t* out_map_handle);
    ovstage_enqueue_result_t (*read_attributes_on_device)(
        ovstage_context_t* context, ovstage_query_handle_t handle, const ovx_token_t* attrs,
        size_t attr_count, ovstage_ordinal_range_t range, const ovstage_placement_t* placement,
        ovstage_read_handle_t* out_read_handle);
} ovstage_placement_extension_v1_t;

/*
 * Looks the table up on `instance`. Sets *out_extension to NULL first; returns
 * INVALID_ARGUMENT for a NULL instance or out pointer, NOT_FOUND when the lookup fails or the
 * table has another version or is too small, else OK.
 */
static inline ovstage_api_status_t ovstage_query_placement_extension(
    ovstage_instance_t* instance, const ovstage_placement_extension_v1_t** out_extension)
{
    const void* table = NULL;
    const ovstage_placement_extension_v1_t* placement;

    if (out_extension == NULL) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    *out_extension = NULL;
    if (instance == NULL) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    if (instance->vtable->query_extension(instance->context, OVSTAGE_PLACEMENT_EXTENSION_NAME,
                                          &table) != OVSTAGE_OK ||
        table == NULL) {
        return OVSTAGE_ERROR_NOT_FOUND;
    }
    placement = (const ovstage_placement_extension_v1_t*)table;
    if (placement->header.version != OVSTAGE_PLACEMENT_EXTENSION_VERSION ||
        placement->header.struct_size < sizeof(ovstage_placement_extension_v1_t)) {
        return OVSTAGE_ERROR_NOT_FOUND;
    }
    *out_extension = placement;
    return OVSTAGE_OK;
}

/* The wrappers below repeat the lookup on every call and return {its status, 0} when it fails. */
static inline ovstage_enqueue_result_t ovstage_placement_lookup_failed(ovstage_api_status_t status)
{
    ovstage_enqueue_result_t result;
    result.status = status;
    result.op_index = OVSTAGE_INVALID_OP_ID;
    return result;
}

static inline ovstage_enqueue_result_t ovstage_write_attribute_on_device(
    ovstage_instance_t* instance, ovstage_query_handle_t handle, ovx_string_or_token_t attribute,
    ovstage_ordinal_t ordinal, ovstage_write_data_t data, ovstage_prim_mode_t prim_mode,
    const ovstage_placement_t* placement)
{
    const ovstage_placement_extension_v1_t* ext;
    const ovstage_api_status_t status = ovstage_query_placement_extension(instance, &ext);
    if (status != OVSTAGE_OK) {
        return ovstage_placement_lookup_failed(status);
    }
    return ext->write_attribute_on_device(instance->context, handle, attribute, ordinal, data,
                                          prim_mode, placement);
}

static inline ovstage_enqueue_result_t ovstage_write_attributes_on_device(
    ovstage_instance_t* instance, ovstage_query_handle_t handle,
    const ovstage_attribute_write_t* writes, size_t write_count, ovstage_ordinal_t ordinal,
    ovstage_prim_mode_t prim_mode, const ovstage_placement_t* placement)
{
    const ovstage_placement_extension_v1_t* ext;
    const ovstage_api_status_t status = ovstage_query_placement_extension(instance, &ext);
    if (status != OVSTAGE_OK) {
        return ovstage_placement_lookup_failed(status);
    }
    return ext->write_attributes_on_device(instance->context, handle, writes, write_count,
                                           ordinal, prim_mode, placement);
}

/* On a failed lookup *out_map_handle (when non-NULL) is set to 0. */
static inline ovstage_enqueue_result_t ovstage_map_attribute_on_device(
    ovstage_instance_t* instance, ovstage_query_handle_t handle, const ovstage_map_desc_t* desc,
    ovstage_ordinal_t ordinal, const size_t* element_sizes, size_t element_count,
    const ovstage_placement_t* placement, ovstage_map_handle_t* out_map_handle)
{
    const ovstage_placement_extension_v1_t* ext;
    const ovstage_api_status_t status = ovstage_query_placement_extension(instance, &ext);
    if (status != OVSTAGE_OK) {
        if (out_map_handle != NULL) {
            *out_map_handle = OVSTAGE_INVALID_MAP_HANDLE;
        }
        return ovstage_placement_lookup_failed(status);
    }
    return ext->map_attribute_on_device(instance->context, handle, desc, ordinal, element_sizes,
                                        element_count, placement, out_map_handle);
}

/* On a failed lookup *out_read_handle (when non-NULL) is set to 0. */
static inline ovstage_enqueue_result_t ovstage_read_attributes_on_device(
    ovstage_instance_t* instance, ovstage_query_handle_t handle, const ovx_token_t* attrs,
    size_t attr_count, ovstage_ordinal_range_t range, const ovstage_placement_t* placement,
    ovstage_read_handle_t* out_read_handle)
{
    const ovstage_placement_extension_v1_t* ext;
    const ovstage_api_status_t status = ovstage_query_placement_extension(instance, &ext);
    if (status != OVSTAGE_OK) {
        if (out_read_handle != NULL) {
            *out_read_handle = OVSTAGE_INVALID_READ_HANDLE;
        }
        return ovstage_placement_lookup_failed(status);
    }
    return ext->read_attributes_on_device(instance->context, handle, attrs, attr_count, range,
                                          placement, out_read_handle);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_PLACEMENT_EXTENSION_H */
