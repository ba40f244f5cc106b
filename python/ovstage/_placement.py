"""``Placement``: which device copy of an attribute a write, map or read works with.

A placement never binds a column to a device: a write or map commit placed on a device makes
that device's copy current (a later write placed elsewhere is an ordinary update), and a read
placed on a device is served from the copy there when it is current, else from a copy made
there for the read's groups. README.md ("GPU-resident attributes") has the rules.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from ._abi import PlacementRaw
from ._dlpack import DLDevice
from ._guards import as_int32, as_uint64

__all__ = ["Placement"]

# 0 (unspecified), kDLCPU, kDLCUDA, kDLCUDAManaged
_DEVICE_TYPES = (0, 1, 2, 13)


@dataclass(frozen=True)
class Placement:
    """``ovstage_placement_t``: ``device_type``/``device_id`` name the device (``0``: not
    specified); ``stream`` carries the op's device work (0 and 1: legacy default stream, 2:
    per-thread default stream, else a ``cudaStream_t``); ``availability_event`` is a
    ``cudaEvent_t`` of the caller's that the op records once its device work is issued (0:
    none). Keep the source tensors alive until that event completed."""

    device_type: int = 0
    device_id: int = 0
    stream: int = 0
    availability_event: int = 0

    def __post_init__(self) -> None:
        device_type = as_int32(self.device_type, "device_type")
        if device_type not in _DEVICE_TYPES:
            raise ValueError(
                "device_type must be one of (0, 1, 2, 13) (unspecified, kDLCPU, kDLCUDA, "
                f"kDLCUDAManaged), got {device_type}"
            )
        device_id = as_int32(self.device_id, "device_id")
        if device_id < 0:
            raise ValueError(f"device_id must be non-negative, got {device_id}")
        object.__setattr__(self, "device_type", device_type)
        object.__setattr__(self, "device_id", device_id)
        object.__setattr__(self, "stream", as_uint64(self.stream, "stream"))
        object.__setattr__(
            self, "availability_event", as_uint64(self.availability_event, "availability_event")
        )

    @classmethod
    def from_dlpack_device(
        cls, obj: Any, *, stream: int = 0, availability_event: int = 0
    ) -> Placement:
        """The placement of ``obj``'s device: ``obj.__dlpack_device__()`` (a torch/cupy/numpy
        array) or a ``(device_type, device_id)`` tuple."""
        if isinstance(obj, tuple):
            pair: Any = obj
        elif hasattr(obj, "__dlpack_device__"):
            pair = obj.__dlpack_device__()
        else:
            raise TypeError(
                "from_dlpack_device needs an object with __dlpack_device__() or a "
                f"(device_type, device_id) tuple, got {type(obj).__name__}"
            )
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"a DLPack device is a (device_type, device_id) pair, got {pair!r}")
        try:
            device_type, device_id = operator.index(pair[0]), operator.index(pair[1])
        except TypeError:
            raise TypeError(
                f"a DLPack device holds an integer device type and id, got {pair!r}"
            ) from None
        return cls(device_type, device_id, stream, availability_event)

    def _raw(self) -> PlacementRaw:
        """The C struct (``ovstage_placement_t``)."""
        device = DLDevice(self.device_type, self.device_id)
        return PlacementRaw(device, self.stream, self.availability_event)


def as_placement(value: object) -> Placement | None:
    """Validate a ``placement=`` argument (``None``: the unplaced call)."""
    if value is None or isinstance(value, Placement):
        return value
    raise TypeError(f"placement must be a Placement or None, got {type(value).__name__}")
