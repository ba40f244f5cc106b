"""Map/unmap: ``Stage.map_attribute`` hands out writable buffers for a query's prims, committed
at the map's ordinal by ``unmap_group`` / ``unmap()``.

Beyond the reference, buffers start with the current committed values (zeros where a prim has
no value yet) and ragged attributes map with ``element_sizes``. Commits obey the write floor:
the ordinal must be above it when the map is enqueued and when it commits, and committed values
become readable once the floor is advanced past the ordinal. The 0.3.0 session rules (terminal
failures, the unmap sync, ``Map.__exit__``) are in test_v03_map_sessions.py.
"""

from __future__ import annotations

import gc

import numpy as np
import ovstage
import pytest
from ovstage import (
    AttributeSemantic,
    DLDataType,
    DLDataTypeCode,
    ErrorCode,
    Filter,
    FilterOp,
    OrdinalRange,
    OvstageError,
    PrimMode,
)
from ovstage import Predicate as P
from readback import assert_rejected, latest, read_error, read_groups

F32 = np.float32
ABC = ["/A", "/B", "/C"]
FLOAT32 = DLDataType(DLDataTypeCode.kDLFloat, 32, 1)
FLOAT32X3 = DLDataType(DLDataTypeCode.kDLFloat, 32, 3)


@pytest.fixture
def abc(stage, make_query, write_sealed) -> ovstage.Query:
    """/A, /B, /C with "mass" = 1, 2, 3 (float32), sealed at 1."""
    query = make_query(ABC)
    write_sealed(query, "mass", 1, np.array([1, 2, 3], F32))
    return query


def prims_of(paths: ovstage.PathDictionary, group: ovstage.MapGroup) -> list[str]:
    listed = paths.get_path_strings(group.prim_list)
    return [listed[group.prim_index(k)] for k in range(group.prim_count)]


def fill(map: ovstage.Map, values_by_prim: dict, paths: ovstage.PathDictionary) -> None:
    """Write each prim's value into the map's fixed-size groups (following index maps)."""
    for group in map.groups():
        rows = np.from_dlpack(group.dlpack(0))
        for k, prim in enumerate(prims_of(paths, group)):
            row = group.data_row_index(k) if group.has_data_index_map else k
            rows[row] = values_by_prim[prim]


def failed_map(map: ovstage.Map, fetch_code: int = ErrorCode.INVALID_ARGUMENT) -> str:
    """The OP_FAILED message of a map accepted at enqueue that fails when it executes; fetching
    a group raises the failure's typed status ``fetch_code``. The session is then unmapped
    (which reports the failure again)."""
    assert map.op.ok
    assert map.handle != 0
    with pytest.raises(OvstageError) as fetched:
        map.fetch_next()
    assert fetched.value.code == fetch_code, fetched.value
    with pytest.raises(OvstageError) as info:
        map.wait()
    assert info.value.code == ErrorCode.OP_FAILED
    # One text names the other's failure (wait() adds the status name, a fetch through a
    # failed input names the input op).
    assert (
        fetched.value.message in info.value.message or info.value.message in fetched.value.message
    )
    with pytest.raises(OvstageError) as unmapped:
        map.unmap().wait()
    assert unmapped.value.code == ErrorCode.OP_FAILED
    assert map.released
    return info.value.message


# ---------------------------------------------------------------- existing fixed columns


def test_existing_column_maps_writable_buffers_with_the_current_values(stage, abc, paths) -> None:
    with stage.map_attribute(abc, "mass", 2) as mapped:
        assert mapped.op is not None
        assert mapped.op.ok
        groups = list(mapped.groups())
        assert len(groups) == 1
        group = groups[0]
        assert isinstance(group, ovstage.MapGroup)
        assert prims_of(paths, group) == ABC
        assert group.tensor_count == 1
        assert not group.has_data_index_map
        tensor = group.tensor(0)
        assert (tensor.ndim, tensor.shape[0]) == (1, 3)
        assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (2, 32, 1)
        values = group.array(0)
        assert values.flags.writeable
        assert values.dtype == F32
        assert values.tolist() == [1.0, 2.0, 3.0]
        values[:] = [10, 20, 30]
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 10.0, "/B": 20.0, "/C": 30.0}


def test_buffers_start_with_committed_but_unsealed_values(stage, abc) -> None:
    stage.write_attribute(abc, "mass", 2, np.array([4, 5, 6], F32), is_array=False).wait()
    with stage.map_attribute(abc, "mass", 3) as mapped:
        assert [g.array(0).tolist() for g in mapped.groups()] == [[4.0, 5.0, 6.0]]


def test_untouched_buffers_commit_the_values_unchanged(stage, abc) -> None:
    with stage.map_attribute(abc, "mass", 2) as mapped:
        list(mapped.groups())
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    assert {g.ordinal for g in read_groups(stage, abc, ["mass"], OrdinalRange.latest(2))} == {2}


def test_the_commit_needs_a_floor_advance_to_be_read(stage, abc, paths) -> None:
    with stage.map_attribute(abc, "mass", 2) as mapped:
        fill(mapped, {"/A": 7, "/B": 8, "/C": 9}, paths)
    # The commit at 2 is not sealed: the state at 2 is refused, the snapshot at 1 (ours: still
    # held beside the unsealed commit) is served.
    assert (
        read_error(stage, abc, ["mass"], OrdinalRange.latest(2)) == ErrorCode.WRITE_FLOOR_VIOLATION
    )
    assert latest(stage, abc, "mass", 1) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    stage.advance_write_floor(2).wait()
    groups = read_groups(stage, abc, ["mass"], OrdinalRange.latest(2))
    assert [(g.ordinal, g.values) for g in groups] == [(2, {"/A": 7.0, "/B": 8.0, "/C": 9.0})]


def test_map_group_dlpack_is_writable_by_default(stage, abc) -> None:
    with stage.map_attribute(abc, "mass", 2) as mapped:
        group = mapped.fetch_next()
        view = np.from_dlpack(group.dlpack(0))
        assert view.flags.writeable
        view[1] = 200
        assert not np.from_dlpack(group.dlpack(0, readonly=True)).flags.writeable
        assert group.array(0).tolist() == [1.0, 200.0, 3.0]
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 1.0, "/B": 200.0, "/C": 3.0}


def test_map_group_meta_reports_the_floor(stage, abc) -> None:
    with stage.map_attribute(abc, "mass", 2) as mapped:
        group = mapped.fetch_next()
        assert group.meta.attribute_write_floor_ordinal == 1
        assert mapped.fetch_next() is None
        assert mapped.fetch_next() is None


def test_existing_column_with_the_same_dtype_given_maps(stage, abc, paths) -> None:
    with stage.map_attribute(abc, "mass", 2, dtype=FLOAT32) as mapped:
        fill(mapped, {"/A": 0, "/B": 0, "/C": 5}, paths)
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 0.0, "/B": 0.0, "/C": 5.0}


def test_existing_column_with_another_dtype_fails(stage, abc) -> None:
    message = failed_map(stage.map_attribute(abc, "mass", 2, dtype=DLDataType(2, 64, 1)))
    assert "schema" in message
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}


def test_existing_column_with_another_role_fails(stage, make_query) -> None:
    query = make_query(ABC)
    stage.write_attribute(
        query, "c", 1, np.ones((3, 3), F32), is_array=False, semantic=AttributeSemantic.COLOR
    ).wait()
    message = failed_map(stage.map_attribute(query, "c", 2, semantic=AttributeSemantic.MATRIX))
    assert "semantic" in message


# ---------------------------------------------------------------- new columns


def test_new_column_needs_a_dtype(stage, abc) -> None:
    message = failed_map(stage.map_attribute(abc, "velocity", 2))
    assert "dtype is required" in message
    stage.advance_write_floor(2).wait()
    with stage.query(Filter([P("velocity", FilterOp.HAS)])) as query:
        assert query.result().total_prim_count == 0


def test_new_column_without_dtype_fails_inside_a_with_block(stage, abc) -> None:
    with pytest.raises(OvstageError) as info, stage.map_attribute(abc, "velocity", 2) as mapped:
        list(mapped.groups())
    assert info.value.code == ErrorCode.INVALID_ARGUMENT  # the typed status of the fetch
    assert "dtype is required" in info.value.message
    assert mapped.released


def test_new_float3_column_maps_in_the_typed_layout(stage, abc, paths) -> None:
    with stage.map_attribute(
        abc, "velocity", 2, dtype=FLOAT32X3, semantic=AttributeSemantic.VECTOR
    ) as mapped:
        group = mapped.fetch_next()
        tensor = group.tensor(0)
        assert (tensor.ndim, tensor.shape_tuple) == (2, (3, 3))
        assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (2, 32, 1)
        view = group.array(0)
        assert view.shape == (3, 3)
        assert view.reshape(-1).tolist() == [0.0] * 9  # no value yet: zero-filled
        assert np.from_dlpack(group.dlpack(0)).shape == (3, 3)
        view[:] = np.arange(9).reshape(3, 3)
    stage.advance_write_floor(2).wait()
    groups = read_groups(stage, abc, ["velocity"], OrdinalRange.latest(2))
    assert len(groups) == 1
    assert groups[0].values == {"/A": [0.0, 1.0, 2.0], "/B": [3.0, 4.0, 5.0], "/C": [6.0, 7.0, 8.0]}
    assert groups[0].dtypes["/A"] == (2, 32, 3)
    assert groups[0].raw_semantic == AttributeSemantic.VECTOR


def test_new_matrix_column_exports_four_by_four_matrices(stage, abc) -> None:
    matrix = DLDataType(DLDataTypeCode.kDLFloat, 64, 16)
    with stage.map_attribute(
        abc, "xform", 2, dtype=matrix, semantic=AttributeSemantic.MATRIX
    ) as mapped:
        group = mapped.fetch_next()
        assert group.tensor(0).dtype.lanes == 1
        assert group.tensor(0).shape_tuple == (3, 4, 4)
        rows = np.from_dlpack(group.dlpack(0))
        assert rows.shape == (3, 4, 4)
        rows[:] = np.eye(4)
    stage.advance_write_floor(2).wait()
    values = latest(stage, abc, "xform", 2)
    assert values == dict.fromkeys(ABC, np.eye(4).ravel().tolist())


def test_new_column_committed_without_fetching_is_zero(stage, abc) -> None:
    stage.map_attribute(
        abc, "count", 2, dtype=DLDataType(DLDataTypeCode.kDLInt, 32, 1)
    ).unmap().wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "count", 2) == dict.fromkeys(ABC, 0)


def test_upsert_map_creates_missing_prims(stage, abc, make_query, paths) -> None:
    query = make_query(["/A", "/New"])
    with stage.map_attribute(query, "mass", 2) as mapped:
        group = mapped.fetch_next()
        assert prims_of(paths, group) == ["/A", "/New"]
        assert group.array(0).tolist() == [1.0, 0.0]
        group.array(0)[:] = [100, 200]
    stage.advance_write_floor(2).wait()
    assert latest(stage, query, "mass", 2) == {"/A": 100.0, "/New": 200.0}


def test_insert_map_on_new_prims_creates_them(stage, make_query, paths) -> None:
    query = make_query(["/N/A", "/N/B"])
    with stage.map_attribute(query, "mass", 1, prim_mode=PrimMode.INSERT, dtype=FLOAT32) as mapped:
        fill(mapped, {"/N/A": 1.5, "/N/B": 2.5}, paths)
    stage.advance_write_floor(1).wait()
    assert latest(stage, query, "mass", 1) == {"/N/A": 1.5, "/N/B": 2.5}


def test_insert_map_on_existing_prims_fails_and_writes_nothing(stage, abc, make_query) -> None:
    query = make_query(["/New", "/B"])
    message = failed_map(
        stage.map_attribute(query, "mass", 2, prim_mode=PrimMode.INSERT), ErrorCode.PRIM_NOT_FOUND
    )
    assert "INSERT" in message
    assert "already exists" in message
    stage.advance_write_floor(2).wait()
    with stage.query(Filter([P("usd-path", FilterOp.IN, ["/New"])])) as found:
        assert found.result().total_prim_count == 0
    assert latest(stage, abc, "mass", 2) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}


# ---------------------------------------------------------------- ragged columns


def test_ragged_map_with_element_sizes(stage, make_query) -> None:
    query = make_query(ABC)
    mapped = stage.map_attribute(query, "points", 1, dtype=FLOAT32, element_sizes=[2, 0, 3])
    try:
        groups = list(mapped.groups())
        assert len(groups) == 1
        group = groups[0]
        assert group.tensor_count == 3
        assert [group.array(i).shape for i in range(3)] == [(2,), (0,), (3,)]
        for i in range(3):
            group.array(i)[:] = np.arange(group.array(i).size) + 10 * i
    finally:
        mapped.unmap().wait()
    stage.advance_write_floor(1).wait()
    groups = read_groups(stage, query, ["points"], OrdinalRange.latest(1))
    assert [g.is_array for g in groups] == [True]
    assert groups[0].values == {"/A": [0.0, 1.0], "/B": [], "/C": [20.0, 21.0, 22.0]}


def test_ragged_map_of_an_existing_column_starts_with_its_rows(stage, make_query) -> None:
    query = make_query(ABC)
    rows = [np.array([1, 2], F32), np.array([], F32), np.array([3, 4, 5], F32)]
    stage.write_attribute(query, "points", 1, rows, is_array=True).wait()
    with stage.map_attribute(query, "points", 2, element_sizes=[2, 1, 3]) as mapped:
        group = mapped.fetch_next()
        current = [group.array(i).tolist() for i in range(group.tensor_count)]
        assert current == [[1.0, 2.0], [0.0], [3.0, 4.0, 5.0]]
        group.array(1)[:] = [99]
    stage.advance_write_floor(2).wait()
    assert latest(stage, query, "points", 2) == {
        "/A": [1.0, 2.0],
        "/B": [99.0],
        "/C": [3.0, 4.0, 5.0],
    }


def test_element_sizes_must_match_the_query_prims(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "points", 2, dtype=FLOAT32, element_sizes=[1, 2])
    assert mapped.handle == 0
    assert_rejected(mapped.op, ErrorCode.INVALID_ARGUMENT, "element_sizes")


def test_element_sizes_on_a_fixed_attribute_fail(stage, abc) -> None:
    message = failed_map(stage.map_attribute(abc, "mass", 2, element_sizes=[1, 1, 1]))
    assert "element_sizes" in message


# ---------------------------------------------------------------- committing


def test_unmap_group_commits_each_group_then_unmap_ends_the_session(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = mapped.fetch_next()
    group.array(0)[:] = [5, 6, 7]
    op = mapped.unmap_group(group)
    assert op.ok
    op.wait()
    assert group.released
    with pytest.raises(OvstageError) as info:
        group.array(0)
    assert info.value.code == ErrorCode.INVALID_HANDLE
    with pytest.raises(OvstageError) as info:
        mapped.unmap_group(group)
    assert info.value.code == ErrorCode.INVALID_HANDLE
    assert not mapped.released
    mapped.unmap().wait()
    assert mapped.released
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 5.0, "/B": 6.0, "/C": 7.0}


def test_unmap_alone_commits_every_group(stage, abc, paths) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    fill(mapped, {"/A": -1, "/B": -2, "/C": -3}, paths)
    mapped.unmap().wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": -1.0, "/B": -2.0, "/C": -3.0}


def test_leaving_a_with_block_commits_even_when_the_body_raises(stage, abc) -> None:
    with pytest.raises(RuntimeError, match="boom"), stage.map_attribute(abc, "mass", 2) as mapped:
        mapped.fetch_next().array(0)[:] = [42, 43, 44]
        raise RuntimeError("boom")
    assert mapped.released
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 42.0, "/B": 43.0, "/C": 44.0}


def test_stage_level_calls_accept_raw_handles(stage, abc) -> None:
    mapped = stage.map_attribute(abc.handle, "mass", 2)
    group = stage.fetch_map_next(mapped.handle)
    assert stage.fetch_map_next(mapped.handle) is None
    group.array(0)[:] = [3, 2, 1]
    stage.unmap_group(mapped.handle, group).wait()
    assert group.released
    mapped.unmap().wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 3.0, "/B": 2.0, "/C": 1.0}


def test_a_dropped_map_is_committed_by_its_finalizer_then_warns(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    mapped.fetch_next().array(0)[:] = [-7, -8, -9]
    with pytest.warns(ResourceWarning, match="garbage-collected unreleased"):
        del mapped
        gc.collect()
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": -7.0, "/B": -8.0, "/C": -9.0}


def test_the_commit_is_ordered_after_same_ordinal_writes_submitted_before_it(stage, abc) -> None:
    """Our policy (no overlap failure, unlike the reference's map session): a write overlapping
    a live map session is accepted; the map commits later in submission order, so it wins."""
    mapped = stage.map_attribute(abc, "mass", 2)
    mapped.fetch_next().array(0)[:] = [7, 8, 9]
    stage.write_attribute(abc, "mass", 2, np.array([4, 5, 6], F32), is_array=False).wait()
    mapped.unmap().wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 7.0, "/B": 8.0, "/C": 9.0}


def test_a_commit_after_its_ordinal_was_sealed_fails(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = mapped.fetch_next()
    group.array(0)[:] = [70, 80, 90]
    stage.advance_write_floor(2).wait()
    with pytest.raises(OvstageError) as info:
        mapped.unmap().wait()
    assert info.value.code == ErrorCode.OP_FAILED
    assert "write floor" in info.value.message
    assert mapped.released
    assert latest(stage, abc, "mass", 2) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}


def test_maps_at_increasing_ordinals_keep_the_latest(stage, abc, paths) -> None:
    for ordinal in (2, 3, 4):
        with stage.map_attribute(abc, "mass", ordinal) as mapped:
            fill(mapped, dict.fromkeys(ABC, ordinal * 10), paths)
    stage.advance_write_floor(4).wait()
    assert latest(stage, abc, "mass", 4) == dict.fromkeys(ABC, 40.0)


# ---------------------------------------------------------------- queries feeding maps


def test_a_filter_query_handle_maps_at_once(stage, abc, paths) -> None:
    # No wait in between: the map is ordered after the query.
    with (
        stage.query(Filter([P("mass", FilterOp.GT, ["1.5"])])) as heavy,
        stage.map_attribute(heavy, "mass", 2) as mapped,
    ):
        group = mapped.fetch_next()
        assert sorted(prims_of(paths, group)) == ["/B", "/C"]
        group.array(0)[:] = 0
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "mass", 2) == {"/A": 1.0, "/B": 0.0, "/C": 0.0}


def test_a_map_through_a_failed_query_fails(stage, abc) -> None:
    with stage.query(Filter([P("mass", FilterOp.GT, ["heavy"])])) as broken:
        message = failed_map(stage.map_attribute(broken, "mass", 2), ErrorCode.OP_FAILED)
    assert "not a number" in message


# ---------------------------------------------------------------- rejections and guards


@pytest.mark.parametrize("ordinal", [0, 1])
def test_map_at_or_below_the_floor_is_rejected(stage, abc, ordinal) -> None:
    mapped = stage.map_attribute(abc, "mass", ordinal)
    assert mapped.handle == 0
    assert_rejected(mapped.op, ErrorCode.WRITE_FLOOR_VIOLATION)
    with pytest.raises(OvstageError) as info:
        mapped.fetch_next()
    assert info.value.code == ErrorCode.WRITE_FLOOR_VIOLATION
    with mapped:  # nothing to unmap
        pass


def test_map_at_ordinal_zero_on_a_fresh_stage_is_rejected(stage, make_query) -> None:
    mapped = stage.map_attribute(make_query(ABC), "mass", 0, dtype=FLOAT32)
    assert_rejected(mapped.op, ErrorCode.WRITE_FLOOR_VIOLATION)


def test_use_after_unmap_raises_invalid_handle(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = mapped.fetch_next()
    mapped.unmap().wait()
    assert mapped.released
    assert group.released
    uses = [
        mapped.fetch_next,
        mapped.unmap,
        lambda: list(mapped.groups()),
        lambda: mapped.unmap_group(group),
        lambda: group.array(0),
        lambda: group.dlpack(0),
        lambda: group.prim_count,
    ]
    for use in uses:
        with pytest.raises(OvstageError) as info:
            use()
        assert info.value.code == ErrorCode.INVALID_HANDLE


@pytest.mark.parametrize(
    ("name", "fragment"), [("a\x00b", "NUL"), ("", "non-empty")], ids=["NUL", "empty"]
)
def test_a_bad_attribute_name_is_rejected_invalid_argument(stage, abc, name, fragment) -> None:
    mapped = stage.map_attribute(abc, name, 2, dtype=FLOAT32)
    assert mapped.handle == 0
    assert_rejected(mapped.op, ErrorCode.INVALID_ARGUMENT, fragment)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"dtype": (2, 32, 1)}, TypeError),
        ({"element_sizes": 3}, TypeError),
        ({"element_sizes": "ab"}, TypeError),
        ({"element_sizes": [-1, 1, 1]}, ValueError),
        ({"prim_mode": 7}, ValueError),
        ({"semantic": 2**40}, ValueError),
        ({"ordinal": 2.0}, TypeError),
        ({"ordinal": -1}, ValueError),
        ({"attribute": 1.5}, TypeError),
    ],
    ids=lambda v: str(v),
)
def test_argument_guards_raise_before_any_native_call(stage, abc, kwargs, error) -> None:
    args = {"attribute": "mass", "ordinal": 2, **kwargs}
    attribute, ordinal = args.pop("attribute"), args.pop("ordinal")
    with pytest.raises(error):
        stage.map_attribute(abc, attribute, ordinal, **args)
    # Nothing was enqueued: a map at ordinal 2 still works.
    stage.map_attribute(abc, "mass", 2).unmap().wait()


def test_map_after_destroy_raises_invalid_handle() -> None:
    stage = ovstage.Stage("destroyed")
    stage.destroy()
    with pytest.raises(OvstageError) as info:
        stage.map_attribute(1, "mass", 2, dtype=FLOAT32)
    assert info.value.code == ErrorCode.INVALID_HANDLE
