"""``Stage``: one ovstage instance, and the ``OrdinalRange`` data class."""

from __future__ import annotations

import array
import contextlib
import ctypes
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from . import _fastpath, _lib
from ._abi import (
    AttributeWrite,
    CloneResultRaw,
    ConfigRaw,
    CudaSync,
    FilterRaw,
    MapDesc,
    OrdinalRangeRaw,
    OvxString,
    OvxStringOrToken,
    PredicateRaw,
    QueryResultRaw,
    ReadGroupRaw,
    WriteData,
    WriteFloorDesc,
    ovx_string,
)
from ._buildinfo import library_version
from ._clone import CloneOperation, CloneResult
from ._config import StageConfig, config_from_c
from ._cuda import parse_device
from ._dlpack import DLDataType, DLTensor, make_dltensor, private_dltensor
from ._enums import AttributeMode, AttributeSemantic, OrdinalAdmissionPolicy, PrimMode, Scope
from ._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError, OvxError
from ._groups import MapGroup, ReadGroup
from ._guards import (
    as_attribute,
    as_bool_flag,
    as_enum,
    as_int32,
    as_native_str,
    as_sequence,
    as_size_t,
    as_str,
    as_timeout,
    as_uint,
    as_uint32,
    as_uint64,
    attribute_problem,
    string_problem,
)
from ._handles import Map, OrdinalQuery, Query, Read, _Handle
from ._hierarchy import _HierarchyMixin
from ._lib import call, native
from ._ops import Operation
from ._pathdict import PathListBook, StageDictionary
from ._placement import Placement, as_placement
from ._query import Filter, Predicate, QueryResult
from ._waits import wait_sliced

__all__ = ["OrdinalRange", "Stage", "WriteDesc"]

#: A handle wrapper type built by ``Stage._enqueue_handle``.
H = TypeVar("H", Query, Read, Map, OrdinalQuery)

_UINT64_MAX = (1 << 64) - 1
_NDARRAY = np.ndarray


def _op_finished(wait_op_out: str) -> bool:
    """Whether a native WaitOp answer is not TIMEOUT ("11 ...")."""
    return not wait_op_out.startswith("11 ")


@dataclass
class OrdinalRange:
    """Which ordinals a read selects: ``latest(N)`` or ``between(start, end)``."""

    end_ordinal: int
    start_ordinal: int | None = None

    def __post_init__(self) -> None:
        end = self.end_ordinal
        if self.start_ordinal is None and end.__class__ is int and 0 <= end <= _UINT64_MAX:
            return  # latest(end) of a plain int: valid (the common case; no ctypes struct)
        self.to_c()

    @classmethod
    def latest(cls, end_ordinal: int) -> OrdinalRange:
        """Latest sealed value of every key."""
        return cls(end_ordinal)

    @classmethod
    def between(cls, start_ordinal: int, end_ordinal: int) -> OrdinalRange:
        """Keys with a change in ``[start, end]`` (inclusive)."""
        return cls(end_ordinal, start_ordinal)

    def to_c(self) -> OrdinalRangeRaw:
        """The range, validated again, as a new ``ovstage_ordinal_range_t`` struct."""
        end = as_uint64(self.end_ordinal, "end_ordinal")
        if self.start_ordinal is None:
            return OrdinalRangeRaw(0, end, False)
        start = as_uint64(self.start_ordinal, "start_ordinal")
        if start > end:
            raise ValueError(f"start_ordinal {start} is after end_ordinal {end}")
        return OrdinalRangeRaw(start, end, True)

    def _raw(self) -> OrdinalRangeRaw:
        """The validated range as an ``ovstage_ordinal_range_t``."""
        return self.to_c()


def _handle_of(obj: Any, cls: type[_Handle], name: str) -> int:
    if isinstance(obj, cls):
        return obj._check()
    return as_uint64(obj, name)


def _addr(buf: array.array[int] | np.ndarray | None) -> int:
    """The address of an array's first item, 0 for None or an empty array."""
    if buf is None or len(buf) == 0:
        return 0
    if isinstance(buf, np.ndarray):
        return int(buf.ctypes.data)
    return buf.buffer_info()[0]


def _present(buf: np.ndarray | None) -> int | None:
    """A request's pointer to an optional array: NULL (None) when absent, the array's (non-zero)
    address when given, even when it is empty (numpy allocates a byte for it)."""
    return None if buf is None else int(buf.ctypes.data)


def _struct_addr(obj: ctypes.Structure | ctypes.Array[Any] | None) -> int:
    return 0 if obj is None else ctypes.addressof(obj)


def _uint_words(values: Any, name: str, dtype: type, bits: int) -> np.ndarray:
    """Validate a sequence of unsigned ints (index_map entries / mask words).

    The engine copies the words before it checks them; an ndarray's header is snapshotted
    with a view first, so another thread reshaping it cannot change the length checked here.
    """
    arr = np.asarray(values)
    if arr is values:
        arr = arr.view()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=dtype)
    if arr.dtype.kind in "fO" and not isinstance(values, np.ndarray):
        # Python ints numpy could not hold in one integer dtype (e.g. mask words >= 2**63
        # next to small ones): validate one by one.
        arr = np.array(
            [as_uint(v, f"{name}[{i}]", bits) for i, v in enumerate(values)], dtype=dtype
        )
    if arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must contain integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "i" and (arr < 0).any():
        i = int(np.argmax(arr < 0))
        raise ValueError(f"{name}[{i}] must be non-negative, got {int(arr[i])}")
    if bits == 32 and arr.dtype.itemsize > 4 and (arr > 0xFFFFFFFF).any():
        i = int(np.argmax(arr > 0xFFFFFFFF))
        raise ValueError(f"{name}[{i}] must fit in uint32, got {int(arr[i])}")
    return np.ascontiguousarray(arr, dtype=dtype)


class Stage(_HierarchyMixin):
    """One stage (instance): its prims, attribute columns, floors, ops and handles.

    Every mutating or data-producing method is an asynchronous enqueue returning an
    :class:`Operation` (or a handle wrapper whose ``.op`` is one); rejected enqueues do not
    raise, their ``wait()`` does. Use as a context manager, or call ``destroy()``.
    """

    def __init__(self, name: str | None = None, config: StageConfig | None = None) -> None:
        self._destroyed = True
        self._destroying = False
        # Called first by destroy(): extensions stop their per-stage workers (population).
        self._destroy_hooks: list[Callable[[], None]] = []
        # Sources of large writes (see _hold), by op id: kept alive until the engine reports
        # that the op no longer reads them, whatever happens to its Operation or op id.
        self._holds: dict[int, Any] = {}
        # Ids the engine reported before their hold was recorded (another thread took the
        # report between this thread's enqueue and its _hold). The lock makes "record or
        # match" atomic against "drop or remember".
        self._reported_early: set[int] = set()
        self._holds_lock = threading.Lock()
        # Attribute name -> token in this stage's dictionary (see _fastpath.token_of).
        self._token_cache: dict[str, int] = {}
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__}")
        if name is not None:
            as_native_str(name, "name", "Stage name", empty_ok=True)
        if config is not None and not isinstance(config, StageConfig):
            raise TypeError(f"config must be a StageConfig or None, got {type(config).__name__}")
        if _lib.forked_child():
            raise _lib.fork_error()
        workers = 0 if config is None else config.worker_count()
        raw = None if config is None else config.to_c()
        self._workers = None if config is None else config.workers
        self._id = call(native.CreateStage, name or "", workers, _struct_addr(raw))
        self.name = name
        _, model, policy, history_ordinals, history_bytes = call(
            native.StageConfig, self._id
        ).split(" ")
        self._path_lists = PathListBook(self)
        #: The runtime-default hierarchy model captured at creation: what ``RUNTIME_DEFAULT``
        #: names in ``compute_hierarchy`` and what a floor advance runs (the engine resolves it).
        self.hierarchy_model: int = int(model)
        #: The ordinal admission policy the stage captured at creation (its process lifetime's).
        self.ordinal_admission_policy = OrdinalAdmissionPolicy(int(policy))
        #: The window of versions the stage keeps for lagging snapshot reads: how many
        #: ordinals behind the floor ``latest(N)`` is served (0: none, the reference's
        #: answers) and their memory budget in bytes (``StageConfig.history_*``).
        self.history_ordinals: int = int(history_ordinals)
        self.history_bytes: int = int(history_bytes)
        self._destroyed = False

    @property
    def config(self) -> StageConfig:
        """The process configuration this stage was created in: the entries that started the
        process lifetime (missing settings stay ``None``; defaults are not filled in), read
        anew at each access, with this stage's own ``workers``."""
        addr = call(native.StageConfig, self._require_live("config")).split(" ")[0]
        return config_from_c(ConfigRaw.from_address(int(addr)), self._workers)

    # -- lifecycle ------------------------------------------------------------------------

    @staticmethod
    def get_version() -> tuple[int, int, int]:
        """The API version ``(major, minor, patch)``: the same as :func:`library_version`."""
        return library_version()

    def _label(self) -> str:
        """The stage in messages, as the engine names it: ``stage 1 "name"``."""
        return f'stage {getattr(self, "_id", 0)} "{getattr(self, "name", None) or ""}"'

    def _require_live(self, what: str = "Stage method") -> int:
        if self._destroyed:
            raise OvstageError(
                ErrorCode.INVALID_HANDLE,
                f"{what} called after Stage was destroyed ({self._label()})",
            )
        if _lib.forked_child():
            raise _lib.fork_error()
        return self._id

    def destroy(self) -> None:
        """Wait for pending ops and release everything the stage holds (idempotent).

        Exported tensors (``array()``/``dlpack()`` views) stay valid.
        """
        if self._destroyed:
            return
        self._destroying = True  # waiters in other threads may lose the stage from now on
        for hook in self._destroy_hooks:
            hook()
        call(native.DestroyStage, self._id)
        self._destroyed = True
        self._holds.clear()  # every op has finished
        self._reported_early.clear()

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.destroy()

    def _rejected(self, exc: OvstageError, kind: type[Operation] = Operation) -> Operation:
        return kind(self, exc.code, 0, message=exc.message)

    def _enqueue(
        self,
        what: str,
        fn: Any,
        *args: Any,
        kind: type[Operation] = Operation,
    ) -> Operation:
        """Call an enqueue function: a use after destroy raises, an engine rejection is
        returned as a rejected Operation (its ``wait()`` raises). ``kind`` is the Operation
        class to return (``CloneOperation`` for clones)."""
        sid = self._require_live(what)
        try:
            return kind._accepted(self, call(fn, sid, *args))
        except OvstageError as exc:
            return self._rejected(exc, kind)

    # -- ops ------------------------------------------------------------------------------

    def wait_op(self, op_id: int, timeout: int = TIMEOUT_INFINITE) -> tuple[int, list[int], int]:
        """Raw wait: ``(code, error_op_ids, lowest_pending_op_id)``; no raise, no release.

        ``code`` is ``OK``, ``TIMEOUT``, ``OP_FAILED`` when the op failed (``error_op_ids``
        then lists the failed ops of its chain, root cause first) or ``INVALID_ARGUMENT`` for
        an op id the stage does not track (0, unknown or released).
        """
        code, error_ids, lowest, _ = self._wait_op(op_id, timeout)
        return code, error_ids, lowest

    def _wait_op(self, op_id: int, timeout: int) -> tuple[int, list[int], int, str]:
        """``wait_op`` and the root cause's message ("" without a failure), which the engine
        returns with the wait: a ``destroy()`` in another thread forgets every op."""
        op = as_uint64(op_id, "op_id")
        timeout_ns = as_timeout(timeout)
        sid = self._require_live("wait_op")
        try:
            out = call(native.WaitOp, sid, op, 0)  # a finished op answers at once
            if timeout_ns and out.startswith("11 "):  # TIMEOUT: wait in interruptible slices
                out = wait_sliced(
                    lambda ns: call(native.WaitOp, sid, op, ns), timeout_ns, _op_finished
                )
        except OvstageError as exc:
            if self._destroying and exc.code == ErrorCode.INVALID_HANDLE:
                raise OvstageError(
                    exc.code,
                    f"op {op}: {self._label()} was destroyed while the op was waited for "
                    "(destroy() completes every pending op, or abandons it if a test gate "
                    "holds it)",
                ) from None
            raise
        code, lowest, ids, message = out.split(" ", 3)
        if code != "11" and self._holds:
            self._take_sources_done()  # a finished write's source is let go at once
        return int(code), [int(i) for i in ids.split(",")] if ids else [], int(lowest), message

    def wait_op_raw(self, op_id: int, timeout: int = TIMEOUT_INFINITE) -> int:
        """Raw wait returning only the status code."""
        return self.wait_op(op_id, timeout)[0]

    def release_op(self, op_id: int) -> int:
        """Stop tracking a complete op id; returns the status without raising: ``OK``,
        ``OP_FAILED`` for a pending op (it stays tracked: wait for it first),
        ``INVALID_HANDLE`` for an unknown or released id, ``INVALID_ARGUMENT`` for 0."""
        op = as_uint64(op_id, "op_id")
        return int(call(native.ReleaseOp, self._require_live("release_op"), op))

    def _hold(self, op_id: int, source: Any) -> None:
        """Keep ``source`` alive while op ``op_id`` may read it: a write with an entry of
        ``DEFER_COPY_BYTES`` or more copies it in the op. The engine reports such ops once
        they no longer read their sources (``TakeSourcesDone``); taking the report at every
        hold bounds the table by the large writes still pending."""
        with self._holds_lock:
            if op_id in self._reported_early:
                self._reported_early.discard(op_id)  # finished already
            else:
                self._holds[op_id] = source
        self._take_sources_done()

    def _take_sources_done(self) -> None:
        """Drop the holds of the writes the engine reports finished (the only way a hold goes:
        waits, releases and detaches of the op id do not affect it)."""
        try:
            done = call(native.TakeSourcesDone, self._id)
        except OvstageError:
            return  # destroyed meanwhile: destroy() clears the table
        if not done:
            return
        holds, dropped = self._holds, []
        with self._holds_lock:
            for finished in done.split(","):
                op_id = int(finished)
                source = holds.pop(op_id, None)
                if source is None:
                    self._reported_early.add(op_id)
                else:
                    dropped.append(source)
        del dropped  # sources (and their finalizers) go outside the lock

    def _detach_op(self, op_id: int) -> None:
        """Nobody waits for ``op_id`` any more: the engine forgets it once it completes."""
        if not self._destroyed:
            with contextlib.suppress(OvstageError):
                call(native.DetachOp, self._id, op_id)

    def _release_op_checked(self, op_id: int) -> None:
        # Operation.wait's release: op_id is an engine-minted int (no argument checks).
        code = call(native.ReleaseOp, self._require_live("release_op"), op_id)
        if code != ErrorCode.OK:
            raise OvstageError(code, f"release_op({op_id}) failed after a successful wait")

    def _release_op_quietly(self, op_id: int) -> None:
        with contextlib.suppress(OvstageError):
            self.release_op(op_id)

    def _last_op_error(self, op_id: int) -> str:
        if self._destroyed:
            return ""
        return call(native.GetLastOpError, self._id, op_id)

    # -- queries --------------------------------------------------------------------------

    def query(
        self, filter: Filter | None = None, attrs: Sequence[int | str] | None = None
    ) -> Query:
        """Enqueue a filter query over the prims the stage holds (committed state).

        ``attrs`` scopes attribute discovery (see ``Query.result()``); the handle is usable at
        once by reads and writes, which run after the query.
        """
        if filter is not None and not isinstance(filter, Filter):
            raise TypeError(f"filter must be a Filter or None, got {type(filter).__name__}")
        predicates = filter._validated() if filter is not None else []
        if isinstance(attrs, (str, int)):
            raise TypeError(
                f"attrs must be a sequence of attribute tokens or names, got {type(attrs).__name__}"
            )
        self._require_live("query")
        try:
            filt, keep = self._encode_filter(predicates)
            tokens = array.array("Q")
            for i, a in enumerate(attrs or ()):
                tokens.append(self._token(as_attribute(a, f"attrs[{i}]"), f"attrs[{i}]"))
        except OvstageError as exc:
            return Query(self, 0, self._rejected(exc))
        handle = self._enqueue_handle(
            Query,
            "query",
            native.Query,
            _struct_addr(filt),
            _addr(tokens),
            len(tokens),
            attrs is not None,
        )
        del keep  # the engine copied the values
        return handle

    def _encode_filter(self, predicates: list[Predicate]) -> tuple[FilterRaw | None, list[Any]]:
        """The predicates as an ``ovstage_filter_t`` (None without predicates: every prim), and
        the arrays it points into."""
        if not predicates:
            return None, []
        preds = (PredicateRaw * len(predicates))()
        keep: list[Any] = [preds]
        for i, p in enumerate(predicates):
            attr = self._token(p.attribute, f"filter predicate {i} attribute")
            values = (OvxString * max(1, len(p.values)))()
            for j, v in enumerate(p.values):
                problem = string_problem(v, "Value", empty_ok=True)
                if problem is not None:
                    raise OvstageError(
                        ErrorCode.INVALID_ARGUMENT, f"filter predicate {i} value {j}: {problem}"
                    )
                data = v.encode("utf-8")
                values[j] = OvxString(data, len(data))
                keep.append(data)
            keep.append(values)
            preds[i] = PredicateRaw(
                OvxStringOrToken(attr), int(p.op), ctypes.addressof(values), len(p.values)
            )
        return FilterRaw(ctypes.addressof(preds), len(predicates)), keep

    def _tokens(self, values: Sequence[int | str], name: str) -> array.array[int]:
        """Tokens of attribute arguments ``name[i]`` as a uint64 array (see ``_token``)."""
        return array.array("Q", (self._token(v, f"{name}[{i}]") for i, v in enumerate(values)))

    def _token(self, attr: int | str, what: str) -> int:
        """A token for an attribute argument: strings are interned; token 0, or an empty,
        NUL-containing or non-UTF-8 name raises OvstageError(INVALID_ARGUMENT) naming the
        argument (enqueue methods turn it into a rejected Operation)."""
        if attr.__class__ is str:
            cached = self._token_cache.get(attr)  # a name interned before is valid
            if cached:
                return cached
        problem = attribute_problem(attr)
        if problem is not None:
            raise OvstageError(ErrorCode.INVALID_ARGUMENT, f"{what}: {problem}")
        if isinstance(attr, int):
            return attr
        try:
            return call(native.InternToken, self._id, attr)
        except OvxError as exc:
            raise OvstageError(ErrorCode.INVALID_ARGUMENT, f"{what}: {exc.message}") from None

    def _prims_holding(self, attribute: str, semantic: int) -> list[int]:
        """Path ids of the prims whose committed state holds ``attribute`` in a column of
        ``semantic`` (synchronous; used by population for STRING columns)."""
        token = self._token(attribute, "attribute")
        words = call(native.PrimsHolding, self._require_live("_prims_holding"), token, semantic)
        return [int(w) for w in words.split()]

    def fetch_query_result(
        self, query: Query | int, timeout: int = TIMEOUT_INFINITE
    ) -> QueryResult:
        """The query's discovered attributes and prim count (waits for the query)."""
        handle = _handle_of(query, Query, "query")
        timeout_ns = as_timeout(timeout)
        addr = self._fetch_when_ready(
            "fetch_query_result", native.FetchQueryResult, "query", handle, timeout_ns
        )
        raw = QueryResultRaw.from_address(addr)
        try:
            attrs = raw.attributes[: raw.attribute_count] if raw.attribute_count else []
            return QueryResult(attrs, int(raw.total_prim_count), handle)
        finally:
            call(native.ReleaseQueryResult, raw.query_result_id)

    def get_path_dictionary(self) -> StageDictionary:
        """A reference to this stage's own path dictionary (the same on every call); wrap the
        stage in :class:`PathDictionary` to use it."""
        sid = self._require_live("get_path_dictionary")
        return StageDictionary(sid, call(native.DictionaryNumber, sid))

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
            query._drop_op()
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
        attribute_mode: AttributeMode | int = AttributeMode.REJECT,
        index_map: Sequence[int] | None = None,
        mask: Sequence[int] | None = None,
        count: int | None = None,
        cuda_event: int | None = None,
        cuda_stream: int | None = None,
        device: Any = None,
        placement: Placement | None = None,
    ) -> Operation:
        """Enqueue a write of ``tensors`` to ``attribute`` on the query's prims at ``ordinal``.

        ``index_map`` gathers payload rows, ``mask`` selects logical elements, ``count``
        addresses the leading prims of the query. ``is_array=True`` writes ragged rows: one
        tensor of packed uniform rows, or a list with one tensor per row.

        ``attribute_mode=AttributeMode.FORCE`` replaces the schema of target prims that carry
        the attribute with another one (at this ordinal); ``REJECT`` (the default) refuses
        such a write.

        As in the reference, the source must stay unchanged until the op completes. Payloads
        below 1 MiB are in fact copied before this returns (the caller may reuse its buffer at
        once); larger ones are copied by the op on a worker, so writes submitted ahead copy in
        parallel. The stage keeps such a source alive until the op completes.

        ``placement`` (a ``Placement``) picks the device copy this write makes current; the
        payload is copied there. It never binds the column: a later write placed elsewhere is
        an ordinary update. Without one the write goes where its source tensor lives (a CUDA
        tensor's device, else the host). ``device`` (ovstage-go: ``"cpu"``, ``"cuda:N"``, a
        torch device ...) is a shorthand for ``placement=Placement(type, id)``; give one or
        the other. ``cuda_event`` / ``cuda_stream`` (``ovstage_cuda_sync_t``) are waited for
        before the payload is read; they need a GPU (``NOT_SUPPORTED`` naming the reason
        otherwise).
        """
        if (
            tensors.__class__ is _NDARRAY
            and is_array is False
            and index_map is mask is count is cuda_event is cuda_stream is device is None  # type: ignore[comparison-overlap]
            and placement is None
            and prim_mode is PrimMode.UPSERT
            and (semantic.__class__ is AttributeSemantic or semantic.__class__ is int)
            and -(1 << 31) <= semantic < (1 << 31)
            and attribute_mode is AttributeMode.REJECT
            and ordinal.__class__ is int
            and 0 <= ordinal <= _UINT64_MAX
            and not self._destroyed
        ):
            fast = _fastpath.write(self, query, attribute, ordinal, tensors, int(semantic))
            if fast is not None:
                return fast
        qh = _handle_of(query, Query, "query")
        ordinal = as_uint64(ordinal, "ordinal")
        mode = as_enum(prim_mode, PrimMode, "prim_mode")
        stream, event = _cuda_sync(cuda_event, cuda_stream)
        placement = as_placement(placement)
        device_type, device_id = parse_device(device)
        if placement is not None and device is not None:
            raise TypeError("pass either placement= or device= (its shorthand), not both")
        if placement is None and (device_type, device_id) != (0, 0):
            placement = Placement(device_type, device_id)
        # the sync descriptor goes to the engine below, not through the batch-entry guards
        desc = WriteDesc(
            attribute,
            tensors,
            is_array,
            index_map,
            mask,
            count,
            None,
            None,
            semantic,
            attribute_mode,
        )
        payload = _Payload.of(desc, "")
        self._require_live("write_attribute")
        if payload.rejection is not None:
            return Operation(self, *payload.rejection)
        attr = payload.attribute(self)
        data = payload.data(stream, event)
        raw_placement = None if placement is None else placement._raw()
        op = self._enqueue(
            "write_attribute",
            native.WriteAttribute,
            qh,
            ctypes.addressof(attr),
            ordinal,
            ctypes.addressof(data),
            int(mode),
            _struct_addr(raw_placement),
        )
        if op.ok and payload.nbytes() >= _fastpath.DEFER_COPY_BYTES:
            self._hold(op._op_id, payload)
        return op

    def write_attributes(
        self,
        query: Query | int,
        writes: Sequence[WriteDesc],
        ordinal: int,
        *,
        prim_mode: PrimMode | int = PrimMode.UPSERT,
        placement: Placement | None = None,
    ) -> Operation:
        """Enqueue several writes at one ordinal as one op.

        Entries must be :class:`WriteDesc`. One attribute may appear in several entries that
        agree on its schema and write disjoint prims (one cell twice is ``INVALID_ARGUMENT``);
        an empty batch is accepted. The whole batch is validated before anything is queued,
        and admitted as a whole (floors, ordinal admission, schemas) before its first entry
        applies. Like the reference it is not atomic: if an entry fails while applying, earlier
        entries stay applied. Each entry's ``cuda_event`` / ``cuda_stream`` is waited for
        before that entry's payload is read (a GPU is needed, ``NOT_SUPPORTED`` otherwise).
        ``placement`` applies to every entry (see ``write_attribute``); with no device, a default
        stream and CUDA sources on several devices it is ``INVALID_ARGUMENT`` (one event cannot
        cover them).
        """
        qh = _handle_of(query, Query, "query")
        ordinal = as_uint64(ordinal, "ordinal")
        mode = as_enum(prim_mode, PrimMode, "prim_mode")
        placement = as_placement(placement)
        if isinstance(writes, WriteDesc) or not isinstance(writes, Sequence):
            raise TypeError(f"writes must be a sequence of WriteDesc, got {type(writes).__name__}")
        if placement is None and writes and not self._destroyed:
            fast = self._write_numpy_batch(qh, writes, ordinal, int(mode))
            if fast is not None:
                return fast
        payloads = []
        for i, desc in enumerate(writes):
            if not isinstance(desc, WriteDesc):
                raise TypeError(f"writes[{i}] must be a WriteDesc, got {type(desc).__name__}")
            payloads.append(_Payload.of(desc, f"writes[{i}]: "))
        self._require_live("write_attributes")
        raw_placement = None if placement is None else placement._raw()
        entries = (AttributeWrite * max(1, len(payloads)))()
        for i, payload in enumerate(payloads):
            if payload.rejection is not None:
                return Operation(self, *payload.rejection)
            entries[i] = AttributeWrite(
                payload.attribute(self), payload.data(payload.stream, payload.event)
            )
        op = self._enqueue(
            "write_attributes",
            native.WriteAttributes,
            qh,
            ctypes.addressof(entries),
            len(payloads),
            ordinal,
            int(mode),
            _struct_addr(raw_placement),
        )
        if op.ok and any(p.nbytes() >= _fastpath.DEFER_COPY_BYTES for p in payloads):
            self._hold(op._op_id, payloads)
        return op

    def _write_numpy_batch(
        self, qh: int, writes: Sequence[WriteDesc], ordinal: int, mode: int
    ) -> Operation | None:
        """``write_attributes`` through the fast path when every entry is one numpy array with
        every other option at its default (None: take the general path)."""
        arrays = []
        for desc in writes:
            if not (
                desc.__class__ is WriteDesc
                and desc.tensors.__class__ is _NDARRAY
                and desc.is_array is False
                and desc.index_map is desc.mask is desc.count is None  # type: ignore[comparison-overlap]
                and desc.cuda_event is desc.cuda_stream is None
                and (
                    desc.semantic is AttributeSemantic.NONE
                    or (desc.semantic.__class__ is int and not desc.semantic)
                )
                and desc.attribute_mode is AttributeMode.REJECT
            ):
                return None
            arrays.append((desc.attribute, desc.tensors))
        return _fastpath.write_batch(self, qh, arrays, ordinal, mode)

    def delete_attributes(
        self, query: Query | int, attributes: Sequence[int | str], ordinal: int
    ) -> Operation:
        """Enqueue tombstones at ``ordinal`` for ``attributes`` on the query's prims; an empty
        list deletes the whole prims (all their attributes; they stop existing)."""
        qh = _handle_of(query, Query, "query")
        ordinal = as_uint64(ordinal, "ordinal")
        if isinstance(attributes, (str, int)) or attributes is None:
            kind = type(attributes).__name__
            raise TypeError(
                f"attributes must be a sequence of attribute tokens or names, got {kind}"
            )
        values = [as_attribute(a, f"attributes[{i}]") for i, a in enumerate(attributes)]
        self._require_live("delete_attributes")
        try:
            tokens = self._tokens(values, "attributes")
        except OvstageError as exc:
            return self._rejected(exc)
        attrs = (OvxStringOrToken * max(1, len(tokens)))(*(OvxStringOrToken(t) for t in tokens))
        return self._enqueue(
            "delete_attributes",
            native.DeleteAttributes,
            qh,
            ctypes.addressof(attrs),
            len(tokens),
            ordinal,
        )

    # -- clone --------------------------------------------------------------------------

    def clone_async(
        self, source_path: str, target_paths: Sequence[str], ordinal: int
    ) -> CloneOperation:
        """Enqueue a copy of ``source_path``'s subtree to every target (one mutation at
        ``ordinal``); ``target_paths`` may be empty (the clone then only checks admission).
        Below an absent target root, prims that exist are merged into. A missing source, an
        existing target root or a merge conflict fails the op, and nothing is cloned."""
        source = as_str(source_path, "source_path")
        if isinstance(target_paths, str):
            raise TypeError("target_paths must be a sequence of str, not a single str")
        texts = [
            as_str(t, f"target_paths[{i}]")
            for i, t in enumerate(as_sequence(target_paths, "target_paths", "str"))
        ]
        ordinal = as_uint64(ordinal, "ordinal")
        self._require_live("clone")
        named = [("source_path", source)] + [(f"target_paths[{i}]", t) for i, t in enumerate(texts)]
        for name, text in named:
            problem = string_problem(text, "Path")
            if problem is not None:
                return CloneOperation(
                    self, ErrorCode.INVALID_ARGUMENT, 0, message=f"{name}: {problem}"
                )
        source_c = ovx_string(source.encode("utf-8"))
        targets = [t.encode("utf-8") for t in texts]
        targets_c = (OvxString * max(1, len(targets)))(*(ovx_string(t) for t in targets))
        op = self._enqueue(
            "clone",
            native.Clone,
            ctypes.addressof(source_c),
            ctypes.addressof(targets_c) if targets else 0,
            len(targets),
            ordinal,
            kind=CloneOperation,
        )
        assert isinstance(op, CloneOperation)
        return op

    def clone(self, source_path: str, target_paths: Sequence[str], ordinal: int) -> CloneResult:
        """Clone, wait and return the report (raises OvstageError on failure: ``OP_FAILED``
        with the clone's message)."""
        return self.clone_async(source_path, target_paths, ordinal).wait().result()

    def fetch_clone_result(
        self, op_or_id: CloneOperation | int, timeout: int = TIMEOUT_INFINITE
    ) -> CloneResult:
        """The report of a clone op that is still tracked (waits up to ``timeout`` ns).

        Raises ``OvstageError`` with the clone's own code when it failed (``NOT_FOUND``,
        ``PRIM_NOT_FOUND``, ``WRITE_FLOOR_VIOLATION``, ``OP_FAILED`` ...), ``TIMEOUT`` while it
        is pending (it stays waitable), ``INVALID_HANDLE`` for an id that is no tracked clone
        op (a ``CloneOperation`` is released by its ``wait()``; its ``result()`` keeps the
        report)."""
        if isinstance(op_or_id, CloneOperation):
            op_id = op_or_id._op_id
        elif isinstance(op_or_id, Operation):
            raise TypeError(
                f"op_or_id must be a CloneOperation or an op id, got {type(op_or_id).__name__}"
            )
        else:
            op_id = as_uint64(op_or_id, "op_or_id")
        timeout_ns = as_timeout(timeout)
        sid = self._require_live("fetch_clone_result")
        raw = CloneResultRaw()
        addr = ctypes.addressof(raw)
        try:
            call(native.FetchCloneResult, sid, op_id, 0, addr)
        except OvstageError as exc:
            if exc.code != ErrorCode.TIMEOUT or timeout_ns == 0:
                raise
            # Wait in interruptible slices, then fetch (TIMEOUT again once the deadline passed).
            wait_sliced(lambda ns: call(native.WaitOp, sid, op_id, ns), timeout_ns, _op_finished)
            call(native.FetchCloneResult, sid, op_id, 0, addr)
        return CloneResult(
            int(raw.prims_cloned),
            int(raw.target_count),
            int(raw.source_prim_count),
            int(raw.ordinal),
        )

    # -- map / unmap ----------------------------------------------------------------------

    def map_attribute(
        self,
        query: Query | int,
        attribute: int | str,
        ordinal: int,
        *,
        prim_mode: PrimMode | int = PrimMode.UPSERT,
        dtype: DLDataType | None = None,
        semantic: int = 0,
        element_sizes: Sequence[int] | None = None,
        attribute_mode: AttributeMode | int = AttributeMode.REJECT,
        placement: Placement | None = None,
    ) -> Map:
        """Enqueue a map session: writable buffers for the query's prims, committed at
        ``ordinal`` by ``unmap_group``/``unmap_attribute``. ``dtype`` is needed only to create
        the attribute; ``element_sizes`` (one per prim) maps a ragged attribute.
        ``attribute_mode=AttributeMode.FORCE`` (needs ``dtype``) replaces the schema of the
        prims each committed group covers, where it differs. A CUDA ``placement`` stages on
        that device (fixed-size attributes only) and its commits make the device copy current;
        without one the session stages in host memory."""
        qh = _handle_of(query, Query, "query")
        placement = as_placement(placement)
        attr = as_attribute(attribute)
        ordinal = as_uint64(ordinal, "ordinal")
        mode = as_enum(prim_mode, PrimMode, "prim_mode")
        sem = as_int32(semantic, "semantic")
        attr_mode = _attribute_mode(attribute_mode, "attribute_mode")
        if dtype is not None and not isinstance(dtype, DLDataType):
            raise TypeError(f"dtype must be a DLDataType or None, got {type(dtype).__name__}")
        sizes = None
        if element_sizes is not None:
            if isinstance(element_sizes, (str, int)):
                raise TypeError(
                    f"element_sizes must be a sequence of ints, got {type(element_sizes).__name__}"
                )
            sizes = array.array(
                "Q", (as_size_t(n, f"element_sizes[{i}]") for i, n in enumerate(element_sizes))
            )
        self._require_live("map_attribute")
        problem = attribute_problem(attr)
        if problem is not None:
            rejected = Operation(
                self, ErrorCode.INVALID_ARGUMENT, 0, message=f"attribute: {problem}"
            )
            return Map(self, 0, rejected)
        name = None if isinstance(attr, int) else attr.encode("utf-8")
        desc = MapDesc(
            OvxStringOrToken(attr) if name is None else OvxStringOrToken(0, ovx_string(name)),
            DLDataType(dtype.code, dtype.bits, dtype.lanes) if dtype is not None else DLDataType(),
            sem,
            int(mode),
            int(attr_mode),
        )
        raw_placement = None if placement is None else placement._raw()
        # element_sizes given but empty is not "no element_sizes": its pointer stays non-NULL.
        sizes_addr = 0 if sizes is None else sizes.buffer_info()[0] or _EMPTY_SIZES_ADDR
        return self._enqueue_handle(
            Map,
            "map_attribute",
            native.MapAttribute,
            qh,
            ctypes.addressof(desc),
            ordinal,
            sizes_addr,
            0 if sizes is None else len(sizes),
            _struct_addr(raw_placement),
        )

    def fetch_map_next(
        self, mapping: Map | int, timeout: int = TIMEOUT_INFINITE
    ) -> MapGroup | None:
        """The session's next writable group, or None after the last."""
        mh = _handle_of(mapping, Map, "mapping")
        fetched = self._fetch_next("fetch_map_next", native.FetchMapNext, "map", mh, timeout)
        if fetched is None:
            return None
        addr, group_id = fetched.split(" ")
        session = mapping if isinstance(mapping, Map) else None
        group = MapGroup._from_native(int(addr), int(group_id), self, session)
        if session is not None:
            session._groups.append(group)
        return group

    def unmap_group(
        self,
        mapping: Map | int,
        group: MapGroup,
        cuda_event: int | None = None,
        cuda_stream: int | None = None,
    ) -> Operation:
        """Enqueue the commit of one fetched group at the session's ordinal.

        The commit checks again what a write checks (prim mode, layout, floors); when it fails
        while executing, the session becomes terminal: nothing more of it commits, and the
        final ``unmap_attribute`` returns that failure. ``cuda_event``/``cuda_stream`` are the
        write-done sync (the caller's kernel filled the buffer): honoured by sessions placed on a
        CUDA device; on a host session a non-zero one fails the commit when it executes
        (``OP_FAILED``). The group is unusable once the commit is accepted.
        """
        mh = _handle_of(mapping, Map, "mapping")
        if not isinstance(group, MapGroup):
            raise TypeError(f"group must be a MapGroup, got {type(group).__name__}")
        stream, event = _cuda_sync(cuda_event, cuda_stream)
        gid = group._group_id()
        group._mark_released()  # before the call: no other thread uses it from now on
        op = self._enqueue("unmap_group", native.UnmapGroup, mh, gid, stream, event)
        if not op.ok:
            group._released = False  # a rejected commit leaves the group usable
        return op

    def unmap_attribute(
        self,
        mapping: Map | int,
        cuda_event: int | None = None,
        cuda_stream: int | None = None,
    ) -> Operation:
        """Enqueue the commit of every group no ``unmap_group`` committed, and end the session.

        Once accepted it consumes the handle, even when it then fails; a terminal session
        closes with its remembered failure and writes nothing. With nothing left to commit it
        only closes the session (the sync is not looked at); otherwise ``cuda_event``/
        ``cuda_stream`` behave as in :meth:`unmap_group`.
        """
        mh = _handle_of(mapping, Map, "mapping")
        stream, event = _cuda_sync(cuda_event, cuda_stream)
        op = self._enqueue("unmap_attribute", native.UnmapAttribute, mh, stream, event)
        if op.ok and isinstance(mapping, Map):
            mapping._released = True
            mapping._drop_op()
            for group in mapping._groups:
                group._mark_released()
        return op

    # -- floors ---------------------------------------------------------------------------

    def advance_write_floor(
        self,
        ordinal: int,
        scope: Scope | int = Scope.ALL,
        attributes: Sequence[int | str] | None = None,
    ) -> Operation:
        """Enqueue sealing of every ordinal <= ``ordinal`` (floors never move down)."""
        if (
            scope is Scope.ALL
            and attributes is None
            and ordinal.__class__ is int
            and 0 <= ordinal <= _UINT64_MAX
        ):
            fast = _fastpath.advance_write_floor(self, ordinal)
            if fast is not None:
                return fast
        ordinal = as_uint64(ordinal, "ordinal")
        sc = as_enum(scope, Scope, "scope")
        if isinstance(attributes, (str, int)):
            kind = type(attributes).__name__
            raise TypeError(
                f"attributes must be a sequence of attribute tokens or names, got {kind}"
            )
        values = [as_attribute(a, f"attributes[{i}]") for i, a in enumerate(attributes or ())]
        self._require_live("advance_write_floor")
        try:
            attrs = self._tokens(values, "attributes")
        except OvstageError as exc:
            return self._rejected(exc)
        desc = WriteFloorDesc(ordinal, int(sc), _addr(attrs), len(attrs))
        return self._enqueue(
            "advance_write_floor", native.AdvanceWriteFloor, ctypes.addressof(desc)
        )

    def get_oldest_preserved_ordinal(self) -> OrdinalQuery:
        """Enqueue a query of the retention frontier (change membership is exact at or
        above it)."""
        return self._ordinal_query("get_oldest_preserved_ordinal", native.GetOldestPreservedOrdinal)

    def get_attribute_write_floor(self, attribute: int | str | None = None) -> OrdinalQuery:
        """Enqueue a query of ``attribute``'s effective write floor; ``None`` asks for the
        global floor (the minimum over known attributes). A bad attribute (token 0, an empty
        name ...) gives a rejected handle."""
        token = 0
        if attribute is not None:
            value = as_attribute(attribute)
            self._require_live("get_attribute_write_floor")
            try:
                token = self._token(value, "attribute")
            except OvstageError as exc:
                if value == 0:
                    exc = OvstageError(exc.code, f"{exc.message} (None asks for the global floor)")
                return OrdinalQuery(self, 0, self._rejected(exc))
        return self._ordinal_query(
            "get_attribute_write_floor", native.GetAttributeWriteFloor, token
        )

    def _ordinal_query(self, what: str, fn: Any, *args: Any) -> OrdinalQuery:
        return self._enqueue_handle(OrdinalQuery, what, fn, *args)

    def _enqueue_handle(self, cls: type[H], what: str, fn: Any, *args: Any) -> H:
        """Call an enqueue that reserves a handle (the facade returns "<handle> <op id>"): a
        use after destroy raises, an engine rejection gives a handle 0 with a rejected op."""
        sid = self._require_live(what)
        try:
            handle, op_id = call(fn, sid, *args).split(" ")
        except OvstageError as exc:
            return cls(self, 0, self._rejected(exc))
        return cls(self, int(handle), Operation._accepted(self, int(op_id)))

    def _fetch_next(self, what: str, fn: Any, kind: str, handle: int, timeout: int) -> Any:
        """What an iterating fetch returns for the next group, or None after the last one (the
        facade answers 0 / "" there: END_OF_ITERATION ends every read and map session)."""
        timeout_ns = as_timeout(timeout)
        return self._fetch_when_ready(what, fn, kind, handle, timeout_ns) or None

    def _fetch_when_ready(self, what: str, fn: Any, kind: str, handle: int, timeout_ns: int) -> Any:
        """``fn(stage, handle, timeout_ns)``: a fetch of the result of a ``kind`` handle, which
        raises ``OvstageError(TIMEOUT)`` while there is none, made interruptible by Ctrl-C.

        A ready result costs one poll. Otherwise the wait happens in slices in AwaitHandle,
        which hands out nothing, and the fetch follows with timeout 0 (raising TIMEOUT itself
        if the deadline passed first): a Ctrl-C never lands between a fetch that handed out a
        group and its caller, so the interrupted handle keeps everything for the next call.
        """
        sid = self._require_live(what)
        try:
            return call(fn, sid, handle, 0)
        except OvstageError as exc:
            if exc.code != ErrorCode.TIMEOUT or timeout_ns == 0:
                raise
        wait_sliced(lambda ns: call(native.AwaitHandle, sid, kind, handle, ns), timeout_ns)
        return call(fn, sid, handle, 0)

    def fetch_ordinal(
        self, ordinal_query: OrdinalQuery | int, timeout: int = TIMEOUT_INFINITE
    ) -> int:
        """The value of an ordinal query (TIMEOUT raises OvstageError)."""
        handle = _handle_of(ordinal_query, OrdinalQuery, "ordinal_query")
        timeout_ns = as_timeout(timeout)
        ordinal: int = self._fetch_when_ready(
            "fetch_ordinal", native.FetchOrdinal, "ordinal_query", handle, timeout_ns
        )
        return ordinal

    def release_ordinal_query(self, ordinal_query: OrdinalQuery | int) -> Operation:
        """Enqueue the release of an ordinal query."""
        handle = _handle_of(ordinal_query, OrdinalQuery, "ordinal_query")
        op = self._enqueue("release_ordinal_query", native.ReleaseOrdinalQuery, handle)
        if op.ok and isinstance(ordinal_query, OrdinalQuery):
            ordinal_query._released = True
            ordinal_query._drop_op()
        return op

    # -- reads ----------------------------------------------------------------------------

    def read_attributes(
        self,
        query: Query | int,
        attrs: Sequence[int | str],
        ordinal_range: OrdinalRange,
        *,
        placement: Placement | None = None,
    ) -> Read:
        """Enqueue a read of ``attrs`` (tokens, or strings interned here) over the query.

        With a ``placement`` the groups point at the copies on its device: a column current
        there is served as is, any other is copied there for the groups (freed with them).
        Without one each column is served where its current copy lives."""
        if placement is None and ordinal_range.__class__ is OrdinalRange:
            rd = _fastpath.read(
                self, query, attrs, ordinal_range.start_ordinal, ordinal_range.end_ordinal
            )
            if rd is not None:
                return rd
        qh = _handle_of(query, Query, "query")
        placement = as_placement(placement)
        if not isinstance(ordinal_range, OrdinalRange):
            raise TypeError(
                f"ordinal_range must be an OrdinalRange, got {type(ordinal_range).__name__}"
            )
        rng = ordinal_range._raw()
        if isinstance(attrs, int):
            raise TypeError("attrs must be a sequence of attribute tokens or names, got int")
        items = as_sequence(attrs, "attrs", "attribute tokens or names")
        values = [as_attribute(a, f"attrs[{i}]") for i, a in enumerate(items)]
        self._require_live("read_attributes")
        raw_placement = None if placement is None else placement._raw()
        try:
            tokens = self._tokens(values, "attrs")
        except OvstageError as exc:
            return Read(self, 0, self._rejected(exc))
        return self._enqueue_handle(
            Read,
            "read_attributes",
            native.ReadAttributes,
            qh,
            _addr(tokens),
            len(tokens),
            ctypes.addressof(rng),
            _struct_addr(raw_placement),
        )

    def fetch_read_next(
        self, read: Read | int, timeout: int = TIMEOUT_INFINITE
    ) -> ReadGroup | None:
        """The read's next group, or None after the last one."""
        if read.__class__ is Read and timeout.__class__ is int and 0 <= timeout <= _UINT64_MAX:
            addr = _fastpath.fetch_read(self, read)
            if addr is not None:
                return ReadGroup(ReadGroupRaw.from_address(addr), self) if addr else None
        rh = _handle_of(read, Read, "read")
        addr = self._fetch_next("fetch_read_next", native.FetchReadNext, "read", rh, timeout)
        if addr is None:
            return None
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
            read._drop_op()
        return op

    def _end_read(self, read: Read) -> bool:
        """Release ``read`` and wait for the release (leaving its ``with`` block normally)
        in one native call; False: nothing was done, take ``release().wait()``."""
        return _fastpath.release_read(self, read)

    def _export_group_tensor(self, group_id: int, index: int, readonly: bool) -> int:
        return call(
            native.ExportGroupTensor,
            self._require_live("ReadGroup.dlpack"),
            group_id,
            index,
            readonly,
        )

    def _diagnostics(self) -> dict[str, int]:
        """Live engine object counts (for leak tests); ``buffers`` count the whole process,
        ``path_lists`` this stage's dictionary, ``version_bytes`` the memory of the history
        window's versions (benchmarks)."""
        keys = (
            "ops",
            "queries",
            "reads",
            "groups",
            "columns",
            "buffers",
            "ordinal_queries",
            "maps",
            "path_lists",
            "version_bytes",
        )
        values = call(native.Diagnostics, self._require_live("diagnostics")).split(" ")
        return dict(zip(keys, (int(v) for v in values), strict=False))


def _sparsity(
    index_map: Any, mask: Any, count: Any, label: str = ""
) -> tuple[int, np.ndarray | None, np.ndarray | None]:
    """The sparse addressing of a write as the C request holds it: ``(count, index_map,
    mask)``. Only what the conversion from Python needs is checked here (``label`` prefixes
    the argument names, ``writes[i]: `` for a batch entry); the rules of sparse writes
    themselves (index_map and mask exclusive, either needs a count) are the engine's, which
    reports them as ValueError too.

    - ``count=None`` is the whole query, so ``count=0`` (the C encoding of "whole query")
      is refused rather than silently meaning something else;
    - ``count`` defaults to ``len(index_map)``;
    - the C request gives ``index_map`` and ``mask`` no length (they are read for ``count``
      entries and ``ceil(count/64)`` words), so a count beyond either array is refused here.
    """
    n = None
    if count is not None:
        n = as_uint32(count, f"{label}count")
        if n == 0:
            raise ValueError(f"{label}count must be non-zero (omit it to write the whole query)")
    imap = None
    if index_map is not None:
        imap = _uint_words(index_map, f"{label}index_map", np.uint32, 32)
        if n is None:
            n = len(imap)
        if n > len(imap):
            raise ValueError(f"{label}count {n} exceeds len(index_map) {len(imap)}")
    words = None
    if mask is not None:
        words = _uint_words(mask, f"{label}mask", np.uint64, 64)
        if n is not None and n > 64 * len(words):
            raise ValueError(f"{label}count {n} exceeds 64 * len(mask) = {64 * len(words)}")
    return n or 0, imap, words


def _cuda_sync(cuda_event: Any, cuda_stream: Any, label: str = "") -> tuple[int, int]:
    """A CUDA sync ``(stream, event)`` (ovstage_cuda_sync_t) of a write, batch entry or unmap:
    each ``None`` (0) or a uint64, the event checked first."""
    event = 0 if cuda_event is None else as_uint64(cuda_event, f"{label}cuda_event")
    stream = 0 if cuda_stream is None else as_uint64(cuda_stream, f"{label}cuda_stream")
    return stream, event


@dataclass
class WriteDesc:
    """One entry of :meth:`Stage.write_attributes` (the same arguments as ``write_attribute``)."""

    attribute: int | str
    tensors: Any
    is_array: bool
    index_map: Sequence[int] | None = None
    mask: Sequence[int] | None = None
    count: int | None = None
    cuda_event: int | None = None
    cuda_stream: int | None = None
    semantic: int = AttributeSemantic.NONE
    attribute_mode: AttributeMode | int = AttributeMode.REJECT


def _attribute_mode(value: object, name: str) -> int:
    """Validate an ``attribute_mode`` argument (REJECT or FORCE)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an AttributeMode, got bool")
    return int(as_enum(value, AttributeMode, name))


# The non-NULL pointer of an empty element_sizes array (an empty array has no address of its own).
_EMPTY_SIZES = (ctypes.c_size_t * 1)()
_EMPTY_SIZES_ADDR = ctypes.addressof(_EMPTY_SIZES)


@dataclass
class _Payload:
    """A write's arguments after the Python-side conversion, ready to be laid out as the C
    request (``ovx_string_or_token_t`` attribute, ``ovstage_write_data_t`` data).

    It owns everything the request points into (the tensors, their array, the index map, the
    mask, the attribute's bytes): keep it for the native call, and for a large write until the
    engine no longer reads the payload (``Stage._hold``).
    """

    attr: int | str
    is_array: bool
    semantic: int
    attribute_mode: int
    count: int
    index_map: np.ndarray | None
    mask: np.ndarray | None
    tensors: list[DLTensor]
    array: Any
    rejection: tuple[int, int, Any, str] | None = None
    name: bytes = b""
    # The entry's own CUDA sync (batch entries; write_attribute passes its sync to data()).
    stream: int = 0
    event: int = 0

    @classmethod
    def of(cls, desc: WriteDesc, label: str) -> _Payload:
        attr = as_attribute(desc.attribute, f"{label}attribute")
        flag = as_bool_flag(desc.is_array, f"{label}is_array")
        sem = as_int32(desc.semantic, f"{label}semantic")
        attr_mode = _attribute_mode(desc.attribute_mode, f"{label}attribute_mode")
        n, imap, words = _sparsity(desc.index_map, desc.mask, desc.count, label)
        stream, event = _cuda_sync(desc.cuda_event, desc.cuda_stream, label)
        rejection = None
        tensors = _as_dltensors(desc.tensors, label)
        array = (DLTensor * len(tensors))(*tensors)
        problem = attribute_problem(attr)
        if problem is not None:
            rejection = (ErrorCode.INVALID_ARGUMENT, 0, None, f"{label}attribute: {problem}")
        return cls(
            attr,
            flag,
            sem,
            attr_mode,
            n,
            imap,
            words,
            tensors,
            array,
            rejection,
            b"",
            stream,
            event,
        )

    def nbytes(self) -> int:
        """Payload bytes (the engine defers the copy of large payloads to the op)."""
        total = 0
        for t in self.tensors:
            count = 1
            for d in t.shape_tuple:
                count *= d
            total += count * ((t.dtype.bits * t.dtype.lanes + 7) // 8)
        return total

    def attribute(self, stage: Stage) -> OvxStringOrToken:
        """The attribute as an ``ovx_string_or_token_t``: a token, or a name's token from the
        stage's token cache (interned once, as the engine would intern it), or, when the
        name cannot be interned, the name itself, for the engine to report."""
        if isinstance(self.attr, int):
            return OvxStringOrToken(self.attr)
        token = _fastpath.token_of(stage, self.attr)
        if token:
            return OvxStringOrToken(token)
        self.name = self.attr.encode("utf-8")
        return OvxStringOrToken(0, OvxString(self.name, len(self.name)))

    def data(self, stream: int = 0, event: int = 0) -> WriteData:
        """The ``ovstage_write_data_t`` over this payload (fields left zero are not set: this is
        on every general write's path)."""
        data = WriteData(ctypes.addressof(self.array), None, len(self.tensors), self.count)
        if self.index_map is not None:
            data.index_map = _present(self.index_map)
        if self.mask is not None:
            data.mask = _present(self.mask)
        if stream or event:
            data.cuda_sync = CudaSync(stream, event)
        if self.semantic:
            data.semantic = self.semantic
        if self.attribute_mode:
            data.attribute_mode = self.attribute_mode
        if self.is_array:
            data.is_array = True
        return data


def _as_dltensors(tensors: Any, label: str = "") -> list[DLTensor]:
    """The write's tensors as DLTensors; a conversion error names ``tensors[i]``."""
    items = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    if not items:
        raise ValueError(f"{label}tensors must not be empty")
    out = []
    for i, t in enumerate(items):
        try:
            out.append(private_dltensor(t) if isinstance(t, DLTensor) else make_dltensor(t))
        except (TypeError, ValueError, BufferError) as exc:
            if type(exc) not in (TypeError, ValueError, BufferError):
                raise  # a subclass may not take a plain message
            raise type(exc)(f"{label}tensors[{i}]: {exc}") from None
    return out
