"""The population ``Operation`` and the per-thread error texts of population calls."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError
from .._guards import as_timeout, as_uint64

if TYPE_CHECKING:
    from .._stage import Stage
    from ._stream import OpStream

__all__ = ["Operation", "last_error", "last_op_error", "set_last_error"]

_thread = threading.local()


def set_last_error(message: str) -> None:
    """Record this thread's latest population error ("" clears it)."""
    _thread.message = message


def last_error() -> str:
    """The text of this thread's most recent failing population call ("" if none); an
    asynchronous failure appears here once a wait on this thread saw it."""
    return getattr(_thread, "message", "")


def last_op_error(op_id: int) -> str:
    """The failure text of an id this thread's latest population wait listed ("" otherwise)."""
    errors: dict[int, str] = getattr(_thread, "op_errors", {})
    return errors.get(op_id, "")


def _stream_of(stage: Stage) -> OpStream | None:
    from ._state import existing_state

    state = existing_state(stage)
    return None if state is None else state.stream


class Operation:
    """An enqueued population op.

    ``wait(timeout)`` (nanoseconds) waits until every population op of the stage up to this
    one finished, then returns the payload (``True``, or the reference handle of an
    add-reference op); it returns ``None`` on TIMEOUT (the op stays waitable) and raises
    :class:`OvstageError` when an op of that range failed (each failure is raised by one wait
    only: the first, from any thread, whose range covers it).
    """

    def __init__(
        self,
        stage: Stage,
        status: int,
        op_id: int,
        *,
        value: Any = True,
        keepalive: Any = None,
        name: str = "",
    ) -> None:
        self.stage = stage
        self.status = int(status)
        self.op_id = as_uint64(op_id, "op_id")
        self.value = value
        self.name = name
        self._keepalive = keepalive
        self._message = ""

    def __repr__(self) -> str:
        state = (
            ErrorCode(self.status).name
            if self.status in ErrorCode._value2member_map_
            else self.status
        )
        return f"population.Operation({self.name or 'op'} {self.op_id}, {state})"

    @property
    def ok(self) -> bool:
        """Whether the enqueue was accepted."""
        return self.status == ErrorCode.OK

    def error_message(self) -> str:
        """The enqueue's error text, else the op's own failure text ("" if none)."""
        if self._message or not self.ok:
            return self._message or last_error()
        stream = _stream_of(self.stage)
        error = (
            None if stream is None or not stream.issued(self.op_id) else stream.error_of(self.op_id)
        )
        return "" if error is None else error[1]

    def wait(self, timeout: int = TIMEOUT_INFINITE) -> Any:
        """The payload once every op up to this one finished; None on TIMEOUT."""
        timeout_ns = as_timeout(timeout)
        label = self.name or "population op"
        if not self.ok:
            raise OvstageError(self.status, self._message or last_error())
        if getattr(self.stage, "_destroyed", False):
            message = f"{label}: the stage was destroyed"
            set_last_error(message)
            raise OvstageError(ErrorCode.INVALID_HANDLE, message)
        stream = _stream_of(self.stage)
        if stream is None:
            message = f"{label}: the stage has no population state"
            set_last_error(message)
            raise OvstageError(ErrorCode.NOT_FOUND, message)
        try:
            result = stream.wait(self.op_id, timeout_ns)
        except OvstageError as exc:
            set_last_error(exc.message)
            raise
        if result.code == ErrorCode.TIMEOUT:
            return None
        errors = {
            i: (stream.error_of(i) or (ErrorCode.OP_FAILED, ""))[1] for i in result.error_op_ids
        }
        _thread.op_errors = errors
        if result.error_op_ids:
            first = result.error_op_ids[0]
            message = errors[first]
            if first != self.op_id:
                message = f"population op {first} (covered by this wait) failed: {message}"
            set_last_error(message)
            raise OvstageError(result.code, message)
        self._keepalive = None
        payload = stream.payload(self.op_id)
        return self.value if payload is None else payload
