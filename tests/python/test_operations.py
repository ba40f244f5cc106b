"""Writes, floors, Operation and wait_op."""

from __future__ import annotations

from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import TIMEOUT_INFINITE, ErrorCode, OvstageError, PrimMode

ABC = ["/A", "/B", "/C"]
ABCD = ["/A", "/B", "/C", "/D"]


def _assert_rejected(op: ovstage.Operation, code: ErrorCode) -> None:
    """A rejected enqueue: status set, op id 0, and wait() raises that code."""
    assert not op.ok
    assert op.status == code
    assert op.op_id == 0
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == code


# ---------------------------------------------------------------- floor admission (§1.8)


def test_ordinal_zero_is_rejected_on_a_fresh_stage(stage, make_query) -> None:
    query = make_query(ABC)
    op = stage.write_attribute(query, "t", 0, np.zeros(3, np.float32), is_array=False)
    _assert_rejected(op, ErrorCode.WRITE_FLOOR_VIOLATION)


def test_ordinal_one_is_accepted_on_a_fresh_stage(stage, make_query) -> None:
    query = make_query(ABC)
    op = stage.write_attribute(query, "t", 1, np.zeros(3, np.float32), is_array=False)
    assert op.ok
    assert op.status == ErrorCode.OK
    assert op.op_id != 0
    op.wait()


@pytest.mark.parametrize("ordinal", [4, 5])
def test_write_at_or_below_the_floor_is_rejected(stage, make_query, ordinal) -> None:
    query = make_query(ABC)
    stage.advance_write_floor(5).wait()
    op = stage.write_attribute(query, "t", ordinal, np.zeros(3, np.float32), is_array=False)
    _assert_rejected(op, ErrorCode.WRITE_FLOOR_VIOLATION)
    assert "floor" in op.error_message()


def test_write_just_above_the_floor_is_accepted(stage, make_query) -> None:
    query = make_query(ABC)
    stage.advance_write_floor(5).wait()
    stage.write_attribute(query, "t", 6, np.zeros(3, np.float32), is_array=False).wait()


def test_floor_of_a_known_attribute_rejects_rewrites_of_sealed_ordinals(
    stage, make_query, write_sealed
) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 3, np.zeros(3, np.float32))
    op = stage.write_attribute(query, "t", 3, np.ones(3, np.float32), is_array=False)
    _assert_rejected(op, ErrorCode.WRITE_FLOOR_VIOLATION)


def test_floor_advance_is_monotonic_and_never_fails(stage, make_query) -> None:
    query = make_query(ABC)
    stage.advance_write_floor(5).wait()
    lower = stage.advance_write_floor(3)
    assert lower.ok
    lower.wait()
    op = stage.write_attribute(query, "t", 4, np.zeros(3, np.float32), is_array=False)
    _assert_rejected(op, ErrorCode.WRITE_FLOOR_VIOLATION)
    stage.write_attribute(query, "t", 6, np.zeros(3, np.float32), is_array=False).wait()


# ---------------------------------------------------------------- argument guards (§5.3)

_GUARD_CASES: dict[str, tuple[dict[str, Any], type[Exception], str]] = {
    "float ordinal": ({"ordinal": 5.0}, TypeError, "ordinal"),
    "negative ordinal": ({"ordinal": -1}, ValueError, "ordinal"),
    "ordinal 2**64": ({"ordinal": 2**64}, ValueError, "ordinal"),
    "int is_array": ({"is_array": 1}, TypeError, "is_array"),
    "count 2**32": ({"count": 2**32}, ValueError, "count"),
    "count 0": ({"count": 0}, ValueError, "count"),
    "negative count": ({"count": -1}, ValueError, "count"),
    "count above 64*len(mask)": ({"mask": [1], "count": 65}, ValueError, "mask"),
    "count above len(index_map)": ({"index_map": [0], "count": 3}, ValueError, "index_map"),
    "negative index_map entry": ({"index_map": [-1, 0, 0]}, ValueError, "index_map"),
    "index_map entry 2**32": ({"index_map": [2**32, 0, 0]}, ValueError, "index_map"),
    "empty tensors": ({"tensors": []}, ValueError, "tensors"),
    "float attribute": ({"attribute": 1.0}, TypeError, "attribute"),
    "bytes attribute": ({"attribute": b"t"}, TypeError, "attribute"),
    "undeclared prim_mode": ({"prim_mode": 7}, ValueError, "prim_mode"),
    "semantic beyond int32": ({"semantic": 2**31}, ValueError, "semantic"),
}


@pytest.mark.parametrize(("overrides", "error", "names"), _GUARD_CASES.values(), ids=_GUARD_CASES)
def test_write_argument_guards_raise_before_any_native_call(
    stage, make_query, monkeypatch, overrides, error, names
) -> None:
    query = make_query(ABC)
    arguments: dict[str, Any] = {
        "query": query,
        "attribute": "t",
        "ordinal": 1,
        "tensors": np.zeros(3, np.float32),
        "is_array": False,
    }
    arguments.update(overrides)

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a native call was made before the argument guard")

    with monkeypatch.context() as patch:
        patch.setattr(ovstage._stage, "call", forbidden)
        with pytest.raises(error) as info:
            stage.write_attribute(**arguments)
    assert names in str(info.value)


# The rules of sparse addressing are the engine's (one place for C and Python): the call reaches
# it, which refuses the request before anything is queued, and the package raises ValueError.
_SPARSE_RULE_CASES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "index_map with mask": (
        {"index_map": [0, 1, 2], "mask": [7], "count": 3},
        ("index_map and mask are mutually exclusive",),
    ),
    "mask without count": ({"mask": [7]}, ("count", "mask")),
    "empty index_map": ({"index_map": []}, ("count", "index_map")),
}


@pytest.mark.parametrize(
    ("overrides", "names"), _SPARSE_RULE_CASES.values(), ids=_SPARSE_RULE_CASES
)
def test_sparse_write_rules_raise_value_error_with_nothing_queued(
    stage, make_query, overrides, names
) -> None:
    query = make_query(ABC)
    before = stage._diagnostics()
    with pytest.raises(ValueError) as info:
        stage.write_attribute(query, "t", 1, np.zeros(3, np.float32), is_array=False, **overrides)
    for name in names:
        assert name in str(info.value)
    assert stage._diagnostics() == before, "nothing was queued"
    batch = [ovstage.WriteDesc("t", np.zeros(3, np.float32), False, **overrides)]
    with pytest.raises(ValueError, match=r"^writes\[0\]: "):
        stage.write_attributes(query, batch, 1)
    assert stage._diagnostics() == before, "nothing was queued"


@pytest.mark.parametrize(
    "ordinal",
    [np.int64(1), np.uint64(1), np.array(1), True],
    ids=["int64", "uint64", "0-d", "bool"],
)
def test_integer_like_ordinals_are_accepted(stage, make_query, ordinal) -> None:
    query = make_query(ABC)
    stage.write_attribute(query, "t", ordinal, np.zeros(3, np.float32), is_array=False).wait()


def test_numpy_integer_token_is_accepted_as_attribute(
    stage, paths, make_query, read_values
) -> None:
    query = make_query(ABC)
    token = np.uint64(paths.intern_token("t"))
    stage.write_attribute(query, token, 1, np.arange(3, dtype=np.int32), is_array=False).wait()
    stage.advance_write_floor(1).wait()
    assert read_values(query, "t", 1) == {"/A": 0, "/B": 1, "/C": 2}


def test_attribute_name_with_nul_is_rejected(stage, make_query) -> None:
    query = make_query(ABC)
    op = stage.write_attribute(query, "t\x00u", 1, np.zeros(3, np.float32), is_array=False)
    assert not op.ok
    assert op.op_id == 0


# ---------------------------------------------------------------- sparse writes (§3.8)


@pytest.fixture
def abcd(make_query, write_sealed) -> ovstage.Query:
    """A query over /A../D whose "v" column holds [10, 20, 30, 40], sealed at ordinal 1."""
    query = make_query(ABCD)
    write_sealed(query, "v", 1, np.array([10, 20, 30, 40], np.int32))
    return query


def test_index_map_gathers_source_rows(abcd, write_sealed, read_values) -> None:
    payload = np.array([111, 222, 333], np.int32)
    write_sealed(abcd, "v", 2, payload, index_map=[1, 2, 0])
    assert read_values(abcd, "v", 2) == {"/A": 222, "/B": 333, "/C": 111, "/D": 40}


def test_index_map_broadcasts_one_row(abcd, write_sealed, read_values) -> None:
    write_sealed(abcd, "v", 2, np.array([7], np.int32), index_map=[0, 0])
    assert read_values(abcd, "v", 2) == {"/A": 7, "/B": 7, "/C": 30, "/D": 40}


def test_index_map_entry_beyond_the_payload_rows_is_invalid_argument(stage, abcd) -> None:
    payload = np.array([111, 222, 333], np.int32)
    op = stage.write_attribute(abcd, "v", 2, payload, is_array=False, index_map=[0, 1, 3])
    assert "index_map" in op.error_message()
    _assert_rejected(op, ErrorCode.INVALID_ARGUMENT)


def test_mask_writes_only_selected_elements(abcd, write_sealed, read_values) -> None:
    payload = np.array([1, 2, 3, 4], np.int32)
    write_sealed(abcd, "v", 2, payload, mask=[0b1000], count=4)
    assert read_values(abcd, "v", 2) == {"/A": 10, "/B": 20, "/C": 30, "/D": 4}


def test_count_writes_the_leading_prims(abcd, write_sealed, read_values) -> None:
    write_sealed(abcd, "v", 2, np.array([-1, -2], np.int32), count=2)
    assert read_values(abcd, "v", 2) == {"/A": -1, "/B": -2, "/C": 30, "/D": 40}


def test_count_above_the_query_prims_is_invalid_argument(stage, abcd) -> None:
    op = stage.write_attribute(abcd, "v", 2, np.zeros(5, np.int32), is_array=False, count=5)
    _assert_rejected(op, ErrorCode.INVALID_ARGUMENT)


# ---------------------------------------------------------------- prim modes, built-ins


def test_insert_onto_an_existing_prim_is_rejected_and_writes_nothing(
    stage, make_query, write_sealed, read_values
) -> None:
    existing = make_query(["/A"])
    write_sealed(existing, "v", 1, np.array([1], np.int32))
    mixed = make_query(["/New", "/A"])
    op = stage.write_attribute(
        mixed, "v", 2, np.array([5, 6], np.int32), is_array=False, prim_mode=PrimMode.INSERT
    )
    _assert_rejected(op, ErrorCode.PRIM_NOT_FOUND)
    stage.advance_write_floor(2).wait()
    assert read_values(mixed, "v", 2) == {"/A": 1}


def test_insert_onto_new_prims_creates_them(stage, make_query, read_values) -> None:
    query = make_query(["/New1", "/New2"])
    stage.write_attribute(
        query, "v", 1, np.array([5, 6], np.int32), is_array=False, prim_mode=PrimMode.INSERT
    ).wait()
    stage.advance_write_floor(1).wait()
    assert read_values(query, "v", 1) == {"/New1": 5, "/New2": 6}


def test_upsert_updates_existing_prims(stage, make_query, write_sealed, read_values) -> None:
    query = make_query(["/A"])
    write_sealed(query, "v", 1, np.array([1], np.int32))
    write_sealed(query, "v", 2, np.array([2], np.int32), prim_mode=PrimMode.UPSERT)
    assert read_values(query, "v", 2) == {"/A": 2}


@pytest.mark.parametrize("name", ["usd-path", "usd-parent", "usd-children", "usd-active"])
def test_writing_a_derived_built_in_is_not_supported(stage, make_query, name) -> None:
    query = make_query(ABC)
    op = stage.write_attribute(query, name, 1, np.zeros(3, np.uint64), is_array=False)
    _assert_rejected(op, ErrorCode.NOT_SUPPORTED)


# ---------------------------------------------------------------- handles across stages


def test_query_from_another_stage_is_an_invalid_handle(stage, make_query) -> None:
    query = make_query(ABC)
    with ovstage.Stage("other") as other:
        dictionary = ovstage.PathDictionary(other)
        with (
            dictionary.create_path_list_from_strings(ABC) as plist,
            other.query_from_path_list(plist) as own_query,
        ):
            foreign = other.write_attribute(query, "t", 1, np.zeros(3), is_array=False)
            _assert_rejected(foreign, ErrorCode.INVALID_HANDLE)
            other.write_attribute(own_query, "t", 1, np.zeros(3), is_array=False).wait()


def test_released_query_handle_in_a_write_is_rejected_invalid_handle(stage, make_query) -> None:
    query = make_query(ABC)
    query.release().wait()
    op = stage.write_attribute(query.handle, "t", 1, np.zeros(3, np.float32), is_array=False)
    _assert_rejected(op, ErrorCode.INVALID_HANDLE)


def test_released_query_wrapper_raises_invalid_handle(stage, make_query) -> None:
    query = make_query(ABC)
    query.release().wait()
    assert query.released
    with pytest.raises(OvstageError) as info:
        stage.write_attribute(query, "t", 1, np.zeros(3, np.float32), is_array=False)
    assert info.value.code == ErrorCode.INVALID_HANDLE
    with pytest.raises(OvstageError) as again:
        query.release()
    assert again.value.code == ErrorCode.INVALID_HANDLE


def test_released_query_handle_in_a_read_is_rejected_invalid_handle(stage, make_query) -> None:
    query = make_query(ABC)
    query.release().wait()
    read = stage.read_attributes(query.handle, ["t"], ovstage.OrdinalRange.latest(1))
    assert read.op is not None
    assert read.op.status == ErrorCode.INVALID_HANDLE
    with pytest.raises(OvstageError) as info:
        read.wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE


# ---------------------------------------------------------------- ordering (§2.3)


def test_pipelined_writes_at_increasing_ordinals_end_with_the_highest(
    stage, make_query, read_values
) -> None:
    query = make_query(ABC)
    ops = [
        stage.write_attribute(query, "t", o, np.full(3, o, np.int64), is_array=False)
        for o in range(1, 33)
    ]
    assert all(op.ok for op in ops)
    stage.advance_write_floor(32).wait()
    assert read_values(query, "t", 32) == {"/A": 32, "/B": 32, "/C": 32}
    for op in ops:
        op.wait()


def test_pipelined_writes_at_decreasing_ordinals_keep_the_highest(
    stage, make_query, read_values
) -> None:
    # The 0.3.0 default policy (NONDECREASING) refuses each write below the one submitted
    # before it, whichever runs first: the highest stays, the others fail when they run.
    query = make_query(ABC)
    ops = [
        stage.write_attribute(query, "t", o, np.full(3, o, np.int64), is_array=False)
        for o in range(32, 0, -1)
    ]
    stage.advance_write_floor(32).wait()
    assert read_values(query, "t", 32) == {"/A": 32, "/B": 32, "/C": 32}
    ops[0].wait()
    for op in ops[1:]:
        with pytest.raises(OvstageError) as exc:
            op.wait()
        assert exc.value.code == ErrorCode.OP_FAILED
        assert "write_attribute: ordinal conflict" in exc.value.message


def test_same_ordinal_writes_apply_in_submission_order(stage, make_query, read_values) -> None:
    query = make_query(ABC)
    ops = [
        stage.write_attribute(query, "t", 1, np.full(3, i, np.int64), is_array=False)
        for i in range(32)
    ]
    stage.advance_write_floor(1).wait()
    assert read_values(query, "t", 1) == {"/A": 31, "/B": 31, "/C": 31}
    for op in ops:
        op.wait()


# ---------------------------------------------------------------- Operation (§5.4)


def test_op_ids_increase_and_are_never_zero(stage, make_query) -> None:
    query = make_query(ABC)
    ops = [
        stage.write_attribute(query, "t", o, np.zeros(3, np.float32), is_array=False)
        for o in (1, 2, 3)
    ]
    ids = [op.op_id for op in ops]
    assert 0 not in ids
    assert ids == sorted(ids)
    assert len(set(ids)) == 3
    for op in ops:
        op.wait()


def test_wait_zero_on_a_completed_op_succeeds(stage) -> None:
    op = stage.advance_write_floor(1)
    code, _, _ = stage.wait_op(op.op_id, TIMEOUT_INFINITE)
    assert code == ErrorCode.OK
    op.wait(0)


def test_operation_waited_twice_raises_invalid_handle(stage) -> None:
    op = stage.advance_write_floor(1)
    op.wait()
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_done_is_true_once_the_op_completed(stage) -> None:
    op = stage.advance_write_floor(1)
    stage.wait_op(op.op_id)
    assert op.done()
    op.wait()
    assert op.done()


def test_done_is_true_for_a_rejected_op(stage, make_query) -> None:
    query = make_query(ABC)
    op = stage.write_attribute(query, "t", 0, np.zeros(3, np.float32), is_array=False)
    assert op.done()


def test_error_message_of_a_rejected_op_is_captured_at_enqueue(stage, make_query) -> None:
    query = make_query(ABC)
    floor_violation = stage.write_attribute(query, "t", 0, np.zeros(3), is_array=False)
    bad_rows = stage.write_attribute(query, "t", 1, np.zeros(2), is_array=False)
    first = floor_violation.error_message()
    assert "floor" in first
    assert bad_rows.error_message()
    assert bad_rows.error_message() != first
    assert floor_violation.error_message() == first
    with pytest.raises(OvstageError) as info:
        floor_violation.wait()
    assert info.value.message == first


def test_error_message_of_a_successful_op_is_empty(stage) -> None:
    op = stage.advance_write_floor(1)
    op.wait()
    assert op.error_message() == ""


def test_wait_op_returns_code_error_ids_and_lowest_pending(stage) -> None:
    op = stage.advance_write_floor(1)
    result = stage.wait_op(op.op_id, TIMEOUT_INFINITE)
    assert isinstance(result, tuple)
    code, error_op_ids, lowest_pending = result
    assert type(code) is int
    assert type(error_op_ids) is list
    assert type(lowest_pending) is int
    assert code == ErrorCode.OK
    assert error_op_ids == []
    assert stage.wait_op_raw(op.op_id, 0) == ErrorCode.OK
    op.wait()


def test_wait_op_does_not_release_the_op(stage) -> None:
    op = stage.advance_write_floor(1)
    assert stage.wait_op(op.op_id)[0] == ErrorCode.OK
    assert stage.wait_op(op.op_id, 0)[0] == ErrorCode.OK
    op.wait()


def test_wait_op_of_an_unknown_op_is_invalid_argument(stage) -> None:
    assert stage.wait_op(123456, 0) == (ErrorCode.INVALID_ARGUMENT, [], 0)


@pytest.mark.parametrize(
    ("timeout", "error"),
    [(-1, ValueError), (2**64, ValueError), (1.5, TypeError), ("0", TypeError)],
    ids=["negative", "too-wide", "float", "str"],
)
def test_bad_timeouts_raise_before_the_op_is_consumed(stage, timeout, error) -> None:
    op = stage.advance_write_floor(1)
    with pytest.raises(error):
        op.wait(timeout)
    with pytest.raises(error):
        stage.wait_op(op.op_id, timeout)
    op.wait()


@pytest.mark.parametrize(
    ("op_id", "error"), [(-1, ValueError), (1.0, TypeError)], ids=["negative", "float"]
)
def test_bad_op_ids_raise(stage, op_id, error) -> None:
    with pytest.raises(error):
        stage.wait_op(op_id, 0)


def test_ordinal_range_rejects_start_after_end() -> None:
    with pytest.raises(ValueError):
        ovstage.OrdinalRange.between(3, 2)


def test_read_needs_an_ordinal_range(stage, make_query) -> None:
    query = make_query(ABC)
    with pytest.raises(TypeError):
        stage.read_attributes(query, ["t"], 1)  # type: ignore[arg-type]
