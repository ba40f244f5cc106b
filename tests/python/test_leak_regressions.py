"""Engine objects do not accumulate under the common usage patterns (``make leakcheck`` is the
long version of these checks)."""

from __future__ import annotations

import gc

import numpy as np
import ovstage

ABC = ["/A", "/B", "/C"]


def test_unwaited_writes_keep_their_op_ids_until_released(stage: ovstage.Stage, make_query) -> None:
    """As in the reference, an op stays tracked until it is waited or released (callers may
    keep only ``op.op_id`` and poll with ``Stage.wait_op``); releasing the ids frees them."""
    query = make_query(ABC)
    ids = [
        stage.write_attribute(query, "t", o, np.zeros(3, np.float32), is_array=False).op_id
        for o in range(1, 51)
    ]
    stage.advance_write_floor(50).wait()
    gc.collect()
    assert stage._diagnostics()["ops"] == 50
    for op_id in ids:
        assert stage.wait_op(op_id)[0] == ovstage.ErrorCode.OK
        stage.release_op(op_id)
    assert stage._diagnostics()["ops"] == 0


def test_reads_iterated_without_wait_release_their_op_ids(
    stage: ovstage.Stage, make_query, write_sealed
) -> None:
    """``with read: for group in read.groups()`` (no ``read.wait()``) leaves nothing behind."""
    query = make_query(ABC)
    write_sealed(query, "t", 1, np.arange(3, dtype=np.float32))
    for _ in range(20):
        with stage.read_attributes(query, ["t"], ovstage.OrdinalRange.latest(1)) as read:
            for group in read.groups():
                group.release()
    del read  # the last Read (and the Operation that reserved it) becomes garbage
    gc.collect()
    diag = stage._diagnostics()
    assert (diag["ops"], diag["reads"], diag["groups"]) == (0, 0, 0)


def test_a_live_operation_stays_waitable_by_raw_id(stage: ovstage.Stage, make_query) -> None:
    """Raw waits by op id work whether or not the Operation is still referenced."""
    query = make_query(ABC)
    op = stage.write_attribute(query, "t", 1, np.zeros(3, np.float32), is_array=False)
    gc.collect()
    assert stage.wait_op(op.op_id)[0] == ovstage.ErrorCode.OK
    assert stage.release_op(op.op_id) == 0
    del op
    gc.collect()
    assert stage._diagnostics()["ops"] == 0
