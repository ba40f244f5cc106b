/*
 * Types of the ovstage data plane: handles and ids, status codes, the enums of reads, writes
 * and queries, and the structs that cross the vtable (see docs/c-api.md for the layout table
 * that pins every size and offset).
 */
#ifndef OVSTAGE_API_TYPES_H
#define OVSTAGE_API_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../dlpack/dlpack.h"
#include "../../ovx/types.h"
#include "ovstage_api_defines.h"

#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1
#error "ovstage needs DLPack 1.x (DLManagedTensorVersioned); an older dlpack.h was included first"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Ordinals order every mutation of a stage; every value is a valid ordinal. */
#ifndef OVSTAGE_ORDINAL_T_DECLARED
#define OVSTAGE_ORDINAL_T_DECLARED
typedef uint64_t ovstage_ordinal_t;
#endif

/* Nanoseconds to wait: 0 polls, OVSTAGE_TIMEOUT_INFINITE blocks. */
typedef uint64_t ovstage_timeout_ns_t;
#define OVSTAGE_TIMEOUT_INFINITE (~0ULL)

/* Ids and handles; 0 is never valid. */
typedef uint64_t ovstage_op_id_t;
typedef uint64_t ovstage_query_handle_t;
typedef uint64_t ovstage_read_handle_t;
typedef uint64_t ovstage_map_handle_t;
typedef uint64_t ovstage_ordinal_query_handle_t;
typedef uint64_t ovstage_read_group_id_t;
typedef uint64_t ovstage_query_result_id_t;

#define OVSTAGE_INVALID_OP_ID 0
#define OVSTAGE_INVALID_QUERY_HANDLE 0
#define OVSTAGE_INVALID_READ_HANDLE 0
#define OVSTAGE_INVALID_MAP_HANDLE 0
#define OVSTAGE_INVALID_ORDINAL_QUERY_HANDLE 0
#define OVSTAGE_INVALID_READ_GROUP_ID 0
#define OVSTAGE_INVALID_QUERY_RESULT_ID 0

/*
 * Validity bits of `count` rows: bit i is bit (i % 64) of word (i / 64), least significant
 * first; exactly ceil(count / 64) words are read. NULL means every row is valid.
 */
typedef const uint64_t* ovstage_mask_t;

/* Status codes; the values are stable ABI. */
typedef enum ovstage_api_status_t {
    OVSTAGE_OK = 0,
    OVSTAGE_ERROR_INVALID_ARGUMENT = 1,
    OVSTAGE_ERROR_INVALID_HANDLE = 2,
    OVSTAGE_ERROR_NOT_FOUND = 3,
    OVSTAGE_ERROR_PRIM_NOT_FOUND = 4,
    OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION = 5,
    OVSTAGE_ERROR_NOT_SUPPORTED = 6,
    OVSTAGE_ERROR_QUEUE_FULL = 7,
    OVSTAGE_ERROR_END_OF_ITERATION = 8,
    OVSTAGE_ERROR_OUT_OF_MEMORY = 9,
    OVSTAGE_ERROR_LAYOUT_CHANGED = 10,
    OVSTAGE_ERROR_TIMEOUT = 11,
    OVSTAGE_ERROR_OP_FAILED = 12,
    OVSTAGE_ERROR_OUT_OF_RANGE = 13,
    OVSTAGE_ERROR_INTERNAL = 99
} ovstage_api_status_t;

/* Comparison of one query predicate. */
typedef enum ovstage_filter_op_t {
    OVSTAGE_FILTER_OP_HAS = 0,
    OVSTAGE_FILTER_OP_IN = 1,
    OVSTAGE_FILTER_OP_CONTAINS = 2,
    OVSTAGE_FILTER_OP_PREFIX = 3,
    OVSTAGE_FILTER_OP_LT = 4,
    OVSTAGE_FILTER_OP_LE = 5,
    OVSTAGE_FILTER_OP_GT = 6,
    OVSTAGE_FILTER_OP_GE = 7
} ovstage_filter_op_t;

/* Whether a write may create prims (UPSERT) or must create all of them (INSERT). */
typedef enum ovstage_prim_mode_t {
    OVSTAGE_PRIM_MODE_UPSERT = 0,
    OVSTAGE_PRIM_MODE_INSERT = 1
} ovstage_prim_mode_t;

/* REJECT fails on a schema mismatch; FORCE replaces the schema on the targeted prims. */
typedef enum ovstage_attribute_mode_t {
    OVSTAGE_ATTRIBUTE_MODE_REJECT = 0,
    OVSTAGE_ATTRIBUTE_MODE_FORCE = 1
} ovstage_attribute_mode_t;

/* Which attributes a write floor advance covers. */
typedef enum ovstage_scope_t {
    OVSTAGE_SCOPE_ALL = 0,
    OVSTAGE_SCOPE_INCLUDE = 1,
    OVSTAGE_SCOPE_EXCLUDE = 2
} ovstage_scope_t;

/* The role of an attribute's values. */
typedef enum ovstage_attribute_semantic_t {
    OVSTAGE_SEMANTIC_NONE = 0,
    OVSTAGE_SEMANTIC_ASSET_PATH_ID = 1,
    OVSTAGE_SEMANTIC_TOKEN_ID = 2,
    OVSTAGE_SEMANTIC_PATH_EXPRESSION_STRING = 3,
    OVSTAGE_SEMANTIC_RELATIONSHIP_PATH_ID = 4,
    OVSTAGE_SEMANTIC_POINT = 5,
    OVSTAGE_SEMANTIC_VECTOR = 6,
    OVSTAGE_SEMANTIC_NORMAL = 7,
    OVSTAGE_SEMANTIC_COLOR = 8,
    OVSTAGE_SEMANTIC_QUATERNION = 9,
    OVSTAGE_SEMANTIC_MATRIX = 10,
    OVSTAGE_SEMANTIC_TEXTURE_COORDINATE = 11,
    OVSTAGE_SEMANTIC_CONNECTION_PATH_ID = 12,
    OVSTAGE_SEMANTIC_STRING = 13,
    OVSTAGE_SEMANTIC_TIME_CODE = 14,
    OVSTAGE_SEMANTIC_FRAME = 15
} ovstage_attribute_semantic_t;

/*
 * The instance bundle: the vtable and the context every slot takes first. A component that
 * declares it before these headers defines OVSTAGE_INSTANCE_T_DECLARED and the same three
 * typedefs.
 */
#ifndef OVSTAGE_INSTANCE_T_DECLARED
#define OVSTAGE_INSTANCE_T_DECLARED
typedef struct ovstage_vtable_t ovstage_vtable_t;
typedef struct ovstage_context_t ovstage_context_t; /* opaque */
typedef struct ovstage_instance_t {
    const ovstage_vtable_t* vtable;
    ovstage_context_t* context;
} ovstage_instance_t;
#endif

/* CUDA stream and event (cudaStream_t / cudaEvent_t as integers); 0 = none. */
typedef struct ovstage_cuda_sync_t {
    uintptr_t stream;
    uintptr_t wait_event;
} ovstage_cuda_sync_t;

/* Result of every asynchronous slot: rejected enqueues have status != OK and op_index 0. */
typedef struct ovstage_enqueue_result_t {
    ovstage_api_status_t status;
    ovstage_op_id_t op_index;
} ovstage_enqueue_result_t;

/* Filled by wait_op; error_op_ids is thread-local, valid until this thread's next wait_op. */
typedef struct ovstage_op_wait_result_t {
    const ovstage_op_id_t* error_op_ids;
    size_t error_op_id_count;
    ovstage_op_id_t lowest_pending_op_id;
} ovstage_op_wait_result_t;

/* The payload of a read or map group. Logical element k is row index_map[k] (or k). */
typedef struct ovstage_data_t {
    const DLTensor* tensors;
    uint32_t tensor_count;
    uint32_t count;
    const uint32_t* index_map;
    ovstage_mask_t mask;
    ovstage_cuda_sync_t cuda_sync;
} ovstage_data_t;

/* The prims of a group: local prim k is list[index_map[k]] or list[offset + k]. */
typedef struct ovstage_prim_group_t {
    ovx_primpath_list_t list; /* borrowed from the producing handle */
    uint32_t offset;
    uint32_t count;
    const uint32_t* index_map;
} ovstage_prim_group_t;

typedef struct ovstage_attribute_meta_t {
    ovstage_ordinal_t attribute_write_floor_ordinal;
    uint64_t layout_generation;
} ovstage_attribute_meta_t;

/* {0, N, false}: snapshot at N; {s, e, true}: the changes in the range from s to e. */
typedef struct ovstage_ordinal_range_t {
    ovstage_ordinal_t start_ordinal;
    ovstage_ordinal_t end_ordinal;
    bool has_start_ordinal;
} ovstage_ordinal_range_t;

/* One group of a read; everything it points at is valid until release_group. */
typedef struct ovstage_read_group_t {
    ovstage_read_group_id_t read_group_id;
    ovx_token_t attribute;
    ovstage_ordinal_t ordinal;
    bool is_delete; /* a tombstone: no tensors */
    bool is_array;
    ovstage_attribute_semantic_t semantic;
    ovstage_prim_group_t prims;
    ovstage_data_t data;
    ovstage_attribute_meta_t meta;
} ovstage_read_group_t;

/* One group of a map session; its buffers are writable until the group is committed. */
typedef struct ovstage_map_group_t {
    ovstage_prim_group_t prims;
    ovstage_data_t data;
    ovstage_attribute_meta_t meta;
} ovstage_map_group_t;

typedef struct ovstage_map_desc_t {
    ovx_string_or_token_t attribute;
    DLDataType dtype;
    ovstage_attribute_semantic_t semantic;
    ovstage_prim_mode_t prim_mode;
    ovstage_attribute_mode_t attribute_mode;
} ovstage_map_desc_t;

/* One filter term; its values are alternatives. */
typedef struct ovstage_predicate_t {
    ovx_string_or_token_t attribute;
    ovstage_filter_op_t op;
    const ovx_string_t* values;
    size_t value_count;
} ovstage_predicate_t;

/* The conjunction of `count` predicates. */
typedef struct ovstage_filter_t {
    const ovstage_predicate_t* predicates;
    size_t count;
} ovstage_filter_t;

/* Valid until release_query_result. */
typedef struct ovstage_query_result_t {
    ovstage_query_result_id_t query_result_id;
    const ovx_token_t* attributes;
    size_t attribute_count;
    ovstage_query_handle_t all_handle;
    size_t total_prim_count;
} ovstage_query_result_t;

typedef struct ovstage_write_floor_desc_t {
    ovstage_ordinal_t ordinal;
    ovstage_scope_t scope;
    const ovx_token_t* attributes; /* for INCLUDE / EXCLUDE */
    size_t attribute_count;
} ovstage_write_floor_desc_t;

/*
 * The data of one write, passed by value. Give either client-managed `tensors` (kept alive by
 * the caller until the op completes) or `managed_tensors` (owned by ovstage from call entry).
 * A zero-initialised struct means a dense write with no semantic, REJECT mode.
 */
typedef struct ovstage_write_data_t {
    const DLTensor* tensors;
    const DLManagedTensorVersioned* const* managed_tensors;
    uint32_t tensor_count;
    uint32_t count;
    const uint32_t* index_map;
    ovstage_mask_t mask;
    ovstage_cuda_sync_t cuda_sync;
    ovstage_attribute_semantic_t semantic;
    bool is_array;
    ovstage_attribute_mode_t attribute_mode;
} ovstage_write_data_t;

/* One entry of a write_attributes batch. */
typedef struct ovstage_attribute_write_t {
    ovx_string_or_token_t attribute;
    ovstage_write_data_t data;
} ovstage_attribute_write_t;

/*
 * First member of every table query_extension hands out. Check both fields before reading
 * an entry: the version must be one the caller knows and struct_size large enough.
 */
typedef struct ovstage_extension_header_t {
    uint32_t struct_size;
    uint32_t version;
} ovstage_extension_header_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_API_TYPES_H */
