"""``Stage``: one ovstage instance, and the ``OrdinalRange`` data class (spec §5.5, §5.8)."""

from __future__ import annotations

import array
import contextlib
import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._cuda import parse_device
from ._dlpack import DLTensor, make_dltensor
from ._enums import PrimMode, Scope
from ._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError
from ._groups import ReadGroup, ReadGroupRaw
from ._guards import (
    as_attribute,
    as_bool_flag,
    as_enum,
    as_int32,
    as_timeout,
    as_uint32,
    as_uint64,
)
from ._handles import Query, Read
from ._lib import call, native
from ._ops import Operation

__all__ = ["OrdinalRange", "Stage", "library_version"]

_UINT64_MAX = (1 << 64) - 1


def library_version() -> tuple[int, int, int]:
    """The compatibility version ``(major, minor, patch)`` of the library."""
    major, minor, patch = call(native.LibraryVersion).split(".")
    return int(major), int(minor), int(patch)


@dataclass
class OrdinalRange:
    """Which ordinals a read selects: ``latest(N)`` or ``between(start, end)``."""

    end_ordinal: int
    start_ordinal: int | None = None

    def __post_init__(self) -> None:
        self.to_c()

    @classmethod
    def latest(cls, end_ordinal: int) -> OrdinalRange:
        """Latest sealed value of every key."""
        return cls(end_ordinal)

    @classmethod
    def between(cls, start_ordinal: int, end_ordinal: int) -> OrdinalRange:
        """Keys with a change in ``[start, end]`` (inclusive)."""
        return cls(end_ordinal, start_ordinal)

    def to_c(self) -> tuple[int, int, bool]:
        """Validated ``(start, end, has_start)``."""
        end = as_uint64(self.end_ordinal, "end_ordinal")
        if self.start_ordinal is None:
            return 0, end, False
        start = as_uint64(self.start_ordinal, "start_ordinal")
        if start > end:
            raise ValueError(f"start_ordinal {start} is after end_ordinal {end}")
        return start, end, True


def _handle_of(obj: Any, cls: type, name: str) -> int:
    if isinstance(obj, cls):
        return obj._check()
    return as_uint64(obj, name)


def _u64_array(values: Sequence[int], name: str) -> array.array[int]:
    return array.array("Q", (as_uint64(v, f"{name}[{i}]") for i, v in enumerate(values)))


def _addr(buf: array.array[int] | np.ndarray | None) -> int:
    if buf is None or len(buf) == 0:
        return 0
    if isinstance(buf, np.ndarray):
        return int(buf.ctypes.data)
    return buf.buffer_info()[0]


def _uint_words(values: Any, name: str, dtype: type, bits: int) -> np.ndarray:
    """Validate a sequence of unsigned ints (index_map entries / mask words)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=dtype)
    if arr.dtype == object:
        arr = np.array([as_uint32(v, name) if bits == 32 else as_uint64(v, name) for v in values])
    if arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must contain integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "i" and (arr < 0).any():
        raise ValueError(f"{name} entries must be non-negative, got {int(arr.min())}")
    if bits == 32 and arr.dtype.itemsize > 4 and (arr > 0xFFFFFFFF).any():
        raise ValueError(f"{name} entries must fit in uint32, got {int(arr.max())}")
    return np.ascontiguousarray(arr, dtype=dtype)


class Stage:
    """One stage (instance): its prims, attribute columns, floors, ops and handles.

    Every mutating or data-producing method is an asynchronous enqueue returning an
    :class:`Operation` (or a handle wrapper whose ``.op`` is one); rejected enqueues do not
    raise, their ``wait()`` does. Use as a context manager, or call ``destroy()``.
    """

    def __init__(self, name: str | None = None, config: Any = None) -> None:
        self._destroyed = True
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__}")
        if config is not None:
            raise OvstageError(ErrorCode.NOT_SUPPORTED, "StageConfig is not implemented yet")
        self.name = name
        self._id = call(native.CreateStage, name or "", 0)
        self._destroyed = False

    # -- lifecycle ------------------------------------------------------------------------

    @staticmethod
    def get_version() -> tuple[int, int, int]:
        """The library version ``(major, minor, patch)``."""
        return library_version()

    def _require_live(self, what: str = "Stage method") -> int:
        if self._destroyed:
            raise OvstageError(ErrorCode.INVALID_HANDLE, f"{what} called after Stage was destroyed")
        return self._id

    def destroy(self) -> None:
        """Wait for pending ops and release everything the stage holds (idempotent).

        Exported tensors (``array()``/``dlpack()`` views) stay valid.
        """
        if self._destroyed:
            return
        call(native.DestroyStage, self._id)
        self._destroyed = True

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.destroy()

    def _rejected(self, exc: OvstageError) -> Operation:
        return Operation(self, exc.code, 0, message=exc.message)

    def _enqueue(self, what: str, fn: Any, *args: Any) -> Operation:
        """Call an enqueue function: a use after destroy raises, an engine rejection is
        returned as a rejected Operation (its ``wait()`` raises)."""
        sid = self._require_live(what)
        try:
            return Operation(self, ErrorCode.OK, call(fn, sid, *args))
        except OvstageError as exc:
            return self._rejected(exc)

    # -- ops ------------------------------------------------------------------------------

    def wait_op(self, op_id: int, timeout: int = TIMEOUT_INFINITE) -> tuple[int, list[int], int]:
        """Raw wait: ``(code, error_op_ids, lowest_pending_op_id)``; no raise, no release.

        ``error_op_ids`` lists failed ops in the waited op's chain, root cause first.
        """
        op = as_uint64(op_id, "op_id")
        timeout_ns = as_timeout(timeout)
        sid = self._require_live("wait_op")
        code, lowest, ids = call(native.WaitOp, sid, op, timeout_ns).split(" ")
        return int(code), [int(i) for i in ids.split(",")] if ids else [], int(lowest)

    def wait_op_raw(self, op_id: int, timeout: int = TIMEOUT_INFINITE) -> int:
        """Raw wait returning only the status code."""
        return self.wait_op(op_id, timeout)[0]

    def release_op(self, op_id: int) -> int:
        """Forget an op id (returns the status; raises for unknown ids)."""
        op = as_uint64(op_id, "op_id")
        return int(call(native.ReleaseOp, self._require_live("release_op"), op))

    def _release_op_checked(self, op_id: int) -> None:
        self.release_op(op_id)

    def _release_op_quietly(self, op_id: int) -> None:
        with contextlib.suppress(OvstageError):
            self.release_op(op_id)

    def _last_op_error(self, op_id: int) -> str:
        if self._destroyed:
            return ""
        return call(native.GetLastOpError, self._id, op_id)

    # -- queries --------------------------------------------------------------------------

    def query_from_path_list(self, path_list: int) -> Query:
        """Wrap a path list as a query (synchronous; prims need not exist)."""
        handle = as_uint64(path_list, "path_list")
        q = call(native.QueryFromPathList, self._require_live("query_from_path_list"), handle)
        return Query(self, q, None, keepalive=path_list)

    def release_query(self, query: Query | int) -> Operation:
        """Enqueue the release of a query (after the ops using it)."""
        handle = _handle_of(query, Query, "query")
        op = self._enqueue("release_query", native.ReleaseQuery, handle)
        if op.ok and isinstance(query, Query):
            query._released = True
            op._keepalive = query._keepalive
        return op

    # -- writes ---------------------------------------------------------------------------

    def write_attribute(
        self,
        query: Query | int,
        attribute: int | str,
        ordinal: int,
        tensors: Any,
        *,
        is_array: bool,
        prim_mode: PrimMode | int = PrimMode.UPSERT,
        semantic: int = 0,
        index_map: Sequence[int] | None = None,
        mask: Sequence[int] | None = None,
        count: int | None = None,
        cuda_event: int | None = None,
        cuda_stream: int | None = None,
        device: Any = None,
    ) -> Operation:
        """Enqueue a write of ``tensors`` to ``attribute`` on the query's prims at ``ordinal``.

        The payload is copied before this returns, so the caller may reuse its buffers.
        ``index_map`` gathers payload rows, ``mask`` selects logical elements, ``count``
        addresses the leading prims of the query.

        GPU (ovstage-go extension): a CUDA source tensor places the column on its device
        (copied device to device); ``device`` (``"cpu"``, ``"cuda:N"``, a torch device ...)
        places it explicitly, copying the payload there. A column has one placement: a
        write placed elsewhere fails with ``INVALID_ARGUMENT``. ``cuda_event`` /
        ``cuda_stream`` (``ovstage_cuda_sync_t``) are waited for before the payload is read;
        they need a GPU (``NOT_SUPPORTED`` naming the reason otherwise).
        """
        qh = _handle_of(query, Query, "query")
        attr = as_attribute(attribute)
        ordinal = as_uint64(ordinal, "ordinal")
        flag = as_bool_flag(is_array, "is_array")
        mode = as_enum(prim_mode, PrimMode, "prim_mode")
        sem = as_int32(semantic, "semantic")
        n, imap, words = _sparsity(index_map, mask, count)
        event = 0 if cuda_event is None else as_uint64(cuda_event, "cuda_event")
        stream = 0 if cuda_stream is None else as_uint64(cuda_stream, "cuda_stream")
        device_type, device_id = parse_device(device)
        self._require_live("write_attribute")
        dltensors = _as_dltensors(tensors)
        ptrs = (ctypes.c_void_p * len(dltensors))(*(ctypes.addressof(t) for t in dltensors))
        token, name = (attr, "") if isinstance(attr, int) else (0, attr)
        if name and "\x00" in name:
            return Operation(
                self,
                ErrorCode.INVALID_ARGUMENT,
                0,
                message="attribute: Token string contains embedded NUL",
            )
        placed = (device_type, device_id, stream, event) != (0, 0, 0, 0)
        return self._enqueue(
            "write_attribute",
            native.WriteAttributePlaced if placed else native.WriteAttribute,
            qh,
            token,
            name,
            ordinal,
            ctypes.addressof(ptrs),
            len(dltensors),
            n,
            _addr(imap),
            0 if imap is None else len(imap),
            _addr(words) if words is not None else 0,
            0 if words is None else len(words),
            sem,
            flag,
            int(mode),
            *((device_type, device_id, stream, event) if placed else ()),
        )

    # -- floors ---------------------------------------------------------------------------

    def advance_write_floor(
        self, ordinal: int, scope: Scope | int = Scope.ALL, attributes: Sequence[int] | None = None
    ) -> Operation:
        """Enqueue sealing of every ordinal <= ``ordinal`` (floors never move down)."""
        ordinal = as_uint64(ordinal, "ordinal")
        sc = as_enum(scope, Scope, "scope")
        attrs = _u64_array(attributes or (), "attributes")
        return self._enqueue(
            "advance_write_floor",
            native.AdvanceWriteFloor,
            ordinal,
            int(sc),
            _addr(attrs),
            len(attrs),
        )

    def _global_write_floor(self) -> int:
        return call(native.GlobalWriteFloor, self._require_live("get_attribute_write_floor"))

    # -- reads ----------------------------------------------------------------------------

    def read_attributes(
        self, query: Query | int, attrs: Sequence[int | str], ordinal_range: OrdinalRange
    ) -> Read:
        """Enqueue a read of ``attrs`` (tokens, or strings interned here) over the query."""
        qh = _handle_of(query, Query, "query")
        if not isinstance(ordinal_range, OrdinalRange):
            raise TypeError(
                f"ordinal_range must be an OrdinalRange, got {type(ordinal_range).__name__}"
            )
        start, end, has_start = ordinal_range.to_c()
        if isinstance(attrs, (str, int)):
            raise TypeError("attrs must be a sequence of attribute tokens or names")
        tokens = array.array("Q")
        for i, a in enumerate(attrs):
            value = as_attribute(a, f"attrs[{i}]")
            if isinstance(value, str):
                from ._pathdict import PathDictionary

                value = PathDictionary(self).intern_token(value)
            tokens.append(value)
        sid = self._require_live("read_attributes")
        try:
            out = call(
                native.ReadAttributes,
                sid,
                qh,
                _addr(tokens),
                len(tokens),
                start,
                end,
                has_start,
            )
        except OvstageError as exc:
            return Read(self, 0, self._rejected(exc))
        handle, op_id = out.split(" ")
        return Read(self, int(handle), Operation(self, ErrorCode.OK, int(op_id)))

    def fetch_read_next(
        self, read: Read | int, timeout: int = TIMEOUT_INFINITE
    ) -> ReadGroup | None:
        """The read's next group, or None after the last one."""
        rh = _handle_of(read, Read, "read")
        timeout_ns = as_timeout(timeout)
        try:
            addr = call(native.FetchReadNext, self._require_live("fetch_read_next"), rh, timeout_ns)
        except OvstageError as exc:
            if exc.code == ErrorCode.END_OF_ITERATION:
                return None
            raise
        return ReadGroup(ReadGroupRaw.from_address(addr), self)

    def release_group(self, group: ReadGroup) -> None:
        """Release a fetched group (views already exported stay valid)."""
        if not isinstance(group, ReadGroup):
            raise TypeError(f"group must be a ReadGroup, got {type(group).__name__}")
        gid = group._check().read_group_id
        call(native.ReleaseGroup, self._require_live("release_group"), gid)
        group._mark_released()

    def release_read(self, read: Read | int) -> Operation:
        """Enqueue the release of a read handle."""
        rh = _handle_of(read, Read, "read")
        op = self._enqueue("release_read", native.ReleaseRead, rh)
        if op.ok and isinstance(read, Read):
            read._released = True
        return op

    def _export_group_tensor(self, group_id: int, index: int, readonly: bool) -> int:
        return call(
            native.ExportGroupTensor,
            self._require_live("ReadGroup.dlpack"),
            group_id,
            index,
            readonly,
        )

    def _diagnostics(self) -> dict[str, int]:
        """Live engine object counts (for leak tests)."""
        keys = ("ops", "queries", "reads", "groups", "columns", "buffers")
        values = call(native.Diagnostics, self._require_live("diagnostics")).split(" ")
        return dict(zip(keys, (int(v) for v in values), strict=False))


def _sparsity(
    index_map: Any, mask: Any, count: Any
) -> tuple[int, np.ndarray | None, np.ndarray | None]:
    """Python-side sparse-write guards (spec §5.3); returns (count, index_map, mask)."""
    if index_map is not None and mask is not None:
        raise ValueError("index_map and mask are mutually exclusive")
    n = None
    if count is not None:
        n = as_uint32(count, "count")
        if n == 0:
            raise ValueError("count must be non-zero (omit it to write the whole query)")
    imap = None
    if index_map is not None:
        imap = _uint_words(index_map, "index_map", np.uint32, 32)
        if n is None:
            n = len(imap)
        if n == 0:
            raise ValueError("index_map is empty: count would be 0")
        if n > len(imap):
            raise ValueError(f"count {n} exceeds len(index_map) {len(imap)}")
    words = None
    if mask is not None:
        words = _uint_words(mask, "mask", np.uint64, 64)
        if n is None:
            raise ValueError("mask requires count")
        if n > 64 * len(words):
            raise ValueError(f"count {n} exceeds 64 * len(mask) = {64 * len(words)}")
    return n or 0, imap, words


def _as_dltensors(tensors: Any) -> list[DLTensor]:
    items = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    if not items:
        raise ValueError("tensors must not be empty")
    return [t if isinstance(t, DLTensor) else make_dltensor(t) for t in items]
