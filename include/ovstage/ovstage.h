/*
 * The ovstage C API. Including this header gives the instance vtable and its inline
 * ovstage_<slot>(instance, ...) wrappers, ovstage_tensor_to_write, the configuration builders,
 * instancing and population, and the process-level functions declared below.
 *
 * Not included here: ovstage_population_export.h (export) and
 * ovstage_api/experimental/ovstage_placement_extension.h (placement).
 */
#ifndef OVSTAGE_H
#define OVSTAGE_H

#include <stddef.h>
#include <stdint.h>

#include "../ovx/types.h"
#include "ovstage_api/ovstage_api.h"
#include "ovstage_api/ovstage_api_defines.h"
#include "ovstage_api/ovstage_api_types.h"
#include "ovstage_api/ovstage_api_utils.h"
#include "ovstage_api/ovstage_tensor_utils.h"
#include "ovstage_config.h"
#include "ovstage_instancing.h"
#include "ovstage_population.h"
#include "ovstage_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Build information and process lifetime ---------------------------------------------------- */

/* Callable at any time (it does not initialise anything); never NULL, owned by the library. */
OVSTAGE_API const ovstage_build_info_t* ovstage_get_build_info(void);

/*
 * Takes one process reference, applying `config` (may be NULL or empty) when it is the first.
 * A malformed, duplicate, unknown or conflicting entry fails the whole call: nothing changes
 * and no reference is taken. Balance each success with ovstage_shutdown.
 */
OVSTAGE_API ovstage_api_status_t ovstage_initialize(const ovstage_config_t* config);

/* A borrowed view of the entries that started the current process lifetime, owned by the
 * instance until it is destroyed. */
OVSTAGE_API ovstage_api_status_t ovstage_get_config(const ovstage_instance_t* instance,
                                                    ovstage_config_t* out_config);

/* Drops one ovstage_initialize reference; the last reference tears process state down. */
OVSTAGE_API ovstage_api_status_t ovstage_shutdown(void);

/* Logging (process-wide) -------------------------------------------------------------------- */

/*
 * One callback per process; NULL flushes and disables it. `severity` is the default threshold
 * and channel_filter (may be NULL) a "<channel>=<level>,..." list.
 */
OVSTAGE_API ovstage_api_status_t ovstage_set_log_callback(ovstage_log_severity_t severity,
                                                          const ovx_string_t* channel_filter,
                                                          ovstage_log_callback_t callback,
                                                          void* user_data);

/* OK once queued messages are delivered (or with no callback), TIMEOUT otherwise. */
OVSTAGE_API ovstage_api_status_t ovstage_flush_log(ovstage_timeout_ns_t timeout);

/* Instances --------------------------------------------------------------------------------- */

/* The caller owns *out_instance until ovstage_destroy_instance. */
OVSTAGE_API ovstage_api_status_t ovstage_create_instance(const ovstage_instance_desc_t* desc,
                                                         ovstage_instance_t** out_instance);

/*
 * Frees the bundle before returning (NULL is a no-op). Release every op, handle and payload of
 * the instance first; no thread may use the bundle during or after the call.
 */
OVSTAGE_API ovstage_api_status_t ovstage_destroy_instance(ovstage_instance_t* instance);

/* Temporary accessor: NOT_SUPPORTED when no USD stage is associated. */
OVSTAGE_API ovstage_api_status_t ovstage_get_usd_stage_id(ovstage_instance_t* instance,
                                                          uint64_t* out_usd_stage_id);

/* Clone ------------------------------------------------------------------------------------- */

/* Copies the subtree at source_path to each target path at `ordinal` (asynchronous). */
OVSTAGE_API ovstage_enqueue_result_t ovstage_clone(ovstage_instance_t* instance,
                                                   ovx_string_t source_path,
                                                   const ovx_string_t* target_paths,
                                                   size_t num_target_paths,
                                                   ovstage_ordinal_t ordinal);

/* The report of a clone op, or its failure code. */
OVSTAGE_API ovstage_api_status_t ovstage_fetch_clone_result(ovstage_instance_t* instance,
                                                            ovstage_op_id_t op_id,
                                                            ovstage_timeout_ns_t timeout,
                                                            ovstage_clone_result_t* out_result);

/* Hierarchy --------------------------------------------------------------------------------- */

/* The parents, children or siblings of each path in prim_paths at `ordinal`. */
OVSTAGE_API ovstage_enqueue_result_t ovstage_get_hierarchy(
    ovstage_instance_t* instance, ovx_primpath_list_t prim_paths, ovstage_ordinal_t ordinal,
    ovstage_hierarchy_relation_t relation, ovstage_hierarchy_handle_t* out_hierarchy_handle);

/* Non-blocking: OK, TIMEOUT or OP_FAILED. */
OVSTAGE_API ovstage_api_status_t ovstage_fetch_hierarchy_result(
    ovstage_instance_t* instance, ovstage_hierarchy_handle_t hierarchy_handle,
    ovstage_hierarchy_result_t* out_result);

OVSTAGE_API ovstage_api_status_t ovstage_release_hierarchy_result(
    ovstage_instance_t* instance, const ovstage_hierarchy_result_t* result);

OVSTAGE_API ovstage_enqueue_result_t ovstage_release_hierarchy(ovstage_instance_t* instance,
                                                               ovstage_hierarchy_handle_t handle);

/* The models this instance offers; the array and its strings are owned by the instance. */
OVSTAGE_API ovstage_api_status_t ovstage_get_hierarchy_computation_models(
    ovstage_instance_t* instance, const ovstage_hierarchy_computation_model_desc_t** out_models,
    size_t* out_model_count);

/* Derives world transforms at output_ordinal from the state at input_ordinal. */
OVSTAGE_API ovstage_enqueue_result_t ovstage_compute_hierarchy(
    ovstage_instance_t* instance, ovstage_hierarchy_computation_model_id_t computation_model_id,
    ovstage_ordinal_t input_ordinal, ovstage_ordinal_t output_ordinal);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_H */
