"""The population op stream of one stage: ops run one at a time, in submission order.

Every population call of a stage becomes one op of its stream. Ids are issued from 1 in
submission order and a single daemon worker thread runs the ops, so "every op up to ``id``
finished" is simply "the last finished id is at least ``id``". A wait reports each failure
exactly once: to the first wait, from any thread, whose id range includes it.

An open replaces the stream (``submit(..., replaces=True)``): its id is the first of the new
current stream, and ids issued before it belong to a replaced stream, which waits refuse with
INVALID_HANDLE (their failures are reported by no wait). Ids keep increasing across
replacements and the ops still run in submission order, so the ops queued before an open run
before it.

The worker never keeps the stage alive between ops (it holds the stream, the stream holds the
stage weakly), never lets an exception escape (each op's error is recorded), and is stopped
and joined when the stage is destroyed: ops that had not started then fail, the running one
sees :meth:`OpStream.check_running` raise at its next checkpoint.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError

__all__ = ["OpStream", "WaitResult"]

_log = logging.getLogger("ovstage.population")

# Longest single condition wait: Ctrl-C reaches a waiting main thread within about this long.
_WAIT_SLICE_S = 0.05


@dataclass
class WaitResult:
    """What a wait saw: ``code`` OK, TIMEOUT or OP_FAILED; the failed ids it reports (each id
    is reported by one wait only); the lowest unfinished id of the range on TIMEOUT (else 0)."""

    code: int
    error_op_ids: list[int] = field(default_factory=list)
    lowest_pending_op_id: int = 0


@dataclass
class _Job:
    op_id: int
    name: str
    run: Callable[[], Any]


class StreamStopped(OvstageError):
    """The stage was destroyed: the stream runs nothing more."""


class OpStream:
    """The ops of one stage's population, their ids, outcomes and the worker that runs them."""

    def __init__(self, label: str) -> None:
        self._label = label
        self._cond = threading.Condition()
        self._queue: collections.deque[_Job] = collections.deque()
        self._next_id = 1
        self._first_id = 1  # the first id of the current stream (an open replaces it)
        self._finished_upto = 0  # every id <= this has finished (ops run in id order)
        self._errors: dict[int, tuple[int, str]] = {}  # failed id -> (code, message)
        self._unreported: set[int] = set()
        self._payloads: dict[int, Any] = {}
        self._stopping = False
        self._thread: threading.Thread | None = None

    # -- submission ---------------------------------------------------------------------

    def submit(self, name: str, run: Callable[[], Any], *, replaces: bool = False) -> int:
        """Queue ``run`` (called on the worker; its return value is the op's payload, an
        exception its failure) and return the op's id; ``replaces``: the op starts a new
        current stream (earlier ids can no longer be waited on)."""
        with self._cond:
            if self._stopping:
                raise StreamStopped(
                    ErrorCode.INVALID_HANDLE, f"{name}: the stage ({self._label}) was destroyed"
                )
            op_id = self._next_id
            self._next_id += 1
            if replaces:
                self._first_id = op_id
                self._unreported = {i for i in self._unreported if i >= op_id}
            self._queue.append(_Job(op_id, name, run))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name=f"ovstage-population {self._label}", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()
        return op_id

    def issued(self, op_id: int) -> bool:
        """Whether this stage's population issued ``op_id`` (in any stream, replaced or not)."""
        return 0 < op_id < self._next_id

    def current(self, op_id: int) -> bool:
        """Whether ``op_id`` belongs to the current stream (issued since the last open)."""
        return self._first_id <= op_id < self._next_id

    def payload(self, op_id: int) -> Any:
        """What a finished op returned (None if it failed or returned nothing)."""
        with self._cond:
            return self._payloads.get(op_id)

    def error_of(self, op_id: int) -> tuple[int, str] | None:
        """``(code, message)`` of a failed op, None otherwise."""
        with self._cond:
            return self._errors.get(op_id)

    # -- the worker -------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    self._fail_queued_locked()
                    return
                job = self._queue.popleft()
            outcome: tuple[int, str] | None = None
            payload: Any = None
            try:
                payload = job.run()
            except OvstageError as exc:
                outcome = (exc.code, f"{job.name}: {exc.message}" if exc.message else job.name)
            except BaseException as exc:  # even SystemExit: the op fails, the worker goes on
                outcome = (ErrorCode.OP_FAILED, f"{job.name}: {type(exc).__name__}: {exc}")
            if outcome is not None:
                _log.warning("population op %d failed: %s", job.op_id, outcome[1])
            # Drop the op (and what it holds, the stage included) before reporting it done:
            # a stage collected here is destroyed on this thread, which stop() allows for.
            job = _Job(job.op_id, job.name, _nothing)
            with self._cond:
                if outcome is not None:
                    self._errors[job.op_id] = outcome
                    if job.op_id >= self._first_id:  # a replaced stream's is never reported
                        self._unreported.add(job.op_id)
                elif payload is not None:
                    self._payloads[job.op_id] = payload
                self._finished_upto = job.op_id
                self._cond.notify_all()
            del payload

    def _fail_queued_locked(self) -> None:
        for job in self._queue:
            message = f"{job.name}: the stage ({self._label}) was destroyed before the op ran"
            self._errors[job.op_id] = (ErrorCode.INVALID_HANDLE, message)
            self._unreported.add(job.op_id)
            self._finished_upto = job.op_id
        self._queue.clear()
        self._cond.notify_all()

    def check_running(self) -> None:
        """Raise once the stage is being destroyed (an op's checkpoint between its steps)."""
        if self._stopping:
            raise StreamStopped(
                ErrorCode.INVALID_HANDLE, f"the stage ({self._label}) was destroyed"
            )

    def stop(self) -> None:
        """Stop the worker: queued ops fail, the running op stops at its next checkpoint; join
        the worker unless this is the worker itself (a stage destroyed from inside an op)."""
        with self._cond:
            self._stopping = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._cond:
            self._fail_queued_locked()

    # -- waits ------------------------------------------------------------------------

    def wait(self, op_id: int, timeout_ns: int = TIMEOUT_INFINITE) -> WaitResult:
        """Wait until every op with an id up to ``op_id`` finished (``timeout_ns`` 0 polls).

        Raises OvstageError(INVALID_HANDLE) for an id the current stream did not issue."""
        if not self.current(op_id):
            replaced = " (a later open replaced its stream)" if self.issued(op_id) else ""
            raise OvstageError(
                ErrorCode.INVALID_HANDLE,
                f"operation id {op_id} does not belong to this stage's current population "
                f"stream{replaced}",
            )
        deadline = None if timeout_ns == TIMEOUT_INFINITE else time.monotonic() + timeout_ns / 1e9
        with self._cond:
            if self._finished_upto < op_id and threading.current_thread() is self._thread:
                # The worker would wait for itself (a progress callback waiting an op).
                raise OvstageError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"population op {op_id} cannot be waited on the stage's population worker "
                    "(from a progress callback): it runs after the op in progress",
                )
            while self._finished_upto < op_id:
                left = _WAIT_SLICE_S
                if deadline is not None:
                    left = min(left, deadline - time.monotonic())
                    if left <= 0:
                        return WaitResult(ErrorCode.TIMEOUT, [], self._finished_upto + 1)
                self._cond.wait(left)
            failed = sorted(i for i in self._unreported if self._first_id <= i <= op_id)
            self._unreported.difference_update(failed)
        if failed:
            return WaitResult(ErrorCode.OP_FAILED, failed)
        return WaitResult(ErrorCode.OK)


def _nothing() -> None:
    return None
