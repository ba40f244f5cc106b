"""Handle wrappers: ``Query`` and ``Read``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError
from ._warn import warn_finalized

if TYPE_CHECKING:
    from ._groups import MapGroup, ReadGroup
    from ._ops import Operation
    from ._query import QueryResult
    from ._stage import Stage

__all__ = ["Map", "OrdinalQuery", "Query", "Read"]

_H = TypeVar("_H", bound="_Handle")


class _Handle:
    """Common base: ``.handle``, ``.op`` (reserving enqueue or None), ``wait()``, ``release()``."""

    _kind = "handle"

    def __init__(
        self, stage: Stage, handle: int, op: Operation | None, keepalive: Any = None
    ) -> None:
        self._stage = stage
        self.handle = int(handle)
        self.op = op
        self._keepalive = keepalive
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def _check(self) -> int:
        if self._released:
            raise OvstageError(
                ErrorCode.INVALID_HANDLE, f"{self._kind} {self.handle} was already released"
            )
        if self.op is not None and not self.op.ok:
            raise OvstageError(self.op.status, self.op.error_message())
        return self.handle

    def wait(self: _H, timeout: int = TIMEOUT_INFINITE) -> _H:
        """Wait for the enqueue that reserved this handle and return the handle, so that
        ``read.wait().fetch_next()`` works. A second wait raises ``INVALID_HANDLE`` (the
        reserving Operation was waited); a handle created synchronously has no op: the wait
        returns at once."""
        if self.op is not None:
            self.op.wait(timeout)
        return self

    def _drop_op(self) -> None:
        """Detach the reserving op once the handle is released: nobody waits it any more, and
        ``with read: for group in read.groups()`` (no ``wait()``) must not leave op tracking
        behind. The engine forgets it when it completes (at once if it has)."""
        op = self.op
        if op is not None and op.ok and not op._consumed and op._op_id:
            op._consumed = True
            self._stage._detach_op(op._op_id)

    def __int__(self) -> int:
        return self.handle

    def __index__(self) -> int:
        return self.handle

    def release(self) -> Operation:
        raise NotImplementedError

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self._released or self.handle == 0:
            return
        if exc_type is not None:
            # Leaving on an exception (Ctrl-C in a fetch, say): the release runs after the
            # handle's producer, which may be what blocked, so only poll it (a poll that finds
            # it done completes it).
            with contextlib.suppress(Exception):
                self.release().wait(0)
            return
        self.release().wait()

    def __del__(self) -> None:
        if self._released or self.handle == 0 or self._stage._destroyed:
            return
        try:
            self.release()
        except Exception:
            return
        warn_finalized(self._kind, self.handle)


class Query(_Handle):
    """A query handle (from ``Stage.query`` or ``Stage.query_from_path_list``)."""

    _kind = "Query"

    def result(self, timeout: int = TIMEOUT_INFINITE) -> QueryResult:
        """The query's result (waits for it)."""
        return self._stage.fetch_query_result(self, timeout)

    def release(self) -> Operation:
        """Enqueue the release of the query."""
        return self._stage.release_query(self)


class Read(_Handle):
    """A read handle: fetch its groups with ``fetch_next`` or iterate ``groups()``."""

    _kind = "Read"
    #: Groups this Read has yet to fetch, when its enqueue found it complete (-1: unknown).
    _left = -1

    def fetch_next(self, timeout: int = TIMEOUT_INFINITE) -> ReadGroup | None:
        """The next group, or None after the last (TIMEOUT raises OvstageError)."""
        return self._stage.fetch_read_next(self, timeout)

    def groups(self, timeout: int = TIMEOUT_INFINITE) -> Iterator[ReadGroup]:
        """Yield groups until the end (the caller releases each)."""
        while True:
            group = self.fetch_next(timeout)
            if group is None:
                return
            yield group

    def release(self) -> Operation:
        """Enqueue the release of the read handle (fetched groups stay valid)."""
        return self._stage.release_read(self)

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        # The usual end of a read: release and wait in one native call.
        if exc_type is None and not self._released and self.handle and self._stage._end_read(self):
            return
        super().__exit__(exc_type, exc, tb)


class OrdinalQuery(_Handle):
    """An ordinal query (write floor or retention frontier): ``fetch()`` its value."""

    _kind = "OrdinalQuery"

    def fetch(self, timeout: int = TIMEOUT_INFINITE) -> int:
        """The ordinal, once computed (TIMEOUT raises OvstageError)."""
        self._check()
        return self._stage.fetch_ordinal(self, timeout)

    def release(self) -> Operation:
        """Enqueue the release of the ordinal query."""
        return self._stage.release_ordinal_query(self)


class Map(_Handle):
    """A map session: fill each group's buffers, then commit with ``unmap_group`` or
    ``unmap()`` (leaving a ``with`` block unmaps: it always commits, there is no rollback).

    A commit that fails while executing makes the session terminal: nothing more of it is
    committed and the final unmap reports that failure. Leaving a ``with`` block unmaps and
    waits for it: the failure is raised on the normal path and swallowed when the block is
    left on an exception. On ``KeyboardInterrupt``/``SystemExit`` the unmap is only polled, so
    the interrupt is not held up by ops still queued before it. A session whose setup was
    rejected (handle 0) has nothing to unmap."""

    _kind = "Map"

    def __init__(self, stage: Stage, handle: int, op: Operation | None) -> None:
        super().__init__(stage, handle, op)
        self._groups: list[MapGroup] = []

    def fetch_next(self, timeout: int = TIMEOUT_INFINITE) -> MapGroup | None:
        """The next group, or None after the last."""
        return self._stage.fetch_map_next(self, timeout)

    def groups(self, timeout: int = TIMEOUT_INFINITE) -> Iterator[MapGroup]:
        """Yield the session's groups."""
        while True:
            group = self.fetch_next(timeout)
            if group is None:
                return
            yield group

    def unmap_group(
        self, group: MapGroup, cuda_event: int | None = None, cuda_stream: int | None = None
    ) -> Operation:
        """Enqueue the commit of one group."""
        return self._stage.unmap_group(self, group, cuda_event, cuda_stream)

    def unmap(self, cuda_event: int | None = None, cuda_stream: int | None = None) -> Operation:
        """Enqueue the commit of every remaining group and end the session."""
        return self._stage.unmap_attribute(self, cuda_event, cuda_stream)

    def release(self) -> Operation:
        """Same as ``unmap()``."""
        return self.unmap()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self._released or self.handle == 0:
            return
        if exc_type is None:
            self.unmap().wait()
            return
        interrupted = isinstance(exc_type, type) and not issubclass(exc_type, Exception)
        with contextlib.suppress(Exception):
            self.unmap().wait(0 if interrupted else TIMEOUT_INFINITE)
