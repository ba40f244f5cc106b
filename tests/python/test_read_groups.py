"""Read groups: accessors, index maps, release rules and view lifetimes.

Views (``array()``, ``np.from_dlpack(dlpack())``) hold their own buffer reference in our design:
they keep their values after ``release_group``, after the stage is destroyed, and after later
writes to the column (copy-on-write; README, "Where we differ").
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, OrdinalRange, OvstageError

ABC = ["/A", "/B", "/C"]


@pytest.fixture
def abc(make_query, write_sealed) -> ovstage.Query:
    """A query over /A, /B, /C whose "t" column holds float32 [1, 2, 3], sealed at 1."""
    query = make_query(ABC)
    write_sealed(query, "t", 1, np.array([1, 2, 3], np.float32))
    return query


@pytest.fixture
def group(stage, abc) -> Iterator[ovstage.ReadGroup]:
    """The single group of a latest(1) read of "t" over /A, /B, /C (released afterwards)."""
    with stage.read_attributes(abc, ["t"], OrdinalRange.latest(1)) as read:
        group = read.fetch_next()
        assert group is not None
        assert read.fetch_next() is None
        with group:
            yield group


# ---------------------------------------------------------------- accessors


def test_group_fields_of_a_dense_fixed_column(group, paths) -> None:
    assert group.attribute == paths.intern_token("t")
    assert group.ordinal == 1
    assert group.is_array is False
    assert group.is_delete is False
    assert group.tensor_count == 1
    assert group.meta.attribute_write_floor_ordinal == 1


def test_dense_group_maps_local_prims_to_the_query_order(group, paths) -> None:
    assert group.prim_count == 3
    assert group.has_prim_index_map is False
    assert [group.prim_index(k) for k in range(3)] == [0, 1, 2]
    assert paths.get_path_strings(group.prim_list) == ABC
    assert group.has_data_index_map is False
    assert np.from_dlpack(group.dlpack(0)).tolist() == [1.0, 2.0, 3.0]


def test_raw_tensor_is_canonical_and_on_the_cpu(group) -> None:
    tensor = group.tensor(0)
    assert tensor.ndim == 1
    assert tensor.shape_tuple == (3,)
    assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (
        ovstage.DLDataTypeCode.kDLFloat,
        32,
        1,
    )
    assert tensor.device.device_type == ovstage.DLDeviceType.kDLCPU
    assert group.dlpack(0).__dlpack_device__() == (ovstage.DLDeviceType.kDLCPU, 0)


@pytest.mark.parametrize("local", [-1, 3])
def test_prim_index_out_of_range_raises_index_error(group, local) -> None:
    with pytest.raises(IndexError):
        group.prim_index(local)


def test_data_row_index_without_a_data_map_is_the_local_index(group) -> None:
    assert group.data_count == 0 and not group.has_data_index_map
    assert [group.data_row_index(k) for k in range(group.prim_count)] == list(
        range(group.prim_count)
    )


@pytest.mark.parametrize("accessor", ["tensor", "array", "dlpack"])
@pytest.mark.parametrize("index", [-1, 1])
def test_tensor_index_out_of_range_raises_index_error(group, accessor, index) -> None:
    with pytest.raises(IndexError):
        getattr(group, accessor)(index)


def test_reordered_partial_query_resolves_each_prim_through_the_index_maps(
    stage, abc, make_query, paths
) -> None:
    subset = make_query(["/C", "/A"])
    expected = {"/C": 3.0, "/A": 1.0}
    with stage.read_attributes(subset, ["t"], OrdinalRange.latest(1)) as read:
        read.wait()
        resolved: dict[str, float] = {}
        for group in read.groups():
            with group:
                list_paths = paths.get_path_strings(group.prim_list)
                data = group.array(0)
                if group.has_data_index_map:
                    assert group.data_count == group.prim_count
                else:
                    assert group.data_count == 0
                    assert len(data) == group.prim_count
                for local in range(group.prim_count):
                    list_index = group.prim_index(local)
                    if group.has_prim_index_map:
                        assert list_index == group.raw.prims.index_map[local]
                    else:
                        assert list_index == group.prim_offset + local
                    row = group.data_row_index(local) if group.has_data_index_map else local
                    assert 0 <= row < len(data)
                    resolved[list_paths[list_index]] = float(data[row])
                with pytest.raises(IndexError):
                    group.prim_index(group.prim_count)
    assert resolved == expected


def test_prims_without_the_attribute_contribute_no_row(stage, abc, make_query, paths) -> None:
    mixed = make_query(["/Absent", "/B"])
    with stage.read_attributes(mixed, ["t"], OrdinalRange.latest(1)) as read:
        groups = list(read.groups())
        try:
            assert sum(group.prim_count for group in groups) == 1
            (group,) = groups
            list_paths = paths.get_path_strings(group.prim_list)
            assert list_paths[group.prim_index(0)] == "/B"
            row = group.data_row_index(0) if group.has_data_index_map else 0
            assert group.array(0)[row] == 2.0
        finally:
            for group in groups:
                group.release()


# ---------------------------------------------------------------- release rules


def _fetch_one(read: ovstage.Read) -> ovstage.ReadGroup:
    group = read.fetch_next()
    assert group is not None
    return group


def test_double_release_group_raises_invalid_handle(stage, abc) -> None:
    with stage.read_attributes(abc, ["t"], OrdinalRange.latest(1)) as read:
        group = _fetch_one(read)
        stage.release_group(group)
        assert group.released
        with pytest.raises(OvstageError) as info:
            stage.release_group(group)
        assert info.value.code == ErrorCode.INVALID_HANDLE
        with pytest.raises(OvstageError) as again:
            group.release()
        assert again.value.code == ErrorCode.INVALID_HANDLE


@pytest.mark.parametrize(
    "accessor",
    [
        lambda g: g.attribute,
        lambda g: g.ordinal,
        lambda g: g.is_array,
        lambda g: g.is_delete,
        lambda g: g.tensor_count,
        lambda g: g.prim_count,
        lambda g: g.prim_list,
        lambda g: g.meta,
        lambda g: g.prim_index(0),
        lambda g: g.tensor(0),
        lambda g: g.array(0),
        lambda g: g.dlpack(0),
    ],
    ids=[
        "attribute",
        "ordinal",
        "is_array",
        "is_delete",
        "tensor_count",
        "prim_count",
        "prim_list",
        "meta",
        "prim_index",
        "tensor",
        "array",
        "dlpack",
    ],
)
def test_accessors_on_a_released_group_raise_invalid_handle(stage, abc, accessor) -> None:
    with stage.read_attributes(abc, ["t"], OrdinalRange.latest(1)) as read:
        group = _fetch_one(read)
        group.release()
        with pytest.raises(OvstageError) as info:
            accessor(group)
        assert info.value.code == ErrorCode.INVALID_HANDLE


def test_leaving_a_group_with_block_releases_it(stage, abc) -> None:
    with stage.read_attributes(abc, ["t"], OrdinalRange.latest(1)) as read:
        with _fetch_one(read) as group:
            assert not group.released
        assert group.released


def test_released_read_cannot_be_fetched(stage, abc) -> None:
    read = stage.read_attributes(abc, ["t"], OrdinalRange.latest(1))
    read.wait()
    read.release().wait()
    assert read.released
    with pytest.raises(OvstageError) as info:
        read.fetch_next()
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_group_outlives_the_release_of_its_read(stage, abc) -> None:
    read = stage.read_attributes(abc, ["t"], OrdinalRange.latest(1))
    group = _fetch_one(read)
    read.release().wait()
    with group:
        assert group.array(0).tolist() == [1.0, 2.0, 3.0]


# ---------------------------------------------------------------- view lifetimes


def test_views_keep_their_values_after_release_group(stage, abc) -> None:
    with (
        stage.read_attributes(abc, ["t"], OrdinalRange.latest(1)) as read,
        _fetch_one(read) as group,
    ):
        from_dlpack = np.from_dlpack(group.dlpack(0))
        flat = group.array(0)
    assert from_dlpack.tolist() == [1.0, 2.0, 3.0]
    assert flat.tolist() == [1.0, 2.0, 3.0]


def test_views_keep_their_values_after_the_stage_is_destroyed() -> None:
    with ovstage.Stage("short-lived") as stage:
        dictionary = ovstage.PathDictionary(stage)
        with (
            dictionary.create_path_list_from_strings(ABC) as plist,
            stage.query_from_path_list(plist) as query,
        ):
            values = np.array([1, 2, 3], np.float32)
            stage.write_attribute(query, "t", 1, values, is_array=False).wait()
            stage.advance_write_floor(1).wait()
            with (
                stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read,
                _fetch_one(read) as group,
            ):
                from_dlpack = np.from_dlpack(group.dlpack(0))
                flat = group.array(0)
                exporter = group.dlpack(0)
    assert from_dlpack.tolist() == [1.0, 2.0, 3.0]
    assert flat.tolist() == [1.0, 2.0, 3.0]
    assert np.from_dlpack(exporter).tolist() == [1.0, 2.0, 3.0]


def test_views_keep_their_values_after_a_later_write_to_the_column(
    stage, abc, write_sealed, read_values
) -> None:
    with (
        stage.read_attributes(abc, ["t"], OrdinalRange.latest(1)) as read,
        _fetch_one(read) as group,
    ):
        from_dlpack = np.from_dlpack(group.dlpack(0))
        flat = group.array(0)
    write_sealed(abc, "t", 2, np.array([4, 5, 6], np.float32))
    assert read_values(abc, "t", 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}
    assert from_dlpack.tolist() == [1.0, 2.0, 3.0]
    assert flat.tolist() == [1.0, 2.0, 3.0]


def test_live_group_keeps_its_snapshot_while_the_column_is_rewritten(
    stage, abc, write_sealed, read_values
) -> None:
    # Ours (README, "Where we differ"): overlapping reads/writes never fail with OP_FAILED (the
    # reference rejects a write that overlaps a live read group); the live group keeps its version.
    with (
        stage.read_attributes(abc, ["t"], OrdinalRange.latest(1)) as read,
        _fetch_one(read) as group,
    ):
        write_sealed(abc, "t", 2, np.array([4, 5, 6], np.float32))
        assert group.array(0).tolist() == [1.0, 2.0, 3.0]
        assert np.from_dlpack(group.dlpack(0)).tolist() == [1.0, 2.0, 3.0]
    assert read_values(abc, "t", 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}


# ---------------------------------------------------------------- read-only exports


def test_array_view_is_read_only_and_cannot_be_made_writeable(group) -> None:
    flat = group.array(0)
    assert not flat.flags.writeable
    with pytest.raises(ValueError):
        flat.flags.writeable = True
    with pytest.raises(ValueError):
        flat[0] = 42.0


def test_dlpack_view_is_read_only_by_default(group) -> None:
    view = np.from_dlpack(group.dlpack(0))
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view.flags.writeable = True
