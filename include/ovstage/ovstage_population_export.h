/*
 * Export (stage -> USD): writes the stage's state at a committed ordinal out as USD opinions,
 * to a file, a layer, a stage or a reusable destination. Synchronous functions return a
 * status; the enqueue_* variants return an ovstage_population_enqueue_result_t, run on the
 * population FIFO and are finished with ovstage_population_export_wait_op. Not included by
 * ovstage.h.
 */
#ifndef OVSTAGE_POPULATION_EXPORT_H
#define OVSTAGE_POPULATION_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../ovx/types.h"
#include "ovstage_api/ovstage_api_defines.h"
#include "ovstage_api/ovstage_api_types.h"
#include "ovstage_population.h"
#include "ovstage_population_predicate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t ovstage_population_export_destination_handle_t;

#define OVSTAGE_POPULATION_EXPORT_INVALID_DESTINATION_HANDLE 0

/* customData key under which PRESERVE keeps applied API schema names it could not resolve. */
#define OVSTAGE_POPULATION_EXPORT_UNKNOWN_APPLIED_API_SCHEMAS_CUSTOM_DATA_KEY \
    "ovpopulation:unknownAppliedAPISchemas"

/* EXPLICIT_PREDICATE: the state at `ordinal`; CHANGED_PROPERTIES_SINCE_ORDINAL: properties
 * changed after since_ordinal up to `ordinal`. Both are constrained by the predicates. */
typedef enum ovstage_population_export_selection_t {
    OVSTAGE_POPULATION_EXPORT_SELECTION_EXPLICIT_PREDICATE = 0,
    OVSTAGE_POPULATION_EXPORT_SELECTION_CHANGED_PROPERTIES_SINCE_ORDINAL = 1
} ovstage_population_export_selection_t;

/* New prim specs as sparse `over`s or durable `def`s. */
typedef enum ovstage_population_export_layer_mode_t {
    OVSTAGE_POPULATION_EXPORT_LAYER_MODE_OVER = 0,
    OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF = 1
} ovstage_population_export_layer_mode_t;

/* A rule path names one prim (EXACT) or the prim and its descendants (PREFIX). */
typedef enum ovstage_population_export_path_match_t {
    OVSTAGE_POPULATION_EXPORT_PATH_MATCH_EXACT = 0,
    OVSTAGE_POPULATION_EXPORT_PATH_MATCH_PREFIX = 1
} ovstage_population_export_path_match_t;

typedef enum ovstage_population_export_name_match_t {
    OVSTAGE_POPULATION_EXPORT_NAME_MATCH_EXACT = 0,
    OVSTAGE_POPULATION_EXPORT_NAME_MATCH_GLOB = 1
} ovstage_population_export_name_match_t;

typedef enum ovstage_population_export_transform_policy_t {
    OVSTAGE_POPULATION_EXPORT_TRANSFORM_USD_XFORM_OP = 0,
    OVSTAGE_POPULATION_EXPORT_TRANSFORM_NONE = 1,
    OVSTAGE_POPULATION_EXPORT_TRANSFORM_USD_MATRIX_OP = 2
} ovstage_population_export_transform_policy_t;

typedef enum ovstage_population_export_unknown_metadata_policy_t {
    OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_DROP = 0,
    OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_PRESERVE = 1,
    OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_FAIL = 2
} ovstage_population_export_unknown_metadata_policy_t;

typedef enum ovstage_population_export_source_api_schema_policy_t {
    OVSTAGE_POPULATION_EXPORT_SOURCE_API_SCHEMAS_EXPLICIT_ONLY = 0,
    OVSTAGE_POPULATION_EXPORT_SOURCE_API_SCHEMAS_APPLY_RECORDED = 1
} ovstage_population_export_source_api_schema_policy_t;

typedef enum ovstage_population_export_projection_t {
    OVSTAGE_POPULATION_EXPORT_PROJECTION_EXPLICIT_RULES = 0,
    OVSTAGE_POPULATION_EXPORT_PROJECTION_SCHEMA_DECLARED = 1
} ovstage_population_export_projection_t;

/* Bits of the rules' uint32_t `flags` (bit value 4 is unassigned). */
typedef enum ovstage_population_export_rule_flags_t {
    OVSTAGE_POPULATION_EXPORT_RULE_NONE = 0,
    OVSTAGE_POPULATION_EXPORT_RULE_EXPORT_DEFAULT_VALUE = 1,
    OVSTAGE_POPULATION_EXPORT_RULE_DERIVED_ALLOWED = 2,
    OVSTAGE_POPULATION_EXPORT_RULE_INFER_CUSTOM_TYPE = 8,
    OVSTAGE_POPULATION_EXPORT_RULE_REQUIRED = 16
} ovstage_population_export_rule_flags_t;

/* INVALID (0) makes a zero-initialised property rule an error. */
typedef enum ovstage_population_export_property_kind_t {
    OVSTAGE_POPULATION_EXPORT_PROPERTY_INVALID = 0,
    OVSTAGE_POPULATION_EXPORT_PROPERTY_RELATIONSHIP = 1,
    OVSTAGE_POPULATION_EXPORT_PROPERTY_CONNECTION = 2,
    OVSTAGE_POPULATION_EXPORT_PROPERTY_MATERIAL_BINDING = 3
} ovstage_population_export_property_kind_t;

typedef enum ovstage_population_export_metadata_kind_t {
    OVSTAGE_POPULATION_EXPORT_METADATA_PRIM = 0,
    OVSTAGE_POPULATION_EXPORT_METADATA_LAYER_CUSTOM_DATA = 1,
    OVSTAGE_POPULATION_EXPORT_METADATA_REFERENCES = 2,
    OVSTAGE_POPULATION_EXPORT_METADATA_LAYER_STANDARD = 3
} ovstage_population_export_metadata_kind_t;

/* EMPTY starts from an empty in-memory stage; OPEN_EXISTING opens the stored layer stack. */
typedef enum ovstage_population_export_destination_mode_t {
    OVSTAGE_POPULATION_EXPORT_DESTINATION_EMPTY = 0,
    OVSTAGE_POPULATION_EXPORT_DESTINATION_OPEN_EXISTING = 1
} ovstage_population_export_destination_mode_t;

/* Rules. An empty `path` means every selected prim; empty destination names reuse the source. */

typedef struct ovstage_population_export_attribute_rule_t {
    ovx_string_t path;
    ovstage_population_export_path_match_t path_match;
    ovx_string_t source_attribute_name;
    ovstage_population_export_name_match_t source_attribute_name_match;
    ovx_string_t destination_attribute_name;
    ovx_string_t usd_type_name;
    ovx_string_t required_schema_name;
    uint32_t flags;
} ovstage_population_export_attribute_rule_t;

typedef struct ovstage_population_export_prim_rule_t {
    ovx_string_t path;
    ovstage_population_export_path_match_t path_match;
    ovx_string_t usd_type_name;
    ovx_string_t unknown_type_metadata_key;
} ovstage_population_export_prim_rule_t;

typedef struct ovstage_population_export_api_schema_rule_t {
    ovx_string_t path;
    ovstage_population_export_path_match_t path_match;
    ovx_string_t schema_name;
    ovx_string_t instance_name; /* empty for single-apply schemas */
    uint32_t flags;
} ovstage_population_export_api_schema_rule_t;

typedef struct ovstage_population_export_property_edge_rule_t {
    ovx_string_t path;
    ovstage_population_export_path_match_t path_match;
    ovx_string_t source_property_name;
    ovx_string_t destination_property_name;
    ovx_string_t usd_type_name; /* connections only */
    ovstage_population_export_property_kind_t property_kind;
    uint32_t flags;
} ovstage_population_export_property_edge_rule_t;

typedef struct ovstage_population_export_metadata_rule_t {
    ovx_string_t path;
    ovstage_population_export_path_match_t path_match;
    ovx_string_t source_metadata_name;
    ovx_string_t destination_metadata_name;
    ovstage_population_export_metadata_kind_t metadata_kind;
    uint32_t flags;
} ovstage_population_export_metadata_rule_t;

/*
 * What to export. struct_size must be sizeof(ovstage_population_export_desc_t); start from
 * ovstage_population_export_desc_init. Each rule count is at most 4096.
 */
typedef struct ovstage_population_export_desc_t {
    uint32_t struct_size;
    ovstage_population_export_source_api_schema_policy_t source_api_schema_policy;
    ovstage_population_export_projection_t projection;
    ovstage_ordinal_t ordinal; /* the committed ordinal the caller believes is current */
    ovstage_ordinal_t since_ordinal;
    ovstage_population_export_selection_t selection;
    ovstage_population_export_layer_mode_t layer_mode;
    ovstage_population_export_transform_policy_t transform_policy;
    ovstage_population_export_unknown_metadata_policy_t unknown_metadata_policy;
    ovstage_population_prim_predicate_t prim_predicate;
    ovstage_population_property_predicate_t property_predicate;
    const ovstage_population_export_prim_rule_t* prim_rules;
    size_t prim_rule_count;
    const ovstage_population_export_api_schema_rule_t* api_schema_rules;
    size_t api_schema_rule_count;
    const ovstage_population_export_attribute_rule_t* attribute_rules;
    size_t attribute_rule_count;
    const ovstage_population_export_property_edge_rule_t* property_rules;
    size_t property_rule_count;
    const ovstage_population_export_metadata_rule_t* metadata_rules;
    size_t metadata_rule_count;
} ovstage_population_export_desc_t;

/* Best-effort counters of one export (diagnostics only). */
typedef struct ovstage_population_export_report_t {
    size_t prims_examined;
    size_t prims_exported;
    size_t prims_skipped;
    size_t attributes_examined;
    size_t attributes_exported;
    size_t attributes_skipped;
    size_t attributes_unsupported;
    size_t api_schemas_examined;
    size_t api_schemas_applied;
    size_t api_schemas_skipped;
    size_t custom_attributes_inferred;
    size_t unknown_metadata_preserved;
    size_t transforms_examined;
    size_t transforms_exported;
    size_t property_edges_examined;
    size_t property_edges_exported;
    size_t property_edges_skipped;
    size_t property_edges_unsupported;
    size_t metadata_examined;
    size_t metadata_exported;
    size_t metadata_skipped;
    size_t metadata_unsupported;
    size_t source_states_unavailable; /* exports that could not read the source ordinal */
} ovstage_population_export_report_t;

/* Descriptors --------------------------------------------------------------------------------- */

/* Safe defaults: all zero except struct_size and both predicates ALL. */
OVSTAGE_API ovstage_api_status_t ovstage_population_export_desc_init(
    ovstage_population_export_desc_t* desc);
/* desc_init, then desc->ordinal = ordinal. */
OVSTAGE_API ovstage_api_status_t ovstage_population_export_desc_init_snapshot(
    ovstage_population_export_desc_t* desc, ovstage_ordinal_t ordinal);

/* Destinations (owned by `stage`, which must outlive them) ------------------------------------ */

OVSTAGE_API ovstage_api_status_t ovstage_population_export_destination_create(
    ovstage_instance_t* stage, ovx_string_t usd_identifier,
    ovstage_population_export_destination_mode_t mode,
    ovstage_population_export_destination_handle_t* out_destination);
OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_destination_enqueue_create(
    ovstage_instance_t* stage, ovx_string_t usd_identifier,
    ovstage_population_export_destination_mode_t mode,
    ovstage_population_export_destination_handle_t* out_destination);

/* Adds opinions in memory; only destination_save writes storage. report may be NULL. */
OVSTAGE_API ovstage_api_status_t ovstage_population_export_to_destination(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination,
    const ovstage_population_export_desc_t* desc, ovstage_population_export_report_t* report);
OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_enqueue_to_destination(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination,
    const ovstage_population_export_desc_t* desc);

OVSTAGE_API ovstage_api_status_t ovstage_population_export_destination_save(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination);
OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_destination_enqueue_save(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination);

/* Discards unsaved content. */
OVSTAGE_API ovstage_api_status_t ovstage_population_export_destination_destroy(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination);
OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_destination_enqueue_destroy(
    ovstage_instance_t* stage, ovstage_population_export_destination_handle_t destination);

/* One-shot exports ------------------------------------------------------------------------- */

/* Create (EMPTY), export, save, destroy. */
OVSTAGE_API ovstage_api_status_t ovstage_population_export_to_usd_file(
    ovstage_instance_t* stage, ovx_string_t usd_identifier,
    const ovstage_population_export_desc_t* desc, ovstage_population_export_report_t* report);
OVSTAGE_API ovstage_population_enqueue_result_t ovstage_population_export_enqueue_to_usd_file(
    ovstage_instance_t* stage, ovx_string_t usd_identifier,
    const ovstage_population_export_desc_t* desc);

/* Edit a layer / a stage's edit target directly, outside the FIFO and without rollback. */
OVSTAGE_API ovstage_api_status_t ovstage_population_export_to_usd_layer_identifier(
    ovstage_instance_t* stage, ovx_string_t usd_layer_identifier,
    const ovstage_population_export_desc_t* desc, ovstage_population_export_report_t* report);
OVSTAGE_API ovstage_api_status_t ovstage_population_export_to_usd_stage_identifier(
    ovstage_instance_t* stage, ovx_string_t usd_stage_root_layer_identifier,
    const ovstage_population_export_desc_t* desc, ovstage_population_export_report_t* report);
OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_enqueue_to_usd_layer_identifier(
    ovstage_instance_t* stage, ovx_string_t usd_layer_identifier,
    const ovstage_population_export_desc_t* desc);
OVSTAGE_API ovstage_population_enqueue_result_t
ovstage_population_export_enqueue_to_usd_stage_identifier(
    ovstage_instance_t* stage, ovx_string_t usd_stage_root_layer_identifier,
    const ovstage_population_export_desc_t* desc);

/*
 * Waits for every population op up to op_id; the first terminal wait consumes an export's
 * result. report (may be NULL) receives the final counters.
 */
OVSTAGE_API ovstage_api_status_t ovstage_population_export_wait_op(
    ovstage_instance_t* stage, ovstage_population_op_id_t op_id, ovstage_timeout_ns_t timeout_ns,
    ovstage_population_export_report_t* report);

/*
 * A snapshot descriptor for exporting the typed hierarchy under *root_path as `def`s with the
 * recorded API schemas and schema-declared attributes. The descriptor points at the caller's
 * *root_path, which must outlive the synchronous export or the successful enqueue.
 */
static inline ovstage_api_status_t ovstage_population_export_desc_init_typed_hierarchy(
    ovstage_population_export_desc_t* desc, ovstage_ordinal_t ordinal,
    const ovx_string_t* root_path)
{
    const ovstage_api_status_t status = ovstage_population_export_desc_init_snapshot(desc, ordinal);
    if (status != OVSTAGE_OK) {
        return status;
    }
    desc->layer_mode = OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF;
    desc->source_api_schema_policy = OVSTAGE_POPULATION_EXPORT_SOURCE_API_SCHEMAS_APPLY_RECORDED;
    desc->projection = OVSTAGE_POPULATION_EXPORT_PROJECTION_SCHEMA_DECLARED;
    desc->prim_predicate = ovstage_population_prim_predicate_is_under_path(root_path, 1);
    return OVSTAGE_OK;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_POPULATION_EXPORT_H */
