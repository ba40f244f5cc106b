"""Hierarchy in 0.3.0, as it surfaces in Python.

``compute_hierarchy`` records at ``output_ordinal`` without floor admission (a sealed one is
accepted and folded in at once); a floor advance over the world-matrix column runs the
runtime-default model by itself and records the rows it changes at the advance's ordinal;
``RUNTIME_DEFAULT`` is the model the stage captured at creation, resolved by the engine for
both; ``get_hierarchy`` sees the hierarchy as committed when it runs, and its ``ordinal`` is
only echoed back. ``model`` and ``relation`` get an int32 range check in Python, the rest is
the engine's. (Relations and the CPU model's values are in test_hierarchy.py.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import ovstage
import pytest
from ovstage import (
    ErrorCode,
    HierarchyComputationModel,
    HierarchyRelation,
    LogSeverity,
    OrdinalRange,
    OvstageError,
    StageConfig,
)
from readback import read_groups

XFORM, WORLD = "omni:xform", "omni:fabric:worldMatrix"
FLUSH = 10 * 1_000_000_000


def T(x: float, y: float, z: float) -> np.ndarray:
    m = np.eye(4)
    m[3, :3] = (x, y, z)
    return m


def write_matrices(stage, query, attr: str, ordinal: int, mats: list[np.ndarray]) -> None:
    data = np.stack([m.reshape(16) for m in mats]).astype(np.float64)
    stage.write_attribute(query, attr, ordinal, data, is_array=False).wait()


def world(stage: ovstage.Stage, query: ovstage.Query, rng: OrdinalRange) -> dict[str, list]:
    """``{prim: world matrix (16 values)}`` of the rows a read of ``rng`` returns."""
    out: dict[str, list] = {}
    for group in read_groups(stage, query, [WORLD], rng):
        for prim, value in group.values.items():
            out[prim] = np.asarray(value).reshape(16).tolist()
    return out


@pytest.fixture
def tree(stage, make_query) -> ovstage.Query:
    """/W and /W/C with local transforms and world matrices (identity), sealed at 1; the
    floor advance already computed the world matrices."""
    query = make_query(["/W", "/W/C"])
    write_matrices(stage, query, XFORM, 1, [T(1, 0, 0), T(0, 2, 0)])
    write_matrices(stage, query, WORLD, 1, [np.eye(4), np.eye(4)])
    stage.advance_write_floor(1).wait()
    return query


class Logs:
    """Records the log messages of one channel."""

    def __init__(self, channel: str) -> None:
        self.prefix = f"[{channel}] "
        self.records: list[tuple[LogSeverity, str]] = []
        self.lock = threading.Lock()

    def __call__(self, severity: LogSeverity, timestamp: float, message: str) -> None:
        if message.startswith(self.prefix):
            with self.lock:
                self.records.append((severity, message))


@pytest.fixture
def hierarchy_logs() -> Iterator[Logs]:
    logs = Logs("ovstage.hierarchy")
    ovstage.set_log_callback(logs)
    try:
        yield logs
    finally:
        ovstage.set_log_callback(None)


# ---------------------------------------------------------------- automatic computation


def test_a_floor_advance_records_the_rows_it_computes_at_its_ordinal(stage, tree) -> None:
    write_matrices(stage, tree, XFORM, 2, [T(5, 0, 0), T(0, 2, 0)])
    stage.advance_write_floor(2).wait()
    changed = world(stage, tree, OrdinalRange.between(2, 2))
    # /W moved, and so did its child's world matrix; both changes are recorded at 2.
    assert changed == {
        "/W": T(5, 0, 0).reshape(16).tolist(),
        "/W/C": (T(0, 2, 0) @ T(5, 0, 0)).reshape(16).tolist(),
    }


def test_an_advance_without_hierarchy_changes_records_nothing(stage, tree, make_query) -> None:
    stage.write_attribute(
        make_query(["/W"]), "temperature", 2, np.array([1], np.float32), is_array=False
    ).wait()
    stage.advance_write_floor(2).wait()
    assert world(stage, tree, OrdinalRange.between(2, 2)) == {}


def test_a_configured_gpu_default_is_what_the_advance_runs(hierarchy_logs) -> None:
    """The stage hands its captured model to the engine: with a GPU runtime default (not in
    this build) the advance leaves the world matrices alone and says why. No other stage may
    be alive: it would hold the process lifetime's CPU default (as a C instance does)."""
    gpu = StageConfig(
        runtime_default_hierarchy_computation_model=HierarchyComputationModel.GPU_GLOBAL
    )
    with ovstage.Stage("gpu default", config=gpu) as stage:
        assert stage.hierarchy_model == HierarchyComputationModel.GPU_GLOBAL
        dictionary = ovstage.PathDictionary(stage)
        with (
            dictionary.create_path_list_from_strings(["/W"]) as plist,
            stage.query_from_path_list(plist) as query,
        ):
            write_matrices(stage, query, XFORM, 1, [T(1, 0, 0)])
            write_matrices(stage, query, WORLD, 1, [np.eye(4)])
            stage.advance_write_floor(1).wait()
            assert world(stage, query, OrdinalRange.latest(1)) == {
                "/W": np.eye(4).reshape(16).tolist()
            }
            op = stage.compute_hierarchy_async(1, 2, HierarchyComputationModel.RUNTIME_DEFAULT)
            assert op.status == ErrorCode.NOT_SUPPORTED
            assert "GPU_GLOBAL" in op.error_message()
    assert ovstage.flush_log(FLUSH)
    warnings = [m for s, m in hierarchy_logs.records if s is LogSeverity.WARNING]
    assert any("runtime-default hierarchy model 3 is not in this build" in m for m in warnings)


# ---------------------------------------------------------------- compute_hierarchy


def test_a_sealed_output_ordinal_is_accepted_and_folded_in_at_once(stage, tree) -> None:
    write_matrices(stage, tree, XFORM, 2, [T(7, 0, 0), T(0, 2, 0)])
    # The floor is at 1: outputs at 1 are not refused, and reads at 1 see them at once.
    stage.compute_hierarchy(2, 1)
    assert world(stage, tree, OrdinalRange.latest(1))["/W"] == T(7, 0, 0).reshape(16).tolist()
    stage.compute_hierarchy(3, 1, HierarchyComputationModel.RUNTIME_DEFAULT)


@pytest.mark.parametrize(
    ("model", "error"),
    [("cpu", TypeError), (1.0, TypeError), (None, TypeError), (2**31, ValueError)],
    ids=str,
)
def test_a_bad_model_raises_naming_it_and_changes_nothing(stage, tree, model, error) -> None:
    write_matrices(stage, tree, XFORM, 2, [T(3, 0, 0), T(0, 2, 0)])
    with pytest.raises(error, match="model"):
        stage.compute_hierarchy_async(2, 2, model)
    assert world(stage, tree, OrdinalRange.latest(1))["/W"] == T(1, 0, 0).reshape(16).tolist()


@pytest.mark.parametrize("model", [0, 5, -1, 2**31 - 1], ids=str)
def test_an_unknown_model_id_is_a_rejected_op(stage, tree, model) -> None:
    op = stage.compute_hierarchy_async(1, 2, model)
    assert op.status == ErrorCode.INVALID_ARGUMENT
    assert f"model {model}" in op.error_message()


# ---------------------------------------------------------------- get_hierarchy


def test_the_ordinal_is_echoed_and_selects_nothing(stage, tree, paths) -> None:
    with paths.create_path_list_from_strings(["/W"]) as plist:
        result = stage.get_hierarchy(plist, 99, HierarchyRelation.CHILDREN)
    assert result.ordinal == 99
    assert result.item_paths(0) == ("/W/C",)


def test_a_top_level_parent_is_empty_and_a_missing_prim_is_not_found(stage, tree, paths) -> None:
    with paths.create_path_list_from_strings(["/W", "/Nope", "/W/C"]) as plist:
        result = stage.get_hierarchy(plist, 1, HierarchyRelation.PARENT)
    assert [item.status for item in result.items] == [
        ErrorCode.OK,
        ErrorCode.NOT_FOUND,
        ErrorCode.OK,
    ]
    assert result.item_paths(0) == ()
    assert result.item_paths(2) == ("/W",)


@pytest.mark.parametrize(
    ("relation", "outcome"),
    [("parent", TypeError), (1.5, TypeError), (2**31, ValueError), (3, ErrorCode.INVALID_ARGUMENT)],
    ids=str,
)
def test_a_bad_relation(stage, tree, paths, relation, outcome) -> None:
    with paths.create_path_list_from_strings(["/W"]) as plist:
        if isinstance(outcome, type):
            with pytest.raises(outcome, match="relation"):
                stage.get_hierarchy_async(plist, 1, relation)
            return
        handle = stage.get_hierarchy_async(plist, 1, relation)
        assert handle.handle == 0
        with pytest.raises(OvstageError) as info:
            handle.wait()
        assert info.value.code == outcome
