"""Other Python-surface changes of 0.3.0: names, signatures and small behaviours of filters,
groups, map sessions and hierarchy fetches."""

from __future__ import annotations

import inspect

import numpy as np
import ovstage
import pytest
from conftest import MakeQuery, WriteSealed
from ovstage import (
    AttributeMeta,
    AttributeSemantic,
    ErrorCode,
    Filter,
    FilterOp,
    HierarchyRelation,
    OrdinalRange,
    OvstageError,
    Predicate,
    ReadGroup,
    WriteDesc,
    gates,
)
from ovstage._abi import AttributeMetaRaw, ReadGroupRaw

AB = ["/A", "/B"]


def test_the_new_names_are_public() -> None:
    for name in ("BuildInfo", "get_build_info"):
        assert name in ovstage.__all__
        assert hasattr(ovstage, name)


def test_bad_predicates_are_refused_when_the_filter_is_used_not_when_built(
    stage: ovstage.Stage,
) -> None:
    bad_op = Filter([Predicate("mass", 77, ["1"])])  # built without complaint
    bad_values = Filter([Predicate("usd-path", FilterOp.IN, "/A")])
    with pytest.raises(ValueError, match=r"predicates\[0\]\.op"):
        bad_op.to_c()
    with pytest.raises(ValueError, match=r"predicates\[0\]\.op"):
        stage.query(bad_op)
    with pytest.raises(TypeError, match=r"predicates\[0\]\.values"):
        stage.query(bad_values)
    with pytest.raises(TypeError):
        Filter()  # type: ignore[call-arg]


def test_filter_to_c_is_the_c_struct() -> None:
    raw = Filter([Predicate(7, FilterOp.HAS)]).to_c()
    assert raw.count == 1 and raw.predicates != 0
    assert Filter([]).to_c().count == 0


def test_read_group_semantic_is_an_attribute_semantic(
    stage: ovstage.Stage, make_query: MakeQuery, write_sealed: WriteSealed
) -> None:
    query = make_query(AB)
    write_sealed(query, "p", 1, np.ones((2, 3), np.float32), semantic=AttributeSemantic.POINT)
    with stage.read_attributes(query, ["p"], OrdinalRange.latest(1)) as read:
        group = read.wait().fetch_next()
        assert group is not None
        with group:
            assert group.semantic is AttributeSemantic.POINT


def test_a_stageless_read_group_reports_a_newer_semantic_as_int_and_cannot_be_released() -> None:
    raw = ReadGroupRaw()
    raw.semantic = 99
    group = ReadGroup(raw)
    assert group.semantic == 99 and type(group.semantic) is int
    with group:  # leaving is a no-op for a group nothing owns
        pass
    with pytest.raises(OvstageError) as info:
        group.release()
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_attribute_meta_copies_a_raw_struct() -> None:
    raw = AttributeMetaRaw()
    raw.attribute_write_floor_ordinal = 12
    raw.layout_generation = 3
    meta = AttributeMeta(raw)
    raw.layout_generation = 4
    assert (meta.attribute_write_floor_ordinal, meta.layout_generation) == (12, 3)
    assert AttributeMeta(5, 6).layout_generation == 6


def test_map_session_calls_take_mapping(stage: ovstage.Stage, make_query: MakeQuery) -> None:
    for method in (stage.fetch_map_next, stage.unmap_group, stage.unmap_attribute):
        assert next(iter(inspect.signature(method).parameters)) == "mapping"
    query = make_query(AB)
    dtype = ovstage.numpy_to_dldatatype(np.float32)
    mapping = stage.map_attribute(query, "m", 1, dtype=dtype)
    group = stage.fetch_map_next(mapping=mapping)
    assert group is not None
    np.from_dlpack(group.dlpack(0))[:] = 2
    stage.unmap_group(mapping=mapping, group=group).wait()
    stage.unmap_attribute(mapping=mapping).wait()


def test_map_group_takes_raw_and_mapping(stage: ovstage.Stage, make_query: MakeQuery) -> None:
    assert list(inspect.signature(ovstage.MapGroup).parameters) == ["raw", "mapping"]
    query = make_query(AB)
    dtype = ovstage.numpy_to_dldatatype(np.float32)
    mapping = stage.map_attribute(query, "m", 1, dtype=dtype)
    fetched = mapping.fetch_next()
    assert fetched is not None
    view = ovstage.MapGroup(fetched.raw, mapping)  # a second view of the same group
    assert view.prim_count == fetched.prim_count == 2
    assert ovstage.MapGroup(fetched.raw).tensor_count == 1  # a detached view
    mapping.unmap_group(fetched).wait()
    with pytest.raises(OvstageError) as committed:
        fetched.prim_count  # noqa: B018
    assert committed.value.code == ErrorCode.INVALID_HANDLE
    mapping.unmap().wait()
    with pytest.raises(OvstageError) as ended:
        view.prim_count  # noqa: B018
    assert ended.value.code == ErrorCode.INVALID_HANDLE
    assert "map session ended" in ended.value.message


def test_fetch_hierarchy_result_does_not_block(
    stage: ovstage.Stage, make_query: MakeQuery, paths: ovstage.PathDictionary
) -> None:
    query = make_query(["/W", "/W/A"])
    stage.write_attribute(query, "t", 1, np.ones(2, np.float32), is_array=False).wait()
    with (
        paths.create_path_list_from_strings(["/W"]) as plist,
        gates.scoped_write_gate() as gate,
    ):
        held = stage.write_attribute(query, "t", 2, np.ones(2, np.float32), is_array=False)
        assert gate.wait_until_entered()
        with stage.get_hierarchy_async(plist, 2, HierarchyRelation.CHILDREN) as handle:
            with pytest.raises(OvstageError) as info:
                stage.fetch_hierarchy_result(handle)
            assert info.value.code == ErrorCode.TIMEOUT
            gate.release()
            held.wait()
            assert handle.wait().result().items[0].paths == ("/W/A",)


def test_write_desc_defaults() -> None:
    desc = WriteDesc("x", np.zeros(1, np.float32), is_array=False)
    assert desc.semantic == AttributeSemantic.NONE
    assert (desc.index_map, desc.mask, desc.count) == (None, None, None)
