/*
 * Extension tables served by query_extension: "ovstage.placement" (v1) always, and
 * "ovstage.test.hooks" (v1, the query and write test gates) only when the environment has
 * OVSTAGE_TEST_HOOKS=1 when it is asked for; production use gets NOT_FOUND for it.
 */
#include <stdlib.h>
#include <string.h>

#include "capi.h"
#include "_cgo_export.h"

#define CTX(context) ((uintptr_t)(context))

static ovstage_enqueue_result_t placed_write_attribute(ovstage_context_t* context,
                                                       ovstage_query_handle_t handle,
                                                       ovx_string_or_token_t attribute,
                                                       ovstage_ordinal_t ordinal,
                                                       ovstage_write_data_t data,
                                                       ovstage_prim_mode_t prim_mode,
                                                       const ovstage_placement_t* placement)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_write_attribute(CTX(context), handle, &attribute, ordinal, &data, (int32_t)prim_mode,
                          (void*)placement, &r);
    return r;
}

static ovstage_enqueue_result_t placed_write_attributes(ovstage_context_t* context,
                                                        ovstage_query_handle_t handle,
                                                        const ovstage_attribute_write_t* writes,
                                                        size_t write_count,
                                                        ovstage_ordinal_t ordinal,
                                                        ovstage_prim_mode_t prim_mode,
                                                        const ovstage_placement_t* placement)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_write_attributes(CTX(context), handle, (void*)writes, write_count, ordinal,
                           (int32_t)prim_mode, (void*)placement, &r);
    return r;
}

static ovstage_enqueue_result_t placed_map_attribute(ovstage_context_t* context,
                                                     ovstage_query_handle_t handle,
                                                     const ovstage_map_desc_t* desc,
                                                     ovstage_ordinal_t ordinal,
                                                     const size_t* element_sizes,
                                                     size_t element_count,
                                                     const ovstage_placement_t* placement,
                                                     ovstage_map_handle_t* out_map_handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_map_attribute(CTX(context), handle, (void*)desc, ordinal, (void*)element_sizes,
                        element_count, (void*)placement, out_map_handle, &r);
    return r;
}

static ovstage_enqueue_result_t placed_read_attributes(ovstage_context_t* context,
                                                       ovstage_query_handle_t handle,
                                                       const ovx_token_t* attrs,
                                                       size_t attr_count,
                                                       ovstage_ordinal_range_t range,
                                                       const ovstage_placement_t* placement,
                                                       ovstage_read_handle_t* out_read_handle)
{
    ovstage_enqueue_result_t r;
    ovs_enter();
    ovsgo_read_attributes(CTX(context), handle, (void*)attrs, attr_count, &range,
                          (void*)placement, out_read_handle, &r);
    return r;
}

static const ovstage_placement_extension_v1_t placement_v1 = {
    {(uint32_t)sizeof(ovstage_placement_extension_v1_t), OVSTAGE_PLACEMENT_EXTENSION_VERSION},
    placed_write_attribute,
    placed_write_attributes,
    placed_map_attribute,
    placed_read_attributes,
};

/*
 * ---- ovstage.test.hooks ----------------------------------------------------------------
 * The first 12 entries are those the reference's Python gates module binds, in its order;
 * ovstage-go appends go_panic_probe, which panics inside a guarded Go export and returns the
 * status the host sees (INTERNAL), so tests can check that a Go panic never reaches the host.
 */

enum { GATE_QUERY = 0, GATE_WRITE = 1 };
enum { GATE_ENABLE, GATE_WAIT_UNTIL_ENTERED, GATE_RELEASE, GATE_RESET, GATE_ENTERED_COUNT,
       GATE_FAIL_NEXT };

typedef struct {
    ovstage_extension_header_t header;
    void (*query_gate_enable)(void);
    void (*query_gate_wait_until_entered)(void);
    void (*query_gate_release)(void);
    void (*query_gate_reset)(void);
    uint32_t (*query_gate_entered_count)(void);
    void (*query_gate_fail_next)(void);
    void (*write_gate_enable)(void);
    void (*write_gate_wait_until_entered)(void);
    void (*write_gate_release)(void);
    void (*write_gate_reset)(void);
    uint32_t (*write_gate_entered_count)(void);
    void (*write_gate_fail_next)(void);
    uint32_t (*go_panic_probe)(void);
} ovs_test_hooks_v1_t;

#define GATE_ENTRY(gate, name, action)                                                         \
    static void gate##_##name(void) { (void)ovsgo_test_gate(gate, action); }
GATE_ENTRY(GATE_QUERY, enable, GATE_ENABLE)
GATE_ENTRY(GATE_QUERY, wait_until_entered, GATE_WAIT_UNTIL_ENTERED)
GATE_ENTRY(GATE_QUERY, release, GATE_RELEASE)
GATE_ENTRY(GATE_QUERY, reset, GATE_RESET)
GATE_ENTRY(GATE_QUERY, fail_next, GATE_FAIL_NEXT)
GATE_ENTRY(GATE_WRITE, enable, GATE_ENABLE)
GATE_ENTRY(GATE_WRITE, wait_until_entered, GATE_WAIT_UNTIL_ENTERED)
GATE_ENTRY(GATE_WRITE, release, GATE_RELEASE)
GATE_ENTRY(GATE_WRITE, reset, GATE_RESET)
GATE_ENTRY(GATE_WRITE, fail_next, GATE_FAIL_NEXT)

static uint32_t query_gate_entered_count(void)
{
    return ovsgo_test_gate(GATE_QUERY, GATE_ENTERED_COUNT);
}
static uint32_t write_gate_entered_count(void)
{
    return ovsgo_test_gate(GATE_WRITE, GATE_ENTERED_COUNT);
}
static uint32_t go_panic_probe(void)
{
    ovs_enter();
    return (uint32_t)ovsgo_panic_probe();
}

static const ovs_test_hooks_v1_t test_hooks_v1 = {
    {(uint32_t)sizeof(ovs_test_hooks_v1_t), 1},
    GATE_QUERY_enable,
    GATE_QUERY_wait_until_entered,
    GATE_QUERY_release,
    GATE_QUERY_reset,
    query_gate_entered_count,
    GATE_QUERY_fail_next,
    GATE_WRITE_enable,
    GATE_WRITE_wait_until_entered,
    GATE_WRITE_release,
    GATE_WRITE_reset,
    write_gate_entered_count,
    GATE_WRITE_fail_next,
    go_panic_probe,
};

int ovs_test_hooks_enabled(void)
{
    const char* v = getenv("OVSTAGE_TEST_HOOKS");
    return v != NULL && strcmp(v, "1") == 0;
}

/* query_extension slot: the tables are process-wide, so the context is not consulted. */
ovstage_api_status_t ovs_query_extension(ovstage_context_t* context, const char* name,
                                         const void** out_extension)
{
    (void)context;
    ovs_enter();
    if (out_extension == NULL || name == NULL) {
        static const char msg[] = "query_extension: name and out_extension must not be NULL";
        if (out_extension != NULL) {
            *out_extension = NULL;
        }
        ovs_set_last_error(msg, sizeof msg - 1);
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    *out_extension = NULL;
    if (strcmp(name, OVSTAGE_PLACEMENT_EXTENSION_NAME) == 0) {
        *out_extension = &placement_v1;
        return OVSTAGE_OK;
    }
    if (strcmp(name, "ovstage.test.hooks") == 0 && ovs_test_hooks_enabled()) {
        *out_extension = &test_hooks_v1;
        return OVSTAGE_OK;
    }
    {
        static const char msg[] = "query_extension: no extension of that name in this build";
        ovs_set_last_error(msg, sizeof msg - 1);
    }
    return OVSTAGE_ERROR_NOT_FOUND;
}
