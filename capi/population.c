/*
 * USD population (stage <- USD) and export (stage -> USD). The C library has no OpenUSD runtime
 * (population is in the Python package, over usd-core): every entry point returns NOT_SUPPORTED
 * with a population last-error text saying so (NULL
 * stage or out pointers are INVALID_ARGUMENT first), waits report every id as unknown (none is
 * ever issued), and the two descriptor initialisers, which need no runtime, work.
 */
#include <stdio.h>
#include <string.h>

#include "capi.h"

static const char no_population[] =
    "USD population is not in this build's C library: it has no OpenUSD runtime (populate from "
    "Python with ovstage.population, pip install 'ovstage-go[usd]', or author prims with "
    "write_attribute)";
static const char no_export[] =
    "USD export is not in this build: ovstage-go has no OpenUSD runtime (read the stage with "
    "read_attributes instead)";

/* The status of an unsupported call: NULL arguments first, then NOT_SUPPORTED. */
static ovstage_api_status_t refuse(const char* function, const char* why, int null_argument)
{
    char text[512];
    ovs_enter();
    if (null_argument) {
        (void)snprintf(text, sizeof text, "%s: stage and out pointers must not be NULL", function);
        ovs_set_population_error(text);
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    (void)snprintf(text, sizeof text, "%s: %s", function, why);
    ovs_set_population_error(text);
    return OVSTAGE_ERROR_NOT_SUPPORTED;
}

static ovstage_population_enqueue_result_t refused(const char* function, const char* why,
                                                   int null_argument)
{
    ovstage_population_enqueue_result_t r;
    r.status = refuse(function, why, null_argument);
    r.op_index = OVSTAGE_POPULATION_INVALID_OP_ID;
    return r;
}

#define POP(name) refused(#name, no_population, stage == NULL)
#define EXP(name) refused(#name, no_export, stage == NULL)

OVSTAGE_API ovstage_api_status_t ovstage_population_register_usd_schemas(const ovx_string_t* paths,
                                                                         size_t path_count)
{
    return refuse("ovstage_population_register_usd_schemas", no_population,
                  paths == NULL && path_count > 0);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_open_usd_from_file(
    ovstage_instance_t* stage, ovx_string_t path, ovstage_ordinal_t ordinal, double time,
    uint32_t domains)
{
    (void)path, (void)ordinal, (void)time, (void)domains;
    return POP(ovstage_population_open_usd_from_file);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_open_usd_from_string(
    ovstage_instance_t* stage, ovx_string_t usda, ovstage_ordinal_t ordinal, double time,
    uint32_t domains)
{
    (void)usda, (void)ordinal, (void)time, (void)domains;
    return POP(ovstage_population_open_usd_from_string);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_open_usd_from_file_with_desc(
    ovstage_instance_t* stage, ovx_string_t path, ovstage_ordinal_t ordinal, double time,
    const ovstage_population_desc_t* descs, size_t desc_count)
{
    (void)path, (void)ordinal, (void)time, (void)descs, (void)desc_count;
    return POP(ovstage_population_open_usd_from_file_with_desc);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_open_usd_from_string_with_desc(
    ovstage_instance_t* stage, ovx_string_t usda, ovstage_ordinal_t ordinal, double time,
    const ovstage_population_desc_t* descs, size_t desc_count)
{
    (void)usda, (void)ordinal, (void)time, (void)descs, (void)desc_count;
    return POP(ovstage_population_open_usd_from_string_with_desc);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_repopulate_usd_with_desc(
    ovstage_instance_t* stage, ovstage_ordinal_t ordinal, double time,
    const ovstage_population_desc_t* descs, size_t desc_count)
{
    (void)ordinal, (void)time, (void)descs, (void)desc_count;
    return POP(ovstage_population_repopulate_usd_with_desc);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_add_usd_reference_from_file(
    ovstage_instance_t* stage, ovx_string_t ref_file_path, ovx_string_t target_path,
    ovstage_population_usd_reference_handle_t* out_handle)
{
    (void)ref_file_path, (void)target_path;
    if (out_handle != NULL) {
        *out_handle = OVSTAGE_POPULATION_INVALID_USD_REFERENCE_HANDLE;
    }
    return refused("ovstage_population_add_usd_reference_from_file", no_population,
                   stage == NULL || out_handle == NULL);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_add_usd_reference_from_string(
    ovstage_instance_t* stage, ovx_string_t ref_str, ovx_string_t target_path,
    ovstage_population_usd_reference_handle_t* out_handle)
{
    (void)ref_str, (void)target_path;
    if (out_handle != NULL) {
        *out_handle = OVSTAGE_POPULATION_INVALID_USD_REFERENCE_HANDLE;
    }
    return refused("ovstage_population_add_usd_reference_from_string", no_population,
                   stage == NULL || out_handle == NULL);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_remove_usd_reference(
    ovstage_instance_t* stage, ovstage_population_usd_reference_handle_t handle)
{
    (void)handle;
    return POP(ovstage_population_remove_usd_reference);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_reset_usd(
    ovstage_instance_t* stage)
{
    return POP(ovstage_population_reset_usd);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_apply_usd_time(
    ovstage_instance_t* stage, ovstage_ordinal_t ordinal, double time)
{
    (void)ordinal, (void)time;
    return POP(ovstage_population_apply_usd_time);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_apply_usd_changes(
    ovstage_instance_t* stage, ovstage_ordinal_t ordinal)
{
    (void)ordinal;
    return POP(ovstage_population_apply_usd_changes);
}

/* No population op is ever issued, so every id is unknown. */
OVSTAGE_API ovstage_api_status_t ovstage_population_wait_op(
    ovstage_instance_t* stage, ovstage_population_op_id_t op_id, ovstage_timeout_ns_t timeout_ns,
    ovstage_population_op_wait_result_t* out_wait_result)
{
    char text[256];
    (void)timeout_ns;
    ovs_enter();
    if (out_wait_result != NULL) {
        memset(out_wait_result, 0, sizeof *out_wait_result);
    }
    (void)snprintf(text, sizeof text,
                   "ovstage_population_wait_op: %s (population op id %llu is unknown: population "
                   "is not in this build, so no op is ever issued)",
                   stage == NULL ? "stage is NULL" : "unknown population operation id",
                   (unsigned long long)op_id);
    ovs_set_population_error(text);
    return OVSTAGE_ERROR_INVALID_ARGUMENT;
}

OVSTAGE_API ovx_string_t ovstage_population_get_last_op_error(ovstage_population_op_id_t op_id)
{
    ovx_string_t none = {NULL, 0};
    (void)op_id;
    return none;
}

/* Export ------------------------------------------------------------------------------------ */

OVSTAGE_API ovstage_api_status_t ovstage_population_export_desc_init(
    ovstage_population_export_desc_t* desc)
{
    ovs_enter();
    if (desc == NULL) {
        ovs_set_population_error("ovstage_population_export_desc_init: desc is NULL");
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    memset(desc, 0, sizeof *desc);
    desc->struct_size = (uint32_t)sizeof *desc;
    desc->prim_predicate = ovstage_population_prim_predicate_all();
    desc->property_predicate = ovstage_population_property_predicate_all();
    return OVSTAGE_OK;
}

OVSTAGE_API ovstage_api_status_t ovstage_population_export_desc_init_snapshot(
    ovstage_population_export_desc_t* desc, ovstage_ordinal_t ordinal)
{
    const ovstage_api_status_t status = ovstage_population_export_desc_init(desc);
    if (status == OVSTAGE_OK) {
        desc->ordinal = ordinal;
    }
    return status;
}

OVSTAGE_API ovstage_api_status_t ovstage_population_export_destination_create(
    ovstage_instance_t* stage, ovx_string_t usd_identifier,
    ovstage_population_export_destination_mode_t mode,
    ovstage_population_export_destination_handle_t* out_destination)
{
    (void)usd_identifier, (void)mode;
    if (out_destination != NULL) {
        *out_destination = 0;
    }
    return refuse("ovstage_population_export_destination_create", no_export,
                  stage == NULL || out_destination == NULL);
}

OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_destination_enqueue_create(
    ovstage_instance_t* stage, ovx_string_t usd_identifier,
    ovstage_population_export_destination_mode_t mode,
    ovstage_population_export_destination_handle_t* out_destination)
{
    (void)usd_identifier, (void)mode;
    if (out_destination != NULL) {
        *out_destination = 0;
    }
    return refused("ovstage_population_export_destination_enqueue_create", no_export,
                   stage == NULL || out_destination == NULL);
}

OVSTAGE_API ovstage_api_status_t ovstage_population_export_to_destination(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination,
    const ovstage_population_export_desc_t* desc, ovstage_population_export_report_t* report)
{
    (void)destination, (void)desc;
    if (report != NULL) {
        memset(report, 0, sizeof *report);
    }
    return refuse("ovstage_population_export_to_destination", no_export, stage == NULL);
}

OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_enqueue_to_destination(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination,
    const ovstage_population_export_desc_t* desc)
{
    (void)destination, (void)desc;
    return EXP(ovstage_population_export_enqueue_to_destination);
}

OVSTAGE_API ovstage_api_status_t ovstage_population_export_destination_save(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination)
{
    (void)destination;
    return refuse("ovstage_population_export_destination_save", no_export, stage == NULL);
}

OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_destination_enqueue_save(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination)
{
    (void)destination;
    return EXP(ovstage_population_export_destination_enqueue_save);
}

OVSTAGE_API ovstage_api_status_t ovstage_population_export_destination_destroy(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination)
{
    (void)destination;
    return refuse("ovstage_population_export_destination_destroy", no_export, stage == NULL);
}

OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_destination_enqueue_destroy(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination)
{
    (void)destination;
    return EXP(ovstage_population_export_destination_enqueue_destroy);
}

OVSTAGE_API ovstage_api_status_t ovstage_population_export_to_usd_file(
    ovstage_instance_t* stage, ovx_string_t usd_identifier,
    const ovstage_population_export_desc_t* desc, ovstage_population_export_report_t* report)
{
    (void)usd_identifier, (void)desc;
    if (report != NULL) {
        memset(report, 0, sizeof *report);
    }
    return refuse("ovstage_population_export_to_usd_file", no_export, stage == NULL);
}

OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_export_enqueue_to_usd_file(
    ovstage_instance_t* stage, ovx_string_t usd_identifier,
    const ovstage_population_export_desc_t* desc)
{
    (void)usd_identifier, (void)desc;
    return EXP(ovstage_population_export_enqueue_to_usd_file);
}

OVSTAGE_API ovstage_api_status_t ovstage_population_export_to_usd_layer_identifier(
    ovstage_instance_t* stage, ovx_string_t usd_layer_identifier,
    const ovstage_population_export_desc_t* desc, ovstage_population_export_report_t* report)
{
    (void)usd_layer_identifier, (void)desc;
    if (report != NULL) {
        memset(report, 0, sizeof *report);
    }
    return refuse("ovstage_population_export_to_usd_layer_identifier", no_export, stage == NULL);
}

OVSTAGE_API ovstage_api_status_t ovstage_population_export_to_usd_stage_identifier(
    ovstage_instance_t* stage, ovx_string_t usd_stage_root_layer_identifier,
    const ovstage_population_export_desc_t* desc, ovstage_population_export_report_t* report)
{
    (void)usd_stage_root_layer_identifier, (void)desc;
    if (report != NULL) {
        memset(report, 0, sizeof *report);
    }
    return refuse("ovstage_population_export_to_usd_stage_identifier", no_export, stage == NULL);
}

OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_enqueue_to_usd_layer_identifier(
    ovstage_instance_t* stage, ovx_string_t usd_layer_identifier,
    const ovstage_population_export_desc_t* desc)
{
    (void)usd_layer_identifier, (void)desc;
    return EXP(ovstage_population_export_enqueue_to_usd_layer_identifier);
}

OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_enqueue_to_usd_stage_identifier(
    ovstage_instance_t* stage, ovx_string_t usd_stage_root_layer_identifier,
    const ovstage_population_export_desc_t* desc)
{
    (void)usd_stage_root_layer_identifier, (void)desc;
    return EXP(ovstage_population_export_enqueue_to_usd_stage_identifier);
}

/* No export op is ever issued, so every id is unknown. */
OVSTAGE_API ovstage_api_status_t ovstage_population_export_wait_op(
    ovstage_instance_t* stage, ovstage_population_op_id_t op_id, ovstage_timeout_ns_t timeout_ns,
    ovstage_population_export_report_t* report)
{
    char text[256];
    (void)timeout_ns;
    ovs_enter();
    if (report != NULL) {
        memset(report, 0, sizeof *report);
    }
    (void)snprintf(text, sizeof text,
                   "ovstage_population_export_wait_op: %s (export op id %llu: export is not in "
                   "this build, so no op is ever issued)",
                   stage == NULL ? "stage is NULL"
                                 : "unknown population operation id for asynchronous USD export",
                   (unsigned long long)op_id);
    ovs_set_population_error(text);
    return stage == NULL ? OVSTAGE_ERROR_INVALID_ARGUMENT : OVSTAGE_ERROR_INVALID_HANDLE;
}
