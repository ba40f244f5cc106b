/*
 * Builders for ovstage_config_entry_t. Each sets key_type, the key member and the value
 * member; the rest of the entry is zeroed.
 */
#ifndef OVSTAGE_CONFIG_H
#define OVSTAGE_CONFIG_H

#include <stdint.h>
#include <string.h>

#include "../ovx/config_tokens.h"
#include "../ovx/types.h"
#include "ovstage_types.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline ovstage_config_entry_t ovstage_config_entry_string(ovstage_config_string_t key,
                                                                 ovx_string_t value)
{
    ovstage_config_entry_t entry;
    memset(&entry, 0, sizeof entry);
    entry.key_type = OVSTAGE_CONFIG_KEY_TYPE_STRING;
    entry.key.string_key = key;
    entry.value.string_value = value;
    return entry;
}

static inline ovstage_config_entry_t ovstage_config_entry_uint64(ovstage_config_uint64_t key,
                                                                 uint64_t value)
{
    ovstage_config_entry_t entry;
    memset(&entry, 0, sizeof entry);
    entry.key_type = OVSTAGE_CONFIG_KEY_TYPE_UINT64;
    entry.key.uint64_key = key;
    entry.value.uint_value = value;
    return entry;
}

/* The hierarchy model instances use unless they ask for another. */
static inline ovstage_config_entry_t
ovstage_config_entry_runtime_default_hierarchy_computation_model(
    ovstage_hierarchy_computation_model_id_t model)
{
    return ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL,
                                       (uint64_t)model);
}

/* The process-wide ordinal admission policy (captured by each new instance). */
static inline ovstage_config_entry_t
ovstage_config_entry_runtime_default_ordinal_admission_policy(
    ovstage_ordinal_admission_policy_t policy)
{
    return ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY,
                                       (uint64_t)policy);
}

/*
 * Ours: how many ordinals behind its floor an instance created after this initialize serves
 * snapshot reads at (0: none, the reference's answers; without the entry: 16).
 */
static inline ovstage_config_entry_t ovstage_config_entry_history_window_ordinals(uint64_t ordinals)
{
    return ovstage_config_entry_uint64(OVSTAGE_CONFIG_HISTORY_WINDOW_ORDINALS, ordinals);
}

/* Ours: the memory budget in bytes of those versions (0 or no entry: 256 MiB). */
static inline ovstage_config_entry_t ovstage_config_entry_history_window_bytes(uint64_t bytes)
{
    return ovstage_config_entry_uint64(OVSTAGE_CONFIG_HISTORY_WINDOW_BYTES, bytes);
}

/*
 * Where the static loader finds the runtime package; may contain
 * OVX_CONFIG_EXECUTABLE_DIR_TOKEN. Shared libraries ignore it.
 */
static inline ovstage_config_entry_t ovstage_config_entry_binary_package_root_path(
    ovx_string_t path)
{
    return ovstage_config_entry_string(OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH, path);
}

/*
 * Directory of the running executable, in a thread-local buffer valid until the thread's next
 * call. Provided by the static loader only: libovstage.so does not export it.
 */
ovx_string_t ovstage_executable_dir(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_CONFIG_H */
