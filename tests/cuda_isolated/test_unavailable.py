"""Without a usable CUDA driver: every CPU feature works, GPU requests fail with the reason.

Runs with ``OVSTAGE_CUDA_LIBRARY`` naming a library that does not exist.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np
import ovstage
import pytest
from ovstage import DLDataType, DLDevice, DLDeviceType, DLTensor, ErrorCode, OvstageError

SCENARIO = "unavailable"


@pytest.fixture
def stage():
    s = ovstage.Stage("no-gpu")
    yield s
    s.destroy()


@pytest.fixture
def query(stage):
    d = ovstage.PathDictionary(stage)
    with (
        d.create_path_list_from_strings(["/A", "/B"]) as plist,
        stage.query_from_path_list(plist) as q,
    ):
        yield q


def test_reports_unavailable_with_the_reason() -> None:
    lib = os.environ["OVSTAGE_CUDA_LIBRARY"]
    assert ovstage.cuda_available() is False
    reason = ovstage.cuda_unavailable_reason()
    assert reason.startswith(f"GPU unavailable: {lib} not found (dlopen: ")
    assert ovstage.cuda_device_count() == 0
    status = ovstage.cuda_status()
    assert (status.available, status.device_count, status.driver_version) == (False, 0, 0)
    assert "cuda_available" not in ovstage.__all__, "extensions stay out of the reference names"


def test_cpu_writes_and_reads_work(stage, query) -> None:
    stage.write_attribute(query, "t", 1, np.array([1, 2], np.float32), is_array=False).wait()
    stage.write_attribute(
        query, "t", 2, np.array([3, 4], np.float32), is_array=False, device="cpu"
    ).wait()
    stage.advance_write_floor(2).wait()
    with stage.read_attributes(query, ["t"], ovstage.OrdinalRange.latest(2)) as read:
        group = read.fetch_next()
        assert group is not None
        with group:
            assert group.array().tolist() == [3.0, 4.0]
            assert group.raw.data.cuda_sync.wait_event == 0
            assert group.raw.data.cuda_sync.stream == 0


def _expect(op: ovstage.Operation, code: ErrorCode, *fragments: str) -> str:
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == code
    for fragment in fragments:
        assert fragment in info.value.message
    return info.value.message


def test_cuda_sync_arguments_need_a_gpu(stage, query) -> None:
    values = np.array([1, 2], np.float32)
    message = _expect(
        stage.write_attribute(query, "t", 1, values, is_array=False, cuda_stream=1),
        ErrorCode.NOT_SUPPORTED,
        "cuda_stream: CUDA synchronization needs a GPU: GPU unavailable: ",
    )
    assert ovstage.cuda_unavailable_reason() in message
    _expect(
        stage.write_attribute(query, "t", 1, values, is_array=False, cuda_event=0x1234),
        ErrorCode.NOT_SUPPORTED,
        "cuda_event: CUDA synchronization needs a GPU",
    )
    # zero means "none": plain CPU writes
    stage.write_attribute(query, "t", 1, values, is_array=False, cuda_event=0, cuda_stream=0).wait()


def test_cuda_placement_is_invalid_argument_naming_the_reason(stage, query) -> None:
    values = np.array([1, 2], np.float32)
    reason = (
        "placement: cuda:0: cannot validate device_id without a usable CUDA driver: GPU unavailable"
    )
    cuda0 = ovstage.Placement(DLDeviceType.kDLCUDA, 0)
    for op in (
        stage.write_attribute(query, "t", 1, values, is_array=False, device="cuda:0"),
        stage.write_attribute(query, "t", 1, values, is_array=False, placement=cuda0),
        stage.write_attributes(query, [ovstage.WriteDesc("t", values, False)], 1, placement=cuda0),
    ):
        assert op.op_id == 0, "refused synchronously"
        _expect(op, ErrorCode.INVALID_ARGUMENT, reason)
    read = stage.read_attributes(query, ["t"], ovstage.OrdinalRange.latest(1), placement=cuda0)
    assert read.handle == 0
    _expect(read.op, ErrorCode.INVALID_ARGUMENT, reason)
    mapped = stage.map_attribute(query, "t", 1, dtype=ovstage.DLDataType(2, 32, 1), placement=cuda0)
    assert mapped.handle == 0
    _expect(mapped.op, ErrorCode.INVALID_ARGUMENT, reason)
    # an availability event needs the driver as well; a host placement does not
    _expect(
        stage.write_attribute(
            query, "t", 1, values, is_array=False, placement=ovstage.Placement(1, 0, 0, 0x1234)
        ),
        ErrorCode.INVALID_ARGUMENT,
        "placement: availability_event 0x1234 needs a usable CUDA driver",
    )
    stage.write_attribute(
        query, "t", 1, values, is_array=False, placement=ovstage.Placement(1)
    ).wait()


def test_cuda_tensor_is_rejected_with_the_reason(stage, query) -> None:
    shape = (ctypes.c_int64 * 1)(2)
    fake = DLTensor(
        data=0x10000,  # never dereferenced: the write fails before reading it
        device=DLDevice(DLDeviceType.kDLCUDA, 0),
        ndim=1,
        dtype=DLDataType(2, 32, 1),
        shape=shape,
        strides=None,
        byte_offset=0,
    )
    _expect(
        stage.write_attribute(query, "t", 1, fake, is_array=False),
        ErrorCode.NOT_SUPPORTED,
        "tensors[0]: a CUDA tensor needs a GPU: GPU unavailable: ",
    )
