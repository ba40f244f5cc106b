"""``Operation``: the result of every asynchronous enqueue (spec §5.4)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError
from ._guards import as_timeout

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = ["Operation"]

# Longest single native wait, so Ctrl-C (KeyboardInterrupt) is seen within about 0.05 s.
_WAIT_SLICE_NS = 50_000_000


class Operation:
    """An enqueued op: ``status`` says whether it was accepted, ``wait()`` completes it.

    Unlike the reference, a ``TIMEOUT`` from ``wait(timeout)`` leaves the op waitable: poll
    again or block later. ``done()`` polls without raising. An op that was never waited is
    released when its ``Operation`` is garbage collected.
    """

    __slots__ = ("__weakref__", "_consumed", "_keepalive", "_message", "_stage", "op_id", "status")

    def __init__(
        self,
        stage: Stage,
        status: int,
        op_id: int,
        keepalive: Any = None,
        message: str = "",
    ) -> None:
        self._stage = stage
        self.status = int(status)
        self.op_id = int(op_id)
        self._keepalive = keepalive
        self._message = message
        self._consumed = False

    @classmethod
    def _accepted(cls, stage: Stage, op_id: int) -> Operation:
        """An accepted op (the hot path's constructor: no conversions)."""
        self = cls.__new__(cls)
        self._stage = stage
        self.status = 0
        self.op_id = op_id
        self._keepalive = None
        self._message = ""
        self._consumed = False
        return self

    @property
    def ok(self) -> bool:
        """Whether the enqueue was accepted."""
        return self.status == ErrorCode.OK

    def error_message(self) -> str:
        """The enqueue's error text, else the op's failure text ("" if none)."""
        if self._message or not self.ok or self.op_id == 0 or self._consumed:
            return self._message
        return self._stage._last_op_error(self.op_id)

    def done(self) -> bool:
        """Non-raising poll: True once the op (and its chain) finished or was rejected."""
        if not self.ok or self._consumed:
            return True
        code, _, _ = self._stage.wait_op(self.op_id, 0)
        return code != ErrorCode.TIMEOUT  # wait_op drops the stage's hold on a finished op

    def wait(self, timeout: int = TIMEOUT_INFINITE) -> None:
        """Wait for completion; raise :class:`OvstageError` if rejected, failed or timed out.

        ``timeout`` is in nanoseconds: 0 polls, ``TIMEOUT_INFINITE`` blocks. On success or
        failure the op id is released; on ``TIMEOUT`` it stays waitable.
        """
        timeout_ns = as_timeout(timeout)
        if not self.ok:
            raise OvstageError(self.status, self._message)
        if self._consumed:
            raise OvstageError(ErrorCode.INVALID_HANDLE, f"op {self.op_id} was already waited")
        if self.op_id == 0:
            raise OvstageError(ErrorCode.INVALID_HANDLE, "op id 0 is not a valid op")
        code, error_ids, lowest, root_message = self._wait_sliced(timeout_ns)
        if code == ErrorCode.TIMEOUT:
            raise OvstageError(
                ErrorCode.TIMEOUT,
                f"op {self.op_id} is not complete (lowest pending op in its chain: {lowest})",
            )
        self._consumed = True
        self._keepalive = None
        stage = self._stage
        if error_ids:
            message = root_message or f"op {error_ids[0]} failed"
            self._message = message
            stage._release_op_quietly(self.op_id)
            raise OvstageError(ErrorCode.OP_FAILED, message)
        stage._release_op_checked(self.op_id)

    def _wait_sliced(self, timeout_ns: int) -> tuple[int, list[int], int, str]:
        stage = self._stage
        if timeout_ns == 0:
            return stage._wait_op(self.op_id, 0)
        deadline = None if timeout_ns == TIMEOUT_INFINITE else time.monotonic_ns() + timeout_ns
        while True:
            step = _WAIT_SLICE_NS
            if deadline is not None:
                step = max(0, min(step, deadline - time.monotonic_ns()))
            result = stage._wait_op(self.op_id, step)
            if result[0] != ErrorCode.TIMEOUT or step == 0:
                return result
            if deadline is not None and time.monotonic_ns() >= deadline:
                return result

    def __repr__(self) -> str:
        name = (
            ErrorCode(self.status).name
            if self.status in ErrorCode._value2member_map_
            else self.status
        )
        return f"Operation(op_id={self.op_id}, status={name})"
