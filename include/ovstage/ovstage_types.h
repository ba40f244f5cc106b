/*
 * Process- and instance-level types: version, build information, configuration entries,
 * logging, instance creation, clone results and the hierarchy API.
 */
#ifndef OVSTAGE_TYPES_H
#define OVSTAGE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ovx/types.h"
#include "ovstage_api/ovstage_api_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The API version these headers describe (also reported by the get_version slot). */
#define OVSTAGE_VERSION_MAJOR 0
#define OVSTAGE_VERSION_MINOR 3
#define OVSTAGE_VERSION_PATCH 0

/* Instance creation ---------------------------------------------------------------------- */

typedef struct ovstage_instance_desc_t {
    const char* name; /* may be NULL */
} ovstage_instance_desc_t;

/*
 * Owned by the library. Later versions only append fields: check struct_size before reading
 * one. build_string is "<major>.<minor>.<patch>+<git_branch>.<build_number>.<git_hash>.
 * <build_location>".
 */
typedef struct ovstage_build_info_t {
    uint32_t struct_size;
    uint32_t build_number;
    ovx_string_t build_string;
    ovx_string_t git_branch;
    ovx_string_t git_hash;
    ovx_string_t build_location;
} ovstage_build_info_t;

/* Configuration ---------------------------------------------------------------------------- */

/* How a stage admits write ordinals (a process-wide setting each instance captures). */
typedef enum ovstage_ordinal_admission_policy_t {
    OVSTAGE_ORDINAL_ADMISSION_DEFAULT = 0,
    OVSTAGE_ORDINAL_ADMISSION_FLOOR_ONLY = 1,
    OVSTAGE_ORDINAL_ADMISSION_NONDECREASING = 2,
    OVSTAGE_ORDINAL_ADMISSION_STRICTLY_INCREASING = 3
} ovstage_ordinal_admission_policy_t;

/* Selects the key enum and the value member of an ovstage_config_entry_t. */
typedef enum ovstage_config_key_type_t {
    OVSTAGE_CONFIG_KEY_TYPE_BOOL = 0,
    OVSTAGE_CONFIG_KEY_TYPE_INT64 = 1,
    OVSTAGE_CONFIG_KEY_TYPE_UINT64 = 2,
    OVSTAGE_CONFIG_KEY_TYPE_DOUBLE = 3,
    OVSTAGE_CONFIG_KEY_TYPE_STRING = 4,
    OVSTAGE_CONFIG_KEY_TYPE_BLOB = 5,
    OVSTAGE_CONFIG_KEY_TYPE_COUNT = 6
} ovstage_config_key_type_t;

/* The keys of each value type; the *_COUNT members are not keys. */
typedef enum ovstage_config_bool_t {
    OVSTAGE_CONFIG_BOOL_COUNT = 0
} ovstage_config_bool_t;

typedef enum ovstage_config_int64_t {
    OVSTAGE_CONFIG_INT64_COUNT = 0
} ovstage_config_int64_t;

/*
 * The HISTORY_WINDOW keys are ours (not the reference's): how many ordinals behind its floor an
 * instance serves snapshot reads at (0: none, the reference's answers; default 16) and the
 * memory budget of those versions in bytes (0: the default, 256 MiB). They never conflict: an
 * instance takes the values of the latest ovstage_initialize that named them in its lifetime.
 */
typedef enum ovstage_config_uint64_t {
    OVSTAGE_CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL = 0, /* a model id */
    OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY = 1,    /* an admission policy */
    OVSTAGE_CONFIG_HISTORY_WINDOW_ORDINALS = 2,                     /* ordinals (ours) */
    OVSTAGE_CONFIG_HISTORY_WINDOW_BYTES = 3,                        /* bytes (ours) */
    OVSTAGE_CONFIG_UINT64_COUNT = 4
} ovstage_config_uint64_t;

typedef enum ovstage_config_double_t {
    OVSTAGE_CONFIG_DOUBLE_COUNT = 0
} ovstage_config_double_t;

typedef enum ovstage_config_string_t {
    OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH = 0, /* static loader only */
    OVSTAGE_CONFIG_STRING_COUNT = 1
} ovstage_config_string_t;

typedef enum ovstage_config_blob_t {
    OVSTAGE_CONFIG_BLOB_COUNT = 0
} ovstage_config_blob_t;

/* One typed setting; key_type says which `key` and `value` members are meaningful. */
typedef struct ovstage_config_entry_t {
    ovstage_config_key_type_t key_type;
    union {
        ovstage_config_bool_t bool_key;
        ovstage_config_int64_t int64_key;
        ovstage_config_uint64_t uint64_key;
        ovstage_config_double_t double_key;
        ovstage_config_string_t string_key;
        ovstage_config_blob_t blob_key;
    } key;
    union {
        bool bool_value;
        int64_t int_value;
        uint64_t uint_value;
        double double_value;
        ovx_string_t string_value;
        struct {
            const void* data;
            size_t size;
        } blob_value;
    } value;
} ovstage_config_entry_t;

typedef struct ovstage_config_t {
    const ovstage_config_entry_t* entries;
    size_t entry_count;
} ovstage_config_t;

/* Logging ------------------------------------------------------------------------------------ */

/* Message severities; NONE is only a threshold (there is no value 2). */
typedef enum ovstage_log_severity_t {
    OVSTAGE_LOG_VERBOSE = -2,
    OVSTAGE_LOG_INFO = -1,
    OVSTAGE_LOG_WARNING = 0,
    OVSTAGE_LOG_ERROR = 1,
    OVSTAGE_LOG_NONE = 3
} ovstage_log_severity_t;

/* timestamp: wall-clock seconds since the epoch; message is valid only during the call. */
typedef void (*ovstage_log_callback_t)(ovstage_log_severity_t severity, double timestamp,
                                       ovx_string_t message, void* user_data);

/* Clone ------------------------------------------------------------------------------------ */

typedef struct ovstage_clone_result_t {
    ovstage_ordinal_t ordinal;
    size_t target_count;
    size_t source_prim_count;
    size_t prims_cloned;
} ovstage_clone_result_t;

/* Hierarchy ------------------------------------------------------------------------------- */

typedef uint64_t ovstage_hierarchy_handle_t;
typedef uint64_t ovstage_hierarchy_result_id_t;

#define OVSTAGE_INVALID_HIERARCHY_HANDLE 0
#define OVSTAGE_INVALID_HIERARCHY_RESULT_ID 0

/* How world transforms are derived from local ones. */
typedef enum ovstage_hierarchy_computation_model_id_t {
    OVSTAGE_HIERARCHY_COMPUTATION_MODEL_INVALID = 0,
    OVSTAGE_HIERARCHY_COMPUTATION_MODEL_CPU_INCREMENTAL = 1,
    OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_INCREMENTAL = 2,
    OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_GLOBAL = 3,
    OVSTAGE_HIERARCHY_COMPUTATION_MODEL_RUNTIME_DEFAULT = 4,
    OVSTAGE_HIERARCHY_COMPUTATION_MODEL_DEFAULT_CPU = 1,
    OVSTAGE_HIERARCHY_COMPUTATION_MODEL_DEFAULT_GPU = 3
} ovstage_hierarchy_computation_model_id_t;

#define OVSTAGE_INVALID_HIERARCHY_COMPUTATION_MODEL_ID OVSTAGE_HIERARCHY_COMPUTATION_MODEL_INVALID

typedef enum ovstage_hierarchy_relation_t {
    OVSTAGE_HIERARCHY_PARENT = 0,
    OVSTAGE_HIERARCHY_CHILDREN = 1,
    OVSTAGE_HIERARCHY_SIBLINGS = 2
} ovstage_hierarchy_relation_t;

/* The answer for input path i: paths[path_offset .. path_offset + path_count). */
typedef struct ovstage_hierarchy_item_t {
    ovstage_api_status_t status;
    size_t path_offset;
    size_t path_count;
} ovstage_hierarchy_item_t;

/* Valid until ovstage_release_hierarchy_result. */
typedef struct ovstage_hierarchy_result_t {
    ovstage_hierarchy_result_id_t hierarchy_result_id;
    ovstage_ordinal_t ordinal;
    const ovstage_hierarchy_item_t* items;
    size_t input_count;
    const ovx_string_or_token_t* paths;
    size_t path_count;
} ovstage_hierarchy_result_t;

typedef struct ovstage_hierarchy_computation_model_desc_t {
    ovstage_hierarchy_computation_model_id_t model_id;
    ovx_string_t name;
    ovx_string_t description;
} ovstage_hierarchy_computation_model_desc_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_TYPES_H */
