"""Clone in 0.3.0: ``CloneResult``, ``CloneOperation`` and ``Stage.fetch_clone_result``.

``Stage.clone`` returns the completion report; ``clone_async`` returns a ``CloneOperation``
whose ``wait()`` returns itself and keeps the report (or the clone's own failure) before it
releases the op; ``fetch_clone_result`` reads the report of a tracked clone op, raising the
clone's specific code when it failed. Zero targets are allowed; below an absent target root
existing prims are merged into (the copying rules themselves are in test_clone.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import ovstage
import pytest
from ovstage import CloneOperation, CloneResult, ErrorCode, OvstageError, gates
from readback import latest

F32 = np.float32
SOURCE = ["/Src", "/Src/Child", "/Src/Child/Leaf"]


@pytest.fixture
def src(stage, make_query, write_sealed) -> ovstage.Query:
    """SOURCE with "mass" (float32), sealed at 1."""
    query = make_query(SOURCE)
    write_sealed(query, "mass", 1, np.array([1, 2, 3], F32))
    return query


def held(stage: ovstage.Stage, make_query, prims: list[str], ordinal: int) -> dict:
    return latest(stage, make_query(prims), "mass", ordinal)


# ---------------------------------------------------------------- the report


def test_clone_result_is_a_frozen_dataclass_in_the_python_field_order() -> None:
    fields = [f.name for f in dataclasses.fields(CloneResult)]
    assert fields == ["prims_cloned", "target_count", "source_prim_count", "ordinal"]
    report = CloneResult(4, 2, 2, 7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.ordinal = 8  # type: ignore[misc]


def test_clone_returns_the_report(stage, src) -> None:
    report = stage.clone("/Src", ["/T1", "/T2"], 2)
    assert report == CloneResult(prims_cloned=6, target_count=2, source_prim_count=3, ordinal=2)


def test_a_leaf_source_with_two_targets_clones_two_prims(stage, src) -> None:
    report = stage.clone("/Src/Child/Leaf", ["/L1", "/L2"], 2)
    assert report == CloneResult(prims_cloned=2, target_count=2, source_prim_count=1, ordinal=2)


def test_zero_targets_report_the_source_and_clone_nothing(stage, src, make_query) -> None:
    report = stage.clone("/Src", [], 5)
    assert report == CloneResult(prims_cloned=0, target_count=0, source_prim_count=3, ordinal=5)
    stage.advance_write_floor(5).wait()
    assert held(stage, make_query, ["/Src", "/Src/Child", "/Src/Child/Leaf"], 5) == {
        "/Src": 1.0,
        "/Src/Child": 2.0,
        "/Src/Child/Leaf": 3.0,
    }


def test_zero_targets_still_check_the_floor(stage, src) -> None:
    op = stage.clone_async("/Src", [], 1)
    with pytest.raises(OvstageError) as waited:
        op.wait()
    assert waited.value.code == ErrorCode.OP_FAILED
    with pytest.raises(OvstageError) as info:
        op.result()
    assert info.value.code == ErrorCode.WRITE_FLOOR_VIOLATION


def test_a_merge_counts_the_prims_merged_into(stage, src, make_query) -> None:
    # /T/Child exists below the absent root /T: the clone merges into it and keeps "own".
    stage.write_attribute(
        make_query(["/T/Child"]), "own", 2, np.array([9], np.int32), is_array=False
    ).wait()
    report = stage.clone("/Src", ["/T"], 2)
    assert report == CloneResult(prims_cloned=3, target_count=1, source_prim_count=3, ordinal=2)
    stage.advance_write_floor(2).wait()
    assert latest(stage, make_query(["/T/Child"]), "own", 2) == {"/T/Child": 9}
    assert latest(stage, make_query(["/T/Child"]), "mass", 2) == {"/T/Child": 2.0}


# ---------------------------------------------------------------- CloneOperation


def test_wait_returns_self_and_result_returns_the_cached_report(stage, src) -> None:
    op = stage.clone_async("/Src", ["/T"], 2)
    assert isinstance(op, CloneOperation)
    assert op.wait() is op
    expected = CloneResult(prims_cloned=3, target_count=1, source_prim_count=3, ordinal=2)
    assert op.result() == expected
    assert op.result(0) == expected, "cached: no wait, no fetch"


def test_result_waits_when_not_waited_yet(stage, src) -> None:
    op = stage.clone_async("/Src", ["/T"], 2)
    assert op.result().prims_cloned == 3
    assert op.done()


def test_wait_releases_the_op_so_fetch_clone_result_is_invalid_handle(stage, src) -> None:
    op = stage.clone_async("/Src", ["/T"], 2).wait()
    with pytest.raises(OvstageError) as info:
        stage.fetch_clone_result(op)
    assert info.value.code == ErrorCode.INVALID_HANDLE
    assert "not a live clone operation" in info.value.message


def test_a_missing_source_is_op_failed_from_wait_and_not_found_from_result(stage, src) -> None:
    op = stage.clone_async("/Missing", ["/T"], 2)
    with pytest.raises(OvstageError) as waited:
        op.wait()
    assert waited.value.code == ErrorCode.OP_FAILED
    assert "does not exist" in waited.value.message
    with pytest.raises(OvstageError) as info:
        op.result()
    assert info.value.code == ErrorCode.NOT_FOUND
    assert "/Missing" in info.value.message


def test_a_rejected_clone_is_a_clone_operation_that_raises_the_rejection(stage, src) -> None:
    op = stage.clone_async("/Src", ["/T", "/T"], 2)
    assert isinstance(op, CloneOperation)
    assert op.status == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(OvstageError) as info:
        op.result()
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert "duplicate target path" in info.value.message


def test_an_existing_target_is_prim_not_found_from_fetch_clone_result(stage, src) -> None:
    stage.clone("/Src", ["/T"], 2)
    op = stage.clone_async("/Src", ["/U", "/T"], 3)
    op_id = op.op_id  # raw: it stays tracked until released
    # The raw wait answers OP_FAILED for the failed clone (0.3.0) without raising or releasing.
    assert stage.wait_op(op_id)[0] == ErrorCode.OP_FAILED
    for _ in range(2):  # the op stays tracked: the same answer twice
        with pytest.raises(OvstageError) as info:
            stage.fetch_clone_result(op_id)
        assert info.value.code == ErrorCode.PRIM_NOT_FOUND
        assert "already exists" in info.value.message
        assert "/T" in info.value.message
    with pytest.raises(OvstageError) as waited:
        op.wait()
    assert waited.value.code == ErrorCode.OP_FAILED
    assert "already exists" in waited.value.message


def test_a_merge_conflict_is_op_failed(stage, src, make_query) -> None:
    stage.write_attribute(
        make_query(["/T/Child"]), "mass", 2, np.array([9], np.int32), is_array=False
    ).wait()
    op = stage.clone_async("/Src", ["/T"], 2)
    with pytest.raises(OvstageError):
        op.wait()
    with pytest.raises(OvstageError) as info:
        op.result()
    assert info.value.code == ErrorCode.OP_FAILED
    assert "/T/Child" in info.value.message


def test_fetch_clone_result_of_a_raw_id_keeps_the_op_tracked(stage, src) -> None:
    op_id = stage.clone_async("/Src", ["/T"], 2).op_id
    first = stage.fetch_clone_result(op_id)
    assert first == CloneResult(prims_cloned=3, target_count=1, source_prim_count=3, ordinal=2)
    assert stage.fetch_clone_result(op_id, 0) == first
    assert stage.release_op(op_id) == ErrorCode.OK
    with pytest.raises(OvstageError) as info:
        stage.fetch_clone_result(op_id)
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_the_report_is_fixed_when_the_clone_completes(stage, src, make_query) -> None:
    """A later mutation of the target subtree does not change a fetched report."""
    op_id = stage.clone_async("/Src", ["/T"], 2).op_id
    stage.wait_op(op_id)
    stage.delete_attributes(make_query(["/T/Child/Leaf"]), [], 3).wait()
    assert stage.fetch_clone_result(op_id).prims_cloned == 3
    stage.release_op(op_id)


def test_a_pending_clone_times_out_and_stays_waitable(stage, src) -> None:
    with gates.scoped_write_gate() as gate:
        op = stage.clone_async("/Src", ["/T"], 2)
        assert gate.wait_until_entered()
        with pytest.raises(OvstageError) as info:
            stage.fetch_clone_result(op, 0)
        assert info.value.code == ErrorCode.TIMEOUT
        with pytest.raises(OvstageError) as info:
            stage.fetch_clone_result(op, 20_000_000)  # 20 ms: one sliced wait, then TIMEOUT
        assert info.value.code == ErrorCode.TIMEOUT
        with pytest.raises(OvstageError) as info:
            op.result(0)
        assert info.value.code == ErrorCode.TIMEOUT
        gate.release()
        assert stage.fetch_clone_result(op).prims_cloned == 3
        assert op.result().prims_cloned == 3


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("op_or_id", "error", "fragment"),
    [
        ("1", TypeError, "op_or_id"),
        (1.0, TypeError, "op_or_id"),
        (None, TypeError, "op_or_id"),
        (-1, ValueError, "op_or_id"),
        (2**64, ValueError, "op_or_id"),
    ],
)
def test_a_bad_op_or_id_raises_naming_it(stage, src, make_query, op_or_id, error, fragment) -> None:
    with pytest.raises(error, match=fragment):
        stage.fetch_clone_result(op_or_id)
    assert stage.clone("/Src", ["/T"], 2).prims_cloned == 3, "the stage still works"


def test_a_plain_operation_is_a_type_error(stage, src, make_query) -> None:
    op = stage.write_attribute(make_query(["/Src"]), "mass", 2, np.array([5], F32), is_array=False)
    with pytest.raises(TypeError, match="op_or_id must be a CloneOperation"):
        stage.fetch_clone_result(op)
    op.wait()


@pytest.mark.parametrize("timeout", [-1, 1.5, "0"])
def test_a_bad_timeout_raises(stage, src, timeout) -> None:
    op_id = stage.clone_async("/Src", ["/T"], 2).op_id
    with pytest.raises((TypeError, ValueError), match="timeout"):
        stage.fetch_clone_result(op_id, timeout)
    assert stage.fetch_clone_result(op_id).prims_cloned == 3, "the op is still tracked"
    stage.release_op(op_id)


def test_ids_that_are_no_tracked_clone_op_are_invalid_handle(stage, src, make_query) -> None:
    write = stage.write_attribute(
        make_query(["/Src"]), "mass", 2, np.array([5], F32), is_array=False
    )
    write_id = write.op_id
    for op_id in (0, 999_999, write_id):
        with pytest.raises(OvstageError) as info:
            stage.fetch_clone_result(op_id)
        assert info.value.code == ErrorCode.INVALID_HANDLE
    write.wait()
    rejected = stage.clone_async("/Src", ["/T", "/T"], 2)
    with pytest.raises(OvstageError) as info:
        stage.fetch_clone_result(rejected)
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_fetch_clone_result_after_destroy_raises_invalid_handle() -> None:
    stage = ovstage.Stage("destroyed")
    stage.destroy()
    with pytest.raises(OvstageError) as info:
        stage.fetch_clone_result(1)
    assert info.value.code == ErrorCode.INVALID_HANDLE
