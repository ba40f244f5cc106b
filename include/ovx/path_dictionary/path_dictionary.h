/*
 * The path dictionary: interns strings as tokens, prim paths as path handles, and keeps
 * reference-counted path lists. It is reached through the 12-slot vtable of a
 * path_dictionary_instance_t; every slot takes the instance's context first and is
 * thread-safe. All slots but release_error return an ovx_api_result_t by value.
 * Slot order is part of the ABI: append only.
 */
#ifndef OVX_PATH_DICTIONARY_H
#define OVX_PATH_DICTIONARY_H

#include <stddef.h>

#include "../types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct path_dictionary_context_t path_dictionary_context_t; /* opaque */

typedef struct path_dictionary_vtable_t {
    /* Interns each string; an empty string or one holding a NUL is an error. */
    ovx_api_result_t (*create_tokens_from_strings)(path_dictionary_context_t* context,
                                                   const ovx_string_t* strings,
                                                   size_t num_strings, ovx_token_t* out_tokens);
    /* Builds absolute paths from concatenated per-path token runs (0 tokens is "/"). */
    ovx_api_result_t (*create_paths_from_tokens)(path_dictionary_context_t* context,
                                                 const ovx_token_t* tokens_per_path,
                                                 const size_t* num_tokens_per_path,
                                                 size_t num_paths, ovx_primpath_t* out_prim_paths);
    ovx_api_result_t (*create_paths_from_strings)(path_dictionary_context_t* context,
                                                  const ovx_string_t* path_strings,
                                                  size_t num_paths, ovx_primpath_t* out_prim_paths);
    /* A new list holding one reference for the caller; never deduplicated. */
    ovx_api_result_t (*create_path_list_from_paths)(path_dictionary_context_t* context,
                                                    const ovx_primpath_t* paths, size_t num_paths,
                                                    ovx_primpath_list_t* out_path_list);
    ovx_api_result_t (*create_path_list_from_strings)(path_dictionary_context_t* context,
                                                      const ovx_string_t* path_strings,
                                                      size_t num_paths,
                                                      ovx_primpath_list_t* out_path_list);
    ovx_api_result_t (*add_path_list_reference)(path_dictionary_context_t* context,
                                                ovx_primpath_list_t path_list);
    ovx_api_result_t (*release_path_list_reference)(path_dictionary_context_t* context,
                                                    ovx_primpath_list_t path_list);
    /* Views into dictionary storage, valid for the dictionary's life; never freed. */
    ovx_api_result_t (*get_strings_from_tokens)(path_dictionary_context_t* context,
                                                const ovx_token_t* tokens, size_t num_tokens,
                                                ovx_string_t* out_strings);
    /* Fills token_buffer path by path and stops before the first path that does not fit. */
    ovx_api_result_t (*get_tokens_from_paths)(path_dictionary_context_t* context,
                                              const ovx_primpath_t* prim_paths, size_t num_paths,
                                              ovx_token_t* token_buffer, size_t token_buffer_size,
                                              ovx_token_t** out_tokens_per_path,
                                              size_t* out_num_tokens_per_path,
                                              size_t* out_num_paths_processed);
    ovx_api_result_t (*get_num_paths_from_path_list)(path_dictionary_context_t* context,
                                                     ovx_primpath_list_t path_list,
                                                     size_t* out_num_paths);
    ovx_api_result_t (*get_paths_from_path_list)(path_dictionary_context_t* context,
                                                 ovx_primpath_list_t path_list,
                                                 size_t start_offset, size_t max_paths,
                                                 ovx_primpath_t* out_paths, size_t* out_num_paths);
    /* Frees the error text of an ovx_api_result_t (never a dictionary-owned string). */
    void (*release_error)(path_dictionary_context_t* context, ovx_string_t error);
} path_dictionary_vtable_t;

/* Owned by the ovstage instance that handed it out; never freed by the caller. */
typedef struct path_dictionary_instance_t {
    path_dictionary_vtable_t* vtable;
    path_dictionary_context_t* context;
} path_dictionary_instance_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVX_PATH_DICTIONARY_H */
