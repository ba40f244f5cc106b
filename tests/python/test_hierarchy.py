"""Hierarchy queries and the CPU hierarchy computation model."""

from __future__ import annotations

import dataclasses

import numpy as np
import ovstage
import pytest
from ovstage import (
    ErrorCode,
    Hierarchy,
    HierarchyComputationModel,
    HierarchyComputationModelDesc,
    HierarchyItem,
    HierarchyRelation,
    HierarchyResult,
    OvstageError,
)

PRIMS = ["/World", "/World/B", "/World/A", "/World/A/C", "/Top", "/X/Y/Z"]
INPUTS = ["/World", "/World/A", "/World/A/C", "/Top", "/Missing", "/X/Y/Z"]
XFORM, RESET, WORLD = "omni:xform", "omni:resetXformStack", "omni:fabric:worldMatrix"


@pytest.fixture
def authored(stage, make_query, paths) -> ovstage.PathList:
    """PRIMS authored by a client write; returns a path list of INPUTS (released after)."""
    stage.write_attribute(
        make_query(PRIMS), "temperature", 1, np.zeros(len(PRIMS), np.float32), is_array=False
    ).wait()
    with paths.create_path_list_from_strings(INPUTS) as plist:
        yield plist


def relation_paths(result: HierarchyResult) -> list[tuple[str, ...]]:
    return [result.item_paths(i) for i in range(result.input_count)]


def test_parent_relation(stage, authored) -> None:
    result = stage.get_hierarchy(authored, 3, HierarchyRelation.PARENT)
    assert isinstance(result, HierarchyResult)
    assert result.ordinal == 3
    assert result.input_count == len(INPUTS)
    assert [item.status for item in result.items] == [ErrorCode.OK] * 4 + [
        ErrorCode.NOT_FOUND,
        ErrorCode.OK,
    ]
    assert [item.ok for item in result.items] == [True, True, True, True, False, True]
    # Top-level prims have no parent (not the pseudo-root); a client-authored prim's parent
    # comes from its path even when the parent itself was never authored.
    assert relation_paths(result) == [(), ("/World",), ("/World/A",), (), (), ("/X/Y",)]


def test_children_relation(stage, authored) -> None:
    result = stage.get_hierarchy(authored, 1, HierarchyRelation.CHILDREN)
    assert relation_paths(result) == [
        ("/World/A", "/World/B"),
        ("/World/A/C",),
        (),
        (),
        (),
        (),
    ]
    assert result.items[4] == HierarchyItem(ErrorCode.NOT_FOUND, ())


def test_siblings_relation(stage, authored) -> None:
    result = stage.get_hierarchy(authored, 1, HierarchyRelation.SIBLINGS)
    # Top-level prims (/World, /Top) have no siblings: the pseudo-root is no parent.
    assert relation_paths(result) == [(), ("/World/B",), (), (), (), ()]


def test_whole_prim_delete_removes_the_prim_from_the_hierarchy(stage, authored, make_query) -> None:
    stage.delete_attributes(make_query(["/World/A/C"]), [], 2).wait()
    result = stage.get_hierarchy(authored, 2, HierarchyRelation.CHILDREN)
    assert relation_paths(result)[1] == ()
    assert result.items[2].status == ErrorCode.NOT_FOUND


def test_cloned_subtrees_have_a_hierarchy(stage, authored, paths) -> None:
    stage.clone("/World/A", ["/Copy"], 2)
    with paths.create_path_list_from_strings(["/Copy", "/Copy/C", "/Top"]) as plist:
        children = stage.get_hierarchy(plist, 2, HierarchyRelation.CHILDREN)
        parents = stage.get_hierarchy(plist, 2, HierarchyRelation.PARENT)
        siblings = stage.get_hierarchy(plist, 2, HierarchyRelation.SIBLINGS)
    assert relation_paths(children) == [("/Copy/C",), (), ()]
    assert relation_paths(parents) == [(), ("/Copy",), ()]
    assert relation_paths(siblings)[2] == ()  # /Top is a top-level prim


def test_async_handle_result_release_and_reuse(stage, authored) -> None:
    handle = stage.get_hierarchy_async(authored, 1, HierarchyRelation.PARENT)
    assert isinstance(handle, Hierarchy)
    assert handle.op is not None and handle.op.ok
    assert int(handle) == handle.handle != 0
    handle.wait()
    first = handle.result()
    assert stage.fetch_hierarchy_result(handle.handle) == first, "the result stays with the handle"
    op = handle.release()
    assert handle.released
    op.wait()
    with pytest.raises(OvstageError) as info:
        handle.result()
    assert info.value.code == ErrorCode.INVALID_HANDLE
    with pytest.raises(OvstageError) as info:
        stage.fetch_hierarchy_result(handle.handle)
    assert info.value.code == ErrorCode.INVALID_HANDLE
    rejected = stage.release_hierarchy(handle.handle)
    assert rejected.status == ErrorCode.INVALID_HANDLE


def test_handle_as_context_manager_releases(stage, authored) -> None:
    with stage.get_hierarchy_async(authored, 1, HierarchyRelation.CHILDREN) as handle:
        assert handle.result().item_paths(1) == ("/World/A/C",)
    assert handle.released


def test_unknown_relation_is_invalid_argument(stage, authored) -> None:
    handle = stage.get_hierarchy_async(authored, 1, 3)
    assert handle.handle == 0
    assert handle.op is not None and handle.op.status == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(OvstageError) as info:
        handle.wait()
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert "relation 3" in info.value.message
    with pytest.raises(OvstageError) as info:
        stage.get_hierarchy(authored, 1, -1)
    assert info.value.code == ErrorCode.INVALID_ARGUMENT


def test_argument_guards(stage, authored) -> None:
    with pytest.raises(ValueError, match="relation"):
        stage.get_hierarchy(authored, 1, 2**31)
    with pytest.raises(TypeError, match="relation"):
        stage.get_hierarchy(authored, 1, "PARENT")
    with pytest.raises(ValueError, match="ordinal"):
        stage.get_hierarchy(authored, -1, HierarchyRelation.PARENT)
    with pytest.raises(TypeError, match="path_list"):
        stage.get_hierarchy("/World", 1, HierarchyRelation.PARENT)
    with pytest.raises(OvstageError) as info:
        stage.get_hierarchy(2**40, 1, HierarchyRelation.PARENT)
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_calls_after_destroy_raise_invalid_handle(authored) -> None:
    stage = ovstage.Stage("short-lived")
    stage.destroy()
    with pytest.raises(OvstageError, match="after Stage was destroyed") as info:
        stage.get_hierarchy(authored, 1, HierarchyRelation.PARENT)
    assert info.value.code == ErrorCode.INVALID_HANDLE
    with pytest.raises(OvstageError):
        stage.get_hierarchy_computation_models()


def test_result_data_classes() -> None:
    result = HierarchyResult(4, [HierarchyItem(ErrorCode.OK, ["/a", "/b"])])
    assert result.items == (HierarchyItem(0, ("/a", "/b")),)
    assert result.input_count == 1
    assert result.item_paths(0) == ("/a", "/b")
    with pytest.raises(IndexError):
        result.item_paths(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.ordinal = 5  # type: ignore[misc]
    assert not HierarchyItem(ErrorCode.NOT_FOUND).ok


# ---------------------------------------------------------------- computation models


def test_the_four_models_are_advertised(stage) -> None:
    models = stage.get_hierarchy_computation_models()
    assert all(isinstance(desc, HierarchyComputationModelDesc) for desc in models)
    assert [(desc.model_id, desc.name) for desc in models] == [
        (HierarchyComputationModel.CPU_INCREMENTAL, "cpu-incremental"),
        (HierarchyComputationModel.GPU_INCREMENTAL, "gpu-incremental"),
        (HierarchyComputationModel.GPU_GLOBAL, "gpu-global"),
        (HierarchyComputationModel.RUNTIME_DEFAULT, "runtime-default"),
    ]
    # The GPU models are listed, but not in this build.
    assert "not in this build" in models[1].description
    assert "not in this build" in models[2].description


def T(x: float, y: float, z: float) -> np.ndarray:
    m = np.eye(4)
    m[3, :3] = (x, y, z)
    return m


def S(k: float) -> np.ndarray:
    return np.diag([k, k, k, 1.0])


def write_matrices(stage, make_query, attr: str, ordinal: int, mats: dict[str, np.ndarray]):
    query = make_query(list(mats))
    data = np.stack([m.reshape(16) for m in mats.values()]).astype(np.float64)
    stage.write_attribute(query, attr, ordinal, data, is_array=False).wait()


def world_matrices(
    read_values, make_query, prims: list[str], ordinal: int
) -> dict[str, np.ndarray]:
    values = read_values(make_query(prims), WORLD, ordinal)
    return {p: np.array(v).reshape(4, 4) for p, v in values.items()}


@pytest.fixture
def xforms(stage, make_query) -> dict[str, np.ndarray]:
    """A 3-level hierarchy with local transforms, a reset prim and world matrices to update
    (all sealed at ordinal 1); /W/A/N has no local transform and no world matrix."""
    local = {
        "/W": T(1, 2, 3),
        "/W/A": S(2) @ T(10, 0, 0),
        "/W/A/B": T(0, 1, 0),
        "/W/R": T(5, 5, 5),
    }
    write_matrices(stage, make_query, XFORM, 1, local)
    stage.write_attribute(make_query(["/W/R"]), RESET, 1, np.array([True]), is_array=False).wait()
    write_matrices(stage, make_query, WORLD, 1, {p: np.zeros((4, 4)) for p in local})
    stage.write_attribute(
        make_query(["/W/A/N"]), "temperature", 1, np.zeros(1, np.float32), is_array=False
    ).wait()
    stage.advance_write_floor(1).wait()
    return local


def test_world_matrices_of_a_three_level_hierarchy(stage, make_query, read_values, xforms):
    stage.compute_hierarchy(1, 2)
    stage.advance_write_floor(2).wait()
    got = world_matrices(read_values, make_query, ["/W", "/W/A", "/W/A/B", "/W/R", "/W/A/N"], 2)
    world_w = xforms["/W"]
    world_a = xforms["/W/A"] @ world_w
    world_b = xforms["/W/A/B"] @ world_a
    np.testing.assert_array_equal(got["/W"], world_w)
    np.testing.assert_array_equal(got["/W/A"], world_a)
    np.testing.assert_array_equal(got["/W/A/B"], world_b)
    # Row-vector convention: translation in elements 12..14, parent scale applies to it.
    np.testing.assert_array_equal(got["/W/A/B"].reshape(16)[12:15], [11, 4, 3])
    np.testing.assert_array_equal(got["/W/A"][:3, :3], 2 * np.eye(3))
    np.testing.assert_array_equal(got["/W/R"], T(5, 5, 5), "resetXformStack: world = local")
    assert "/W/A/N" not in got, "a prim without the attribute does not get one"


def test_a_floor_advance_computes_the_pending_world_matrices(
    stage, make_query, read_values, xforms
) -> None:
    # The fixture wrote local transforms and zero world matrices at 1 and advanced the floor:
    # the advance ran the runtime-default model first, recording the rows at ordinal 1.
    got = world_matrices(read_values, make_query, ["/W", "/W/A/B"], 1)
    np.testing.assert_array_equal(got["/W"], T(1, 2, 3))
    np.testing.assert_array_equal(got["/W/A/B"].reshape(16)[12:15], [11, 4, 3])


def test_the_output_is_recorded_at_the_output_ordinal(stage, make_query, read_values, xforms):
    write_matrices(stage, make_query, XFORM, 2, {"/W": T(7, 0, 0)})
    stage.compute_hierarchy(2, 3)
    before = world_matrices(read_values, make_query, ["/W"], 1)
    np.testing.assert_array_equal(before["/W"], T(1, 2, 3), "unsealed until the floor moves")
    stage.advance_write_floor(3).wait()
    np.testing.assert_array_equal(
        world_matrices(read_values, make_query, ["/W"], 3)["/W"], T(7, 0, 0)
    )
    # The output ordinal is not subject to the write floor: a sealed one is accepted.
    op = stage.compute_hierarchy_async(3, 3)
    assert op.ok
    op.wait()


def test_runtime_default_uses_the_cpu_model(stage, make_query, read_values, xforms) -> None:
    stage.compute_hierarchy(1, 2, HierarchyComputationModel.RUNTIME_DEFAULT)
    stage.advance_write_floor(2).wait()
    got = world_matrices(read_values, make_query, ["/W/A/B"], 2)
    np.testing.assert_array_equal(got["/W/A/B"].reshape(16)[12:15], [11, 4, 3])


def test_the_world_matrix_attribute_is_never_created(stage, make_query, read_values) -> None:
    write_matrices(stage, make_query, XFORM, 1, {"/P": T(1, 0, 0), "/P/C": T(0, 2, 0)})
    stage.advance_write_floor(1).wait()
    stage.compute_hierarchy(1, 2)
    stage.advance_write_floor(2).wait()
    assert read_values(make_query(["/P", "/P/C"]), WORLD, 2) == {}


@pytest.mark.parametrize(
    ("model", "code"),
    [
        (HierarchyComputationModel.GPU_INCREMENTAL, ErrorCode.NOT_SUPPORTED),
        (HierarchyComputationModel.GPU_GLOBAL, ErrorCode.NOT_SUPPORTED),
        (HierarchyComputationModel.DEFAULT_GPU, ErrorCode.NOT_SUPPORTED),
        (HierarchyComputationModel.INVALID, ErrorCode.INVALID_ARGUMENT),
        (17, ErrorCode.INVALID_ARGUMENT),
    ],
)
def test_unavailable_models_are_rejected(stage, model, code) -> None:
    op = stage.compute_hierarchy_async(1, 2, model)
    assert op.status == code
    with pytest.raises(OvstageError) as info:
        stage.compute_hierarchy(1, 2, model)
    assert info.value.code == code
    if code == ErrorCode.NOT_SUPPORTED:
        assert "GPU hierarchy models are not in this build" in info.value.message


def test_compute_guards(stage) -> None:
    with pytest.raises(ValueError, match="model"):
        stage.compute_hierarchy_async(1, 2, 2**31)
    with pytest.raises(ValueError, match="output_ordinal"):
        stage.compute_hierarchy_async(1, -2)
    with pytest.raises(TypeError, match="input_ordinal"):
        stage.compute_hierarchy_async(1.0, 2)
