"""Blocking calls under Ctrl-C, and interpreter exit, each run in a fresh interpreter.

``python blocking_calls.py interrupts``: every Python entry that can block on the engine is
held (test gates, a log callback that waits), then SIGINT is sent to the process from another
thread. Prints one JSON line per call: ``{"call", "outcome", "latency_s", "after"}``, where
``latency_s`` is the time from the signal to the ``KeyboardInterrupt`` (measured here, in the
child) and ``after`` is ``"ok"`` when the same handle, unblocked, then returns the right data.
A watchdog unblocks a call that ignored the signal, so a regression is reported with its
latency instead of hanging.

``python blocking_calls.py exit <case>``: leaves something behind at interpreter exit (see
``EXIT_CASES``), prints ``{"exiting_at": time.monotonic()}`` as its last statement and lets
the interpreter exit. The caller measures from that moment to the process end. Log callbacks
may still print during the exit.

Both set SIGINT's handler themselves: started from a shell that ignores SIGINT (a background
job), CPython leaves it ignored and Ctrl-C would never arrive.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import ovstage
from ovstage import (
    TIMEOUT_INFINITE,
    Filter,
    FilterOp,
    HierarchyRelation,
    OrdinalRange,
    Predicate,
    gates,
)

SECOND_NS = 1_000_000_000
# How long the blocked call runs before SIGINT, and when the watchdog unblocks it.
SETTLE_S = 0.15
WATCHDOG_S = 3.0

F32 = np.float32


@dataclass
class Case:
    """A blocking call: ``block`` blocks until ``unblock``; ``check`` then uses the same
    handle and raises AssertionError if it does not return the right data."""

    block: Callable[[], object]
    unblock: Callable[[], None]
    check: Callable[[], None]


class Scene:
    """A stage with prims /W/A and /W/B and attribute ``t`` sealed at ordinal 1."""

    def __init__(self) -> None:
        self.stage = ovstage.Stage("blocking-calls")
        self.paths = ovstage.PathDictionary(self.stage)
        self.plist = self.paths.create_path_list_from_strings(["/W/A", "/W/B"])
        self.query = self.stage.query_from_path_list(self.plist)
        self.write(1, [1.0, 2.0]).wait()
        self.stage.advance_write_floor(1).wait()

    def write(self, ordinal: int, values: list[float]) -> ovstage.Operation:
        return self.stage.write_attribute(
            self.query, "t", ordinal, np.array(values, F32), is_array=False
        )

    def held_write(self, ordinal: int, values: list[float]) -> ovstage.Operation:
        """A write held pending by the (reset, enabled) write gate."""
        gates.write_gate.reset()
        gates.write_gate.enable()
        op = self.write(ordinal, values)
        assert gates.write_gate.wait_until_entered(), "the write reached the gate"
        return op

    def held_read(self, ordinal: int) -> ovstage.Read:
        """A latest read held pending by the (reset, enabled) query gate."""
        gates.query_gate.reset()
        gates.query_gate.enable()
        read = self.stage.read_attributes(self.query, ["t"], OrdinalRange.latest(ordinal))
        assert gates.query_gate.wait_until_entered(), "the read reached the gate"
        return read

    def latest(self, ordinal: int) -> list[float]:
        with self.stage.read_attributes(self.query, ["t"], OrdinalRange.latest(ordinal)) as read:
            return read_values(read)

    def close(self) -> None:
        gates.write_gate.reset()
        gates.query_gate.reset()
        self.query.release().wait()
        self.plist.release()
        self.stage.destroy()


def read_values(read: ovstage.Read, fetch: Callable[[], Any] | None = None) -> list[float]:
    """The values of every group of ``read`` (releasing each group)."""
    out: list[float] = []
    while (group := (fetch or read.fetch_next)()) is not None:
        with group:
            out.extend(group.array(0).tolist())
    return out


def expect(actual: object, expected: object) -> None:
    if actual != expected:
        raise AssertionError(f"expected {expected!r}, got {actual!r}")


def reset_gates() -> None:
    gates.write_gate.reset()
    gates.query_gate.reset()


# -- the blocking calls ------------------------------------------------------------------


def operation_wait(scene: Scene) -> Case:
    op = scene.held_write(10, [3.0, 4.0])

    def check() -> None:
        op.wait()
        scene.stage.advance_write_floor(10).wait()
        expect(scene.latest(10), [3.0, 4.0])

    return Case(op.wait, reset_gates, check)


def wait_op_raw(scene: Scene) -> Case:
    op = scene.held_write(11, [5.0, 6.0])

    def check() -> None:
        expect(scene.stage.wait_op(op.op_id)[0], ovstage.ErrorCode.OK)
        op.wait()
        scene.stage.advance_write_floor(11).wait()
        expect(scene.latest(11), [5.0, 6.0])

    return Case(lambda: scene.stage.wait_op(op.op_id), reset_gates, check)


def read_case(block: Callable[[ovstage.Read], object]) -> Callable[[Scene], Case]:
    def make(scene: Scene) -> Case:
        read = scene.held_read(11)

        def check() -> None:
            expect(read_values(read), [5.0, 6.0])
            read.release().wait()

        return Case(lambda: block(read), reset_gates, check)

    return make


def query_result(scene: Scene) -> Case:
    gates.query_gate.reset()
    gates.query_gate.enable()
    query = scene.stage.query(Filter([Predicate("t", FilterOp.HAS)]))
    assert gates.query_gate.wait_until_entered()
    token = scene.paths.intern_token("t")

    def check() -> None:
        result = query.result()
        expect((result.total_prim_count, token in result.attributes), (2, True))
        query.release().wait()

    return Case(query.result, reset_gates, check)


def ordinal_fetch(scene: Scene) -> Case:
    op = scene.held_write(20, [7.0, 8.0])
    advance = scene.stage.advance_write_floor(20)
    floor = scene.stage.get_attribute_write_floor("t")  # runs after the advance

    def check() -> None:
        expect(floor.fetch(), 20)
        op.wait()
        advance.wait()
        floor.release().wait()

    return Case(floor.fetch, reset_gates, check)


def map_fetch_next(scene: Scene) -> Case:
    gates.write_gate.reset()
    gates.write_gate.enable()
    session = scene.stage.map_attribute(scene.query, "t", 21)
    assert gates.write_gate.wait_until_entered()

    def check() -> None:
        group = session.fetch_next()
        assert group is not None, "the interrupted session still hands out its group"
        values = group.array(0)
        expect(values.tolist(), [7.0, 8.0])
        values[:] = [9.0, 10.0]
        expect(session.fetch_next(), None)
        session.unmap().wait()
        scene.stage.advance_write_floor(21).wait()
        expect(scene.latest(21), [9.0, 10.0])

    return Case(session.fetch_next, reset_gates, check)


def hierarchy_result(scene: Scene) -> Case:
    op = scene.held_write(30, [1.0, 1.0])
    handle = scene.stage.get_hierarchy_async(scene.plist, 30, HierarchyRelation.SIBLINGS)

    def check() -> None:
        result = handle.result()
        expect([result.item_paths(0), result.item_paths(1)], [("/W/B",), ("/W/A",)])
        op.wait()
        handle.release().wait()

    return Case(handle.result, reset_gates, check)


def get_hierarchy(scene: Scene) -> Case:
    op = scene.held_write(31, [1.0, 1.0])

    def block() -> object:
        return scene.stage.get_hierarchy(scene.plist, 31, HierarchyRelation.SIBLINGS)

    def check() -> None:
        expect(block().item_paths(0), ("/W/B",))
        op.wait()

    return Case(block, reset_gates, check)


def gate_wait_until_entered(scene: Scene) -> Case:
    gates.write_gate.reset()
    gates.write_gate.enable()
    ops: list[ovstage.Operation] = []

    def unblock() -> None:
        if not ops:
            ops.append(scene.write(40, [4.0, 4.0]))

    def check() -> None:
        expect(gates.write_gate.wait_until_entered(10 * SECOND_NS), True)
        gates.write_gate.reset()
        ops[0].wait()

    return Case(lambda: gates.write_gate.wait_until_entered(TIMEOUT_INFINITE), unblock, check)


class BlockingCallback:
    """A log callback that blocks on messages naming ``blocker`` until ``release`` is set."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, severity: object, timestamp: float, message: str) -> None:
        self.messages.append(message)
        if "blocker" in message:
            self.entered.set()
            self.release.wait(60)

    def block_on(self, name: str) -> None:
        """Log about a stage called ``name`` and wait until the callback is blocked on it."""
        self.entered.clear()
        self.release.clear()
        ovstage.Stage(name).destroy()
        assert self.entered.wait(10), "the callback received the message"


def flush_log(scene: Scene) -> Case:
    callback = BlockingCallback()
    ovstage.set_log_callback(callback, ovstage.LogSeverity.INFO)
    callback.block_on("blocker-flush")

    def check() -> None:
        expect(ovstage.flush_log(10 * SECOND_NS), True)
        expect(sum('"blocker-flush"' in m for m in callback.messages), 2)

    return Case(ovstage.flush_log, callback.release.set, check)


def clear_log_callback(scene: Scene) -> Case:
    callback = BlockingCallback()
    ovstage.set_log_callback(callback, ovstage.LogSeverity.INFO)
    callback.block_on("blocker-clear")

    def check() -> None:
        ovstage.set_log_callback(None)
        names = [t.name for t in threading.enumerate()]
        expect("ovstage-log-dispatcher" in names, False)

    return Case(lambda: ovstage.set_log_callback(None), callback.release.set, check)


BLOCKING_CALLS: dict[str, Callable[[Scene], Case]] = {
    "Operation.wait": operation_wait,
    "Stage.wait_op": wait_op_raw,
    "Read.fetch_next": read_case(lambda read: read.fetch_next()),
    "Read.fetch_next(timeout=60s)": read_case(lambda read: read.fetch_next(60 * SECOND_NS)),
    "iterating Read.groups()": read_case(lambda read: list(read.groups())),
    "Read.wait": read_case(lambda read: read.wait()),
    "Query.result": query_result,
    "OrdinalQuery.fetch": ordinal_fetch,
    "Map.fetch_next": map_fetch_next,
    "Hierarchy.result": hierarchy_result,
    "Stage.get_hierarchy": get_hierarchy,
    "Gate.wait_until_entered": gate_wait_until_entered,
    "flush_log": flush_log,
    "set_log_callback(None)": clear_log_callback,
}


def interrupt(case: Case) -> dict[str, Any]:
    """Run ``case.block``, send SIGINT SETTLE_S later, and report what happened."""
    sent: list[float] = []

    def ctrl_c() -> None:
        time.sleep(SETTLE_S)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    signaller = threading.Thread(target=ctrl_c, daemon=True)
    watchdog = threading.Timer(WATCHDOG_S, case.unblock)
    watchdog.daemon = True
    report: dict[str, Any] = {"outcome": "returned", "latency_s": None}
    watchdog.start()
    signaller.start()
    try:
        case.block()
    except KeyboardInterrupt:
        report.update(outcome="interrupted", latency_s=time.monotonic() - sent[0])
    except Exception as exc:
        report["outcome"] = f"raised {type(exc).__name__}: {exc}"
    if report["outcome"] != "interrupted":
        try:  # the signal is still coming: take it here
            signaller.join(10)
            time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    watchdog.cancel()
    case.unblock()
    try:
        case.check()
        report["after"] = "ok"
    except Exception as exc:
        report["after"] = f"{type(exc).__name__}: {exc}"
    return report


def interrupts_scenario() -> None:
    scene = Scene()
    for name, make in BLOCKING_CALLS.items():
        report = {"call": name, **interrupt(make(scene))}
        print(json.dumps(report), flush=True)
    ovstage.set_log_callback(None)
    scene.close()


# -- interpreter exit --------------------------------------------------------------------

# Module globals keep what each exit case leaves behind alive until finalization.
left_behind: list[object] = []


def exit_blocked_callback() -> None:
    """A log callback that never returns."""
    callback = BlockingCallback()
    with ovstage.Stage("keeps logging bootstrapped"):
        ovstage.set_log_callback(callback, ovstage.LogSeverity.INFO)
        callback.block_on("blocker-at-exit")
    left_behind.append(callback)


def exit_raising_callback() -> None:
    """A log callback that raises on every message, with messages still queued."""

    def raising(severity: object, timestamp: float, message: str) -> None:
        time.sleep(0.001)
        raise RuntimeError(f"callback refuses {message!r}")

    with ovstage.Stage("keeps logging bootstrapped"):
        ovstage.set_log_callback(raising, ovstage.LogSeverity.INFO)
        for i in range(200):
            ovstage.Stage(f"noise-{i}").destroy()


def exit_slow_callback() -> None:
    """A slow (but not stuck) log callback with messages still queued: the exit delivers
    them, each printed as ``delivered: <message>``."""

    def slow(severity: object, timestamp: float, message: str) -> None:
        time.sleep(0.02)
        print(f"delivered: {message}", flush=True)

    left_behind.append(ovstage.Stage("keeps logging bootstrapped"))
    ovstage.set_log_callback(slow, ovstage.LogSeverity.INFO)
    for i in range(10):
        ovstage.Stage(f"slow-{i}").destroy()


def exit_pending_ops() -> None:
    """A stage whose write and read stay held by the gates forever, and a daemon thread
    blocked in a fetch of the held read."""
    scene = Scene()
    left_behind.append(scene)
    left_behind.append(scene.held_write(50, [5.0, 5.0]))
    read = scene.held_read(1)
    left_behind.append(read)
    fetcher = threading.Thread(target=read.fetch_next, daemon=True)
    fetcher.start()
    left_behind.append(fetcher)


def exit_live_views() -> None:
    """Unreleased read groups with exported arrays, an open map session, unreleased handles."""
    scene = Scene()
    left_behind.append(scene)
    read = scene.stage.read_attributes(scene.query, ["t"], OrdinalRange.latest(1))
    group = read.fetch_next()
    assert group is not None
    left_behind.extend([read, group, group.array(0), np.from_dlpack(group.dlpack(0))])
    session = scene.stage.map_attribute(scene.query, "t", 60)
    mapped = session.fetch_next()
    assert mapped is not None
    left_behind.extend([session, mapped, mapped.array(0)])


def exit_everything() -> None:
    for case in (exit_live_views, exit_pending_ops, exit_raising_callback):
        case()
    exit_blocked_callback()


EXIT_CASES: dict[str, Callable[[], None]] = {
    "blocked_callback": exit_blocked_callback,
    "raising_callback": exit_raising_callback,
    "slow_callback": exit_slow_callback,
    "pending_ops": exit_pending_ops,
    "live_views": exit_live_views,
    "everything": exit_everything,
}


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if sys.argv[1] == "interrupts":
        interrupts_scenario()
    else:
        EXIT_CASES[sys.argv[2]]()
        print(json.dumps({"exiting_at": time.monotonic()}), flush=True)
