/* Checks the path dictionary applies to incoming strings, available to callers as well. */
#ifndef OVX_PATH_DICTIONARY_HELPER_H
#define OVX_PATH_DICTIONARY_HELPER_H

#include <stdbool.h>
#include <string.h>

#include "../types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True when a NUL byte occurs within the first `length` bytes of a non-NULL ptr. */
static inline bool ovx_string_contains_embedded_nul(const ovx_string_t* s)
{
    return s != NULL && s->ptr != NULL && s->length > 0 && memchr(s->ptr, 0, s->length) != NULL;
}

/* True for the one malformed shape: a NULL ptr with a non-zero length. */
static inline bool ovx_string_has_null_data(const ovx_string_t* s)
{
    return s != NULL && s->ptr == NULL && s->length != 0;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVX_PATH_DICTIONARY_HELPER_H */
