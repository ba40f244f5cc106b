"""Smaller points the 0.3.0 reference shows when run (issue 12, item 12), and where ours
accepts more than it (README.md, "Where we differ")."""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from conftest import MakeQuery, ReadValues, WriteSealed
from ovstage import (
    AttributeSemantic,
    ErrorCode,
    Filter,
    FilterOp,
    OrdinalRange,
    OvstageError,
    Predicate,
)

AB = ["/A", "/B"]


def f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def test_a_layout_error_is_reported_before_a_floor_violation(
    stage: ovstage.Stage, make_query: MakeQuery, write_sealed: WriteSealed, read_values: ReadValues
) -> None:
    query = make_query(AB)
    write_sealed(query, "y", 5, f32(1, 2))
    op = stage.write_attribute(query, "y", 3, np.zeros(2, np.int32), is_array=False)
    assert op.status == ErrorCode.INVALID_ARGUMENT
    assert "would change its schema" in op.error_message()
    # With the layout right, the floor is what refuses it.
    op = stage.write_attribute(query, "y", 3, f32(0, 0), is_array=False)
    assert op.status == ErrorCode.WRITE_FLOOR_VIOLATION
    assert read_values(query, "y", 5) == {"/A": 1.0, "/B": 2.0}


@pytest.mark.parametrize("tensors", [None, object(), "abc"], ids=["None", "object", "str"])
def test_tensors_that_are_not_tensors_are_a_type_error(
    stage: ovstage.Stage, make_query: MakeQuery, tensors: object
) -> None:
    query = make_query(AB)
    with pytest.raises(TypeError, match="tensors"):
        stage.write_attribute(query, "x", 1, tensors, is_array=False)
    with stage.query() as q:
        assert q.wait().result().attributes == [], "nothing was written"


def test_the_null_query_handle_is_invalid_argument_and_a_released_one_invalid_handle(
    stage: ovstage.Stage, paths: ovstage.PathDictionary
) -> None:
    with paths.create_path_list_from_strings(AB) as plist:
        released = stage.query_from_path_list(plist)
        handle = released.handle
        released.release().wait()
    for query, code in ((0, ErrorCode.INVALID_ARGUMENT), (handle, ErrorCode.INVALID_HANDLE)):
        write = stage.write_attribute(query, "x", 1, f32(1, 2), is_array=False)
        assert write.status == code, write.error_message()
        read = stage.read_attributes(query, ["x"], OrdinalRange.latest(1))
        assert read.op is not None and read.op.status == code
        with pytest.raises(OvstageError) as info:
            stage.fetch_query_result(query)
        assert info.value.code == code


def test_a_scoped_query_result_also_lists_the_attributes_its_predicates_name(
    stage: ovstage.Stage, make_query: MakeQuery, paths: ovstage.PathDictionary
) -> None:
    query = make_query(AB)
    for name in ("u", "x", "z"):
        stage.write_attribute(query, name, 1, f32(1, 1), is_array=False).wait()
    with stage.query(Filter([Predicate("u", FilterOp.HAS)]), attrs=["x"]) as q:
        result = q.wait().result()
    assert sorted(paths.token_to_string(a) for a in result.attributes) == ["u", "x"]
    assert result.total_prim_count == 2
    with stage.query(Filter([Predicate("u", FilterOp.HAS)])) as q:
        everything = q.wait().result()
    assert sorted(paths.token_to_string(a) for a in everything.attributes) == ["u", "x", "z"]


def test_token_zero_reads_as_the_empty_string(paths: ovstage.PathDictionary) -> None:
    assert paths.token_to_string(0) == ""
    with pytest.raises(ovstage.OvxError):
        paths.token_to_string(987_654_321)


def test_an_unknown_semantic_reads_back_as_none(
    stage: ovstage.Stage, make_query: MakeQuery, write_sealed: WriteSealed
) -> None:
    query = make_query(AB)
    write_sealed(query, "newer", 1, f32(1, 2), semantic=77)
    write_sealed(query, "color", 2, np.ones((2, 3), np.float32), semantic=AttributeSemantic.COLOR)
    with stage.read_attributes(query, ["newer", "color"], OrdinalRange.latest(2)) as read:
        semantics = []
        for group in read.wait().groups():
            with group:
                semantics.append(group.semantic)
    assert semantics == [AttributeSemantic.NONE, AttributeSemantic.COLOR]
    assert all(type(s) is AttributeSemantic for s in semantics)


def test_a_delete_over_a_live_read_group_copies_on_write(
    stage: ovstage.Stage, make_query: MakeQuery, write_sealed: WriteSealed, read_values: ReadValues
) -> None:
    query = make_query(AB)
    write_sealed(query, "t", 1, f32(1, 2))
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read:
        group = read.wait().fetch_next()
        assert group is not None
        with group:
            view = group.array(0)
            stage.delete_attributes(make_query(["/A"]), ["t"], 2).wait()
            stage.advance_write_floor(2).wait()
            assert view.tolist() == [1.0, 2.0], "the live group keeps what it showed"
    assert read_values(query, "t", 2) == {"/B": 2.0}


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [(np.int8, (2,)), (np.uint16, (2,)), (np.int8, (2, 4))],
    ids=["int8", "uint16", "int8x4"],
)
def test_columns_beyond_the_reference_types_round_trip(
    stage: ovstage.Stage,
    make_query: MakeQuery,
    write_sealed: WriteSealed,
    dtype: type,
    shape: tuple[int, ...],
) -> None:
    query = make_query(AB)
    values = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    write_sealed(query, "small", 1, values)
    with stage.read_attributes(query, ["small"], OrdinalRange.latest(1)) as read:
        group = read.wait().fetch_next()
        assert group is not None
        with group:
            got = np.from_dlpack(group.dlpack(0))
            assert got.dtype == dtype
            assert got.reshape(shape).tolist() == values.tolist()


def test_read_attributes_takes_attribute_names(
    stage: ovstage.Stage, make_query: MakeQuery, write_sealed: WriteSealed
) -> None:
    query = make_query(AB)
    write_sealed(query, "t", 1, f32(3, 4))
    token = ovstage.PathDictionary(stage).intern_token("t")
    for attrs in (["t"], [token]):
        with stage.read_attributes(query, attrs, OrdinalRange.latest(1)) as read:
            group = read.wait().fetch_next()
            assert group is not None
            with group:
                assert group.array(0).tolist() == [3.0, 4.0]
