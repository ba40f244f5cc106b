"""Engine objects do not accumulate under the common usage patterns (``make leakcheck`` is the
long version of these checks)."""

from __future__ import annotations

import gc

import numpy as np
import ovstage

ABC = ["/A", "/B", "/C"]


def test_unwaited_writes_release_their_op_ids(stage: ovstage.Stage, make_query) -> None:
    """A producer that only waits its floor advances leaves no op tracking behind."""
    query = make_query(ABC)
    for ordinal in range(1, 51):
        stage.write_attribute(query, "t", ordinal, np.zeros(3, np.float32), is_array=False)
    stage.advance_write_floor(50).wait()
    gc.collect()
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
    """Only a collected ``Operation`` releases its op; raw waits on a live one still work."""
    query = make_query(ABC)
    op = stage.write_attribute(query, "t", 1, np.zeros(3, np.float32), is_array=False)
    gc.collect()
    assert stage.wait_op(op.op_id)[0] == ovstage.ErrorCode.OK
    assert stage.release_op(op.op_id) == 0
    del op  # its finalizer's second release is ignored
    gc.collect()
    assert stage._diagnostics()["ops"] == 0
