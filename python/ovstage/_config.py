"""``StageConfig``: the process-level settings a ``Stage`` starts with, and ``workers``.

``Stage(config=...)`` first takes a process reference with the config's entries, as the C
library's ``ovstage_initialize`` (the engine's process-lifetime rules, docs/c-api.md "Process
lifetime and configuration"): the first reference of a lifetime sets the settings (the
runtime-default hierarchy computation model and the ordinal admission policy; unset: CPU
incremental and NONDECREASING), a later concrete value that differs while the lifetime is
active (any live stage) is rejected with ``OvstageError(INVALID_ARGUMENT)``, each stage captures
the lifetime's settings when it is created, and ``Stage.config`` reads back the entries that
started the lifetime. ``workers`` is our addition: a per-stage worker pool size, so it never
conflicts.

This module is pure Python and does not need the native extension.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from ._abi import ConfigEntryRaw, ConfigRaw
from ._enums import HierarchyComputationModel, OrdinalAdmissionPolicy
from ._guards import as_enum, as_int32, as_uint

__all__ = ["MAX_WORKERS", "StageConfig", "config_from_c"]

#: ``ovstage_config_key_type_t`` UINT64 and its keys (``ovstage_config_uint64_t``).
_KEY_TYPE_UINT64 = 2
_KEY_HIERARCHY_MODEL = 0
_KEY_ADMISSION_POLICY = 1

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
    """

    runtime_default_hierarchy_computation_model: HierarchyComputationModel | int | None = None
    runtime_default_ordinal_admission_policy: OrdinalAdmissionPolicy | int | None = None
    workers: int | None = None

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
        array = (ConfigEntryRaw * max(len(entries), 1))()
        for i, (key_type, key, value) in enumerate(entries):
            item = array[i]
            item.key_type, item.key = key_type, key
            item.value.uint_value = value
        raw = ConfigRaw(ctypes.cast(array, ctypes.POINTER(ConfigEntryRaw)), len(entries))
        raw._keep = array  # type: ignore[attr-defined]
        return raw


def config_from_c(raw: ConfigRaw, workers: int | None) -> StageConfig:
    """A ``StageConfig`` of the entries of an ``ovstage_config_t``: the UINT64 entries with key
    0 and 1 become the hierarchy model and the ordinal admission policy; other entries are
    ignored, missing ones stay ``None``."""
    model: HierarchyComputationModel | int | None = None
    policy: OrdinalAdmissionPolicy | int | None = None
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
    return StageConfig(
        runtime_default_hierarchy_computation_model=model,
        runtime_default_ordinal_admission_policy=policy,
        workers=workers,
    )
