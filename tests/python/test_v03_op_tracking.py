"""Op tracking of 0.3.0: ``wait()`` returns self, handle waits return the handle, a second wait
is INVALID_HANDLE, ``wait_op`` answers OP_FAILED for a failed op and INVALID_ARGUMENT for an
id the stage does not track, ``release_op`` refuses a pending op (README.md, "Op tracking")."""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from conftest import MakeQuery
from ovstage import ErrorCode, OrdinalRange, OvstageError, gates

ABC = ["/A", "/B", "/C"]
WAIT_NS = 10_000_000_000


def f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def test_operation_wait_returns_the_operation(stage: ovstage.Stage, make_query: MakeQuery) -> None:
    query = make_query(ABC)
    op = stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False)
    assert op.wait() is op
    floor = stage.advance_write_floor(1)
    assert floor.wait(WAIT_NS) is floor


def test_a_second_operation_wait_is_invalid_handle(stage: ovstage.Stage) -> None:
    op = stage.advance_write_floor(1)
    op.wait()
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE
    assert f"operation {op.op_id} has already been waited and released" in info.value.message


def test_read_wait_returns_the_read_so_fetch_next_chains(
    stage: ovstage.Stage, make_query: MakeQuery, write_sealed
) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, f32(1, 2, 3))
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read:
        group = read.wait().fetch_next()
        assert group is not None
        with group:
            assert np.from_dlpack(group.dlpack(0)).tolist() == [1.0, 2.0, 3.0]
        assert read.fetch_next() is None
        with pytest.raises(OvstageError) as info:
            read.wait()
        assert info.value.code == ErrorCode.INVALID_HANDLE


def test_filter_query_wait_returns_the_query(
    stage: ovstage.Stage, make_query: MakeQuery, write_sealed
) -> None:
    write_sealed(make_query(ABC), "t", 1, f32(1, 2, 3))
    with stage.query(attrs=["t"]) as query:
        assert query.wait().result().total_prim_count == 3
        with pytest.raises(OvstageError) as info:
            query.wait()
        assert info.value.code == ErrorCode.INVALID_HANDLE


def test_ordinal_query_and_map_waits_return_the_handle(
    stage: ovstage.Stage, make_query: MakeQuery
) -> None:
    query = make_query(ABC)
    stage.advance_write_floor(4).wait()
    with stage.get_attribute_write_floor() as floor:
        assert floor.wait().fetch() == 4
    with stage.map_attribute(
        query, "m", 5, dtype=ovstage.numpy_to_dldatatype(np.float32)
    ) as mapping:
        assert mapping.wait() is mapping
        for group in mapping.groups():
            np.from_dlpack(group.dlpack(0))[:] = 7
            mapping.unmap_group(group).wait()


def test_a_synchronous_query_has_no_op_and_its_wait_returns_it(
    stage: ovstage.Stage, paths: ovstage.PathDictionary
) -> None:
    with (
        paths.create_path_list_from_strings(ABC) as plist,
        stage.query_from_path_list(plist) as query,
    ):
        assert query.op is None
        assert query.wait() is query
        assert query.wait() is query


def test_wait_op_of_a_failed_op_is_op_failed_every_time(
    stage: ovstage.Stage, make_query: MakeQuery
) -> None:
    query = make_query(ABC)
    gates.write_gate.fail_next()
    bad = stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False)
    bad_id = bad.op_id
    for _ in range(2):
        assert stage.wait_op(bad_id) == (ErrorCode.OP_FAILED, [bad_id], 0)
    assert "fail_next" in bad.error_message()
    assert stage.release_op(bad_id) == ErrorCode.OK


def test_an_op_after_a_failed_op_at_its_ordinal_succeeds(
    stage: ovstage.Stage, make_query: MakeQuery
) -> None:
    query = make_query(ABC)
    gates.write_gate.fail_next()
    bad = stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False)
    good = stage.write_attribute(query, "t", 1, f32(4, 5, 6), is_array=False)
    good_id = good.op_id
    assert stage.wait_op(good_id) == (ErrorCode.OK, [], 0)
    assert good.wait() is good, "the failure of the op it followed is not its own"
    with pytest.raises(OvstageError) as info:
        bad.wait()
    assert info.value.code == ErrorCode.OP_FAILED
    assert "fail_next" in info.value.message


@pytest.mark.parametrize("which", ["zero", "unknown", "released"])
def test_wait_op_of_an_untracked_id_is_invalid_argument_without_raising(
    stage: ovstage.Stage, which: str
) -> None:
    op_id = {"zero": 0, "unknown": 987_654_321}.get(which)
    if op_id is None:
        op = stage.advance_write_floor(1)
        op_id = op.op_id
        assert stage.wait_op(op_id)[0] == ErrorCode.OK
        assert stage.release_op(op_id) == ErrorCode.OK
    code, error_ids, lowest = stage.wait_op(op_id, 0)
    assert (code, error_ids, lowest) == (ErrorCode.INVALID_ARGUMENT, [], 0)
    assert stage.wait_op_raw(op_id) == ErrorCode.INVALID_ARGUMENT


def test_release_op_statuses(stage: ovstage.Stage) -> None:
    op = stage.advance_write_floor(1)
    op_id = op.op_id
    assert stage.wait_op(op_id)[0] == ErrorCode.OK
    assert stage.release_op(op_id) == ErrorCode.OK
    assert stage.release_op(op_id) == ErrorCode.INVALID_HANDLE
    assert stage.release_op(987_654_321) == ErrorCode.INVALID_HANDLE
    assert stage.release_op(0) == ErrorCode.INVALID_ARGUMENT


def test_a_pending_op_cannot_be_released_and_stays_waitable(
    stage: ovstage.Stage, make_query: MakeQuery
) -> None:
    query = make_query(ABC)
    with gates.scoped_write_gate() as gate:
        op = stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False)
        op_id = op.op_id
        assert gate.wait_until_entered()
        assert stage.release_op(op_id) == ErrorCode.OP_FAILED
        assert stage.wait_op(op_id, 0) == (ErrorCode.TIMEOUT, [], op_id)
        # Operation.wait(0) on the pending op raises TIMEOUT and does not consume it.
        with pytest.raises(OvstageError) as info:
            op.wait(0)
        assert info.value.code == ErrorCode.TIMEOUT
        assert f"operation {op_id} is still pending (lowest pending op id {op_id})" in str(
            info.value
        )
        gate.release()
        assert stage.wait_op(op_id, WAIT_NS) == (ErrorCode.OK, [], 0)
    assert stage.release_op(op_id) == ErrorCode.OK


def test_operation_wait_after_a_timeout_completes_the_op(
    stage: ovstage.Stage, make_query: MakeQuery
) -> None:
    query = make_query(ABC)
    with gates.scoped_write_gate() as gate:
        op = stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False)
        assert gate.wait_until_entered()
        with pytest.raises(OvstageError):
            op.wait(0)
        gate.release()
        assert op.wait(WAIT_NS) is op
    assert stage.wait_op(op.op_id, 0)[0] == ErrorCode.INVALID_ARGUMENT, "wait released it"


def test_a_rejected_enqueue_raises_its_own_status_on_wait(stage: ovstage.Stage) -> None:
    op = stage.write_attribute(0, "t", 1, f32(1), is_array=False)
    assert not op.ok
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == op.status
