"""Ragged (array) attributes: ``is_array=True`` writes, packed and per-row payloads, reads with
one tensor per prim, schema immutability.
"""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from ovstage import DLDataTypeCode, ErrorCode, OrdinalRange, WriteDesc
from readback import assert_rejected, latest, read_groups, values_of

ABC = ["/A", "/B", "/C"]
F32 = np.float32


def _rows(*lengths: int, dtype=np.int32) -> list[np.ndarray]:
    """Row i holds ``lengths[i]`` copies of ``10 * (i + 1) + j`` for j = 0.."""
    return [np.arange(n, dtype=dtype) + 10 * (i + 1) for i, n in enumerate(lengths)]


@pytest.fixture
def abc(make_query) -> ovstage.Query:
    return make_query(ABC)


# ---------------------------------------------------------------- per-row payloads


def test_per_row_tensors_read_back_one_tensor_per_prim(stage, abc, write_sealed, paths) -> None:
    write_sealed(abc, "a", 1, _rows(2, 3, 1), is_array=True)
    with stage.read_attributes(abc, ["a"], OrdinalRange.latest(1)) as read:
        read.wait()
        groups = list(read.groups())
        assert len(groups) == 1
        with groups[0] as group:
            assert group.is_array is True
            assert group.is_delete is False
            assert group.tensor_count == group.prim_count == 3
            list_paths = paths.get_path_strings(group.prim_list)
            got = {}
            for local in range(group.prim_count):
                row = group.data_row_index(local) if group.has_data_index_map else local
                tensor = group.tensor(row)
                assert tensor.ndim == 1
                assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (
                    DLDataTypeCode.kDLInt,
                    32,
                    1,
                )
                assert tensor.shape_tuple == (len(group.array(row)),)
                got[list_paths[group.prim_index(local)]] = group.array(row).tolist()
    assert got == {"/A": [10, 11], "/B": [20, 21, 22], "/C": [30]}


def test_empty_rows_are_rows(stage, abc, write_sealed) -> None:
    write_sealed(abc, "a", 1, _rows(0, 2, 0), is_array=True)
    assert latest(stage, abc, "a", 1) == {"/A": [], "/B": [20, 21], "/C": []}


def test_per_row_rows_are_replaced_whole(stage, abc, write_sealed) -> None:
    write_sealed(abc, "a", 1, _rows(2, 3, 1), is_array=True)
    write_sealed(abc, "a", 2, _rows(4, 1, 2), is_array=True)
    assert latest(stage, abc, "a", 2) == {
        "/A": [10, 11, 12, 13],
        "/B": [20],
        "/C": [30, 31],
    }


def test_per_row_tensor_count_must_match_the_prims(stage, abc) -> None:
    op = stage.write_attribute(abc, "a", 1, _rows(1, 1), is_array=True)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT)
    stage.advance_write_floor(1).wait()
    assert latest(stage, abc, "a", 1) == {}


def test_per_row_rows_must_share_the_dtype(stage, abc) -> None:
    rows = [np.ones(1, np.int32), np.ones(2, np.int64), np.ones(1, np.int32)]
    op = stage.write_attribute(abc, "a", 1, rows, is_array=True)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT)
    stage.advance_write_floor(1).wait()
    assert latest(stage, abc, "a", 1) == {}


# ---------------------------------------------------------------- packed uniform rows


def test_packed_payload_splits_into_uniform_rows(stage, abc, write_sealed) -> None:
    write_sealed(abc, "a", 1, np.arange(6, dtype=F32), is_array=True)
    assert latest(stage, abc, "a", 1) == {"/A": [0.0, 1.0], "/B": [2.0, 3.0], "/C": [4.0, 5.0]}


def test_packed_lanes_one_matrix_is_scalars(stage, abc, write_sealed) -> None:
    # A (P, 3) lanes-1 tensor in an array write is 3P scalars: rows of 3 float elements.
    write_sealed(abc, "a", 1, np.arange(9, dtype=F32).reshape(3, 3), is_array=True)
    groups = read_groups(stage, abc, ["a"], OrdinalRange.latest(1))
    assert values_of(groups, "a") == {
        "/A": [0.0, 1.0, 2.0],
        "/B": [3.0, 4.0, 5.0],
        "/C": [6.0, 7.0, 8.0],
    }
    (group,) = groups
    assert set(group.dtypes.values()) == {(int(DLDataTypeCode.kDLFloat), 32, 1)}


def test_packed_multi_lane_elements_keep_their_lanes(stage, abc, write_sealed) -> None:
    float3 = ovstage.numpy_to_dldatatype(F32, 3)
    payload = ovstage.make_dltensor(np.arange(18, dtype=F32), dtype=float3, shape=(6,))
    write_sealed(abc, "pts", 1, payload, is_array=True)
    with stage.read_attributes(abc, ["pts"], OrdinalRange.latest(1)) as read:
        read.wait()
        (group,) = list(read.groups())
        with group:
            for row in range(3):
                tensor = group.tensor(row)
                assert tensor.dtype.lanes == 1  # typed layout: the lanes are an axis
                assert tensor.shape_tuple == (2, 3)  # two float3 elements per row
                assert np.from_dlpack(group.dlpack(row)).shape == (2, 3)
                assert group.array(row).reshape(-1).tolist() == list(range(6 * row, 6 * row + 6))


def test_packed_bytes_that_do_not_split_into_whole_rows_are_rejected(stage, abc) -> None:
    op = stage.write_attribute(abc, "a", 1, np.arange(7, dtype=F32), is_array=True)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "tensors")
    stage.advance_write_floor(1).wait()
    assert latest(stage, abc, "a", 1) == {}


def test_packed_rows_must_be_whole_elements(stage, abc) -> None:
    # Two float3 elements (24 bytes) over 3 prims: 8-byte rows are not whole 12-byte elements.
    float3 = ovstage.numpy_to_dldatatype(F32, 3)
    payload = ovstage.make_dltensor(np.zeros(6, F32), dtype=float3, shape=(2,))
    op = stage.write_attribute(abc, "a", 1, payload, is_array=True)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "tensors")
    stage.advance_write_floor(1).wait()
    assert latest(stage, abc, "a", 1) == {}


def test_packed_rows_with_an_index_map_count_max_entry_plus_one(stage, abc, write_sealed) -> None:
    # index_map [1, 0, 1] -> 2 rows; 4 values -> rows of 2.
    write_sealed(abc, "a", 1, np.arange(4, dtype=F32), is_array=True, index_map=[1, 0, 1])
    assert latest(stage, abc, "a", 1) == {"/A": [2.0, 3.0], "/B": [0.0, 1.0], "/C": [2.0, 3.0]}


def test_packed_rows_with_an_index_map_must_still_split_evenly(stage, abc) -> None:
    payload = np.arange(5, dtype=F32)
    op = stage.write_attribute(abc, "a", 1, payload, is_array=True, index_map=[1, 0, 1])
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "index_map")
    stage.advance_write_floor(1).wait()
    assert latest(stage, abc, "a", 1) == {}


# ---------------------------------------------------------------- sparse array writes


def test_per_row_index_map_gathers_and_broadcasts(stage, abc, write_sealed) -> None:
    write_sealed(abc, "a", 1, _rows(1, 2), is_array=True, index_map=[1, 1, 0])
    assert latest(stage, abc, "a", 1) == {"/A": [20, 21], "/B": [20, 21], "/C": [10]}


def test_per_row_index_map_entry_beyond_the_rows_is_rejected(stage, abc) -> None:
    op = stage.write_attribute(abc, "a", 1, _rows(1, 2), is_array=True, index_map=[0, 1, 2])
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "index_map")
    stage.advance_write_floor(1).wait()
    assert latest(stage, abc, "a", 1) == {}


def test_mask_and_count_on_array_writes_leave_other_rows(stage, abc, write_sealed) -> None:
    write_sealed(abc, "a", 1, _rows(1, 2, 3), is_array=True)
    write_sealed(abc, "a", 2, _rows(4, 4, 4), is_array=True, mask=[0b100], count=3)
    assert latest(stage, abc, "a", 2) == {"/A": [10], "/B": [20, 21], "/C": [30, 31, 32, 33]}
    write_sealed(abc, "a", 3, [np.array([7], np.int32)], is_array=True, count=1)
    assert latest(stage, abc, "a", 3) == {"/A": [7], "/B": [20, 21], "/C": [30, 31, 32, 33]}


# ---------------------------------------------------------------- is_array is never inferred


def test_is_array_must_be_a_bool(stage, abc) -> None:
    for flag in (1, 0, None, "yes", np.bool_(True)):
        with pytest.raises(TypeError, match="is_array"):
            stage.write_attribute(abc, "a", 1, np.zeros(3, F32), is_array=flag)
    with pytest.raises(TypeError):
        stage.write_attribute(abc, "a", 1, np.zeros(3, F32))  # keyword is required


def test_one_value_per_prim_with_is_array_false_is_fixed(stage, abc) -> None:
    same = np.array([1, 2, 3], np.int32)
    stage.write_attributes(abc, [WriteDesc("f", same, False), WriteDesc("g", same, True)], 1).wait()
    stage.advance_write_floor(1).wait()
    groups = read_groups(stage, abc, ["f", "g"], OrdinalRange.latest(1))
    assert values_of(groups, "f") == {"/A": 1, "/B": 2, "/C": 3}
    assert values_of(groups, "g") == {"/A": [1], "/B": [2], "/C": [3]}
    assert {g.attribute: g.is_array for g in groups} == {"f": False, "g": True}
    assert {g.attribute: g.tensor_count for g in groups} == {"f": 1, "g": 3}


@pytest.mark.parametrize(
    ("payload", "is_array"),
    [
        (np.array([1, 2, 3], np.int32), False),  # fixed onto an array column
        ([np.ones(2, np.int64)] * 3, True),  # other element dtype
        (np.ones((3, 2), np.int32), False),  # fixed int32x2
    ],
    ids=["fixed", "dtype", "fixed lanes"],
)
def test_a_different_schema_on_an_array_column_is_rejected(
    stage, abc, write_sealed, payload, is_array
) -> None:
    write_sealed(abc, "a", 1, _rows(1, 2, 3), is_array=True)
    op = stage.write_attribute(abc, "a", 2, payload, is_array=is_array)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "schema")
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "a", 2) == {"/A": [10], "/B": [20, 21], "/C": [30, 31, 32]}


def test_array_write_onto_a_fixed_column_is_rejected(stage, abc, write_sealed) -> None:
    write_sealed(abc, "f", 1, np.array([1, 2, 3], np.int32))
    op = stage.write_attribute(abc, "f", 2, np.array([4, 5, 6], np.int32), is_array=True)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "schema")
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "f", 2) == {"/A": 1, "/B": 2, "/C": 3}


def test_lanes_one_matrix_onto_a_float3_array_column_is_rejected(stage, abc, write_sealed) -> None:
    # The documented pitfall: (P, 3) lanes 1 is float[] , not float3[].
    float3 = ovstage.numpy_to_dldatatype(F32, 3)
    packed = ovstage.make_dltensor(np.arange(9, dtype=F32), dtype=float3, shape=(3,))
    write_sealed(abc, "pts", 1, packed, is_array=True)
    op = stage.write_attribute(abc, "pts", 2, np.zeros((3, 3), F32), is_array=True)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT)
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "pts", 2) == {
        "/A": [0.0, 1.0, 2.0],
        "/B": [3.0, 4.0, 5.0],
        "/C": [6.0, 7.0, 8.0],
    }


def test_schema_may_change_after_the_attribute_is_deleted(stage, abc, write_sealed) -> None:
    write_sealed(abc, "a", 1, _rows(1, 2, 3), is_array=True)
    stage.delete_attributes(abc, ["a"], 2).wait()
    stage.advance_write_floor(2).wait()
    write_sealed(abc, "a", 3, np.array([1.5, 2.5, 3.5], np.float64), is_array=False)
    groups = read_groups(stage, abc, ["a"], OrdinalRange.latest(3))
    assert values_of(groups, "a") == {"/A": 1.5, "/B": 2.5, "/C": 3.5}
    assert [g.is_array for g in groups] == [False]


def test_delete_on_one_prim_frees_the_schema_only_there(
    stage, abc, make_query, write_sealed
) -> None:
    write_sealed(abc, "a", 1, _rows(1, 2, 3), is_array=True)
    only_b = make_query(["/B"])
    stage.delete_attributes(only_b, ["a"], 2).wait()
    stage.advance_write_floor(2).wait()
    write_sealed(only_b, "a", 3, np.array([9.0], F32), is_array=False)
    op = stage.write_attribute(make_query(["/A"]), "a", 4, np.array([9.0], F32), is_array=False)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT)
    groups = read_groups(stage, abc, ["a"], OrdinalRange.latest(3))
    assert values_of(groups, "a") == {"/A": [10], "/B": 9.0, "/C": [30, 31, 32]}
    assert sorted((g.is_array, tuple(g.prims)) for g in groups) == [
        (False, ("/B",)),
        (True, ("/A", "/C")),
    ]


def test_same_name_with_different_schemas_reads_one_group_per_schema(
    stage, abc, make_query, write_sealed
) -> None:
    stage.write_attribute(make_query(["/A"]), "s", 1, np.array([1.0], F32), is_array=False).wait()
    stage.write_attribute(
        make_query(["/B"]), "s", 1, np.array([2], np.int64), is_array=False
    ).wait()
    stage.write_attribute(make_query(["/C"]), "s", 1, _rows(2), is_array=True).wait()
    stage.advance_write_floor(1).wait()
    groups = read_groups(stage, abc, ["s"], OrdinalRange.latest(1))
    assert len(groups) == 3
    assert values_of(groups, "s") == {"/A": 1.0, "/B": 2, "/C": [10, 11]}
    by_prim = {g.prims[0]: (g.is_array, next(iter(g.dtypes.values()))) for g in groups}
    assert by_prim == {
        "/A": (False, (int(DLDataTypeCode.kDLFloat), 32, 1)),
        "/B": (False, (int(DLDataTypeCode.kDLInt), 64, 1)),
        "/C": (True, (int(DLDataTypeCode.kDLInt), 32, 1)),
    }


# ---------------------------------------------------------------- reads over part of a column


def test_reordered_partial_query_finds_each_row(stage, abc, make_query, write_sealed) -> None:
    write_sealed(abc, "a", 1, _rows(2, 3, 1), is_array=True)
    subset = make_query(["/C", "/Missing", "/A"])
    groups = read_groups(stage, subset, ["a"], OrdinalRange.latest(1))
    assert values_of(groups, "a") == {"/C": [30], "/A": [10, 11]}
    assert sum(len(g.prims) for g in groups) == 2


def test_partial_array_groups_index_transported_tensors(
    stage, abc, make_query, write_sealed
) -> None:
    write_sealed(abc, "a", 1, _rows(2, 3, 1), is_array=True)
    with stage.read_attributes(make_query(["/C", "/A"]), ["a"], OrdinalRange.latest(1)) as read:
        read.wait()
        for group in read.groups():
            with group:
                for local in range(group.prim_count):
                    row = group.data_row_index(local) if group.has_data_index_map else local
                    assert 0 <= row < group.tensor_count


def test_array_range_read_returns_the_rows(stage, abc, make_query, write_sealed) -> None:
    write_sealed(abc, "a", 1, _rows(2, 3, 1), is_array=True)
    write_sealed(abc, "a", 2, [np.array([5, 5, 5, 5], np.int32)], is_array=True, count=1)
    groups = read_groups(stage, abc, ["a"], OrdinalRange.between(2, 2))
    assert values_of(groups, "a") == {"/A": [5, 5, 5, 5]}
    groups = read_groups(stage, make_query(["/B", "/C"]), ["a"], OrdinalRange.between(1, 1))
    assert values_of(groups, "a") == {"/B": [20, 21, 22], "/C": [30]}


def test_array_entries_in_a_batch(stage, abc) -> None:
    stage.write_attributes(
        abc,
        [
            WriteDesc("packed", np.arange(6, dtype=np.int16), True),
            WriteDesc("rows", _rows(3, 0, 1, dtype=np.uint8), True),
        ],
        1,
    ).wait()
    stage.advance_write_floor(1).wait()
    groups = read_groups(stage, abc, ["packed", "rows"], OrdinalRange.latest(1))
    assert values_of(groups, "packed") == {"/A": [0, 1], "/B": [2, 3], "/C": [4, 5]}
    assert values_of(groups, "rows") == {"/A": [10, 11, 12], "/B": [], "/C": [30]}
