"""DLTensors whose shape claims far more rows than their memory holds (a forged or corrupt
producer): nothing is allocated or copied for rows that are checked against the prims written
or that no ``index_map`` entry reads, so the write is rejected with a clear error, or it
succeeds reading only real rows. The process never touches the claimed terabytes.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator

import numpy as np
import ovstage
import pytest
from ovstage import DLDataType, DLDevice, DLTensor, ErrorCode, Filter, FilterOp, OrdinalRange
from ovstage import Predicate as P

PRIMS = ["/Forged/A", "/Forged/B", "/Forged/C"]
CLAIMED_ROWS = 1 << 40  # 4 TiB of float32


def forged(values: np.ndarray) -> DLTensor:
    """A float32 DLTensor over ``values`` whose shape claims CLAIMED_ROWS rows."""
    shape = (ctypes.c_int64 * 1)(CLAIMED_ROWS)
    t = DLTensor(
        data=values.ctypes.data,
        device=DLDevice(1, 0),
        ndim=1,
        dtype=DLDataType(2, 32, 1),
        shape=shape,
        strides=None,
        byte_offset=0,
    )
    t._keepalive = (values, shape)
    return t


@pytest.fixture
def env() -> Iterator[tuple[ovstage.Stage, ovstage.Query]]:
    """A stage whose query holds three prims carrying ``s`` (sealed at 1)."""
    stage = ovstage.Stage("forged")
    paths = ovstage.PathDictionary(stage)
    with paths.create_path_list_from_strings(PRIMS) as plist:
        query = stage.query_from_path_list(plist)
    stage.write_attribute(query, "s", 1, np.zeros(3, np.float32), is_array=False).wait()
    stage.advance_write_floor(1).wait()
    try:
        yield stage, query
    finally:
        query.release().wait()
        stage.destroy()


def latest(stage: ovstage.Stage, query: ovstage.Query, name: str) -> list[float]:
    """The current (sealed) values of ``name``."""
    with stage.read_attributes(query, [name], OrdinalRange.latest((1 << 64) - 1)) as read:
        (group,) = list(read.groups())
        with group:
            data = group.array()
            return [
                float(data[group.data_row_index(k) if group.has_data_index_map else k])
                for k in range(group.prim_count)
            ]


def test_rows_are_checked_before_any_copy(env) -> None:
    stage, query = env
    values = np.arange(4, dtype=np.float32)
    op = stage.write_attribute(query, "s", 2, forged(values), is_array=False)
    assert op.status == ErrorCode.INVALID_ARGUMENT
    assert f"tensors[0]: shape [{CLAIMED_ROWS}]" in op.error_message()
    assert "do not match the 3 prims written" in op.error_message()


def test_an_index_map_reads_only_the_rows_it_names(env) -> None:
    stage, query = env
    values = np.array([10, 20, 30, 40], np.float32)
    stage.write_attribute(
        query, "s", 2, forged(values), is_array=False, count=3, index_map=[3, 0, 2]
    ).wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, query, "s") == [40, 10, 30]


def test_a_query_resolved_later_checks_rows_before_the_deferred_copy(env) -> None:
    stage, _ = env
    values = np.arange(4, dtype=np.float32)
    with (
        ovstage.gates.scoped_query_gate() as gate,
        stage.query(Filter([P("s", FilterOp.HAS)])) as pending,
    ):
        op = stage.write_attribute(pending, "s", 2, forged(values), is_array=False)
        assert op.ok, "the prim count is not known at enqueue"
        gate.release()
        with pytest.raises(ovstage.OvstageError) as info:
            op.wait()
    assert "INVALID_ARGUMENT" in info.value.message
    assert f"shape [{CLAIMED_ROWS}]" in info.value.message
