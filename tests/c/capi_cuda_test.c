/*
 * Placement on CUDA through libovstage.so: a placement picks which copy of a column becomes
 * current (writes, maps) or is served (reads); it never binds the column. The CUDA driver is
 * loaded once per process, so tests/python/test_c_api.py runs this program twice: with
 * OVSTAGE_CUDA_LIBRARY naming the fake driver of core/cuda/testdata (device memory is host
 * memory there, so values can be checked; its helpers make and count events), and with a
 * driver that does not exist. argv[1] is "fake" or "absent". Prints "N passed, N failed".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ovstage/ovstage.h>
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>
#include <ovx/path_dictionary/path_dictionary_utils.h>

static int failures;

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            ovx_string_t e_ = ovstage_get_last_error();                                        \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: %.*s)\n", __FILE__, __LINE__, \
                    #cond, (int)e_.length, e_.ptr ? e_.ptr : "");                             \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

static void wait_ok(ovstage_instance_t* inst, ovstage_enqueue_result_t e)
{
    ovstage_op_wait_result_t w;
    CHECK(e.status == OVSTAGE_OK);
    if (e.status == OVSTAGE_OK) {
        CHECK(ovstage_wait_op(inst, e.op_index, OVSTAGE_TIMEOUT_INFINITE, &w) == OVSTAGE_OK);
        CHECK(ovstage_release_op(inst, e.op_index) == OVSTAGE_OK);
    }
}

int main(int argc, char** argv)
{
    int fake = argc > 1 && strcmp(argv[1], "fake") == 0;
    ovstage_instance_t* inst = NULL;
    ovstage_instance_desc_t desc = {"cuda placement"};
    path_dictionary_instance_t* pd;
    ovx_string_t paths[2] = {literal_to_ovx_string("/A"), literal_to_ovx_string("/B")};
    ovx_string_t name = literal_to_ovx_string("p");
    ovx_primpath_list_t list = 0;
    ovstage_query_handle_t q = 0;
    ovx_token_t p = 0;
    float values[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[1] = {2};
    DLTensor t = {values, {kDLCPU, 0}, 1, {kDLFloat, 32, 3}, shape, NULL, 0};
    ovstage_write_data_t data;
    ovstage_placement_t cuda0 = OVSTAGE_PLACEMENT_INIT;
    ovstage_enqueue_result_t e;
    ovx_string_or_token_t attr;

    CHECK(ovstage_create_instance(&desc, &inst) == OVSTAGE_OK);
    if (inst == NULL) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    pd = ovstage_get_path_dictionary(inst);
    CHECK(path_dictionary_create_path_list_from_strings(pd, paths, 2, &list).status == OVX_API_SUCCESS);
    CHECK(path_dictionary_create_tokens_from_strings(pd, &name, 1, &p).status == OVX_API_SUCCESS);
    CHECK(ovstage_query_from_path_list(inst, list, &q) == OVSTAGE_OK);
    memset(&data, 0, sizeof data);
    data.tensors = &t;
    data.tensor_count = 1;
    attr.token = p;
    attr.string.ptr = NULL;
    attr.string.length = 0;
    cuda0.device.device_type = kDLCUDA;

    e = ovstage_write_attribute_on_device(inst, q, attr, 1, data, OVSTAGE_PRIM_MODE_UPSERT, &cuda0);
    if (!fake) {
        /* No usable driver: any CUDA placement is INVALID_ARGUMENT at enqueue, saying why. */
        ovx_string_t err = ovstage_get_last_error();
        ovstage_placement_t host = OVSTAGE_PLACEMENT_INIT;
        ovstage_ordinal_range_t latest = {0, UINT64_MAX, false};
        ovstage_read_handle_t r = 7;
        ovstage_map_handle_t m = 7;
        ovstage_map_desc_t md;
        CHECK(e.status == OVSTAGE_ERROR_INVALID_ARGUMENT && e.op_index == 0);
        CHECK(err.ptr != NULL &&
              strstr(err.ptr, "write_attribute_on_device: placement: cuda:0: cannot validate device_id without a usable CUDA driver") != NULL);
        e = ovstage_read_attributes_on_device(inst, q, &p, 1, latest, &cuda0, &r);
        CHECK(e.status == OVSTAGE_ERROR_INVALID_ARGUMENT && e.op_index == 0 && r == 0);
        memset(&md, 0, sizeof md);
        md.attribute = attr;
        md.dtype = t.dtype;
        e = ovstage_map_attribute_on_device(inst, q, &md, 1, NULL, 0, &cuda0, &m);
        CHECK(e.status == OVSTAGE_ERROR_INVALID_ARGUMENT && e.op_index == 0 && m == 0);
        /* an availability event needs the driver too; a host placement without one does not */
        host.device.device_type = kDLCPU;
        host.availability_event = 0x1234;
        e = ovstage_write_attribute_on_device(inst, q, attr, 1, data, OVSTAGE_PRIM_MODE_UPSERT, &host);
        CHECK(e.status == OVSTAGE_ERROR_INVALID_ARGUMENT);
        host.availability_event = 0;
        wait_ok(inst, ovstage_write_attribute_on_device(inst, q, attr, 1, data, OVSTAGE_PRIM_MODE_UPSERT, &host));
    } else {
        ovstage_write_floor_desc_t fd = {1, OVSTAGE_SCOPE_ALL, NULL, 0};
        ovstage_ordinal_range_t latest = {0, UINT64_MAX, false};
        ovstage_read_handle_t r = 0;
        ovstage_read_group_t g;
        ovstage_enqueue_result_t re;
        void* driver = dlopen(getenv("OVSTAGE_CUDA_LIBRARY"), RTLD_NOW);
        void* (*new_event)(int) = driver ? (void* (*)(int))dlsym(driver, "fakecuda_new_event") : NULL;
        int64_t (*records)(void*) = driver ? (int64_t (*)(void*))dlsym(driver, "fakecuda_event_records") : NULL;
        void* event = new_event ? new_event(0) : NULL;
        float written[6] = {7, 8, 9, 10, 11, 12};
        CHECK(event != NULL && records != NULL);
        wait_ok(inst, e);
        wait_ok(inst, ovstage_advance_write_floor(inst, &fd));
        re = ovstage_read_attributes(inst, q, &p, 1, latest, &r);
        CHECK(re.status == OVSTAGE_OK);
        CHECK(ovstage_fetch_read_next(inst, r, OVSTAGE_TIMEOUT_INFINITE, &g) == OVSTAGE_OK);
        CHECK(g.data.tensor_count == 1);
        CHECK(g.data.cuda_sync.wait_event != 0); /* readers wait for the version's ready event */
        if (g.data.tensor_count == 1) {
            const DLTensor* rt = &g.data.tensors[0];
            CHECK(rt->device.device_type == kDLCUDA && rt->device.device_id == 0);
            CHECK(rt->ndim == 2 && rt->shape[0] == 2 && rt->shape[1] == 3 && rt->dtype.lanes == 1);
            CHECK(rt->data != (void*)values);
            CHECK(memcmp(rt->data, values, sizeof values) == 0); /* fake device memory is host memory */
        }
        CHECK(ovstage_release_group(inst, &g) == OVSTAGE_OK);
        wait_ok(inst, re);
        wait_ok(inst, ovstage_release_read(inst, r));

        /* An unplaced host write is an ordinary update: the host copy becomes current. */
        wait_ok(inst, ovstage_write_attribute(inst, q, attr, 2, data, OVSTAGE_PRIM_MODE_UPSERT));
        fd.ordinal = 2;
        wait_ok(inst, ovstage_advance_write_floor(inst, &fd));
        /* A read placed on cuda:0 copies it there for the group, and records the event. */
        cuda0.availability_event = (uintptr_t)event;
        re = ovstage_read_attributes_on_device(inst, q, &p, 1, latest, &cuda0, &r);
        CHECK(re.status == OVSTAGE_OK);
        CHECK(ovstage_fetch_read_next(inst, r, OVSTAGE_TIMEOUT_INFINITE, &g) == OVSTAGE_OK);
        CHECK(records != NULL && records(event) == 1);
        if (g.data.tensor_count == 1) {
            const DLTensor* rt = &g.data.tensors[0];
            CHECK(rt->device.device_type == kDLCUDA && rt->device.device_id == 0);
            CHECK(memcmp(rt->data, values, sizeof values) == 0);
        }
        CHECK(ovstage_release_group(inst, &g) == OVSTAGE_OK);
        wait_ok(inst, re);
        wait_ok(inst, ovstage_release_read(inst, r));

        /* A map placed on cuda:0 stages there; its commit honours write_done_sync, makes the
         * device copy current and records the event once. Array maps cannot stage on CUDA. */
        {
            ovstage_map_desc_t md;
            ovstage_map_handle_t m = 0;
            ovstage_map_group_t mg;
            ovstage_cuda_sync_t done = {1, 0};
            size_t sizes[2] = {1, 1};
            memset(&md, 0, sizeof md);
            md.attribute = attr;
            e = ovstage_map_attribute_on_device(inst, q, &md, 3, sizes, 2, &cuda0, &m);
            CHECK(e.status == OVSTAGE_ERROR_NOT_SUPPORTED && m == 0);
            e = ovstage_map_attribute_on_device(inst, q, &md, 3, NULL, 0, &cuda0, &m);
            CHECK(e.status == OVSTAGE_OK && m != 0);
            CHECK(ovstage_fetch_map_next(inst, m, OVSTAGE_TIMEOUT_INFINITE, &mg) == OVSTAGE_OK);
            CHECK(mg.data.tensors[0].device.device_type == kDLCUDA);
            memcpy(mg.data.tensors[0].data, written, sizeof written); /* "a kernel" fills it */
            wait_ok(inst, ovstage_unmap_attribute(inst, m, done));
            wait_ok(inst, e);
            CHECK(records != NULL && records(event) == 2);
            fd.ordinal = 3;
            wait_ok(inst, ovstage_advance_write_floor(inst, &fd));
            re = ovstage_read_attributes(inst, q, &p, 1, latest, &r);
            CHECK(ovstage_fetch_read_next(inst, r, OVSTAGE_TIMEOUT_INFINITE, &g) == OVSTAGE_OK);
            if (g.data.tensor_count == 1) {
                CHECK(g.data.tensors[0].device.device_type == kDLCUDA);
                CHECK(memcmp(g.data.tensors[0].data, written, sizeof written) == 0);
            }
            CHECK(ovstage_release_group(inst, &g) == OVSTAGE_OK);
            wait_ok(inst, re);
            wait_ok(inst, ovstage_release_read(inst, r));
        }
        cuda0.availability_event = 0;
        /* Placed on cuda:0, a host source is copied there. */
        wait_ok(inst, ovstage_write_attribute_on_device(inst, q, attr, 4, data,
                                                        OVSTAGE_PRIM_MODE_UPSERT, &cuda0));
    }
    wait_ok(inst, ovstage_release_query(inst, q));
    CHECK(path_dictionary_release_path_list_reference(pd, list).status == OVX_API_SUCCESS);
    CHECK(ovstage_destroy_instance(inst) == OVSTAGE_OK);
    printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
    return failures == 0 ? 0 : 1;
}
