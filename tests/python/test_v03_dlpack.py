"""DLPack interchange of 0.3.0: version constants, when a capsule is versioned and what it
declares, flags, ``__dlpack__`` argument checks, ``ManagedDLTensor.device`` and
``__dlpack_device__``, the ctypes enum types, and what ``DLTensor.from_dlpack`` consumes.
Exports always carry explicit compact strides (README "Where we differ")."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import (
    DLDataType,
    DLDataTypeCode,
    DLDevice,
    DLDeviceType,
    DLTensor,
    ManagedDLTensor,
    OrdinalRange,
    make_dltensor,
)
from ovstage import _dlpack as dlpack
from ovstage._dlpack import DLManagedTensor, DLManagedTensorVersioned

_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi)
)
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def consume(capsule: Any) -> dict[str, Any]:
    """Take the managed tensor out of a capsule like a consumer does (rename, then run the
    deleter) and return what it described."""
    name = _get_name(capsule)
    addr = dlpack._capsule_get_pointer(capsule, name)
    versioned = name == b"dltensor_versioned"
    managed = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(addr)
    t = managed.dl_tensor
    out = {
        "name": name.decode(),
        "shape": tuple(t.shape[i] for i in range(t.ndim)),
        "strides": tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None,
        "lanes": t.dtype.lanes,
        "version": (managed.version.major, managed.version.minor) if versioned else None,
        "flags": managed.flags if versioned else None,
    }
    dlpack._capsule_set_name(capsule, b"used_" + name)
    if managed.deleter:
        _DELETER(managed.deleter)(addr)
    return out


def test_version_and_flag_constants() -> None:
    assert (dlpack.DLPACK_MAJOR_VERSION, dlpack.DLPACK_MINOR_VERSION) == (1, 3)
    assert dlpack.DLPACK_FLAG_BITMASK_READ_ONLY == 1
    assert dlpack.DLPACK_FLAG_BITMASK_IS_COPIED == 2
    assert dlpack.DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED == 4


@pytest.fixture
def group_of_points(stage, make_query, write_sealed):
    query = make_query(["/A", "/B"])
    write_sealed(query, "p", 1, np.arange(6, dtype=np.float32).reshape(2, 3))
    with stage.read_attributes(query, ["p"], OrdinalRange.latest(1)) as read:
        (group,) = list(read.groups())
        with group:
            yield group


@pytest.mark.parametrize(
    ("max_version", "name"),
    [
        (None, "dltensor"),
        ((1, 0), "dltensor_versioned"),
        ((1, 3), "dltensor_versioned"),
        ((1, 9), "dltensor_versioned"),
        ((2, 0), "dltensor"),  # another major version: the legacy capsule
    ],
)
def test_a_capsule_is_versioned_only_for_a_major_1_consumer(
    group_of_points, max_version, name
) -> None:
    for managed in (group_of_points.dlpack(0), _plain()):
        got = consume(managed.__dlpack__(max_version=max_version))
        assert got["name"] == name
        if name == "dltensor_versioned":
            assert got["version"] == (1, 3)


def _plain(readonly: bool = True) -> ManagedDLTensor:
    return ManagedDLTensor(make_dltensor(np.zeros(4, np.float32)), None, readonly=readonly)


def test_read_group_exports_are_flagged_read_only(group_of_points) -> None:
    got = consume(group_of_points.dlpack(0).__dlpack__(max_version=(1, 3)))
    assert got["flags"] == dlpack.DLPACK_FLAG_BITMASK_READ_ONLY
    assert (got["shape"], got["strides"], got["lanes"]) == ((2, 3), (3, 1), 1)
    copy = consume(group_of_points.dlpack(0, readonly=False).__dlpack__(max_version=(1, 3)))
    assert copy["flags"] == dlpack.DLPACK_FLAG_BITMASK_IS_COPIED
    assert consume(_plain(True).__dlpack__(max_version=(1, 0)))["flags"] == 1
    assert consume(_plain(False).__dlpack__(max_version=(1, 0)))["flags"] == 0


def test_a_caller_owned_lane_tensor_exports_a_trailing_lanes_axis() -> None:
    data = np.arange(12, dtype=np.float32)
    managed = ManagedDLTensor(make_dltensor(data, dtype=DLDataType(2, 32, 3), shape=(4,)), data)
    got = consume(managed.__dlpack__(max_version=(1, 3)))
    assert (got["shape"], got["strides"], got["lanes"]) == ((4, 3), (3, 1), 1)
    assert managed.shape == (4,)  # the raw descriptor shape


def test_dlpack_argument_checks(group_of_points) -> None:
    managed = group_of_points.dlpack(0)
    with pytest.raises(BufferError):
        managed.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        managed.__dlpack__(dl_device=(DLDeviceType.kDLCUDA, 0))
    with pytest.raises(TypeError):
        managed.__dlpack__(dl_device="cpu")
    with pytest.raises(TypeError):
        managed.__dlpack__(max_version=1)
    consume(managed.__dlpack__(dl_device=(1, 0), stream=7))  # stream is ignored on the host


def test_device_is_a_dldevice_and_dlpack_device_is_plain_ints(group_of_points) -> None:
    managed = group_of_points.dlpack(0)
    device = managed.device
    assert isinstance(device, DLDevice)
    assert isinstance(device.device_type, DLDeviceType)
    assert device.device_type.value == DLDeviceType.kDLCPU == 1
    assert device.device_type == 1  # also compares as the int
    assert (device.device_id, tuple(device)) == (0, (1, 0))
    pair = managed.__dlpack_device__()
    assert pair == (1, 0) and all(type(v) is int for v in pair)


def test_enum_types_are_ctypes_integers() -> None:
    assert issubclass(DLDeviceType, ctypes.c_int)
    assert issubclass(DLDataTypeCode, ctypes.c_uint8)
    assert type(DLDeviceType.kDLCUDA) is int and type(DLDataTypeCode.kDLBool) is int
    assert DLDeviceType(2).value == 2 and repr(DLDeviceType(2)) == "DLDeviceType.kDLCUDA"
    assert repr(DLDevice(DLDeviceType.kDLCUDA, 1)) == "DLDevice(kDLCUDA, 1)"
    float32 = DLDataType(DLDataTypeCode.kDLFloat, 32, 1)
    assert repr(float32) == "DLDataType(kDLFloat, bits=32, lanes=1)"


class _Producer:
    """A DLPack producer of a hand-made legacy capsule, recording how it was asked."""

    def __init__(self, lanes: int = 1) -> None:
        self.calls: list[dict[str, Any]] = []
        self.data = np.arange(4, dtype=np.float32)
        self.tensor = make_dltensor(self.data)
        self.tensor.dtype.lanes = lanes
        self.managed = DLManagedTensor(dl_tensor=self.tensor)  # no deleter: we own it

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return dlpack._capsule_new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def test_from_dlpack_consumes_the_legacy_capsule() -> None:
    producer = _Producer()
    tensor = DLTensor.from_dlpack(producer)
    assert producer.calls == [{}], "asked without max_version"
    assert tensor.shape_tuple == (4,)
    assert ovstage.dltensor_to_numpy(tensor).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("lanes", [0, 256])
def test_from_dlpack_validates_lanes(lanes) -> None:
    with pytest.raises(ValueError, match="lanes"):
        DLTensor.from_dlpack(_Producer(lanes))
