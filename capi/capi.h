/*
 * Private declarations of libovstage.so: the C parts (state.c, the vtable, flat-function and
 * extension files) and the Go exports they call (generated into _cgo_export.h) share these.
 * Nothing here is part of the ovstage API.
 */
#ifndef OVSTAGE_GO_CAPI_H
#define OVSTAGE_GO_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include <ovstage/ovstage.h>
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>
#include <ovstage/ovstage_population_export.h>

/* Thread-local diagnostics (state.c). */
void ovs_enter(void); /* every API call: clears ovstage_get_last_error */
void ovs_set_last_error(const char* text, size_t length);
void ovs_set_population_error(const char* text);
void ovs_wait_reset(uintptr_t context);
void ovs_wait_add(uint64_t op_id, const char* text, size_t length);
const uint64_t* ovs_wait_ids(size_t* count); /* the ids ovs_wait_add recorded */
void ovs_wait_forget(uintptr_t context, uint64_t op_id);
int ovs_in_log_callback(void);
void ovs_retain_forever(void* p); /* library-lifetime allocations */

/* Trampolines Go calls to reach host code. */
void ovs_invoke_log(uintptr_t callback, int32_t severity, double timestamp, const char* text,
                    size_t length, void* user_data);

/* The bundles handed to the host (malloc'd; the context is the instance id, an opaque value). */
ovstage_instance_t* ovs_new_instance_bundle(uintptr_t id);
path_dictionary_instance_t* ovs_new_dictionary_bundle(uintptr_t id);

/* Static tables. */
extern const ovstage_vtable_t ovs_instance_vtable;
extern const path_dictionary_vtable_t ovs_dictionary_vtable;

/* Whether the test-hooks extension is served (OVSTAGE_TEST_HOOKS=1 in the environment). */
int ovs_test_hooks_enabled(void);

#endif /* OVSTAGE_GO_CAPI_H */
