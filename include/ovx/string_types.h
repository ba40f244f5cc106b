/*
 * ovx_string_t: a length-delimited UTF-8 view used by every ovx and ovstage entry point.
 *
 * As input it need not be NUL-terminated (a slice of a larger buffer is fine); a non-empty
 * view the library hands out always has ptr[length] == 0. {NULL, 0} means "no value"; a NULL
 * ptr with a non-zero length is never valid. Two views are equal when their lengths and bytes
 * are equal.
 */
#ifndef OVX_STRING_TYPES_H
#define OVX_STRING_TYPES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ovx_string_t {
    const char* ptr;
    size_t length; /* bytes, excluding any terminator */
} ovx_string_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

/*
 * literal_to_ovx_string("text"): an ovx_string_t for a string literal, its length without the
 * terminating NUL. Pasting "" in front makes anything but a string literal a compile error.
 */
#ifdef __cplusplus
#define literal_to_ovx_string(str) (ovx_string_t{"" str, sizeof("" str) - 1})
#else
#define literal_to_ovx_string(str) ((ovx_string_t){"" str, sizeof("" str) - 1})
#endif

#endif /* OVX_STRING_TYPES_H */
