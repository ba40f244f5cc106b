"""Ctrl-C reaches every blocking call, and sliced waits still honour the caller's timeout.

Blocking calls wait in short native slices (``ovstage._waits``) so ``KeyboardInterrupt``
arrives promptly; the child-process test interrupts each of them for real. The in-process
tests check the other side of slicing: a finite timeout is honoured in full (a slice that
times out is not the caller's timeout) and a wait that outlasts many slices still returns the
result. Each in-process test that could block arms a watchdog that unblocks it, so a
regression fails instead of hanging.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, OrdinalRange, OvstageError, gates

HELPER = Path(__file__).resolve().parent / "helpers" / "blocking_calls.py"
MS = 1_000_000
#: A finite timeout several wait slices long.
TIMEOUT_NS = 300 * MS

BLOCKING_CALLS = [
    "Operation.wait",
    "Stage.wait_op",
    "Read.fetch_next",
    "Read.fetch_next(timeout=60s)",
    "iterating Read.groups()",
    "Read.wait",
    "Query.result",
    "OrdinalQuery.fetch",
    "Map.fetch_next",
    "Hierarchy.result",
    "Stage.get_hierarchy",
    "Gate.wait_until_entered",
    "flush_log",
    "set_log_callback(None)",
]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_interrupts_every_blocking_call_and_leaves_its_handle_usable() -> None:
    result = subprocess.run(
        [sys.executable, "-u", str(HELPER), "interrupts"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["call"] for r in reports] == BLOCKING_CALLS
    for r in reports:
        print(f"{r['call']}: KeyboardInterrupt after {r['latency_s']} s")  # shown with -s
    assert [(r["call"], r["outcome"], r["after"]) for r in reports] == [
        (name, "interrupted", "ok") for name in BLOCKING_CALLS
    ]
    slow = {r["call"]: r["latency_s"] for r in reports if r["latency_s"] >= 0.5}
    assert not slow, f"KeyboardInterrupt later than 0.5 s after SIGINT: {slow}"


# -- sliced waits honour the caller's timeout ------------------------------------------------


@pytest.fixture
def watchdog() -> Iterator[Callable[[Callable[[], None]], None]]:
    """``watchdog(unblock)``: call ``unblock`` 10 s from now unless the test ended first."""
    timers: list[threading.Timer] = []

    def arm(unblock: Callable[[], None]) -> None:
        timer = threading.Timer(10.0, unblock)
        timer.daemon = True
        timer.start()
        timers.append(timer)

    yield arm
    for timer in timers:
        timer.cancel()
        timer.join(10)


def elapsed_of(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.monotonic()
    try:
        outcome = fn()
    except OvstageError as exc:
        outcome = exc.code
    return time.monotonic() - start, outcome


def write(stage: ovstage.Stage, query: ovstage.Query, ordinal: int, values: list[float]):
    return stage.write_attribute(query, "t", ordinal, np.array(values, np.float32), is_array=False)


@pytest.fixture
def sealed(stage, make_query) -> ovstage.Query:
    """A query over /A, /B whose ``t`` is [1, 2], sealed at ordinal 1."""
    query = make_query(["/A", "/B"])
    write(stage, query, 1, [1.0, 2.0]).wait()
    stage.advance_write_floor(1).wait()
    return query


def groups_values(read: ovstage.Read) -> list[float]:
    out: list[float] = []
    for group in read.groups():
        with group:
            out.extend(group.array(0).tolist())
    return out


def test_a_finite_fetch_timeout_is_honoured_in_full_and_the_read_stays_usable(
    stage, sealed, watchdog
) -> None:
    with gates.scoped_query_gate() as gate:
        watchdog(gate.reset)
        read = stage.read_attributes(sealed, ["t"], OrdinalRange.latest(1))
        assert gate.wait_until_entered()
        elapsed, outcome = elapsed_of(lambda: read.fetch_next(TIMEOUT_NS))
        assert outcome == ErrorCode.TIMEOUT
        assert elapsed >= TIMEOUT_NS / 1e9, "a timed-out slice ended the caller's wait early"
        assert elapsed < 5, "the wait ended at its deadline"
        gate.release()
        with read:
            assert groups_values(read) == [1.0, 2.0]


@pytest.mark.parametrize("kind", ["Operation.wait", "Stage.wait_op"])
def test_a_finite_op_wait_timeout_is_honoured_in_full(stage, sealed, watchdog, kind) -> None:
    with gates.scoped_write_gate() as gate:
        watchdog(gate.reset)
        op = write(stage, sealed, 2, [3.0, 4.0])
        assert gate.wait_until_entered()
        if kind == "Operation.wait":
            elapsed, outcome = elapsed_of(lambda: op.wait(TIMEOUT_NS))
        else:
            elapsed, answer = elapsed_of(lambda: stage.wait_op(op.op_id, TIMEOUT_NS))
            outcome = answer[0]  # type: ignore[index]
        assert outcome == ErrorCode.TIMEOUT
        assert TIMEOUT_NS / 1e9 <= elapsed < 5
        gate.release()
        op.wait()


def test_a_finite_gate_and_flush_timeout_is_honoured_in_full(stage, watchdog) -> None:
    gates.write_gate.reset()
    elapsed, entered = elapsed_of(lambda: gates.write_gate.wait_until_entered(TIMEOUT_NS))
    assert entered is False
    assert TIMEOUT_NS / 1e9 <= elapsed < 5

    release = threading.Event()
    watchdog(release.set)

    def blocking_callback(severity: object, timestamp: float, message: str) -> None:
        release.wait(30)

    ovstage.set_log_callback(blocking_callback, ovstage.LogSeverity.INFO)
    try:
        ovstage.Stage("logs one message").destroy()
        elapsed, flushed = elapsed_of(lambda: ovstage.flush_log(TIMEOUT_NS))
        assert flushed is False
        assert TIMEOUT_NS / 1e9 <= elapsed < 5
    finally:
        release.set()
        ovstage.set_log_callback(None)


def test_waits_that_outlast_many_slices_return_the_result(stage, sealed, watchdog) -> None:
    """Each gate opens about 0.3 s (six slices) into an infinite wait: the wait returns the
    data."""
    with gates.scoped_write_gate() as wgate, gates.scoped_query_gate() as qgate:
        watchdog(wgate.reset)
        watchdog(qgate.reset)
        read = stage.read_attributes(sealed, ["t"], OrdinalRange.latest(1))
        op = write(stage, sealed, 2, [3.0, 4.0])
        advance = stage.advance_write_floor(2)
        floor = stage.get_attribute_write_floor("t")
        assert qgate.wait_until_entered() and wgate.wait_until_entered()
        openers = [threading.Timer(0.3, qgate.release), threading.Timer(0.3, wgate.release)]
        try:
            openers[0].start()
            with read:
                assert groups_values(read) == [1.0, 2.0], "the write is still held"
            openers[1].start()
            assert floor.fetch() == 2
            op.wait()
            advance.wait()
            floor.release().wait()
        finally:
            for opener in openers:
                opener.cancel()
                if opener.is_alive():
                    opener.join(10)


def test_leaving_a_with_block_on_an_exception_does_not_wait_for_the_release(
    stage, sealed, watchdog
) -> None:
    """The release runs after the read, which the gate holds: waiting for it in ``__exit__``
    would hold the exception (a Ctrl-C) until the read finished."""
    with gates.scoped_query_gate() as gate:
        watchdog(gate.reset)
        read = stage.read_attributes(sealed, ["t"], OrdinalRange.latest(1))
        assert gate.wait_until_entered()
        start = time.monotonic()
        with pytest.raises(ValueError), read:
            raise ValueError("leaving early")
        assert time.monotonic() - start < 5, "__exit__ waited for the held read"
        assert read.released
        gate.release()


def test_destroy_does_not_wait_for_ops_a_gate_holds(watchdog) -> None:
    stage = ovstage.Stage("destroyed while held")
    with gates.scoped_write_gate() as wgate, gates.scoped_query_gate() as qgate:
        watchdog(wgate.reset)
        watchdog(qgate.reset)
        with ovstage.PathDictionary(stage).create_path_list_from_strings(["/A"]) as plist:
            query = stage.query_from_path_list(plist)
        op = write(stage, query, 1, [1.0])
        read = stage.read_attributes(query, ["t"], OrdinalRange.latest(1))
        assert wgate.wait_until_entered() and qgate.wait_until_entered()
        start = time.monotonic()
        stage.destroy()
        assert time.monotonic() - start < 5, "destroy() waited for the held ops"
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE  # the stage is gone
    del read, query
