/*
 * path_dictionary_<slot>(dictionary, ...): one inline forwarder per path dictionary slot,
 * passing dictionary->context as the first argument.
 */
#ifndef OVX_PATH_DICTIONARY_UTILS_H
#define OVX_PATH_DICTIONARY_UTILS_H

#include "path_dictionary.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline ovx_api_result_t path_dictionary_create_tokens_from_strings(
    path_dictionary_instance_t* dictionary, const ovx_string_t* strings, size_t num_strings,
    ovx_token_t* out_tokens)
{
    return dictionary->vtable->create_tokens_from_strings(dictionary->context, strings,
                                                          num_strings, out_tokens);
}

static inline ovx_api_result_t path_dictionary_create_paths_from_tokens(
    path_dictionary_instance_t* dictionary, const ovx_token_t* tokens_per_path,
    const size_t* num_tokens_per_path, size_t num_paths, ovx_primpath_t* out_prim_paths)
{
    return dictionary->vtable->create_paths_from_tokens(
        dictionary->context, tokens_per_path, num_tokens_per_path, num_paths, out_prim_paths);
}

static inline ovx_api_result_t path_dictionary_create_paths_from_strings(
    path_dictionary_instance_t* dictionary, const ovx_string_t* path_strings, size_t num_paths,
    ovx_primpath_t* out_prim_paths)
{
    return dictionary->vtable->create_paths_from_strings(dictionary->context, path_strings,
                                                         num_paths, out_prim_paths);
}

static inline ovx_api_result_t path_dictionary_create_path_list_from_paths(
    path_dictionary_instance_t* dictionary, const ovx_primpath_t* paths, size_t num_paths,
    ovx_primpath_list_t* out_path_list)
{
    return dictionary->vtable->create_path_list_from_paths(dictionary->context, paths, num_paths,
                                                           out_path_list);
}

static inline ovx_api_result_t path_dictionary_create_path_list_from_strings(
    path_dictionary_instance_t* dictionary, const ovx_string_t* path_strings, size_t num_paths,
    ovx_primpath_list_t* out_path_list)
{
    return dictionary->vtable->create_path_list_from_strings(dictionary->context, path_strings,
                                                             num_paths, out_path_list);
}

static inline ovx_api_result_t path_dictionary_add_path_list_reference(
    path_dictionary_instance_t* dictionary, ovx_primpath_list_t path_list)
{
    return dictionary->vtable->add_path_list_reference(dictionary->context, path_list);
}

static inline ovx_api_result_t path_dictionary_release_path_list_reference(
    path_dictionary_instance_t* dictionary, ovx_primpath_list_t path_list)
{
    return dictionary->vtable->release_path_list_reference(dictionary->context, path_list);
}

static inline ovx_api_result_t path_dictionary_get_strings_from_tokens(
    path_dictionary_instance_t* dictionary, const ovx_token_t* tokens, size_t num_tokens,
    ovx_string_t* out_strings)
{
    return dictionary->vtable->get_strings_from_tokens(dictionary->context, tokens, num_tokens,
                                                       out_strings);
}

static inline ovx_api_result_t path_dictionary_get_tokens_from_paths(
    path_dictionary_instance_t* dictionary, const ovx_primpath_t* prim_paths, size_t num_paths,
    ovx_token_t* token_buffer, size_t token_buffer_size, ovx_token_t** out_tokens_per_path,
    size_t* out_num_tokens_per_path, size_t* out_num_paths_processed)
{
    return dictionary->vtable->get_tokens_from_paths(
        dictionary->context, prim_paths, num_paths, token_buffer, token_buffer_size,
        out_tokens_per_path, out_num_tokens_per_path, out_num_paths_processed);
}

static inline ovx_api_result_t path_dictionary_get_num_paths_from_path_list(
    path_dictionary_instance_t* dictionary, ovx_primpath_list_t path_list, size_t* out_num_paths)
{
    return dictionary->vtable->get_num_paths_from_path_list(dictionary->context, path_list,
                                                            out_num_paths);
}

static inline ovx_api_result_t path_dictionary_get_paths_from_path_list(
    path_dictionary_instance_t* dictionary, ovx_primpath_list_t path_list, size_t start_offset,
    size_t max_paths, ovx_primpath_t* out_paths, size_t* out_num_paths)
{
    return dictionary->vtable->get_paths_from_path_list(dictionary->context, path_list,
                                                        start_offset, max_paths, out_paths,
                                                        out_num_paths);
}

static inline void path_dictionary_release_error(path_dictionary_instance_t* dictionary,
                                                 ovx_string_t error)
{
    dictionary->vtable->release_error(dictionary->context, error);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVX_PATH_DICTIONARY_UTILS_H */
