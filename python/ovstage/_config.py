"""``StageConfig``: the process-level settings a ``Stage`` starts with, and ``workers``.

``Stage(config=...)`` first takes a process reference with the config's entries, as the C
library's ``ovstage_initialize`` (the engine's process-lifetime rules, docs/c-api.md "Process
lifetime and configuration"): the first reference of a lifetime sets the settings (the
runtime-default hierarchy computation model and the ordinal admission policy; unset: CPU
incremental and NONDECREASING), a later concrete value that differs while the lifetime is
active (any live stage) is rejected with ``OvstageError(INVALID_ARGUMENT)``, each stage captures
the lifetime's settings when it is created, and ``Stage.config`` reads back the entries that
started the lifetime. ``workers`` is our addition: a per-stage worker pool size, so it never
conflicts; so are ``history_ordinals`` and ``history_bytes``, the stage's window of versions for
lagging snapshot reads (entries of our own: each stage takes its own config's window, or the
default, whatever other stages use).

This module is pure Python and does not need the native extension.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from ._abi import (
    CONFIG_HISTORY_WINDOW_BYTES,
    CONFIG_HISTORY_WINDOW_ORDINALS,
    CONFIG_KEY_TYPE_UINT64,
    CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL,
    CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY,
    ConfigEntryRaw,
    ConfigRaw,
)
from ._enums import HierarchyComputationModel, OrdinalAdmissionPolicy
from ._guards import as_enum, as_int32, as_uint

__all__ = [
    "DEFAULT_HISTORY_BYTES",
    "DEFAULT_HISTORY_ORDINALS",
    "MAX_WORKERS",
    "StageConfig",
    "config_from_c",
]

_KEY_TYPE_UINT64 = CONFIG_KEY_TYPE_UINT64
_KEY_HIERARCHY_MODEL = CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL
_KEY_ADMISSION_POLICY = CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY
_KEY_HISTORY_ORDINALS = CONFIG_HISTORY_WINDOW_ORDINALS
_KEY_HISTORY_BYTES = CONFIG_HISTORY_WINDOW_BYTES

#: The history window of a stage whose config names none (README "Where we differ").
DEFAULT_HISTORY_ORDINALS = 16
DEFAULT_HISTORY_BYTES = 256 << 20

#: Largest accepted ``StageConfig.workers``.
MAX_WORKERS = 4096


@dataclass(frozen=True)
class StageConfig:
    """Settings for :class:`Stage` (``Stage(name, config=StageConfig(...))``).

    Attributes:
        runtime_default_hierarchy_computation_model: process-wide default hierarchy model;
            ``None`` or ``RUNTIME_DEFAULT`` leave it unset, ``INVALID`` is rejected
            (``ValueError``). Other values pass an int32 range check only, like the reference.
        runtime_default_ordinal_admission_policy: process-wide ordinal admission policy
            (an :class:`OrdinalAdmissionPolicy`); ``None`` or ``DEFAULT`` inherit the active
            one (a fresh process: NONDECREASING). Other values are ``ValueError``, non-integers
            ``TypeError``.
        workers: how many of the stage's ops may execute at once (its worker pool size).
            ``None`` means one per CPU (``GOMAXPROCS``); ``1`` reproduces the reference's
            single serialized lane (ready ops run one at a time, oldest first).
        history_ordinals: how many ordinals behind its attribute's write floor a snapshot read
            (``OrdinalRange.latest(N)``) is still served the state at N after later ordinals
            were sealed. ``None``: 16. ``0`` keeps no versions and answers exactly as the
            0.3.0 reference (a later change makes the read ``OUT_OF_RANGE``).
        history_bytes: the memory budget of those versions over all the stage's columns (the
            oldest go first when it is exceeded); ``None`` or ``0``: 256 MiB.
    """

    runtime_default_hierarchy_computation_model: HierarchyComputationModel | int | None = None
    runtime_default_ordinal_admission_policy: OrdinalAdmissionPolicy | int | None = None
    workers: int | None = None
    history_ordinals: int | None = None
    history_bytes: int | None = None

    def __post_init__(self) -> None:
        model = self.runtime_default_hierarchy_computation_model
        if model is not None:
            value = as_int32(model, "runtime_default_hierarchy_computation_model")
            if value == HierarchyComputationModel.INVALID:
                raise ValueError(
                    "runtime_default_hierarchy_computation_model must not be INVALID (0)"
                )
        self.policy_override()  # validates the policy
        if self.workers is not None:
            if isinstance(self.workers, bool):
                raise TypeError("workers must be an integer or None, got bool")
            count = as_uint(self.workers, "workers", 63)
            if not 1 <= count <= MAX_WORKERS:
                raise ValueError(f"workers must be between 1 and {MAX_WORKERS}, got {count}")
        for name in ("history_ordinals", "history_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool):
                raise TypeError(f"{name} must be an integer or None, got bool")
            if value is not None:
                as_uint(value, name, 64)

    def model_override(self) -> int | None:
        """The hierarchy model this config sets process-wide (``None``: no override)."""
        model = self.runtime_default_hierarchy_computation_model
        if model is None:
            return None
        value = as_int32(model, "runtime_default_hierarchy_computation_model")
        return None if value == HierarchyComputationModel.RUNTIME_DEFAULT else value

    def policy_override(self) -> int | None:
        """The admission policy this config asks for (``None``: inherit the active one)."""
        policy = self.runtime_default_ordinal_admission_policy
        if policy is None:
            return None
        name = "runtime_default_ordinal_admission_policy"
        if isinstance(policy, bool):
            raise TypeError(f"{name} must be an OrdinalAdmissionPolicy, got bool")
        value = as_enum(policy, OrdinalAdmissionPolicy, name)
        return None if value == OrdinalAdmissionPolicy.DEFAULT else int(value)

    def worker_count(self) -> int:
        """The pool size to ask the engine for (0: one per CPU)."""
        return 0 if self.workers is None else int(self.workers)

    def to_c(self) -> ConfigRaw:
        """The process-level entries as an ``ovstage_config_t`` (``workers`` is not one of
        them; an unset field adds no entry); the struct keeps its entry array alive."""
        entries: list[tuple[int, int, int]] = []
        model = self.runtime_default_hierarchy_computation_model
        if model is not None:
            value = as_int32(model, "runtime_default_hierarchy_computation_model")
            entries.append((_KEY_TYPE_UINT64, _KEY_HIERARCHY_MODEL, value & 0xFFFFFFFFFFFFFFFF))
        if self.runtime_default_ordinal_admission_policy is not None:
            policy = self.policy_override()
            entries.append((_KEY_TYPE_UINT64, _KEY_ADMISSION_POLICY, policy or 0))
        if self.history_ordinals is not None:
            entries.append((_KEY_TYPE_UINT64, _KEY_HISTORY_ORDINALS, int(self.history_ordinals)))
        if self.history_bytes is not None:
            entries.append((_KEY_TYPE_UINT64, _KEY_HISTORY_BYTES, int(self.history_bytes)))
        array = (ConfigEntryRaw * max(len(entries), 1))()
        for i, (key_type, key, value) in enumerate(entries):
            item = array[i]
            item.key_type, item.key = key_type, key
            item.value.uint_value = value
        raw = ConfigRaw(ctypes.cast(array, ctypes.POINTER(ConfigEntryRaw)), len(entries))
        raw._keep = array
        return raw


def config_from_c(raw: ConfigRaw, workers: int | None) -> StageConfig:
    """A ``StageConfig`` of the entries of an ``ovstage_config_t``: the UINT64 entries with key
    0 and 1 become the hierarchy model and the ordinal admission policy, 2 and 3 the history
    window; other entries are ignored, missing ones stay ``None``."""
    model: HierarchyComputationModel | int | None = None
    policy: OrdinalAdmissionPolicy | int | None = None
    history: dict[str, int] = {}
    for i in range(raw.entry_count):
        item = raw.entries[i]
        if item.key_type != _KEY_TYPE_UINT64:
            continue
        if item.key == _KEY_HIERARCHY_MODEL:
            value = ctypes.c_int32(item.value.uint_value & 0xFFFFFFFF).value
            if value in HierarchyComputationModel._value2member_map_:
                model = HierarchyComputationModel(value)
            else:
                model = value
        elif item.key == _KEY_ADMISSION_POLICY:
            raw_policy = int(item.value.uint_value)
            if raw_policy in OrdinalAdmissionPolicy._value2member_map_:
                policy = OrdinalAdmissionPolicy(raw_policy)
            else:
                policy = raw_policy
        elif item.key == _KEY_HISTORY_ORDINALS:
            history["history_ordinals"] = int(item.value.uint_value)
        elif item.key == _KEY_HISTORY_BYTES:
            history["history_bytes"] = int(item.value.uint_value)
    return StageConfig(
        runtime_default_hierarchy_computation_model=model,
        runtime_default_ordinal_admission_policy=policy,
        workers=workers,
        **history,
    )
