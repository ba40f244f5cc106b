"""GPU support: whether a GPU is usable, and the ``device=`` placement option.

The extension has no link-time CUDA dependency: the Go core loads the CUDA driver
(``libcuda.so.1``) the first time GPU support is asked for. Without a driver or a GPU,
everything CPU works and :func:`cuda_available` says ``False`` while
:func:`cuda_unavailable_reason` says why.

These names are extensions of ovstage-go (not in the reference API): they are importable
from ``ovstage`` but not listed in ``ovstage.__all__``.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

from ._dlpack import DLDevice, DLDeviceType
from ._lib import call, native

__all__ = [
    "CudaStatus",
    "cuda_available",
    "cuda_device_count",
    "cuda_status",
    "cuda_unavailable_reason",
    "parse_device",
]


class CudaStatus(NamedTuple):
    """Outcome of loading the CUDA driver (the first call loads it)."""

    available: bool
    device_count: int
    driver_version: int
    reason: str


def cuda_status() -> CudaStatus:
    """Load the CUDA driver if not done yet and report what it found."""
    text = call(native.CudaStatus)
    flag, _, rest = text.partition(" ")
    if flag == "1":
        count, _, version = rest.partition(" ")
        return CudaStatus(True, int(count), int(version), "")
    return CudaStatus(False, 0, 0, rest)


def cuda_available() -> bool:
    """Whether GPU columns can be used (a CUDA driver and at least one GPU)."""
    return cuda_status().available


def cuda_unavailable_reason() -> str:
    """Why GPU columns cannot be used (``""`` when they can), e.g.
    ``"GPU unavailable: libcuda.so.1 not found (dlopen: ...)"``."""
    return cuda_status().reason


def cuda_device_count() -> int:
    """Number of CUDA devices (0 without a usable GPU)."""
    return cuda_status().device_count


_UNSET = (0, 0)


def parse_device(device: Any) -> tuple[int, int]:
    """Normalize a ``device=`` placement to ``(device_type, device_id)``.

    Accepted: ``None`` (follow the source tensor: returns ``(0, 0)``); ``"cpu"``,
    ``"cuda"`` (device 0) or ``"cuda:N"``; a ``(DLDeviceType, id)`` pair or a ``DLDevice``
    of kind CPU or CUDA; an object with ``type`` and ``index`` attributes such as
    ``torch.device``; an object with an integer ``id`` such as ``cupy.cuda.Device``.
    """
    if device is None:
        return _UNSET
    if isinstance(device, str):
        return _parse_device_string(device)
    if isinstance(device, DLDevice):
        return _check_pair(device.device_type, device.device_id, device)
    if isinstance(device, tuple | list):
        if len(device) != 2:
            raise ValueError(f"device must be a (device_type, device_id) pair, got {device!r}")
        return _check_pair(device[0], device[1], device)
    kind = getattr(device, "type", None)
    if isinstance(kind, str):
        index = getattr(device, "index", None)
        if kind == "cpu":
            return (int(DLDeviceType.kDLCPU), 0)
        if kind == "cuda":
            return _check_pair(DLDeviceType.kDLCUDA, 0 if index is None else index, device)
        raise ValueError(f"device must be a cpu or cuda device, got {device!r}")
    ident = getattr(device, "id", None)
    if ident is not None and not isinstance(ident, bool):
        return _check_pair(DLDeviceType.kDLCUDA, ident, device)
    raise TypeError(
        "device must be None, 'cpu', 'cuda', 'cuda:N', a (device_type, device_id) pair, "
        f"a DLDevice or a torch/cupy device, got {type(device).__name__}"
    )


def _parse_device_string(text: str) -> tuple[int, int]:
    name, sep, index = text.partition(":")
    if name == "cpu" and not sep:
        return (int(DLDeviceType.kDLCPU), 0)
    if name == "cuda":
        if not sep:
            return (int(DLDeviceType.kDLCUDA), 0)
        if index.isdigit() and index.isascii():
            return (int(DLDeviceType.kDLCUDA), int(index))
    raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {text!r}")


def _check_pair(device_type: Any, device_id: Any, original: Any) -> tuple[int, int]:
    try:
        kind = operator.index(device_type)
        ident = operator.index(device_id)
    except TypeError:
        raise TypeError(
            f"device must hold an integer device type and id, got {original!r}"
        ) from None
    if kind == DLDeviceType.kDLCPU and ident == 0:
        return (kind, 0)
    if kind == DLDeviceType.kDLCUDA and 0 <= ident < 1 << 31:
        return (kind, ident)
    raise ValueError(
        "device must be cpu (kDLCPU, 0) or cuda:N (kDLCUDA, N >= 0), "
        f"got device_type {kind}, device_id {ident}"
    )
