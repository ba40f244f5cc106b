"""Blocking waits that stay interruptible: the one place for the slicing rule.

CPython runs signal handlers (Ctrl-C's ``KeyboardInterrupt``) only between bytecodes, so one
long native wait would hold Ctrl-C back until it returns. Every Python entry that blocks on
the engine therefore waits through :func:`wait_sliced`: native waits of at most
``WAIT_SLICE_NS`` each, until the wait succeeds or the caller's deadline passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from ._errors import TIMEOUT_INFINITE

__all__ = ["WAIT_SLICE_NS", "wait_sliced"]

T = TypeVar("T")

# Longest single native wait: KeyboardInterrupt arrives within about this long of Ctrl-C.
WAIT_SLICE_NS = 50_000_000


def _truthy(result: object) -> bool:
    return bool(result)


def wait_sliced(
    step: Callable[[int], T], timeout_ns: int, done: Callable[[T], bool] = _truthy
) -> T:
    """Call ``step(slice_ns)`` (a native wait of at most ``slice_ns``) until ``done`` accepts
    its result, and return that result; once ``timeout_ns`` has passed, return the last one.

    ``timeout_ns`` 0 polls once and ``TIMEOUT_INFINITE`` never gives up. A slice that times
    out is not the caller's timeout: only the deadline ends the wait, and the last slice is cut
    to it, so a finite timeout is honoured exactly. Hot paths (waits and fetches of results
    that are usually ready) poll once with timeout 0 before they come here.
    """
    if timeout_ns <= WAIT_SLICE_NS:  # includes 0 (a poll): one native call, no clock read
        return step(timeout_ns)
    deadline = None if timeout_ns == TIMEOUT_INFINITE else time.monotonic_ns() + timeout_ns
    while True:
        left = WAIT_SLICE_NS
        if deadline is not None:
            left = max(0, min(left, deadline - time.monotonic_ns()))
        result = step(left)
        if done(result) or left == 0:
            return result
        if deadline is not None and time.monotonic_ns() >= deadline:
            return result
