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
    # two slices when the stage went away. Either way the message names the destroy and the stage.
    assert error.code in (ErrorCode.OP_FAILED, ErrorCode.INVALID_HANDLE), error
    assert f'stage {stage._id} "doomed"' in error.message and "destroyed" in error.message, error
    if error.code == ErrorCode.OP_FAILED:
        assert f"op {op.op_id} was abandoned" in error.message, error
    with pytest.raises(
        OvstageError, match=f'after Stage was destroyed \\(stage {stage._id} "doomed"'
    ):
        stage.wait_op(op.op_id)


BF16 = ovstage.DLDataType(ovstage.DLDataTypeCode.kDLBfloat, 16, 1)


@pytest.mark.parametrize("lanes", [1, 3])
def test_array_of_a_bfloat16_column_is_its_raw_uint16_bits(stage, make_query, lanes) -> None:
    """numpy has no bfloat16: ``array()`` used to raise numpy's bare "Unsupported dtype in
    DLTensor."; it now returns the raw bits, as ``dltensor_to_numpy`` documents."""
    query = make_query(["/A", "/B"])
    bits = np.array([0x3F80, 0x4000, 0xC040, 0x0000, 0x7F80, 0x3E00][: 2 * lanes], np.uint16)
    dtype = ovstage.DLDataType(BF16.code, 16, lanes)
    tensor = ovstage.make_dltensor(bits, dtype=dtype, shape=[2])
    stage.write_attribute(query, "bf", 1, tensor, is_array=False).wait()
    stage.advance_write_floor(1).wait()
    with (
        stage.read_attributes(query, ["bf"], ovstage.OrdinalRange.latest(1)) as read,
        read.fetch_next() as group,
    ):
        view = group.array(0)  # typed: (2,) or (2, 3)
        assert view.shape == ((2,) if lanes == 1 else (2, lanes))
        assert view.dtype == np.uint16 and view.reshape(-1).tolist() == bits.tolist()
        assert not view.flags.writeable
        export = group.dlpack(0, readonly=False)  # a private copy: writable
        copy = export.numpy()
        assert copy.shape == ((2, lanes) if lanes > 1 else (2,))
        copy[...] = 0
        assert group.array(0).reshape(-1).tolist() == bits.tolist()


def test_numpy_of_a_dtype_numpy_cannot_hold_names_the_dtype() -> None:
    float8 = ovstage.DLDataType(ovstage.DLDataTypeCode.kDLFloat, 8, 1)
    raw = np.zeros(4, np.uint8)
    export = ovstage.ManagedDLTensor(ovstage.make_dltensor(raw, dtype=float8), raw)
    with pytest.raises(ValueError, match=r"numpy has no dtype .*kDLFloat, bits=8"):
        export.numpy()
    with pytest.raises(ValueError, match=r"no numpy equivalent .*kDLFloat, bits=8"):
        ovstage.dltensor_to_numpy(export.raw_dltensor)
