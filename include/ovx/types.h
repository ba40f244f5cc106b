/*
 * Handle types shared by ovx components (tokens, prim paths, path lists), the string-or-handle
 * argument structs, and the result type of the path dictionary.
 */
#ifndef OVX_TYPES_H
#define OVX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "string_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Interned string, prim path and path list handles; 0 is never a valid handle. */
typedef uint64_t ovx_token_t;
typedef uint64_t ovx_primpath_t;
typedef uint64_t ovx_primpath_list_t;

#define OVX_INVALID_TOKEN 0
#define OVX_INVALID_PRIMPATH 0
#define OVX_INVALID_PRIMPATH_LIST 0

/*
 * A name given either as a token or as text: a non-zero token wins and the string is ignored;
 * otherwise the string is interned at call time. {0, {NULL, 0}} means "none".
 */
typedef struct ovx_string_or_token_t {
    ovx_token_t token;
    ovx_string_t string;
} ovx_string_or_token_t;

/* A prim path given as a handle or as text (same rule as ovx_string_or_token_t). */
typedef struct ovx_string_or_prim_path_t {
    ovx_primpath_t path;
    ovx_string_t string;
} ovx_string_or_prim_path_t;

typedef enum ovx_api_status_t {
    OVX_API_SUCCESS = 0,
    OVX_API_ERROR = 1
} ovx_api_status_t;

/*
 * Returned by value from the path dictionary slots. A non-empty `error` belongs to the caller
 * and goes back through the dictionary's release_error slot exactly once.
 */
typedef struct ovx_api_result_t {
    ovx_api_status_t status;
    ovx_string_t error;
} ovx_api_result_t;

/* True for a NULL argument, a NULL ptr or a zero length. */
static inline bool is_ovx_string_empty(const ovx_string_t* s)
{
    return s == NULL || s->ptr == NULL || s->length == 0;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVX_TYPES_H */
