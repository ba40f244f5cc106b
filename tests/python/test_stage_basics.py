"""Stage lifecycle, write -> seal -> read, dtypes and layouts.

Where our design deliberately differs from the reference (README, "Where we differ": latest
reads serve the newest *sealed* version), the test says so.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, OrdinalRange, OvstageError

ABC = ["/World/A", "/World/B", "/World/C"]
DESTROYED = "called after Stage was destroyed"


# ---------------------------------------------------------------- lifecycle


def test_stage_context_manager_destroys_and_destroy_is_idempotent() -> None:
    with ovstage.Stage("ctx") as stage:
        stage.advance_write_floor(1).wait()
    stage.destroy()
    stage.destroy()
    with pytest.raises(OvstageError) as info:
        stage.wait_op(1, 0)
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_library_version_matches_the_reference_compatibility_version() -> None:
    assert ovstage.library_version() == (0, 3, 0)
    assert ovstage.Stage.get_version() == (0, 3, 0)
    assert isinstance(ovstage.__version__, str)
    assert ovstage.__version__


def test_stage_name_must_be_a_str() -> None:
    with pytest.raises(TypeError):
        ovstage.Stage(b"name")  # type: ignore[arg-type]


def _destroyed_stage_with_handles() -> tuple[ovstage.Stage, int, int, int]:
    """A destroyed stage plus the raw ids of a (released) query, read and path list."""
    stage = ovstage.Stage("doomed")
    dictionary = ovstage.PathDictionary(stage)
    with (
        dictionary.create_path_list_from_strings(["/A"]) as plist,
        stage.query_from_path_list(plist) as query,
    ):
        stage.write_attribute(query, "t", 1, np.ones(1, np.float32), is_array=False).wait()
        stage.advance_write_floor(1).wait()
        with stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read:
            read_handle = read.handle
            for group in read.groups():
                group.release()
        query_handle, list_handle = query.handle, int(plist)
    stage.destroy()
    return stage, query_handle, read_handle, list_handle


_AFTER_DESTROY_CALLS = {
    "wait_op": lambda s, q, r, pl: s.wait_op(1, 0),
    "wait_op_raw": lambda s, q, r, pl: s.wait_op_raw(1, 0),
    "release_op": lambda s, q, r, pl: s.release_op(1),
    "query_from_path_list": lambda s, q, r, pl: s.query_from_path_list(pl),
    "write_attribute": lambda s, q, r, pl: s.write_attribute(
        q, "t", 2, np.ones(1, np.float32), is_array=False
    ),
    "fetch_read_next": lambda s, q, r, pl: s.fetch_read_next(r, 0),
    "path_dictionary": lambda s, q, r, pl: ovstage.PathDictionary(s),
    "advance_write_floor": lambda s, q, r, pl: s.advance_write_floor(2),
    "read_attributes": lambda s, q, r, pl: s.read_attributes(q, [1], OrdinalRange.latest(1)),
    "release_query": lambda s, q, r, pl: s.release_query(q),
    "release_read": lambda s, q, r, pl: s.release_read(r),
}


@pytest.mark.parametrize("name", list(_AFTER_DESTROY_CALLS))
def test_any_call_after_destroy_raises_invalid_handle(name: str) -> None:
    stage, query_handle, read_handle, list_handle = _destroyed_stage_with_handles()
    with pytest.raises(OvstageError) as info:
        _AFTER_DESTROY_CALLS[name](stage, query_handle, read_handle, list_handle)
    assert info.value.code == ErrorCode.INVALID_HANDLE
    assert DESTROYED in info.value.message


def test_path_dictionary_of_a_destroyed_stage_raises_ovx_error() -> None:
    stage = ovstage.Stage()
    dictionary = ovstage.PathDictionary(stage)
    stage.destroy()
    with pytest.raises(ovstage.OvxError) as info:
        dictionary.intern_token("t")
    assert info.value.code == ovstage.OVX_API_ERROR
    assert info.value.message == "PathDictionary backing Stage has been destroyed"


def test_waiting_an_operation_after_destroy_raises_invalid_handle() -> None:
    stage = ovstage.Stage()
    op = stage.advance_write_floor(1)
    stage.destroy()
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE
    assert DESTROYED in info.value.message


_GROUP_AFTER_DESTROY = textwrap.dedent(
    """
    import numpy as np
    import ovstage

    stage = ovstage.Stage()
    d = ovstage.PathDictionary(stage)
    with d.create_path_list_from_strings(["/A"]) as plist, stage.query_from_path_list(plist) as q:
        stage.write_attribute(q, "t", 1, np.ones(1, np.float32), is_array=False).wait()
        stage.advance_write_floor(1).wait()
        read = stage.read_attributes(q, ["t"], ovstage.OrdinalRange.latest(1))
        group = read.fetch_next()
        read.release().wait()
    stage.destroy()
    for name in ("attribute", "ordinal", "prim_count", "tensor_count"):
        try:
            value = getattr(group, name)
            print(name, "returned", value)
        except ovstage.OvstageError as exc:
            print(name, "raised", exc.code, exc.message)
    """
)


def test_read_group_accessors_after_destroy_raise_invalid_handle() -> None:
    # Run in a child process: a regression would read freed memory and could crash.
    result = subprocess.run(
        [sys.executable, "-c", _GROUP_AFTER_DESTROY], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4, result.stdout
    for line in lines:
        assert f" raised {int(ErrorCode.INVALID_HANDLE)} " in line, line
        assert DESTROYED in line, line


# ---------------------------------------------------------------- write -> seal -> read


def test_sealed_write_reads_back_as_one_group(stage, make_query, write_sealed) -> None:
    query = make_query(ABC)
    write_sealed(query, "temperature", 1, np.array([1, 2, 3], dtype=np.float32))
    with stage.read_attributes(query, ["temperature"], OrdinalRange.latest(1)) as read:
        read.wait()
        groups = list(read.groups())
        try:
            assert len(groups) == 1
            group = groups[0]
            from_dlpack = np.from_dlpack(group.dlpack(0))
            flat = group.array(0)
            assert from_dlpack.dtype == np.float32
            assert from_dlpack.tolist() == [1.0, 2.0, 3.0]
            assert flat.dtype == np.float32
            assert flat.tolist() == [1.0, 2.0, 3.0]
        finally:
            for group in groups:
                group.release()


def test_attribute_by_token_and_by_string_name_the_same_column(
    paths, make_query, write_sealed, read_values
) -> None:
    query = make_query(ABC)
    token = paths.intern_token("temperature")
    write_sealed(query, token, 1, np.array([1, 2, 3], dtype=np.float32))
    write_sealed(query, "temperature", 2, np.array([4, 5, 6], dtype=np.float32))
    assert read_values(query, token, 2) == {"/World/A": 4.0, "/World/B": 5.0, "/World/C": 6.0}
    assert read_values(query, "temperature", 2) == read_values(query, token, 2)


def test_dlpack_producer_can_be_written(stage, make_query, read_values) -> None:
    query = make_query(ABC)
    producer = ovstage.DLTensor.from_dlpack(np.array([7, 8, 9], dtype=np.float32))
    stage.write_attribute(query, "t", 1, producer, is_array=False).wait()
    stage.advance_write_floor(1).wait()
    assert read_values(query, "t", 1) == {"/World/A": 7.0, "/World/B": 8.0, "/World/C": 9.0}


def test_payload_is_copied_in_so_the_caller_may_reuse_its_buffer(
    stage, make_query, read_values
) -> None:
    query = make_query(ABC)
    source = np.array([1, 2, 3], dtype=np.int32)
    stage.write_attribute(query, "t", 1, source, is_array=False).wait()
    source[:] = [-1, -1, -1]
    stage.advance_write_floor(1).wait()
    assert read_values(query, "t", 1) == {"/World/A": 1, "/World/B": 2, "/World/C": 3}


# ---------------------------------------------------------------- seal-before-read (§1.10)


@pytest.mark.parametrize("end_ordinal", [1, 100, 2**64 - 1])
def test_read_of_unsealed_data_is_rejected_with_write_floor_violation(
    stage, make_query, end_ordinal
) -> None:
    query = make_query(ABC)
    stage.write_attribute(
        query, "t", 1, np.array([1, 2, 3], np.float32), is_array=False
    ).wait()  # floor is still 0: nothing is sealed
    read = stage.read_attributes(query, ["t"], OrdinalRange.latest(end_ordinal))
    assert read.op is not None
    assert not read.op.ok
    assert read.op.status == ErrorCode.WRITE_FLOOR_VIOLATION
    assert read.op.op_id == 0
    assert read.handle == 0
    assert read.op.error_message()
    with pytest.raises(OvstageError) as waited:
        read.wait()
    assert waited.value.code == ErrorCode.WRITE_FLOOR_VIOLATION
    with pytest.raises(OvstageError) as fetched:
        read.fetch_next()
    assert fetched.value.code == ErrorCode.WRITE_FLOOR_VIOLATION


def test_a_snapshot_before_an_unsealed_first_write_is_empty(stage, make_query, read_values) -> None:
    # Ours (README "Where we differ"): at 0 the attribute does not exist yet, and the change at
    # 1 is not sealed (the reference: OUT_OF_RANGE). Once 1 is sealed, the history window
    # still serves the state at 0.
    query = make_query(ABC)
    stage.write_attribute(query, "t", 1, np.array([1, 2, 3], np.float32), is_array=False).wait()
    assert read_values(query, "t", 0) == {}
    stage.advance_write_floor(1).wait()
    assert read_values(query, "t", 0) == {}


@pytest.mark.parity
def test_parity_a_snapshot_before_a_first_write_is_out_of_range(
    stage, make_query, read_values
) -> None:
    query = make_query(ABC)
    stage.write_attribute(query, "t", 1, np.array([1, 2, 3], np.float32), is_array=False).wait()
    for sealed in (False, True):
        if sealed:
            stage.advance_write_floor(1).wait()
        with pytest.raises(OvstageError) as info:
            read_values(query, "t", 0)
        assert info.value.code == ErrorCode.OUT_OF_RANGE


def test_same_read_succeeds_after_the_floor_is_advanced(stage, make_query, read_values) -> None:
    query = make_query(ABC)
    stage.write_attribute(query, "t", 1, np.array([1, 2, 3], np.float32), is_array=False).wait()
    with pytest.raises(OvstageError) as info:
        read_values(query, "t", 1)
    assert info.value.code == ErrorCode.WRITE_FLOOR_VIOLATION
    stage.advance_write_floor(1).wait()
    assert read_values(query, "t", 1) == {"/World/A": 1.0, "/World/B": 2.0, "/World/C": 3.0}


def test_latest_read_serves_the_sealed_value_while_a_newer_change_is_unsealed(
    stage, make_query, write_sealed, read_values
) -> None:
    # README "Where we differ": the reference fails latest(1) with OUT_OF_RANGE (a later
    # change exists); we still hold the sealed state at 1 and serve it. latest(2) selects the
    # unsealed change: WRITE_FLOOR_VIOLATION in both.
    query = make_query(ABC)
    write_sealed(query, "t", 1, np.array([1, 2, 3], np.float32))
    stage.write_attribute(query, "t", 2, np.array([4, 5, 6], np.float32), is_array=False).wait()
    assert read_values(query, "t", 1) == {"/World/A": 1.0, "/World/B": 2.0, "/World/C": 3.0}
    with pytest.raises(OvstageError) as info:
        read_values(query, "t", 2)
    assert info.value.code == ErrorCode.WRITE_FLOOR_VIOLATION
    stage.advance_write_floor(2).wait()
    assert read_values(query, "t", 2) == {"/World/A": 4.0, "/World/B": 5.0, "/World/C": 6.0}


def test_unsealed_key_outside_the_query_does_not_veto_a_read(
    stage, make_query, write_sealed, read_values
) -> None:
    sealed = make_query(["/World/A"])
    unsealed = make_query(["/World/B"])
    write_sealed(sealed, "t", 1, np.array([1], np.int32))
    stage.write_attribute(unsealed, "t", 2, np.array([2], np.int32), is_array=False).wait()
    assert read_values(sealed, "t", 2) == {"/World/A": 1}


def test_read_of_an_attribute_no_queried_prim_carries_yields_no_groups(
    stage, make_query, write_sealed
) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, np.array([1, 2, 3], np.float32))
    with stage.read_attributes(query, ["absent"], OrdinalRange.latest(1)) as read:
        read.wait()
        assert read.fetch_next() is None


def test_fetch_after_the_last_group_keeps_returning_none(stage, make_query, write_sealed) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, np.array([1, 2, 3], np.float32))
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read:
        for group in read.groups():
            group.release()
        assert read.fetch_next() is None
        assert read.fetch_next(0) is None


# ---------------------------------------------------------------- dtypes, lanes, layouts

_ALL_DTYPES = [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
]


def _extreme_values(dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return np.array([True, False, True], dtype=dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([info.min, info.max, 1], dtype=dtype)
    info = np.finfo(dtype)
    return np.array([info.max, -0.0, info.smallest_subnormal], dtype=dtype)


@pytest.mark.parametrize("dtype", [np.dtype(d) for d in _ALL_DTYPES], ids=str)
def test_every_numeric_dtype_round_trips_exactly(
    stage, make_query, write_sealed, dtype: np.dtype
) -> None:
    query = make_query(ABC)
    values = _extreme_values(dtype)
    write_sealed(query, "v", 1, values)
    with stage.read_attributes(query, ["v"], OrdinalRange.latest(1)) as read:
        for group in read.groups():
            with group:
                from_dlpack = np.from_dlpack(group.dlpack(0))
                flat = group.array(0)
                assert from_dlpack.dtype == dtype
                assert flat.dtype == dtype
                assert from_dlpack.tobytes() == values.tobytes()
                assert flat.tobytes() == values.tobytes()


def test_255_lanes_are_accepted_and_read_back(stage, make_query, write_sealed) -> None:
    query = make_query(["/A", "/B"])
    values = np.arange(2 * 255, dtype=np.uint16).reshape(2, 255)
    write_sealed(query, "wide", 1, values)
    with stage.read_attributes(query, ["wide"], OrdinalRange.latest(1)) as read:
        for group in read.groups():
            with group:
                assert group.tensor(0).dtype.lanes == 1
                assert group.tensor(0).shape_tuple == (2, 255)  # the tuple as an axis
                assert np.array_equal(np.from_dlpack(group.dlpack(0)), values)


def test_256_lanes_are_not_supported(stage, make_query) -> None:
    query = make_query(["/A", "/B"])
    op = stage.write_attribute(query, "wide", 1, np.zeros((2, 256), np.uint8), is_array=False)
    assert not op.ok
    assert op.status == ErrorCode.NOT_SUPPORTED
    assert op.op_id == 0


@pytest.mark.parametrize(
    ("shape", "dtype", "lanes"),
    [((3, 3), np.float32, 3), ((3, 4, 4), np.float64, 16)],
    ids=["float3", "matrix4d"],
)
def test_trailing_dims_fold_into_lanes(
    stage, make_query, write_sealed, shape, dtype, lanes
) -> None:
    # Stored lanes wide; read back typed (semantic NONE: a 16-wide tuple, not a matrix).
    query = make_query(ABC)
    values = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    write_sealed(query, "tuple", 1, values)
    with stage.read_attributes(query, ["tuple"], OrdinalRange.latest(1)) as read:
        for group in read.groups():
            with group:
                raw = group.tensor(0)
                assert raw.ndim == 2
                assert raw.shape_tuple == (3, lanes)
                assert raw.dtype.lanes == 1
                exported = np.from_dlpack(group.dlpack(0))
                assert exported.shape == (3, lanes)
                assert np.array_equal(exported, values.reshape(3, lanes))
                assert group.array(0).shape == (3, lanes)


def test_flat_tensor_is_not_reinterpreted_as_rows_of_lanes(stage, make_query) -> None:
    query = make_query(ABC)
    op = stage.write_attribute(query, "tuple", 1, np.zeros(9, np.float32), is_array=False)
    assert not op.ok
    assert op.status == ErrorCode.INVALID_ARGUMENT
    assert op.op_id == 0


@pytest.mark.parametrize("rows", [2, 4])
def test_row_count_not_matching_the_query_is_invalid_argument(stage, make_query, rows) -> None:
    query = make_query(ABC)
    op = stage.write_attribute(query, "t", 1, np.zeros(rows, np.float32), is_array=False)
    assert not op.ok
    assert op.status == ErrorCode.INVALID_ARGUMENT
    assert op.op_id == 0
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.INVALID_ARGUMENT


def test_rejected_write_leaves_the_stage_unchanged(
    stage, make_query, write_sealed, read_values
) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, np.array([1, 2, 3], np.float32))
    assert not stage.write_attribute(query, "t", 2, np.zeros(2, np.float32), is_array=False).ok
    stage.advance_write_floor(2).wait()
    assert read_values(query, "t", 2) == {"/World/A": 1.0, "/World/B": 2.0, "/World/C": 3.0}
