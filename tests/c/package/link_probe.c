/*
 * Linked against libovstage by tests/python/test_c_package.py, once through pkg-config and once
 * through the CMake package: prints the version the headers declare, the version the library
 * reports, and the file the library was loaded from (so the test knows which one it linked).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include <ovstage/ovstage.h>

int main(void)
{
    ovstage_instance_t* inst = NULL;
    uint32_t major = 0, minor = 0, patch = 0;
    Dl_info info;

    if (ovstage_create_instance(NULL, &inst) != OVSTAGE_OK) {
        ovx_string_t e = ovstage_get_last_error();
        fprintf(stderr, "ovstage_create_instance: %.*s\n", (int)e.length, e.ptr ? e.ptr : "");
        return 1;
    }
    ovstage_get_version(inst, &major, &minor, &patch);
    printf("headers %d.%d.%d\n", OVSTAGE_VERSION_MAJOR, OVSTAGE_VERSION_MINOR,
           OVSTAGE_VERSION_PATCH);
    printf("library %u.%u.%u\n", major, minor, patch);
    /* The vtable is static data of the library: dladdr names the file it lives in. */
    if (dladdr((const void*)inst->vtable, &info) == 0 || info.dli_fname == NULL) {
        fprintf(stderr, "dladdr found no library for the vtable\n");
        return 1;
    }
    printf("loaded from %s\n", info.dli_fname);
    return ovstage_destroy_instance(inst) == OVSTAGE_OK ? 0 : 1;
}
