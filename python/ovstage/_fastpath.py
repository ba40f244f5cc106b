"""The fast path of :meth:`Stage.write_attribute` for its most common call.

A write of one C-contiguous numpy array with an ``int`` token or ``str`` name, an ``int``
ordinal, and every optional argument left at its default, skips the general conversion
(``make_dltensor``, ctypes descriptor and pointer arrays) and hands the array object's address
to the native ``WriteNumpy``, which reads the array's data pointer, shape and flags itself and
then builds the very request the general path would, validated by the same engine code.

Reading those fields needs their offsets in numpy's ``PyArrayObject``. They are measured once
here against numpy's own accessors on a set of probe arrays; if any probe disagrees (an
unusual interpreter or numpy build), the fast path stays off and every write takes the general
path. Anything the native side does not cover (non-contiguous or empty arrays, more dims than
it handles) comes back as a ``fallback`` status and also takes the general path, so results
and exceptions are those of the general path in every case.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _lib
from ._dlpack import numpy_to_dldatatype
from ._errors import OvstageError, OvxError, error_from_native
from ._handles import Query
from ._lib import call, native
from ._ops import Operation

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = ["DEFER_COPY_BYTES", "enabled", "write"]

_UINT64_MAX = (1 << 64) - 1
_FALLBACK = -1
_raw = native._native
_write_numpy = _raw.pybind_WriteNumpy

#: Payload size from which the engine copies a write's data in the op (on a worker) rather
#: than before the enqueue returns; the stage holds such sources until the engine reports that
#: the op no longer reads them (``Stage._hold``).
DEFER_COPY_BYTES: int = call(native.DeferCopyBytes)

# dtype -> (DLPack code, bits): exactly what numpy_to_dldatatype gives (native byte order only).
_DTYPES: dict[np.dtype[Any], tuple[int, int]] = {}
for _name in (
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
):
    _dt = numpy_to_dldatatype(np.dtype(_name))
    if _dt.lanes == 1:
        _DTYPES[np.dtype(_name)] = (int(_dt.code), int(_dt.bits))

# Attribute name -> token (the path dictionary is process-wide and tokens never expire).
_TOKENS: dict[str, int] = {}
_TOKEN_CACHE_MAX = 4096


def _probe_layout() -> tuple[int, int, int, int] | None:
    """Offsets of (data, nd, dimensions, flags) in PyArrayObject, or None if unverifiable."""
    head = object.__basicsize__  # PyObject_HEAD: 16 bytes on a regular 64-bit CPython
    data, nd, dims, strides, flags = head, head + 8, head + 16, head + 24, head + 48
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    base = np.arange(24, dtype=np.float32)
    probes = [
        base,
        base.reshape(2, 3, 4),
        base.reshape(4, 6).T,  # F-contiguous, not C
        base[::2],  # strided
        np.zeros((5, 1, 3), dtype=np.uint8),
        np.zeros(0, dtype=np.int64),
        np.array(3.0),  # 0-d
    ]
    try:
        for arr in probes:
            addr = id(arr)
            got_data = ctypes.c_void_p.from_address(addr + data).value or 0
            got_nd = ctypes.c_int32.from_address(addr + nd).value
            shape_ptr = ctypes.c_void_p.from_address(addr + dims).value or 0
            stride_ptr = ctypes.c_void_p.from_address(addr + strides).value or 0
            got_flags = ctypes.c_int32.from_address(addr + flags).value
            if got_data != arr.__array_interface__["data"][0] or got_nd != arr.ndim:
                return None
            if arr.ndim:
                got_shape = (ctypes.c_int64 * arr.ndim).from_address(shape_ptr)
                got_strides = (ctypes.c_int64 * arr.ndim).from_address(stride_ptr)
                if tuple(got_shape) != arr.shape or tuple(got_strides) != arr.strides:
                    return None
            if bool(got_flags & 0x1) != arr.flags.c_contiguous:
                return None
    except (ValueError, OverflowError, TypeError):
        return None
    return data, nd, dims, flags


def _install() -> bool:
    offsets = _probe_layout()
    if offsets is None:
        call(native.SetNumpyLayout, 0, 0, 0, 0)
        return False
    return bool(call(native.SetNumpyLayout, *offsets))


#: Whether the fast path is active in this process.
enabled: bool = _install()


def _token(name: str) -> int:
    """The token of an attribute name (0 if it cannot be interned: the general path reports)."""
    token = _TOKENS.get(name)
    if token is not None:
        return token
    try:
        token = call(native.InternToken, name)
    except (OvxError, OvstageError, ValueError):  # empty, NUL, ...: the general path reports
        return 0
    if len(_TOKENS) >= _TOKEN_CACHE_MAX:
        _TOKENS.clear()
    _TOKENS[name] = token
    return token


def write(
    stage: Stage, query: Any, attribute: Any, ordinal: int, array: np.ndarray
) -> Operation | None:
    """Enqueue ``array`` through ``WriteNumpy``; None means "take the general path".

    The caller has checked: ``array`` is exactly an ``ndarray``, ``ordinal`` an in-range
    ``int``, the stage is live, and every optional argument has its default.
    """
    if not enabled or _lib._forked_child:
        return None
    dt = _DTYPES.get(array.dtype)
    if dt is None:
        return None
    cls = query.__class__
    if cls is Query:
        qh = query._check()
    elif cls is int and 0 <= query <= _UINT64_MAX:
        qh = query
    else:
        return None
    cls = attribute.__class__
    if cls is str:
        token = _TOKENS.get(attribute) or _token(attribute)
    elif cls is int and 0 < attribute <= _UINT64_MAX:
        token = attribute
    else:
        return None
    if not token:
        return None
    try:
        op_id = _write_numpy(stage._id, qh, token, ordinal, id(array), dt[0], dt[1], 1)
    except RuntimeError as exc:
        err = error_from_native(exc)
        if not isinstance(err, OvstageError) or err.code == _FALLBACK:
            return None
        return Operation(stage, err.code, 0, message=err.message)
    if array.nbytes >= DEFER_COPY_BYTES:
        stage._hold(op_id, array)
    return Operation._accepted(stage, op_id)
