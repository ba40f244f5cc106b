"""0.3.0 placement (``ovstage.Placement`` and ``placement=``) on the host.

The CUDA side (mirrors on devices, copies for placed reads, device staging for maps,
availability events, no driver) runs against the fake driver in ``tests/cuda_isolated`` and in
the Go tests (``core/availability_test.go``, ``core/placement_test.go``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import DLDeviceType, ErrorCode, OvstageError

F32 = ovstage.DLDataType(2, 32, 1)
HOST = ovstage.Placement(DLDeviceType.kDLCPU, 0)


def test_defaults_and_frozen() -> None:
    p = ovstage.Placement()
    assert (p.device_type, p.device_id, p.stream, p.availability_event) == (0, 0, 0, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.device_id = 1  # type: ignore[misc]
    assert ovstage.Placement(2, 1) == ovstage.Placement(DLDeviceType.kDLCUDA, 1)
    assert type(ovstage.Placement(DLDeviceType.kDLCUDA).device_type) is int
    assert "Placement" in ovstage.__all__


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"device_type": 4}, ValueError, "device_type must be one of (0, 1, 2, 13)"),
        ({"device_type": "cuda"}, TypeError, "device_type must be an integer"),
        ({"device_type": 1 << 31}, ValueError, "device_type must fit in int32"),
        ({"device_id": -1}, ValueError, "device_id must be non-negative"),
        ({"device_id": 1.5}, TypeError, "device_id must be an integer"),
        ({"device_id": 1 << 31}, ValueError, "device_id must fit in int32"),
        ({"stream": -1}, ValueError, "stream must be non-negative"),
        ({"stream": 1 << 64}, ValueError, "stream must fit in uint64"),
        ({"stream": None}, TypeError, "stream must be an integer"),
        ({"availability_event": 1 << 64}, ValueError, "availability_event must fit in uint64"),
        ({"availability_event": "e"}, TypeError, "availability_event must be an integer"),
    ],
)
def test_fields_are_validated(kwargs: dict[str, Any], error: type, fragment: str) -> None:
    with pytest.raises(error) as info:
        ovstage.Placement(**kwargs)
    assert fragment in str(info.value)


def test_every_allowed_device_type() -> None:
    for kind in (0, 1, 2, 13):
        assert ovstage.Placement(kind, 3).device_type == kind


def test_from_dlpack_device() -> None:
    assert ovstage.Placement.from_dlpack_device(np.zeros(3)) == HOST
    assert ovstage.Placement.from_dlpack_device(
        (2, 1), stream=2, availability_event=7
    ) == ovstage.Placement(2, 1, 2, 7)

    class Producer:
        def __dlpack_device__(self) -> tuple[int, int]:
            return (13, 0)

    assert ovstage.Placement.from_dlpack_device(Producer()).device_type == 13
    for bad in ([2, 0], "cuda", 2, None):
        with pytest.raises(TypeError):
            ovstage.Placement.from_dlpack_device(bad)
    with pytest.raises(TypeError, match="a DLPack device is a"):
        ovstage.Placement.from_dlpack_device((2, 0, 1))
    with pytest.raises(ValueError, match="device_type must be one of"):
        ovstage.Placement.from_dlpack_device((7, 0))


def test_placement_must_be_a_placement(stage: ovstage.Stage, make_query: Any) -> None:
    query = make_query(["/A"])
    values = np.array([1.0], np.float32)
    calls = [
        lambda p: stage.write_attribute(query, "t", 1, values, is_array=False, placement=p),
        lambda p: stage.write_attributes(
            query, [ovstage.WriteDesc("t", values, False)], 1, placement=p
        ),
        lambda p: stage.map_attribute(query, "t", 1, dtype=F32, placement=p),
        lambda p: stage.read_attributes(query, ["t"], ovstage.OrdinalRange.latest(1), placement=p),
    ]
    for call in calls:
        for bad in ((1, 0), "cpu", 1, ovstage.DLDevice(1, 0)):
            with pytest.raises(TypeError, match="placement must be a Placement or None"):
                call(bad)
    with pytest.raises(TypeError, match="pass either placement= or device="):
        stage.write_attribute(query, "t", 1, values, is_array=False, placement=HOST, device="cpu")
    # nothing was written by the refused calls
    with stage.read_attributes(query, ["t"], ovstage.OrdinalRange.latest(1)) as read:
        assert read.fetch_next() is None


def test_host_placements_are_ordinary_ops(
    stage: ovstage.Stage, make_query: Any, read_values: Any
) -> None:
    query = make_query(["/A", "/B"])
    unspecified = ovstage.Placement()  # device {0, 0}: the write goes where its source lives
    stage.write_attribute(
        query, "t", 1, np.array([1, 2], np.float32), is_array=False, placement=HOST
    ).wait()
    stage.write_attributes(
        query,
        [ovstage.WriteDesc("u", np.array([3, 4], np.float32), False)],
        1,
        placement=unspecified,
    ).wait()
    stage.advance_write_floor(1).wait()
    assert read_values(query, "t", 1) == {"/A": 1.0, "/B": 2.0}
    assert read_values(query, "u", 1) == {"/A": 3.0, "/B": 4.0}
    for placement in (HOST, unspecified, None):
        with stage.read_attributes(
            query, ["t", "u"], ovstage.OrdinalRange.latest(1), placement=placement
        ) as read:
            groups = list(read.groups())
            assert [g.array().tolist() for g in groups] == [[1.0, 2.0], [3.0, 4.0]]
            for g in groups:
                assert g.tensor(0).device.device_type == DLDeviceType.kDLCPU
                g.release()
    # a host-placed map stages in host memory
    with stage.map_attribute(query, "t", 2, placement=HOST) as mapped:
        group = next(iter(mapped.groups()))
        assert group.tensor(0).device.device_type == DLDeviceType.kDLCPU
        group.array(0)[:] = [10, 20]
    stage.advance_write_floor(2).wait()
    assert read_values(query, "t", 2) == {"/A": 10.0, "/B": 20.0}


def test_a_host_placed_session_fails_a_commit_with_a_completion_sync(
    stage: ovstage.Stage, make_query: Any
) -> None:
    # A host placement stages in host memory like an unplaced map: a completion sync on its
    # unmap is accepted and fails the commit when it runs (0.3.0), and the session is terminal.
    query = make_query(["/A"])
    mapped = stage.map_attribute(query, "t", 1, dtype=F32, placement=HOST)
    group = next(iter(mapped.groups()))
    with pytest.raises(TypeError, match="cuda_stream must be an integer"):
        mapped.unmap_group(group, cuda_stream="s")  # type: ignore[arg-type]
    with pytest.raises(OvstageError) as info:
        mapped.unmap_group(group, cuda_event=5).wait()
    assert info.value.code == ErrorCode.OP_FAILED
    assert "stages in host memory" in info.value.message
    with pytest.raises(OvstageError) as final:
        mapped.unmap().wait()
    assert final.value.code == ErrorCode.OP_FAILED
