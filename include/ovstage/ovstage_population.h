/*
 * Population (USD -> stage). Population ops run on a per-instance FIFO worker with their own
 * op-id stream: ovstage_population_wait_op(id) covers every population op up to `id`, and
 * each failure is reported once, to the first wait that covers it.
 */
#ifndef OVSTAGE_POPULATION_H
#define OVSTAGE_POPULATION_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ovx/types.h"
#include "ovstage_api/ovstage_api_defines.h"
#include "ovstage_api/ovstage_api_types.h"
#include "ovstage_population_predicate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t ovstage_population_op_id_t;
typedef uint64_t ovstage_population_usd_reference_handle_t;

#define OVSTAGE_POPULATION_INVALID_OP_ID 0
#define OVSTAGE_POPULATION_INVALID_USD_REFERENCE_HANDLE 0

/* Sample USD at its default time code. NaN never compares equal: test it with
 * ovstage_population_is_default_time. */
#define OVSTAGE_POPULATION_DEFAULT_TIME NAN

static inline bool ovstage_population_is_default_time(double time)
{
    return isnan(time) != 0;
}

/* Bits of the `domains` parameters and fields (uint32_t); unknown bits are ignored. */
typedef enum ovstage_population_domain_t {
    OVSTAGE_POPULATION_DOMAIN_NONE = 0,
    OVSTAGE_POPULATION_DOMAIN_RENDERING = 1,
    OVSTAGE_POPULATION_DOMAIN_PHYSICS = 2,
    OVSTAGE_POPULATION_DOMAIN_ALL = 3
} ovstage_population_domain_t;

/* Prims the prim predicate accepts get the properties the property predicate accepts. */
typedef struct ovstage_population_selector_t {
    ovstage_population_prim_predicate_t prim_predicate;
    ovstage_population_property_predicate_t property_predicate;
    const ovx_string_t* prim_metadata_paths;
    size_t prim_metadata_path_count;
    const ovx_string_t* property_metadata_paths;
    size_t property_metadata_path_count;
} ovstage_population_selector_t;

/* Several descs combine: domains are ORed, selectors taken together in order. */
typedef struct ovstage_population_desc_t {
    uint32_t domains;
    const ovstage_population_selector_t* selectors;
    size_t selector_count;
    const ovx_string_t* stage_metadata_paths;
    size_t stage_metadata_path_count;
} ovstage_population_desc_t;

/* Rejected enqueues have status != OK and op_index 0. */
typedef struct ovstage_population_enqueue_result_t {
    ovstage_api_status_t status;
    ovstage_population_op_id_t op_index;
} ovstage_population_enqueue_result_t;

/* The id array lives in thread storage until this thread's next population wait. */
typedef struct ovstage_population_op_wait_result_t {
    const ovstage_population_op_id_t* error_op_ids;
    size_t error_op_id_count;
    ovstage_population_op_id_t lowest_pending_op_id;
} ovstage_population_op_wait_result_t;

/* Process-wide, irreversible: each path names a plugInfo.json or a directory holding one. */
OVSTAGE_API ovstage_api_status_t ovstage_population_register_usd_schemas(const ovx_string_t* paths,
                                                                         size_t path_count);

/* Opens merge into the stage; `time` is in seconds (or OVSTAGE_POPULATION_DEFAULT_TIME). */
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_open_usd_from_file(
    ovstage_instance_t* stage, ovx_string_t path, ovstage_ordinal_t ordinal, double time,
    uint32_t domains);
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_open_usd_from_string(
    ovstage_instance_t* stage, ovx_string_t usda, ovstage_ordinal_t ordinal, double time,
    uint32_t domains);
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_open_usd_from_file_with_desc(
    ovstage_instance_t* stage, ovx_string_t path, ovstage_ordinal_t ordinal, double time,
    const ovstage_population_desc_t* descs, size_t desc_count);
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_open_usd_from_string_with_desc(
    ovstage_instance_t* stage, ovx_string_t usda, ovstage_ordinal_t ordinal, double time,
    const ovstage_population_desc_t* descs, size_t desc_count);

/* Re-reads the selected attributes from the loaded USD source; the descs become the scope. */
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_repopulate_usd_with_desc(
    ovstage_instance_t* stage, ovstage_ordinal_t ordinal, double time,
    const ovstage_population_desc_t* descs, size_t desc_count);

/* out_handle is optional; it is reserved at once and set to 0 on rejection. */
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_add_usd_reference_from_file(
    ovstage_instance_t* stage, ovx_string_t ref_file_path, ovx_string_t target_path,
    ovstage_population_usd_reference_handle_t* out_handle);
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_add_usd_reference_from_string(
    ovstage_instance_t* stage, ovx_string_t ref_str, ovx_string_t target_path,
    ovstage_population_usd_reference_handle_t* out_handle);
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_remove_usd_reference(
    ovstage_instance_t* stage, ovstage_population_usd_reference_handle_t handle);

/* Empties the USD source; the stage keeps its content until apply_usd_changes runs. */
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_reset_usd(
    ovstage_instance_t* stage);
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_apply_usd_time(
    ovstage_instance_t* stage, ovstage_ordinal_t ordinal, double time);
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_apply_usd_changes(
    ovstage_instance_t* stage, ovstage_ordinal_t ordinal);

/* Waits for every population op up to op_id; out_wait_result may be NULL. */
OVSTAGE_API ovstage_api_status_t ovstage_population_wait_op(
    ovstage_instance_t* stage, ovstage_population_op_id_t op_id, ovstage_timeout_ns_t timeout_ns,
    ovstage_population_op_wait_result_t* out_wait_result);

/* Thread-local detail of this thread's latest failing population call. */
OVSTAGE_API ovx_string_t ovstage_population_get_last_error(void);

/* Detail of an id listed by this thread's latest population wait; {NULL, 0} otherwise. */
OVSTAGE_API ovx_string_t ovstage_population_get_last_op_error(ovstage_population_op_id_t op_id);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_POPULATION_H */
