/*
 * The exported flat functions of the ovstage API (build information, process lifetime,
 * logging, instances, clone, hierarchy, instancing). Each clears the thread's last error and
 * hands pointers to a Go export; population and export are in population.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capi.h"
#include "_cgo_export.h"

#define INST(instance) ((uintptr_t)(instance))

ovstage_instance_t* ovs_new_instance_bundle(uintptr_t id)
{
    ovstage_instance_t* bundle = (ovstage_instance_t*)malloc(sizeof *bundle);
    if (bundle != NULL) {
        bundle->vtable = &ovs_instance_vtable;
        bundle->context = (ovstage_context_t*)id;
    }
    return bundle;
}

path_dictionary_instance_t* ovs_new_dictionary_bundle(uintptr_t id)
{
    path_dictionary_instance_t* bundle = (path_dictionary_instance_t*)malloc(sizeof *bundle);
    if (bundle != NULL) {
        /* The header's bundle holds a non-const vtable pointer; nobody writes through it. */
        bundle->vtable = (path_dictionary_vtable_t*)&ovs_dictionary_vtable;
        bundle->context = (path_dictionary_context_t*)id;
    }
    return bundle;
}

static ovstage_build_info_t build_info;
static pthread_once_t build_info_once = PTHREAD_ONCE_INIT;

static void fill_build_info(void) { ovsgo_build_info(&build_info); }

OVSTAGE_API const ovstage_build_info_t* ovstage_get_build_info(void)
{
    (void)pthread_once(&build_info_once, fill_build_info);
    return &build_info;
}

OVSTAGE_API ovstage_api_status_t ovstage_initialize(const ovstage_config_t* config)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_initialize((void*)config);
}

OVSTAGE_API ovstage_api_status_t ovstage_get_config(const ovstage_instance_t* instance,
                                                    ovstage_config_t* out_config)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_get_config(INST(instance), out_config);
}

OVSTAGE_API ovstage_api_status_t ovstage_shutdown(void)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_shutdown();
}

OVSTAGE_API ovstage_api_status_t ovstage_set_log_callback(ovstage_log_severity_t severity,
                                                          const ovx_string_t* channel_filter,
                                                          ovstage_log_callback_t callback,
                                                          void* user_data)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_set_log_callback(
        (int32_t)severity, (void*)channel_filter, (uintptr_t)callback, user_data,
        ovs_in_log_callback());
}

OVSTAGE_API ovstage_api_status_t ovstage_flush_log(ovstage_timeout_ns_t timeout)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_flush_log(timeout, ovs_in_log_callback());
}

OVSTAGE_API ovstage_api_status_t ovstage_create_instance(const ovstage_instance_desc_t* desc,
                                                         ovstage_instance_t** out_instance)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_create_instance((void*)desc, (void*)out_instance);
}

OVSTAGE_API ovstage_api_status_t ovstage_destroy_instance(ovstage_instance_t* instance)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_destroy_instance(INST(instance));
}

OVSTAGE_API ovstage_api_status_t ovstage_get_usd_stage_id(ovstage_instance_t* instance,
                                                          uint64_t* out_usd_stage_id)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_get_usd_stage_id(INST(instance), out_usd_stage_id);
}

OVSTAGE_API ovstage_enqueue_result_t ovstage_clone(ovstage_instance_t* instance,
                                                   ovx_string_t source_path,
                                                   const ovx_string_t* target_paths,
                                                   size_t num_target_paths,
                                                   ovstage_ordinal_t ordinal)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_clone(INST(instance), &source_path, (void*)target_paths, num_target_paths, ordinal, &r);
    return r;
}

OVSTAGE_API ovstage_api_status_t ovstage_fetch_clone_result(ovstage_instance_t* instance,
                                                            ovstage_op_id_t op_id,
                                                            ovstage_timeout_ns_t timeout,
                                                            ovstage_clone_result_t* out_result)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_fetch_clone_result(INST(instance), op_id, timeout,
                                                          out_result);
}

OVSTAGE_API ovstage_enqueue_result_t ovstage_get_hierarchy(
    ovstage_instance_t* instance, ovx_primpath_list_t prim_paths, ovstage_ordinal_t ordinal,
    ovstage_hierarchy_relation_t relation, ovstage_hierarchy_handle_t* out_hierarchy_handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_get_hierarchy(INST(instance), prim_paths, ordinal, (int32_t)relation,
                        out_hierarchy_handle, &r);
    return r;
}

OVSTAGE_API ovstage_api_status_t ovstage_fetch_hierarchy_result(
    ovstage_instance_t* instance, ovstage_hierarchy_handle_t hierarchy_handle,
    ovstage_hierarchy_result_t* out_result)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_fetch_hierarchy_result(INST(instance), hierarchy_handle,
                                                              out_result);
}

OVSTAGE_API ovstage_api_status_t ovstage_release_hierarchy_result(
    ovstage_instance_t* instance, const ovstage_hierarchy_result_t* result)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_release_hierarchy_result(INST(instance), (void*)result);
}

OVSTAGE_API ovstage_enqueue_result_t ovstage_release_hierarchy(ovstage_instance_t* instance,
                                                               ovstage_hierarchy_handle_t handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_release_hierarchy(INST(instance), handle, &r);
    return r;
}

OVSTAGE_API ovstage_api_status_t ovstage_get_hierarchy_computation_models(
    ovstage_instance_t* instance, const ovstage_hierarchy_computation_model_desc_t** out_models,
    size_t* out_model_count)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_get_hierarchy_computation_models(
        INST(instance), (void*)out_models, (void*)out_model_count);
}

OVSTAGE_API ovstage_enqueue_result_t ovstage_compute_hierarchy(
    ovstage_instance_t* instance, ovstage_hierarchy_computation_model_id_t computation_model_id,
    ovstage_ordinal_t input_ordinal, ovstage_ordinal_t output_ordinal)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_compute_hierarchy(INST(instance), (int32_t)computation_model_id, input_ordinal,
                            output_ordinal, &r);
    return r;
}

enum { INSTANCING_INSTANCE_ROOTS, INSTANCING_PROTOTYPE_ROOT, INSTANCING_PROTOTYPE_ROOTS };

OVSTAGE_API ovstage_api_status_t ovstage_instancing_get_instance_roots(
    ovstage_instance_t* instance, ovx_primpath_t prototype_root,
    ovx_primpath_list_t* out_instance_roots)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_instancing(INST(instance), INSTANCING_INSTANCE_ROOTS,
                                                  prototype_root, out_instance_roots);
}

OVSTAGE_API ovstage_api_status_t ovstage_instancing_get_prototype_root(
    ovstage_instance_t* instance, ovx_primpath_t instance_root,
    ovx_primpath_t* out_prototype_root)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_instancing(INST(instance), INSTANCING_PROTOTYPE_ROOT,
                                                  instance_root, out_prototype_root);
}

OVSTAGE_API ovstage_api_status_t ovstage_instancing_get_prototype_roots(
    ovstage_instance_t* instance, ovx_primpath_list_t* out_prototype_roots)
{
    ovs_enter();
    return (ovstage_api_status_t)ovsgo_instancing(INST(instance), INSTANCING_PROTOTYPE_ROOTS, 0,
                                                  out_prototype_roots);
}
