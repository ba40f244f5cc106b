"""``Operation``: the result of every asynchronous enqueue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _lib
from ._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError
from ._guards import as_timeout

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = ["Operation"]

_detach_op = _lib.native._native.pybind_DetachOp
_wait_release = _lib.native._native.pybind_WaitReleaseOp


class Operation:
    """An enqueued op: ``status`` says whether it was accepted, ``wait()`` completes it.

    Unlike the reference, a ``TIMEOUT`` from ``wait(timeout)`` leaves the op waitable: poll
    again or block later. ``done()`` polls without raising.

    Op tracking (README.md, "Where we differ"): an op is tracked until ``wait()`` returns or
    raises (other than ``TIMEOUT``). An op whose ``Operation`` is garbage-collected unwaited
    is *detached*: the stage forgets it once it completes, so a producer that never waits
    stays bounded in memory. Reading ``op_id`` opts out: the raw id then stays tracked until
    ``Stage.release_op`` (or ``wait()``), so ``stage.wait_op(op.op_id)`` keeps working after
    the ``Operation`` is gone. An ``Operation`` built by the caller from an id is raw too.
    """

    __slots__ = (
        "__weakref__",
        "_consumed",
        "_keepalive",
        "_message",
        "_op_id",
        "_raw",
        "_stage",
        "status",
    )

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
        self._op_id = int(op_id)
        self._keepalive = keepalive
        self._message = message
        self._consumed = False
        self._raw = True  # the caller handed us the id: it manages its tracking

    @classmethod
    def _accepted(cls, stage: Stage, op_id: int) -> Operation:
        """An accepted op this Operation owns (detached when it is collected unwaited); the
        hot path's constructor: no conversions."""
        self = cls.__new__(cls)
        self._stage = stage
        self.status = 0
        self._op_id = op_id
        self._keepalive = None
        self._message = ""
        self._consumed = False
        self._raw = False
        return self

    @property
    def op_id(self) -> int:
        """The engine's op id (0 when rejected). Reading it makes the id raw: it stays tracked
        until ``wait()`` or ``Stage.release_op``, even after this Operation is collected."""
        self._raw = True
        return self._op_id

    def __del__(self) -> None:
        # Unwaited and its id never handed out: nobody can wait for the op any more.
        if self._consumed or self._raw or not self._op_id:
            return
        try:
            stage = self._stage
            if not stage._destroyed and not _lib._forked_child:
                _detach_op(stage._id, self._op_id)
        except Exception:  # a finalizer never raises (the id may have been released)
            return

    @property
    def ok(self) -> bool:
        """Whether the enqueue was accepted."""
        return self.status == ErrorCode.OK

    def error_message(self) -> str:
        """The enqueue's error text, else the op's failure text ("" if none)."""
        if self._message or not self.ok or self._op_id == 0 or self._consumed:
            return self._message
        return self._stage._last_op_error(self._op_id)

    def done(self) -> bool:
        """Non-raising poll: True once the op (and its chain) finished or was rejected."""
        if not self.ok or self._consumed:
            return True
        code, _, _ = self._stage.wait_op(self._op_id, 0)
        return code != ErrorCode.TIMEOUT  # wait_op drops the stage's hold on a finished op

    def wait(self, timeout: int = TIMEOUT_INFINITE) -> Operation:
        """Wait for completion and return this Operation; raise :class:`OvstageError` if the
        enqueue was rejected, the op failed, timed out, or was already waited.

        ``timeout`` is in nanoseconds: 0 polls, ``TIMEOUT_INFINITE`` blocks. On success or
        failure the op id is released; on ``TIMEOUT`` it stays waitable (and keeps its
        sources alive).
        """
        if (
            self.__class__ is Operation
            and not self.status
            and not self._consumed
            and self._op_id
            and timeout.__class__ is int
            and 0 <= timeout <= TIMEOUT_INFINITE
        ):
            stage = self._stage
            if not stage._destroyed and not _lib._forked_child:
                # Already finished and succeeded (the usual case): one native call waits and
                # releases; anything else takes the full wait below, which reports it.
                try:
                    code = _wait_release(stage._id, self._op_id)
                except RuntimeError:
                    code = -1
                if code == 0:
                    self._consumed = True
                    self._keepalive = None
                    if stage._holds:
                        stage._take_sources_done()  # a finished write's source is let go
                    return self
        timeout_ns = as_timeout(timeout)
        if not self.ok:
            raise OvstageError(self.status, self._message)
        if self._consumed:
            raise OvstageError(
                ErrorCode.INVALID_HANDLE,
                f"operation {self._op_id} has already been waited and released",
            )
        if self._op_id == 0:
            raise OvstageError(ErrorCode.INVALID_HANDLE, "op id 0 is not a valid op")
        stage = self._stage
        stage._require_live("Operation.wait")
        self._consumed = True
        try:
            code, error_ids, lowest, message = stage._wait_op(self._op_id, timeout_ns)
        except BaseException:
            self._consumed = False  # interrupted (Ctrl-C) or the stage went: still waitable
            raise
        if code == ErrorCode.TIMEOUT:
            self._consumed = False
            raise OvstageError(
                ErrorCode.TIMEOUT,
                f"operation {self._op_id} is still pending (lowest pending op id {lowest})",
            )
        self._keepalive = None
        if code != ErrorCode.OK or error_ids:
            failed = error_ids[0] if error_ids else self._op_id
            message = message or f"op {failed} failed"
            self._message = message
            self._completed(failed=True)
            stage._release_op_quietly(self._op_id)
            raise OvstageError(code if code != ErrorCode.OK else ErrorCode.OP_FAILED, message)
        self._completed(failed=False)
        stage._release_op_checked(self._op_id)
        return self

    def _completed(self, failed: bool) -> None:
        """Called by ``wait()`` once the op finished, while its id is still tracked (a
        ``CloneOperation`` fetches its report here)."""

    def __repr__(self) -> str:
        name = (
            ErrorCode(self.status).name
            if self.status in ErrorCode._value2member_map_
            else self.status
        )
        return f"Operation(op_id={self._op_id}, status={name})"
