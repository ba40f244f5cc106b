/*
 * minimal: the smallest complete ovstage C program.
 *
 * Writes one float32 value to each of three prims at ordinal 1, seals ordinal 1 (advances the
 * write floor to it), reads the sealed values back and prints them. Then shows how a rejected
 * call reports itself: a second write at ordinal 1, which is sealed now.
 *
 * Every call that changes or produces data is an asynchronous enqueue: it returns an
 * ovstage_enqueue_result_t at once and its op runs later. complete() below is the one helper
 * such a program needs: check the enqueue, wait for the op, say why it failed, release it.
 */
#include <stdio.h>
#include <string.h>

#include <ovstage/ovstage.h>
#include <ovx/path_dictionary/path_dictionary_utils.h>

#define PRIM_COUNT 3
static const char* const prim_names[PRIM_COUNT] = {"/World/A", "/World/B", "/World/C"};

/* Prints the calling thread's last error: the message of its latest failed call. */
static ovstage_api_status_t report(const char* what, ovstage_api_status_t status)
{
    ovx_string_t e = ovstage_get_last_error();
    fprintf(stderr, "%s: status %d: %.*s\n", what, (int)status, (int)e.length,
            e.ptr != NULL ? e.ptr : "");
    return status;
}

/*
 * Waits for the op an asynchronous call enqueued and releases it. Returns OVSTAGE_OK, or the
 * status that stopped it after printing why to stderr: the call's own status when it was
 * rejected at enqueue (then nothing was queued), OP_FAILED when the op ran and failed.
 */
static ovstage_api_status_t complete(ovstage_instance_t* inst, const char* what,
                                     ovstage_enqueue_result_t enqueued)
{
    ovstage_op_wait_result_t waited;
    ovstage_api_status_t status, released;
    size_t i;

    if (enqueued.status != OVSTAGE_OK) {
        return report(what, enqueued.status);
    }
    status = ovstage_wait_op(inst, enqueued.op_index, OVSTAGE_TIMEOUT_INFINITE, &waited);
    if (status == OVSTAGE_ERROR_OP_FAILED) {
        /* The failed ops of its chain, root cause first; their messages live until this
         * thread's next wait_op. */
        for (i = 0; i < waited.error_op_id_count; ++i) {
            ovx_string_t m = ovstage_get_last_op_error(inst, waited.error_op_ids[i]);
            fprintf(stderr, "%s: op %llu failed: %.*s\n", what,
                    (unsigned long long)waited.error_op_ids[i], (int)m.length,
                    m.ptr != NULL ? m.ptr : "");
        }
    } else if (status != OVSTAGE_OK) {
        return report(what, status);
    }
    /* A completed op stays tracked until it is released, failed or not. */
    released = ovstage_release_op(inst, enqueued.op_index);
    if (released != OVSTAGE_OK) {
        report("ovstage_release_op", released);
    }
    return status != OVSTAGE_OK ? status : released;
}

/* Reads the latest sealed `attribute` of the query's prims and prints it. */
static ovstage_api_status_t print_sealed(ovstage_instance_t* inst, ovstage_query_handle_t query,
                                         ovx_token_t attribute, const ovx_primpath_t* prims)
{
    path_dictionary_instance_t* dictionary = ovstage_get_path_dictionary(inst);
    ovstage_ordinal_range_t latest = {0, 1, false}; /* {0, N, false}: a snapshot read */
    ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
    ovstage_read_group_t group;
    ovstage_api_status_t status, released;
    uint32_t k;
    size_t p;

    status = complete(inst, "ovstage_read_attributes",
                      ovstage_read_attributes(inst, query, &attribute, 1, latest, &read));
    if (status != OVSTAGE_OK) {
        return status;
    }
    /* One group per column the read touches, then END_OF_ITERATION. */
    while ((status = ovstage_fetch_read_next(inst, read, OVSTAGE_TIMEOUT_INFINITE, &group)) ==
           OVSTAGE_OK) {
        /* A float32 column: one 1-D tensor with a row per prim, rows strides[0] apart. */
        const DLTensor* t = &group.data.tensors[0];
        const float* values = (const float*)((const char*)t->data + t->byte_offset);
        int64_t stride = t->strides != NULL ? t->strides[0] : 1;
        for (k = 0; k < group.prims.count; ++k) {
            /* Group prim k is entry index_map[k] (or offset + k) of the path list prims.list;
             * its value is row data.index_map[k] (or k). */
            uint32_t entry = group.prims.index_map ? group.prims.index_map[k] : group.prims.offset + k;
            uint32_t row = group.data.index_map ? group.data.index_map[k] : k;
            ovx_primpath_t path = OVX_INVALID_PRIMPATH;
            size_t got = 0;
            ovx_api_result_t r = path_dictionary_get_paths_from_path_list(
                dictionary, group.prims.list, entry, 1, &path, &got);
            if (r.status != OVX_API_SUCCESS) {
                path_dictionary_release_error(dictionary, r.error);
                continue;
            }
            for (p = 0; p < PRIM_COUNT; ++p) {
                if (prims[p] == path) {
                    printf("  %s = %.1f (written at ordinal %llu)\n", prim_names[p],
                           values[row * stride], (unsigned long long)group.ordinal);
                }
            }
        }
        /* The group's memory stays valid until it is released. */
        released = ovstage_release_group(inst, &group);
        if (released != OVSTAGE_OK) {
            report("ovstage_release_group", released);
        }
    }
    if (status == OVSTAGE_ERROR_END_OF_ITERATION) {
        status = OVSTAGE_OK;
    } else {
        report("ovstage_fetch_read_next", status);
    }
    released = complete(inst, "ovstage_release_read", ovstage_release_read(inst, read));
    return status != OVSTAGE_OK ? status : released;
}

int main(void)
{
    ovstage_instance_desc_t desc = {"minimal"};
    ovstage_instance_t* inst = NULL;
    path_dictionary_instance_t* dictionary;
    ovx_string_t names[PRIM_COUNT];
    ovx_string_t attribute_name = literal_to_ovx_string("temperature");
    ovx_primpath_t prims[PRIM_COUNT];
    ovx_primpath_list_t list = OVX_INVALID_PRIMPATH_LIST;
    ovstage_query_handle_t query = OVSTAGE_INVALID_QUERY_HANDLE;
    ovx_token_t temperature = OVX_INVALID_TOKEN;
    ovx_string_or_token_t attribute;
    ovx_api_result_t dict;
    ovstage_api_status_t status;
    int exit_code = 1;
    size_t i;

    /* The payload: a 1-D float32 tensor, one row per prim in the query's order. Keep it (and
     * its shape) alive until the write completes. */
    float values[PRIM_COUNT] = {20.5f, 21.0f, 21.5f};
    int64_t shape[1] = {PRIM_COUNT};
    DLTensor tensor = {values, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
    ovstage_write_data_t data = {0}; /* zero: a dense write, no semantic, REJECT mode */
    ovstage_write_floor_desc_t seal = {1, OVSTAGE_SCOPE_ALL, NULL, 0};
    data.tensors = &tensor;
    data.tensor_count = 1;

    status = ovstage_create_instance(&desc, &inst);
    if (status != OVSTAGE_OK) {
        report("ovstage_create_instance", status);
        return 1;
    }
    dictionary = ovstage_get_path_dictionary(inst);

    /* Prim paths and attribute names are interned by the path dictionary. Its slots return an
     * ovx_api_result_t whose error string the caller hands back with release_error. */
    for (i = 0; i < PRIM_COUNT; ++i) {
        names[i].ptr = prim_names[i];
        names[i].length = strlen(prim_names[i]);
    }
    dict = path_dictionary_create_paths_from_strings(dictionary, names, PRIM_COUNT, prims);
    if (dict.status == OVX_API_SUCCESS) {
        dict = path_dictionary_create_path_list_from_paths(dictionary, prims, PRIM_COUNT, &list);
    }
    if (dict.status == OVX_API_SUCCESS) {
        dict = path_dictionary_create_tokens_from_strings(dictionary, &attribute_name, 1,
                                                          &temperature);
    }
    if (dict.status != OVX_API_SUCCESS) {
        fprintf(stderr, "path dictionary: %.*s\n", (int)dict.error.length, dict.error.ptr);
        path_dictionary_release_error(dictionary, dict.error);
        goto done;
    }
    status = ovstage_query_from_path_list(inst, list, &query);
    if (status != OVSTAGE_OK) {
        report("ovstage_query_from_path_list", status);
        goto done;
    }
    attribute.token = temperature; /* an attribute is named by token or by string */
    attribute.string.ptr = NULL;
    attribute.string.length = 0;

    /* 1. Write at ordinal 1 and wait for it: a blocking write. */
    if (complete(inst, "ovstage_write_attribute",
                 ovstage_write_attribute(inst, query, attribute, 1, data,
                                         OVSTAGE_PRIM_MODE_UPSERT)) != OVSTAGE_OK) {
        goto done;
    }
    printf("wrote temperature at ordinal 1\n");

    /* 2. Seal: reads see ordinal 1 once the write floor is advanced to it. */
    if (complete(inst, "ovstage_advance_write_floor", ovstage_advance_write_floor(inst, &seal)) !=
        OVSTAGE_OK) {
        goto done;
    }
    printf("sealed ordinal 1\n");

    /* 3. Read the sealed values back. */
    printf("read back:\n");
    if (print_sealed(inst, query, temperature, prims) != OVSTAGE_OK) {
        goto done;
    }

    /* 4. A write at a sealed ordinal is rejected when enqueued (op id 0, nothing queued);
     *    complete() prints the library's message to stderr. */
    status = complete(inst, "ovstage_write_attribute at a sealed ordinal",
                      ovstage_write_attribute(inst, query, attribute, 1, data,
                                              OVSTAGE_PRIM_MODE_UPSERT));
    printf("writing ordinal 1 again: %s\n", ovstage_get_error_string(inst, status));
    exit_code = status == OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION ? 0 : 1;

done:
    /* Release in reverse order of creation: the query, the path list, then the instance. */
    if (query != OVSTAGE_INVALID_QUERY_HANDLE &&
        complete(inst, "ovstage_release_query", ovstage_release_query(inst, query)) != OVSTAGE_OK) {
        exit_code = 1;
    }
    if (list != OVX_INVALID_PRIMPATH_LIST) {
        dict = path_dictionary_release_path_list_reference(dictionary, list);
        if (dict.status != OVX_API_SUCCESS) {
            path_dictionary_release_error(dictionary, dict.error);
            exit_code = 1;
        }
    }
    status = ovstage_destroy_instance(inst);
    if (status != OVSTAGE_OK) {
        report("ovstage_destroy_instance", status);
        exit_code = 1;
    }
    return exit_code;
}
