/*
 * The 12 slots of path_dictionary_vtable_t. Each returns its ovx_api_result_t by value; the
 * Go export fills it (an error text is malloc'd, and release_error frees it). The context is
 * the owning instance's id.
 */
#include <stdlib.h>

#include "capi.h"
#include "_cgo_export.h"

#define CTX(context) ((uintptr_t)(context))

static ovx_api_result_t pd_create_tokens_from_strings(path_dictionary_context_t* context,
                                                      const ovx_string_t* strings,
                                                      size_t num_strings, ovx_token_t* out_tokens)
{
    ovx_api_result_t r;
    ovsgo_pd_create_tokens_from_strings(CTX(context), (void*)strings, num_strings, out_tokens, &r);
    return r;
}

static ovx_api_result_t pd_create_paths_from_tokens(path_dictionary_context_t* context,
                                                    const ovx_token_t* tokens_per_path,
                                                    const size_t* num_tokens_per_path,
                                                    size_t num_paths,
                                                    ovx_primpath_t* out_prim_paths)
{
    ovx_api_result_t r;
    ovsgo_pd_create_paths_from_tokens(CTX(context), (void*)tokens_per_path,
                                      (void*)num_tokens_per_path, num_paths, out_prim_paths, &r);
    return r;
}

static ovx_api_result_t pd_create_paths_from_strings(path_dictionary_context_t* context,
                                                     const ovx_string_t* path_strings,
                                                     size_t num_paths,
                                                     ovx_primpath_t* out_prim_paths)
{
    ovx_api_result_t r;
    ovsgo_pd_create_paths_from_strings(CTX(context), (void*)path_strings, num_paths,
                                       out_prim_paths, &r);
    return r;
}

static ovx_api_result_t pd_create_path_list_from_paths(path_dictionary_context_t* context,
                                                       const ovx_primpath_t* paths,
                                                       size_t num_paths,
                                                       ovx_primpath_list_t* out_path_list)
{
    ovx_api_result_t r;
    ovsgo_pd_create_path_list_from_paths(CTX(context), (void*)paths, num_paths, out_path_list,
                                         &r);
    return r;
}

static ovx_api_result_t pd_create_path_list_from_strings(path_dictionary_context_t* context,
                                                         const ovx_string_t* path_strings,
                                                         size_t num_paths,
                                                         ovx_primpath_list_t* out_path_list)
{
    ovx_api_result_t r;
    ovsgo_pd_create_path_list_from_strings(CTX(context), (void*)path_strings, num_paths,
                                           out_path_list, &r);
    return r;
}

static ovx_api_result_t pd_add_path_list_reference(path_dictionary_context_t* context,
                                                   ovx_primpath_list_t path_list)
{
    ovx_api_result_t r;
    ovsgo_pd_add_path_list_reference(CTX(context), path_list, &r);
    return r;
}

static ovx_api_result_t pd_release_path_list_reference(path_dictionary_context_t* context,
                                                       ovx_primpath_list_t path_list)
{
    ovx_api_result_t r;
    ovsgo_pd_release_path_list_reference(CTX(context), path_list, &r);
    return r;
}

static ovx_api_result_t pd_get_strings_from_tokens(path_dictionary_context_t* context,
                                                   const ovx_token_t* tokens, size_t num_tokens,
                                                   ovx_string_t* out_strings)
{
    ovx_api_result_t r;
    ovsgo_pd_get_strings_from_tokens(CTX(context), (void*)tokens, num_tokens, out_strings, &r);
    return r;
}

static ovx_api_result_t pd_get_tokens_from_paths(path_dictionary_context_t* context,
                                                 const ovx_primpath_t* prim_paths,
                                                 size_t num_paths, ovx_token_t* token_buffer,
                                                 size_t token_buffer_size,
                                                 ovx_token_t** out_tokens_per_path,
                                                 size_t* out_num_tokens_per_path,
                                                 size_t* out_num_paths_processed)
{
    ovx_api_result_t r;
    ovsgo_pd_get_tokens_from_paths(CTX(context), (void*)prim_paths, num_paths, token_buffer,
                                   token_buffer_size, (void*)out_tokens_per_path,
                                   (void*)out_num_tokens_per_path, (void*)out_num_paths_processed,
                                   &r);
    return r;
}

static ovx_api_result_t pd_get_num_paths_from_path_list(path_dictionary_context_t* context,
                                                        ovx_primpath_list_t path_list,
                                                        size_t* out_num_paths)
{
    ovx_api_result_t r;
    ovsgo_pd_get_num_paths_from_path_list(CTX(context), path_list, (void*)out_num_paths, &r);
    return r;
}

static ovx_api_result_t pd_get_paths_from_path_list(path_dictionary_context_t* context,
                                                    ovx_primpath_list_t path_list,
                                                    size_t start_offset, size_t max_paths,
                                                    ovx_primpath_t* out_paths,
                                                    size_t* out_num_paths)
{
    ovx_api_result_t r;
    ovsgo_pd_get_paths_from_path_list(CTX(context), path_list, start_offset, max_paths,
                                      out_paths, (void*)out_num_paths, &r);
    return r;
}

static void pd_release_error(path_dictionary_context_t* context, ovx_string_t error)
{
    (void)context;
    free((void*)error.ptr);
}

const path_dictionary_vtable_t ovs_dictionary_vtable = {
    pd_create_tokens_from_strings,
    pd_create_paths_from_tokens,
    pd_create_paths_from_strings,
    pd_create_path_list_from_paths,
    pd_create_path_list_from_strings,
    pd_add_path_list_reference,
    pd_release_path_list_reference,
    pd_get_strings_from_tokens,
    pd_get_tokens_from_paths,
    pd_get_num_paths_from_path_list,
    pd_get_paths_from_path_list,
    pd_release_error,
};
