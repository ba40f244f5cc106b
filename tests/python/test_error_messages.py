"""Errors say what happened: outcomes that the bad-input matrix (test_bad_inputs.py) cannot
express as one call on a fixed stage."""

from __future__ import annotations

import threading
import time

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, OvstageError, gates


def test_a_waiter_of_an_op_that_destroy_abandons_is_told_the_stage_was_destroyed() -> None:
    """It used to get ``OP_FAILED: op 1 failed``: the message was asked for after destroy()
    had forgotten every op."""
    stage = ovstage.Stage("doomed")
    paths = ovstage.PathDictionary(stage)
    plist = paths.create_path_list_from_strings(["/Doomed/a"])
    query = stage.query_from_path_list(plist)
    outcome: list[BaseException] = []
    try:
        with gates.scoped_write_gate() as gate:
            op = stage.write_attribute(query, "x", 1, np.zeros(1, np.float32), is_array=False)
            assert gate.wait_until_entered()

            def wait() -> None:
                try:
                    op.wait()
                except BaseException as exc:  # recorded for the assertions below
                    outcome.append(exc)

            waiter = threading.Thread(target=wait, daemon=True)
            waiter.start()
            time.sleep(0.2)  # the waiter is blocked in a wait slice
            stage.destroy()
            waiter.join(10)
            assert not waiter.is_alive()
    finally:
        plist.release()
        stage.destroy()
    assert len(outcome) == 1 and isinstance(outcome[0], OvstageError), outcome
    error = outcome[0]
    # OP_FAILED from the wait that saw the op abandoned; INVALID_HANDLE if the waiter was between
    # two slices when the stage went away. Either way the message names the destroy.
    assert error.code in (ErrorCode.OP_FAILED, ErrorCode.INVALID_HANDLE), error
    assert f'stage {stage._id} "doomed" was destroyed' in error.message, error
    if error.code == ErrorCode.OP_FAILED:
        assert f"op {op.op_id} was abandoned" in error.message, error
    with pytest.raises(OvstageError, match="after Stage was destroyed"):
        stage.wait_op(op.op_id)
