"""Build information, version reporting and ``Stage.config`` of 0.3.0 (README.md, "Versions")."""

from __future__ import annotations

import ctypes
import importlib.metadata
import subprocess
import sys

import ovstage
import pytest
from ovstage import ErrorCode, HierarchyComputationModel, OvstageError, StageConfig
from ovstage._abi import BuildInfoRaw, OvxString
from ovstage._buildinfo import build_info_from_c

GPU = StageConfig(runtime_default_hierarchy_computation_model=HierarchyComputationModel.GPU_GLOBAL)


def test_every_version_report_says_0_3_0() -> None:
    assert ovstage.library_version() == (0, 3, 0)
    assert ovstage.Stage.get_version() == (0, 3, 0)
    assert ovstage.__version__ == "0.3.0"
    assert importlib.metadata.version("ovstage-go") == ovstage.__version__


def test_build_info_describes_this_build() -> None:
    info = ovstage.get_build_info()
    assert isinstance(info, ovstage.BuildInfo)
    assert ovstage.get_build_info() is info, "cached"
    assert info.struct_size == 72
    assert info.git_branch and info.git_hash and info.build_location
    assert info.build_string == (
        f"0.3.0+{info.git_branch}.{info.build_number}.{info.git_hash}.{info.build_location}"
    )
    with pytest.raises(AttributeError):
        info.build_number = 7  # type: ignore[misc]


def test_build_info_needs_no_stage() -> None:
    code = (
        "import ovstage\n"
        "info = ovstage.get_build_info()\n"
        "assert info.build_string.startswith('0.3.0+'), info\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def _raw(build_string: bytes = b"0.3.0+b.1.h.l", size: int = 72) -> tuple[BuildInfoRaw, list]:
    keep = [build_string, b"b", b"h", b"l"]
    raw = BuildInfoRaw(size, 1, *(OvxString(s, len(s)) for s in keep))
    return raw, keep


def test_a_well_formed_build_info_is_copied() -> None:
    raw, _keep = _raw()
    info = build_info_from_c(ctypes.addressof(raw))
    assert info == ovstage.BuildInfo(72, 1, "0.3.0+b.1.h.l", "b", "h", "l")


def test_malformed_build_info_is_a_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="NULL"):
        build_info_from_c(0)
    small, _k1 = _raw(size=40)
    with pytest.raises(RuntimeError, match="struct_size 40"):
        build_info_from_c(ctypes.addressof(small))
    null_text, _k2 = _raw()
    null_text.git_hash = OvxString(None, 5)
    with pytest.raises(RuntimeError, match="git_hash is NULL"):
        build_info_from_c(ctypes.addressof(null_text))
    bad_utf8, _k3 = _raw(build_string=b"0.3.0+\xff")
    with pytest.raises(RuntimeError, match="UTF-8"):
        build_info_from_c(ctypes.addressof(bad_utf8))
    other, _k4 = _raw(build_string=b"0.2.1+b.1.h.l")
    with pytest.raises(RuntimeError, match="ovstage build information mismatch"):
        build_info_from_c(ctypes.addressof(other))


def test_config_of_an_unconfigured_process_has_no_settings() -> None:
    with ovstage.Stage("plain") as stage:
        assert stage.config == StageConfig()
        assert stage.config is not stage.config, "read anew at each access"


def test_config_reports_the_entries_that_started_the_lifetime() -> None:
    with ovstage.Stage("first", config=GPU) as first:
        assert first.config == GPU
        assert first.hierarchy_model == HierarchyComputationModel.GPU_GLOBAL
        inherit = StageConfig(
            runtime_default_hierarchy_computation_model=HierarchyComputationModel.RUNTIME_DEFAULT,
            workers=2,
        )
        with ovstage.Stage("later", config=inherit) as later, ovstage.Stage("plain") as plain:
            assert later.config == StageConfig(
                runtime_default_hierarchy_computation_model=HierarchyComputationModel.GPU_GLOBAL,
                workers=2,
            )
            assert plain.config == GPU
            assert later.hierarchy_model == plain.hierarchy_model == first.hierarchy_model
    # The lifetime ended with its last stage: the next one starts afresh.
    with ovstage.Stage("fresh") as fresh:
        assert fresh.config == StageConfig()
        assert fresh.hierarchy_model == HierarchyComputationModel.CPU_INCREMENTAL


def test_a_first_explicit_runtime_default_is_reported_as_given() -> None:
    runtime_default = StageConfig(
        runtime_default_hierarchy_computation_model=HierarchyComputationModel.RUNTIME_DEFAULT
    )
    with ovstage.Stage("default", config=runtime_default) as stage:
        assert stage.config == runtime_default
        assert stage.hierarchy_model == HierarchyComputationModel.CPU_INCREMENTAL


def test_a_conflicting_config_while_any_stage_lives_is_refused() -> None:
    with ovstage.Stage("plain"):
        with pytest.raises(OvstageError) as info:
            ovstage.Stage("gpu", config=GPU)
        assert info.value.code == ErrorCode.INVALID_ARGUMENT
        assert "conflicts with active process state" in info.value.message
    with ovstage.Stage("gpu", config=GPU) as stage:  # the refusal took no reference
        assert stage.config == GPU


def test_an_unknown_model_is_refused_when_the_stage_is_created() -> None:
    with pytest.raises(OvstageError) as info:
        ovstage.Stage("unknown", config=StageConfig(runtime_default_hierarchy_computation_model=77))
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert "77" in info.value.message
    with ovstage.Stage("after") as stage:
        assert stage.config == StageConfig()


def test_config_of_a_destroyed_stage_is_invalid_handle() -> None:
    stage = ovstage.Stage("gone")
    stage.destroy()
    with pytest.raises(OvstageError) as info:
        _ = stage.config
    assert info.value.code == ErrorCode.INVALID_HANDLE
