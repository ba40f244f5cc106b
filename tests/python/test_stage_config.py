"""``StageConfig`` and the ``workers`` extension."""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from conftest import group_values, query_over
from ovstage import ErrorCode, HierarchyComputationModel, OrdinalRange, OvstageError, StageConfig


def test_stage_config_is_exported_with_reference_defaults() -> None:
    assert "StageConfig" in ovstage.__all__
    config = StageConfig()
    assert config.runtime_default_hierarchy_computation_model is None
    assert config.workers is None


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        (
            {"runtime_default_hierarchy_computation_model": HierarchyComputationModel.INVALID},
            ValueError,
        ),
        ({"runtime_default_hierarchy_computation_model": 0}, ValueError),
        ({"runtime_default_hierarchy_computation_model": 2**31}, ValueError),
        ({"runtime_default_hierarchy_computation_model": "cpu"}, TypeError),
        ({"workers": 0}, ValueError),
        ({"workers": -1}, ValueError),
        ({"workers": 10_000}, ValueError),
        ({"workers": 1.5}, TypeError),
        ({"workers": "2"}, TypeError),
        ({"workers": True}, TypeError),
    ],
)
def test_invalid_configs_are_rejected(kwargs, error) -> None:
    with pytest.raises(error):
        StageConfig(**kwargs)


def test_newer_model_values_pass_the_range_check() -> None:
    assert StageConfig(runtime_default_hierarchy_computation_model=77).model_override() == 77
    runtime_default = HierarchyComputationModel.RUNTIME_DEFAULT
    assert (
        StageConfig(runtime_default_hierarchy_computation_model=runtime_default).model_override()
        is None
    )


def test_config_must_be_a_stage_config() -> None:
    with pytest.raises(TypeError):
        ovstage.Stage("bad", config={"workers": 2})  # type: ignore[arg-type]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_stage_with_a_worker_count_writes_and_reads(workers: int) -> None:
    with (
        ovstage.Stage("workers", config=StageConfig(workers=workers)) as stage,
        query_over(stage, ["/A", "/B"]) as query,
    ):
        assert stage.config == StageConfig(workers=workers)
        ops = [
            stage.write_attribute(query, "t", o, np.array([o, -o], np.float32), is_array=False)
            for o in range(1, 10)
        ]
        stage.advance_write_floor(9).wait()
        for op in ops:
            op.wait()
        with stage.read_attributes(query, ["t"], OrdinalRange.latest(9)) as read:
            for group in read.groups():
                with group:
                    assert group_values(ovstage.PathDictionary(stage), group) == {
                        "/A": 9.0,
                        "/B": -9.0,
                    }


def test_a_conflicting_model_while_any_stage_lives_is_invalid_argument() -> None:
    cpu = StageConfig(
        runtime_default_hierarchy_computation_model=HierarchyComputationModel.CPU_INCREMENTAL
    )
    gpu = StageConfig(
        runtime_default_hierarchy_computation_model=HierarchyComputationModel.GPU_GLOBAL
    )
    first = ovstage.Stage("first", config=cpu)
    try:
        assert first.hierarchy_model == HierarchyComputationModel.CPU_INCREMENTAL
        with pytest.raises(OvstageError) as info:
            ovstage.Stage("second", config=gpu)
        assert info.value.code == ErrorCode.INVALID_ARGUMENT
        # The same setting, no setting, or a worker count alone do not conflict.
        for config in (cpu, StageConfig(), StageConfig(workers=2), None):
            with ovstage.Stage("compatible", config=config) as other:
                assert other.hierarchy_model == HierarchyComputationModel.CPU_INCREMENTAL
    finally:
        first.destroy()
    # The setting goes with the last configured stage: the other model is accepted now.
    with ovstage.Stage("after", config=gpu) as stage:
        assert stage.hierarchy_model == HierarchyComputationModel.GPU_GLOBAL
    with ovstage.Stage("plain") as stage:
        assert stage.hierarchy_model == HierarchyComputationModel.CPU_INCREMENTAL
        # A stage without a config holds the lifetime too (as a C instance does).
        with pytest.raises(OvstageError) as info:
            ovstage.Stage("conflict", config=gpu)
        assert info.value.code == ErrorCode.INVALID_ARGUMENT


def test_destroy_releases_the_process_reference_once() -> None:
    gpu = StageConfig(
        runtime_default_hierarchy_computation_model=HierarchyComputationModel.GPU_GLOBAL
    )
    stage = ovstage.Stage("once", config=gpu)
    stage.destroy()
    stage.destroy()
    cpu = StageConfig(
        runtime_default_hierarchy_computation_model=HierarchyComputationModel.CPU_INCREMENTAL
    )
    with ovstage.Stage("next", config=cpu):
        pass


def test_runtime_default_hierarchy_model_resolves_to_the_captured_model() -> None:
    gpu = StageConfig(
        runtime_default_hierarchy_computation_model=HierarchyComputationModel.GPU_GLOBAL
    )
    runtime_default = HierarchyComputationModel.RUNTIME_DEFAULT
    with ovstage.Stage("gpu-default", config=gpu) as stage:
        op = stage.compute_hierarchy_async(0, 1, runtime_default)
        assert op.status == ErrorCode.NOT_SUPPORTED, "GPU models are not in this build"
    with ovstage.Stage("cpu-default") as stage:
        stage.compute_hierarchy_async(0, 1, runtime_default).wait()
