"""Process-global logging: ``set_log_callback`` and ``flush_log``.

The engine never calls Python. It queues messages (severity, channel, timestamp, text) in a
bounded process-wide queue; a daemon dispatcher thread, started by the first
``set_log_callback``, pulls them one at a time and calls the callback serially. The callback
gets ``(severity: LogSeverity, timestamp: float, message: str)`` where ``message`` is
``"[<channel>] <text>"`` (the C callback has no channel argument, so the channel travels in
the text). Engine channels: ``ovstage.ops`` (op failures, ERROR), ``ovstage.stage`` (stage
created/destroyed, INFO), ``ovstage.hierarchy`` (hierarchy computations, INFO),
``ovstage.internal`` (recovered internal panics, ERROR) and ``ovstage.log`` (a WARNING when
the queue overflowed and messages were dropped).
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import traceback
from collections.abc import Callable

from ._enums import LogSeverity
from ._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError
from ._guards import as_enum, as_timeout, string_problem
from ._lib import call, native
from ._waits import wait_sliced

__all__ = ["LogCallback", "flush_log", "set_log_callback"]

#: Signature of a log callback: ``callback(severity, timestamp_epoch_seconds, message)``.
LogCallback = Callable[[LogSeverity, float, str], object]

# The dispatcher's native wait: clearing the callback wakes it at once, so this only bounds
# how long an idle dispatcher sleeps in one call.
_NEXT_SLICE_NS = 500_000_000
# At interpreter exit, delivering pending messages and ending the dispatcher get this long
# in all; delivery is abandoned once one callback call has lasted _EXIT_STALL_NS, and the
# dispatcher's end is awaited no longer than that.
_EXIT_BUDGET_NS = 1_000_000_000
_EXIT_STALL_NS = 250_000_000

_lock = threading.RLock()
_dispatcher: _Dispatcher | None = None
_atexit_registered = False


def _as_severity(value: int) -> LogSeverity:
    """The LogSeverity of a message (a fatal message, which the engine does not emit today,
    is reported as ERROR)."""
    try:
        return LogSeverity(value)
    except ValueError:
        return LogSeverity.ERROR if value > LogSeverity.ERROR else LogSeverity.VERBOSE


class _Dispatcher:
    """The daemon thread that delivers queued messages to the callbacks, one at a time.

    ``callbacks`` maps a configuration generation to its callback: a message is delivered to
    the callback that was current when the engine accepted it, so a replaced callback still
    receives what was queued for it (it is dropped once a newer generation's message arrives
    or a flush succeeds).
    """

    def __init__(self) -> None:
        self.callbacks: dict[int, LogCallback] = {}
        self.stop = threading.Event()
        self.inflight = 0  # sequence number being delivered (dispatcher thread only)
        self.thread = threading.Thread(target=self._run, name="ovstage-log-dispatcher", daemon=True)

    def callback_for(self, gen: int) -> LogCallback | None:
        with _lock:
            for old in [g for g in self.callbacks if g < gen]:
                del self.callbacks[old]
            return self.callbacks.get(gen)

    def keep_only_newest(self) -> None:
        with _lock:
            if self.callbacks:
                newest = max(self.callbacks)
                self.callbacks = {newest: self.callbacks[newest]}

    def _run(self) -> None:
        ack = 0
        while not self.stop.is_set():
            try:
                text = call(native.LogNext, ack, _NEXT_SLICE_NS)
            except Exception:  # the native layer is unusable (e.g. fork child): stop quietly
                return
            ack = 0
            if not text:
                continue
            seq, gen, severity, timestamp, channel, message = text.split(" ", 5)
            self.inflight = int(seq)
            callback = self.callback_for(int(gen))
            if callback is not None:
                try:
                    callback(
                        _as_severity(int(severity)), float(timestamp), f"[{channel}] {message}"
                    )
                except BaseException:
                    traceback.print_exc()
            ack, self.inflight = self.inflight, 0


def _ensure_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(_shutdown_at_exit)
        _atexit_registered = True


def _shutdown_at_exit() -> None:
    """Deliver what is pending and stop the dispatcher before finalization, within
    ``_EXIT_BUDGET_NS`` in all: a callback that blocks or never returns is left running on
    the daemon dispatcher thread, it does not hang the exit."""
    dispatcher = _dispatcher
    if dispatcher is None:
        return
    deadline = time.monotonic_ns() + _EXIT_BUDGET_NS
    with contextlib.suppress(Exception):
        target = call(native.LogFlushTarget, 0)
        _wait_delivered(dispatcher, target, _EXIT_BUDGET_NS, _EXIT_STALL_NS)
    with contextlib.suppress(Exception):
        _stop(dispatcher, max(0, min(_EXIT_STALL_NS, deadline - time.monotonic_ns())))


def _stop(dispatcher: _Dispatcher, join_timeout_ns: int = TIMEOUT_INFINITE) -> None:
    """Disable delivery and end the dispatcher thread: joined (unless called from it) for up
    to ``join_timeout_ns``, in interruptible slices."""
    global _dispatcher
    with _lock:
        dispatcher.stop.set()
        if _dispatcher is dispatcher:
            _dispatcher = None
        call(native.LogDisable)
    thread = dispatcher.thread
    if threading.current_thread() is thread:
        return

    def ended(slice_ns: int) -> bool:
        thread.join(slice_ns / 1e9)
        return not thread.is_alive()

    wait_sliced(ended, join_timeout_ns)


def set_log_callback(
    callback: LogCallback | None,
    severity: LogSeverity | int | None = None,
    channel_filter: str | None = None,
) -> None:
    """Install the process-wide log callback (replacing the previous one), or clear it.

    ``callback(severity, timestamp, message)`` runs on a dedicated daemon thread, one call at
    a time; exceptions it raises are printed to stderr and suppressed. ``severity`` (default
    ``WARNING``) is the threshold for channels the filter does not match: messages below it
    are dropped, ``NONE`` drops all. ``channel_filter`` is ``"<channel>=<level>,..."`` with
    levels ``verbose|debug|info|warn|warning|error|fatal|none``; a rule also applies to the
    channel's dotted sub-channels (``ovstage=info`` covers ``ovstage.ops``), the most specific
    rule winning. A malformed filter raises ``OvstageError(INVALID_ARGUMENT)``. A callback may be
    installed before any :class:`Stage` exists.

    ``None`` clears the callback after delivering the pending messages (from inside the
    callback itself, pending messages are discarded instead of waited for).
    """
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    level = LogSeverity.WARNING if severity is None else as_enum(severity, LogSeverity, "severity")
    if channel_filter is not None and not isinstance(channel_filter, str):
        raise TypeError(
            f"channel_filter must be a str or None, got {type(channel_filter).__name__}"
        )
    text = channel_filter or ""
    problem = string_problem(text, "Filter", empty_ok=True)
    if problem is not None:
        raise OvstageError(ErrorCode.INVALID_ARGUMENT, f"channel_filter: {problem}")
    if callback is None:
        _clear()
        return
    global _dispatcher
    with _lock:
        gen = call(native.LogConfigure, int(level), text)
        dispatcher = _dispatcher
        if dispatcher is None:
            dispatcher = _Dispatcher()
            dispatcher.callbacks[gen] = callback
            _dispatcher = dispatcher
            _ensure_atexit()
            dispatcher.thread.start()
        else:
            dispatcher.callbacks[gen] = callback


def _clear() -> None:
    dispatcher = _dispatcher
    if dispatcher is None:
        call(native.LogDisable)
        return
    if threading.current_thread() is not dispatcher.thread and dispatcher.thread.is_alive():
        flush_log(TIMEOUT_INFINITE)
    _stop(dispatcher)


def flush_log(timeout: int = TIMEOUT_INFINITE) -> bool:
    """Wait until every message logged before this call was delivered to the callback.

    ``timeout`` is in nanoseconds (``TIMEOUT_INFINITE`` blocks, 0 polls). Returns ``True``
    when drained (or when no callback is installed), ``False`` on timeout. Called from inside
    the callback it cannot wait for itself: it reports whether nothing but the message being
    delivered is pending.
    """
    timeout_ns = as_timeout(timeout)
    dispatcher = _dispatcher
    if dispatcher is not None and threading.current_thread() is dispatcher.thread:
        # Messages are handed out in order, each after the previous one was acknowledged:
        # nothing but the message being delivered is pending iff it is the newest one.
        target = call(native.LogFlushTarget, 0)
        inflight = dispatcher.inflight
        return (inflight != 0 and target <= inflight) or bool(
            call(native.LogWaitDelivered, target, 0)
        )
    target = call(native.LogFlushTarget, 0)
    if not _wait_delivered(dispatcher, target, timeout_ns):
        return False
    if dispatcher is not None:
        dispatcher.keep_only_newest()
    return True


def _wait_delivered(
    dispatcher: _Dispatcher | None, target: int, timeout_ns: int, stall_ns: int | None = None
) -> bool:
    """Wait (interruptibly) until message ``target`` was delivered. False at the timeout, when
    the dispatcher thread is gone, or, with ``stall_ns``, once the dispatcher has been inside
    one callback call for that long while this waits."""
    progress = [dispatcher.inflight if dispatcher else 0, time.monotonic_ns()]

    def delivered(slice_ns: int) -> bool | None:
        """True once delivered, None when waiting longer is pointless, else False."""
        if call(native.LogWaitDelivered, target, slice_ns):
            return True
        if dispatcher is None:
            return False
        if not dispatcher.thread.is_alive():
            return None  # nobody will deliver
        if stall_ns is not None:
            now, inflight = time.monotonic_ns(), dispatcher.inflight
            if inflight != progress[0]:
                progress[:] = [inflight, now]
            elif inflight != 0 and now - progress[1] >= stall_ns:
                return None  # the callback is stuck on one message
        return False

    return wait_sliced(delivered, timeout_ns, _settled) is True


def _settled(result: bool | None) -> bool:
    return result is not False
