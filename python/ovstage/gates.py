"""Test gates: hold ops pending deterministically (the reference's test hooks).

Two process-wide gates exist, shared by every stage:

* :data:`write_gate` holds ordinal-keyed mutations (``write_attribute``,
  ``write_attributes``, ``delete_attributes``);
* :data:`query_gate` holds reads (``read_attributes``) and asynchronous queries. This engine
  builds queries synchronously from path lists, so in practice it holds reads.

While a gate is enabled, each matching op blocks when it becomes ready to run (before it takes
a worker, so other ops keep running) until :meth:`Gate.release`. Ops enqueued while a gate is
armed never run on the calling thread, so the enqueue itself never blocks. ``fail_next()``
makes the next matching op fail with ``OP_FAILED`` and a message saying so.

The reference offers these hooks only in test-instrumented builds; here they are always
available (:func:`available` returns True) and cost one atomic load per enqueue when unused.
Typical use::

    with ovstage.gates.scoped_write_gate() as gate:
        op = stage.write_attribute(query, "x", 2, values, is_array=False)
        assert gate.wait_until_entered()
        ...  # op is pending: poll it, read the previous sealed values, ...
        gate.release()
        op.wait()
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ._guards import as_timeout, as_uint
from ._lib import call, native
from ._waits import wait_sliced

__all__ = [
    "Gate",
    "available",
    "query_gate",
    "scoped_query_gate",
    "scoped_write_gate",
    "write_gate",
]

# Default wait_until_entered timeout: 5 s (a test never hangs on a gate nobody enters).
_DEFAULT_TIMEOUT_NS = 5_000_000_000


def available() -> bool:
    """Whether test gates are compiled in (always True for this implementation)."""
    return True


class Gate:
    """One process-wide test gate (``"query"`` or ``"write"``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def enable(self) -> None:
        """Hold every matching op (of every stage) when it becomes ready, until released."""
        call(native.GateControl, self.name, "enable")

    def release(self) -> None:
        """Let every held op continue and stop holding new ones."""
        call(native.GateControl, self.name, "release")

    def reset(self) -> None:
        """Release, clear pending ``fail_next`` requests and zero ``entered_count()``."""
        call(native.GateControl, self.name, "reset")

    def fail_next(self) -> None:
        """Make the next matching op fail with ``OP_FAILED`` (after the gate lets it through,
        if enabled). Each call fails one more op."""
        call(native.GateControl, self.name, "fail_next")

    def entered_count(self) -> int:
        """How many ops reached the gate while it was armed, since the last ``reset()``."""
        return int(call(native.GateEnteredCount, self.name))

    def wait_until_entered(self, timeout: int = _DEFAULT_TIMEOUT_NS, count: int = 1) -> bool:
        """Wait until at least ``count`` ops have entered; False if ``timeout`` (ns) passed.

        ``TIMEOUT_INFINITE`` waits without limit (still interruptible with Ctrl-C).
        """
        timeout_ns = as_timeout(timeout)
        n = as_uint(count, "count", 31)
        return bool(
            wait_sliced(lambda ns: call(native.GateWaitUntilEntered, self.name, n, ns), timeout_ns)
        )

    def __repr__(self) -> str:
        return f"Gate({self.name!r}, entered={self.entered_count()})"


#: Holds reads (and asynchronous queries).
query_gate = Gate("query")
#: Holds ordinal-keyed mutations: writes, write batches, deletes.
write_gate = Gate("write")


@contextlib.contextmanager
def scoped_query_gate() -> Iterator[Gate]:
    """Reset and enable :data:`query_gate` for the block; reset (releasing held ops) after."""
    query_gate.reset()
    query_gate.enable()
    try:
        yield query_gate
    finally:
        query_gate.reset()


@contextlib.contextmanager
def scoped_write_gate() -> Iterator[Gate]:
    """Reset and enable :data:`write_gate` for the block; reset (releasing held ops) after."""
    write_gate.reset()
    write_gate.enable()
    try:
        yield write_gate
    finally:
        write_gate.reset()
