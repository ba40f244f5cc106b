"""``StageConfig`` and the process-level settings it carries.

The reference's ``Stage(config=...)`` calls ``ovstage_initialize`` and holds one process
reference until ``destroy()``; a config that conflicts with the setting of another live
configured stage is rejected with ``OvstageError(INVALID_ARGUMENT)``. The process-level
settings are the runtime-default hierarchy computation model and the ordinal admission
policy. The policy follows the C library's process rules: every live stage holds a reference
(configured or not), the first reference fixes the policy (``DEFAULT`` or none:
NONDECREASING), later ones inherit it or must name the same one, and each stage captures the
policy when it is created. ``workers`` is our addition: a per-stage worker pool size, so it
never conflicts.

This module is pure Python and does not need the native extension.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ._enums import HierarchyComputationModel, OrdinalAdmissionPolicy
from ._errors import ErrorCode, OvstageError
from ._guards import as_enum, as_int32, as_uint

__all__ = ["MAX_WORKERS", "ProcessConfig", "StageConfig", "process_config"]

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


class ProcessConfig:
    """Process references held by stages, and the settings they agree on.

    Configured stages hold a configuration reference (``acquire``); every stage also holds an
    instance reference (``acquire_instance``). The hierarchy model is agreed among configured
    stages only; the admission policy among every reference, as the C library does.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refs = 0
        self._instances = 0
        self._model: int | None = None
        self._policy: int | None = None  # the lifetime's policy while a reference is held

    def _fresh(self) -> bool:
        return self._refs == 0 and self._instances == 0

    def acquire(self, config: StageConfig) -> None:
        """Take one configuration reference for ``config`` (``OvstageError`` on a conflict;
        nothing changes then)."""
        model = config.model_override()
        policy = config.policy_override()
        with self._lock:
            if model is not None and self._model is not None and model != self._model:
                raise OvstageError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"runtime_default_hierarchy_computation_model {model} conflicts with "
                    f"{self._model}, set by another live configured Stage",
                )
            if not self._fresh() and policy is not None and policy != self._policy:
                asked = OrdinalAdmissionPolicy(policy).name
                active = OrdinalAdmissionPolicy(self._policy or 0).name
                raise OvstageError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"runtime default ordinal admission policy {asked} conflicts with active "
                    f"process state (policy {active}, held by live stages)",
                )
            if self._fresh():
                self._policy = int(
                    OrdinalAdmissionPolicy.NONDECREASING if policy is None else policy
                )
            if model is not None:
                self._model = model
            self._refs += 1

    def release(self) -> None:
        """Drop one configuration reference; the model clears with the last one."""
        with self._lock:
            if self._refs == 0:
                return
            self._refs -= 1
            if self._refs == 0:
                self._model = None
            self._end_if_unused()

    def acquire_instance(self) -> int:
        """Take a stage's instance reference; returns the admission policy it captures."""
        with self._lock:
            if self._fresh():
                self._policy = int(OrdinalAdmissionPolicy.NONDECREASING)
            self._instances += 1
            assert self._policy is not None
            return self._policy

    def release_instance(self) -> None:
        """Drop a stage's instance reference."""
        with self._lock:
            if self._instances > 0:
                self._instances -= 1
            self._end_if_unused()

    def _end_if_unused(self) -> None:
        if self._fresh():
            self._policy = None

    def default_model(self) -> int:
        """The hierarchy model a stage created now captures."""
        with self._lock:
            if self._model is not None:
                return self._model
        return int(HierarchyComputationModel.CPU_INCREMENTAL)


#: The process-wide configuration state.
process_config = ProcessConfig()
