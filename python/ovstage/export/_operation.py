"""Asynchronous exports: ops on the stage's population stream, and their operations.

Export shares the population op stream of a stage (``population/_stream.py``): an async
export or destination op is queued behind every population op submitted before it and runs on
the same worker, in order. Arguments are checked (and copied) before the op is queued, so a
refused call raises at once and queues nothing.

:class:`ExportOperation` waits for the op and hands out its report once: a further ``wait``
after a terminal result raises RuntimeError. :class:`DestinationOperation` does the same for
destination create, save and close.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError
from .._guards import as_timeout
from ..population._operation import set_last_error
from ..population._state import state_of

if TYPE_CHECKING:
    from .._stage import Stage

__all__ = ["DestinationCreateOperation", "DestinationOperation", "ExportOperation", "submit"]


def submit(stage: Stage, name: str, run: Callable[[], Any]) -> tuple[Any, int]:
    """Queue ``run`` on the stage's population stream: ``(stream, op id)``."""
    if getattr(stage, "_destroyed", False):
        raise OvstageError(ErrorCode.INVALID_HANDLE, f"{name}: the stage was destroyed")
    stream = state_of(stage).stream
    return stream, stream.submit(name, run)


class ExportOperation:
    """A queued export; ``wait(timeout)`` (nanoseconds) gives its report dict, ``None`` on
    TIMEOUT (still waitable), raises ``OvstageError`` on failure."""

    _consumed_message = "export operation result has already been consumed"

    def __init__(self, stage: Stage, stream: Any, op_id: int, name: str) -> None:
        self.stage = stage
        self.op_id = op_id
        self.name = name
        self._stream = stream
        self._consumed = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name} {self.op_id})"

    def _finished(self, payload: Any) -> Any:
        return payload

    def _failed(self) -> None:
        """Hook: a terminal failure was seen."""

    def wait(self, timeout: int = TIMEOUT_INFINITE) -> Any:
        timeout_ns = as_timeout(timeout)
        with self._lock:
            if self._consumed:
                raise RuntimeError(self._consumed_message)
            result = self._stream.wait(self.op_id, timeout_ns)
            if result.code == ErrorCode.TIMEOUT:
                return None
            self._consumed = True
            # Only this op's own outcome counts (a failed earlier population op is reported
            # to that op's waits).
            error = self._stream.error_of(self.op_id)
            if error is not None:
                code, message = error
                set_last_error(message)
                self._failed()
                raise OvstageError(code, message)
            return self._finished(self._stream.payload(self.op_id))


class DestinationOperation(ExportOperation):
    """A queued destination save or close: ``wait`` gives ``True``."""

    def __init__(
        self,
        stage: Stage,
        stream: Any,
        op_id: int,
        name: str,
        on_failure: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(stage, stream, op_id, name)
        self._on_failure = on_failure

    def _failed(self) -> None:
        if self._on_failure is not None:
            self._on_failure()


class DestinationCreateOperation(DestinationOperation):
    """A queued destination creation: ``destination`` is usable at once (its ops queue behind
    the creation); ``wait`` gives the destination; a failed creation closes it."""

    def __init__(self, stage: Stage, stream: Any, op_id: int, name: str, destination: Any) -> None:
        super().__init__(stage, stream, op_id, name, destination._release)
        self.destination = destination

    def _finished(self, payload: Any) -> Any:
        return self.destination
