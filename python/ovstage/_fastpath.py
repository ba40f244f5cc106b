"""The fast path of :meth:`Stage.write_attribute` for its most common call.

A write of one C-contiguous numpy array (1 to 4 dims) with an ``int`` token or ``str`` name, an
``int`` ordinal, and every optional argument left at its default, skips the general conversion
(``make_dltensor``, ctypes descriptor and pointer arrays): it reads the array's shape, size,
contiguity and data pointer here, while it holds the GIL, and hands them to the native
``WriteNumpy`` as plain ints. The native side runs without the GIL and never reads the array
object (another thread may reassign ``arr.shape`` meanwhile: numpy frees the old dims), then
builds the very request the general path would, its tensor checked by the rules of every
DLTensor (``abi.CheckTensor``) and the request by the same engine code. It stays because it
measurably wins: ``tests/bench/bench_async.py`` prints both paths' enqueue costs.

Each value read here is one atomic read under the GIL (``arr.shape`` is a fresh tuple), but
another thread may change the array between two of them. ``nbytes`` does not change when
``shape``, ``dtype`` or ``strides`` are reassigned, so the native side checks that the shape
times the dtype size equals it and otherwise falls back: a dtype read before a concurrent
``arr.dtype = ...`` cannot pair with a shape read after it.

The data pointer is read from numpy's ``PyArrayObject`` at an offset measured once here against
numpy's own accessor on a set of probe arrays (``arr.ctypes.data`` costs about a microsecond);
if any probe disagrees (an unusual interpreter or numpy build), the fast path stays off and
every write takes the general path. Anything the native side does not cover (empty arrays,
a header that does not add up) comes back as a ``fallback`` status and also takes the general
path, so results and exceptions are those of the general path in every case.
"""

from __future__ import annotations

import array
import ctypes
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _lib
from ._dlpack import numpy_to_dldatatype
from ._errors import OvstageError, OvxError, error_from_native
from ._handles import Query, Read
from ._lib import call, native
from ._ops import Operation

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = [
    "DEFER_COPY_BYTES",
    "advance_write_floor",
    "enabled",
    "fetch_read",
    "read",
    "release_read",
    "token_of",
    "write",
    "write_batch",
]

_UINT64_MAX = (1 << 64) - 1
_FALLBACK = -1
_raw = native._native
_write_numpy = _raw.pybind_WriteNumpy
_write_numpy_batch = _raw.pybind_WriteNumpyBatch
_read_attributes_to = _raw.pybind_ReadAttributesTo
_fetch_read_next = _raw.pybind_FetchReadNextNow
_release_read_now = _raw.pybind_ReleaseReadNow
_advance_write_floor_all = _raw.pybind_AdvanceWriteFloorAll

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

# Each stage caches attribute name -> token in ``stage._token_cache`` (tokens are the stage's
# own and never expire while it lives); a cache this full starts over.
_TOKEN_CACHE_MAX = 4096

# Reads a pointer-sized value at an address (the array's data pointer).
_void_at = ctypes.c_void_p.from_address


def _probe_data_offset() -> int | None:
    """Offset of the data pointer in PyArrayObject, or None if it cannot be verified."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    offset = object.__basicsize__  # right after PyObject_HEAD (16 bytes on 64-bit CPython)
    base = np.arange(24, dtype=np.float32)
    probes = [
        base,
        base.reshape(2, 3, 4),
        base.reshape(4, 6).T,
        base[::2],
        base[5:],
        np.zeros((5, 1, 3), dtype=np.uint8),
        np.array(3.0),
    ]
    try:
        for arr in probes:
            if _void_at(id(arr) + offset).value != arr.__array_interface__["data"][0]:
                return None
    except (ValueError, OverflowError, TypeError):
        return None
    return offset


_DATA_OFFSET = _probe_data_offset()

#: Whether the fast path is active in this process.
enabled: bool = _DATA_OFFSET is not None
_data_offset: int = _DATA_OFFSET or 0

# Zero dims that pad a shape of 1..4 dims to WriteNumpy's four dim arguments.
_PADS = ((), (0, 0, 0), (0, 0), (0,), ())


def token_of(stage: Stage, name: str) -> int:
    """The token of an attribute name in the stage's dictionary, cached (0 if it cannot be
    interned: the engine reports why when it is handed the name)."""
    cache = stage._token_cache
    token = cache.get(name)
    if token is not None:
        return token
    try:
        token = call(native.InternToken, stage._id, name)
    except (OvxError, OvstageError, ValueError):  # empty, NUL, ...: the general path reports
        return 0
    if len(cache) >= _TOKEN_CACHE_MAX:
        cache.clear()
    cache[name] = token
    return token


def _token(stage: Stage, attribute: Any) -> int:
    """The token a fast-path write names (0: take the general path)."""
    cls = attribute.__class__
    if cls is str:
        return stage._token_cache.get(attribute) or token_of(stage, attribute)
    if cls is int and 0 < attribute <= _UINT64_MAX:
        token: int = attribute
        return token
    return 0


def write(
    stage: Stage, query: Any, attribute: Any, ordinal: int, array: np.ndarray, semantic: int = 0
) -> Operation | None:
    """Enqueue ``array`` through ``WriteNumpy``; None means "take the general path".

    The caller has checked: ``array`` is exactly an ``ndarray``, ``ordinal`` an in-range
    ``int``, ``semantic`` an int32, the stage is live, and every other optional argument has
    its default.
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
    cls = attribute.__class__  # _token, inlined: this is the hottest path
    if cls is str:
        token = stage._token_cache.get(attribute) or token_of(stage, attribute)
    elif cls is int and 0 < attribute <= _UINT64_MAX:
        token = attribute
    else:
        return None
    if not token:
        return None
    # The header, read while the GIL is held (see the module docstring).
    shape = array.shape
    nd = len(shape)
    if not 0 < nd <= 4 or not array.flags.c_contiguous:
        return None
    nbytes = array.nbytes
    data = _void_at(id(array) + _data_offset).value
    try:
        op_id = _write_numpy(
            stage._id, qh, token, ordinal, data, nbytes, dt[0], dt[1], nd, *shape, *_PADS[nd],
            semantic,
        )  # fmt: skip
    except RuntimeError as exc:
        err = error_from_native(exc)
        if not isinstance(err, OvstageError) or err.code == _FALLBACK:
            return None
        return Operation(stage, err.code, 0, message=err.message)
    if nbytes >= DEFER_COPY_BYTES:
        stage._hold(op_id, array)
    return Operation._accepted(stage, op_id)


# Words per WriteNumpyBatch entry: token, data, nbytes, DLPack code, bits, nd, four dims.
_ENTRY_WORDS = 10


def write_batch(
    stage: Stage, qh: int, arrays: list[tuple[Any, np.ndarray]], ordinal: int, prim_mode: int
) -> Operation | None:
    """Enqueue a ``write_attributes`` batch of (attribute, array) entries through
    ``WriteNumpyBatch``, one native call for the whole batch; None means "take the general
    path" (for the whole batch).

    The caller has checked: every array is exactly an ``ndarray``, every entry has its other
    options at their defaults, the batch is not empty, ``qh`` and ``ordinal`` are valid, the
    stage is live and no placement is given.
    """
    if not enabled or _lib._forked_child:
        return None
    words = array.array("Q", bytes(8 * _ENTRY_WORDS * len(arrays)))
    large = False
    for i, (attribute, arr) in enumerate(arrays):
        dt = _DTYPES.get(arr.dtype)
        token = _token(stage, attribute)
        shape = arr.shape
        nd = len(shape)
        if dt is None or not token or not 0 < nd <= 4 or not arr.flags.c_contiguous:
            return None
        nbytes = arr.nbytes
        large = large or nbytes >= DEFER_COPY_BYTES
        base = i * _ENTRY_WORDS
        words[base : base + 6 + nd] = array.array(
            "Q",
            (token, _void_at(id(arr) + _data_offset).value or 0, nbytes, dt[0], dt[1], nd, *shape),
        )
    try:
        op_id = _write_numpy_batch(
            stage._id, qh, words.buffer_info()[0], len(arrays), ordinal, prim_mode
        )
    except RuntimeError as exc:
        err = error_from_native(exc)
        if not isinstance(err, OvstageError) or err.code == _FALLBACK:
            return None
        return Operation(stage, err.code, 0, message=err.message)
    if large:
        stage._hold(op_id, [arr for _, arr in arrays])
    return Operation._accepted(stage, op_id)


# ---------------------------------------------------------------- reads
#
# A latest read in a ``with`` block is four entries: ``read_attributes``, ``fetch_next`` until
# None, and the read's release when the block ends. Their fast paths below take the common
# case (a Read/Query object, attribute names already interned, no placement, the read already
# complete) in one native call each, with none of the general path's ctypes structs and
# argument conversions; anything else returns None (or False) and takes the general path,
# which does every check and reports every error as before.

# The words ReadAttributesTo answers in: read handle, op id, groups of a complete read
# (_UINT64_MAX while it runs).
_READ_ANSWER = (0, 0, 0)


def read(stage: Stage, query: Any, attrs: Any, start: Any, end: Any) -> Read | None:
    """``read_attributes`` of ``attrs`` over ``query`` at ``OrdinalRange(end, start)``
    without a placement, in one native call; None means "take the general path"."""
    if _lib._forked_child or stage._destroyed:
        return None
    cls = query.__class__
    if cls is Query:
        if query._released or (query.op is not None and query.op.status):
            return None
        qh = query.handle
    elif cls is int and 0 <= query <= _UINT64_MAX:
        qh = query
    else:
        return None
    if end.__class__ is not int or not 0 <= end <= _UINT64_MAX:
        return None
    if start is None:
        start, has_start = 0, False
    elif start.__class__ is int and 0 <= start <= end:
        has_start = True
    else:
        return None
    cls = attrs.__class__
    if (cls is not list and cls is not tuple) or not attrs:
        return None
    tokens = None
    if len(attrs) == 1:
        tok = _token(stage, attrs[0])
        if not tok:
            return None
    else:
        tok = 0
        tokens = array.array("Q", (_token(stage, a) for a in attrs))
        if not all(tokens):
            return None
    answer = array.array("Q", _READ_ANSWER)
    try:
        _read_attributes_to(
            stage._id,
            qh,
            tok,
            0 if tokens is None else tokens.buffer_info()[0],
            len(attrs),
            start,
            end,
            has_start,
            answer.buffer_info()[0],
        )
    except RuntimeError as exc:
        err = error_from_native(exc)
        if isinstance(err, OvstageError):  # an engine rejection: a rejected read, as always
            return Read(stage, 0, stage._rejected(err))
        raise err from None
    rd = Read(stage, answer[0], Operation._accepted(stage, answer[1]))
    if answer[2] != _UINT64_MAX:
        rd._left = answer[2]
    return rd


def fetch_read(stage: Stage, rd: Read) -> int | None:
    """The address of the next group's ``ovstage_read_group_t`` of a read that is complete, 0
    after its last group; None means "take the general path" (a pending read waits there, and
    any failure is reported there). Once this Read has fetched every group its enqueue
    counted (``Read._left``), the end needs no native call: other fetches of the same handle
    only make fewer groups left, never more."""
    if rd._released or stage._destroyed or _lib._forked_child:
        return None
    op = rd.op
    if op is not None and op.status:
        return None
    left = rd._left
    if left == 0:
        return 0
    try:
        addr: int = _fetch_read_next(stage._id, rd.handle)
    except RuntimeError:
        return None
    if left > 0:
        rd._left = left - 1 if addr else 0
    return addr


def release_read(stage: Stage, rd: Read) -> bool:
    """Release ``rd`` at the end of its ``with`` block and wait for the release, in one native
    call when the read is complete; False means "take the general path" (nothing was done)."""
    if stage._destroyed or _lib._forked_child:
        return False
    op = rd.op
    detach = 0
    if op is not None and op.ok and not op._consumed and op._op_id:
        detach = op._op_id
    try:
        pending = _release_read_now(stage._id, rd.handle, detach)
    except RuntimeError:
        return False
    rd._released = True
    if detach:
        op._consumed = True  # type: ignore[union-attr]
    if pending:
        Operation._accepted(stage, pending).wait()
    return True


def advance_write_floor(stage: Stage, ordinal: int) -> Operation | None:
    """``advance_write_floor(ordinal)`` of every attribute (scope ALL, no attribute list) in
    one native call; None means "take the general path". The caller checked ``ordinal``."""
    if stage._destroyed or _lib._forked_child:
        return None
    try:
        op_id = _advance_write_floor_all(stage._id, ordinal)
    except RuntimeError as exc:
        err = error_from_native(exc)
        if isinstance(err, OvstageError):  # an engine rejection: a rejected Operation
            return stage._rejected(err)
        raise err from None
    return Operation._accepted(stage, op_id)
