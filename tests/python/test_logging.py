"""Process-global logging: set_log_callback, flush_log, LogSeverity."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, LogSeverity, OvstageError

#: flush_log bound for the tests (ns): generous, the dispatcher normally needs microseconds.
FLUSH = 10 * 1_000_000_000

Record = tuple[LogSeverity, float, str]


@pytest.fixture(autouse=True)
def _clear_callback() -> Iterator[None]:
    """Every test leaves the process without a callback."""
    yield
    ovstage.set_log_callback(None)


class Recorder:
    """A callback that records what it receives (and on which thread)."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.threads: set[int] = set()

    def __call__(self, severity: LogSeverity, timestamp: float, message: str) -> None:
        self.threads.add(threading.get_ident())
        self.records.append((severity, timestamp, message))

    def messages(self, channel: str | None = None) -> list[str]:
        prefix = f"[{channel}] " if channel else ""
        return [m for _, _, m in self.records if m.startswith(prefix)]


def failing_op(stage: ovstage.Stage, make_query) -> ovstage.Operation:
    """An op that is accepted and then fails: the world-matrix column has a wrong schema."""
    query = make_query(["/P"])
    stage.write_attribute(query, "omni:fabric:worldMatrix", 1, np.zeros(1), is_array=False).wait()
    stage.advance_write_floor(1).wait()
    op = stage.compute_hierarchy_async(1, 2)
    assert op.ok
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.OP_FAILED
    return op


def lifecycle(name: str) -> None:
    """Create and destroy a stage (two INFO messages on ovstage.stage)."""
    ovstage.Stage(name).destroy()


def test_callback_receives_an_op_failure_as_error(stage, make_query) -> None:
    rec = Recorder()
    ovstage.set_log_callback(rec)
    before = time.time()
    op = failing_op(stage, make_query)
    assert ovstage.flush_log(FLUSH)
    after = time.time()
    ops = [r for r in rec.records if r[2].startswith("[ovstage.ops] ")]
    assert len(ops) == 1
    severity, timestamp, message = ops[0]
    assert severity is LogSeverity.ERROR
    assert f"op {op.op_id} failed (INVALID_ARGUMENT)" in message
    assert "omni:fabric:worldMatrix" in message
    assert before - 1 <= timestamp <= after + 1
    assert rec.threads and threading.get_ident() not in rec.threads


def test_default_threshold_is_warning(stage, make_query) -> None:
    rec = Recorder()
    ovstage.set_log_callback(rec)
    lifecycle("info-only")
    failing_op(stage, make_query)
    assert ovstage.flush_log(FLUSH)
    assert rec.messages("ovstage.stage") == [], "INFO is below the default WARNING"
    assert len(rec.messages("ovstage.ops")) == 1


def test_lifecycle_events_are_info() -> None:
    rec = Recorder()
    with ovstage.Stage("keeps logging bootstrapped"):
        ovstage.set_log_callback(rec, LogSeverity.INFO)
        lifecycle("visible")
        assert ovstage.flush_log(FLUSH)
    stage_msgs = [r for r in rec.records if r[2].startswith("[ovstage.stage] ")]
    assert [r[0] for r in stage_msgs[:2]] == [LogSeverity.INFO, LogSeverity.INFO]
    assert '"visible" created' in stage_msgs[0][2]
    assert '"visible" destroyed' in stage_msgs[1][2]


def test_filter_rules_override_the_default_threshold(stage, make_query) -> None:
    rec = Recorder()
    ovstage.set_log_callback(rec, LogSeverity.NONE, "ovstage.stage=info")
    lifecycle("filtered-in")
    failing_op(stage, make_query)
    assert ovstage.flush_log(FLUSH)
    assert len(rec.messages("ovstage.stage")) == 2
    assert rec.messages("ovstage.ops") == [], "unmatched channels use the default NONE"


def test_a_rule_covers_dotted_subchannels_and_the_most_specific_wins(stage, make_query) -> None:
    rec = Recorder()
    ovstage.set_log_callback(rec, LogSeverity.VERBOSE, "ovstage=none, ovstage.ops=error")
    lifecycle("silenced")
    failing_op(stage, make_query)
    assert ovstage.flush_log(FLUSH)
    assert rec.messages("ovstage.stage") == []
    assert len(rec.messages("ovstage.ops")) == 1
    assert len(rec.records) == 1


@pytest.mark.parametrize(
    "bad", ["ovstage", "ovstage=loud", "=info", "a=info,,b=error", "a=info,a=error"]
)
def test_filter_parse_errors_are_invalid_argument(stage, bad) -> None:
    with pytest.raises(OvstageError) as info:
        ovstage.set_log_callback(Recorder(), None, bad)
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert "channel_filter" in info.value.message


def test_argument_guards(stage) -> None:
    with pytest.raises(TypeError, match="callback must be callable"):
        ovstage.set_log_callback("print")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="severity must be one of"):
        ovstage.set_log_callback(Recorder(), 2)
    with pytest.raises(TypeError, match="channel_filter must be a str"):
        ovstage.set_log_callback(Recorder(), None, b"a=info")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        ovstage.flush_log(-1)
    with pytest.raises(TypeError, match="timeout"):
        ovstage.flush_log(1.5)  # type: ignore[arg-type]


def test_flush_without_a_callback_is_true() -> None:
    assert ovstage.flush_log(0)
    assert ovstage.flush_log()


def test_flush_times_out_while_the_callback_is_busy_then_drains(stage) -> None:
    entered, release = threading.Event(), threading.Event()
    rec = Recorder()

    def slow(severity: LogSeverity, timestamp: float, message: str) -> None:
        entered.set()
        release.wait(FLUSH / 1e9)  # bounded: a failing test must not block the dispatcher
        rec(severity, timestamp, message)

    ovstage.set_log_callback(slow, LogSeverity.INFO)
    try:
        lifecycle("slow")
        assert entered.wait(FLUSH / 1e9)
        assert not ovstage.flush_log(0)
        assert not ovstage.flush_log(20_000_000)
    finally:
        release.set()
    assert ovstage.flush_log(FLUSH)
    assert [m.split('"')[1:3] for m in rec.messages("ovstage.stage")] == [
        ["slow", " created"],
        ["slow", " destroyed"],
    ]


def test_messages_are_delivered_serially_in_order_on_one_thread(stage) -> None:
    rec = Recorder()
    active = 0
    overlap = False

    def serial(severity: LogSeverity, timestamp: float, message: str) -> None:
        nonlocal active, overlap
        active += 1
        overlap |= active > 1
        rec(severity, timestamp, message)
        active -= 1

    ovstage.set_log_callback(serial, LogSeverity.INFO)
    names = [f"s{i}" for i in range(20)]
    threads = [threading.Thread(target=lifecycle, args=(n,), daemon=True) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive()
    assert ovstage.flush_log(FLUSH)
    assert not overlap
    assert len(rec.threads) == 1
    msgs = rec.messages("ovstage.stage")
    assert len(msgs) == 40
    for n in names:
        created = msgs.index(next(m for m in msgs if f'"{n}" created' in m))
        destroyed = msgs.index(next(m for m in msgs if f'"{n}" destroyed' in m))
        assert created < destroyed
    timestamps = [r[1] for r in rec.records]
    assert timestamps == sorted(timestamps)


def test_callback_exceptions_are_printed_and_suppressed(stage, capsys) -> None:
    rec = Recorder()

    def flaky(severity: LogSeverity, timestamp: float, message: str) -> None:
        if "created" in message:
            raise ValueError("boom from the callback")
        rec(severity, timestamp, message)

    ovstage.set_log_callback(flaky, LogSeverity.INFO)
    lifecycle("flaky")
    assert ovstage.flush_log(FLUSH)
    assert "ValueError: boom from the callback" in capsys.readouterr().err
    assert len(rec.messages("ovstage.stage")) == 1, "delivery continues after the exception"


def test_clearing_delivers_pending_messages_then_stops(stage) -> None:
    entered, release = threading.Event(), threading.Event()
    rec = Recorder()

    def gated(severity: LogSeverity, timestamp: float, message: str) -> None:
        entered.set()
        release.wait(FLUSH / 1e9)  # bounded: a failing test must not block the dispatcher
        rec(severity, timestamp, message)

    ovstage.set_log_callback(gated, LogSeverity.INFO)
    lifecycle("pending")
    assert entered.wait(FLUSH / 1e9)
    clearer = threading.Thread(target=ovstage.set_log_callback, args=(None,), daemon=True)
    clearer.start()
    release.set()
    clearer.join(timeout=120)
    assert not clearer.is_alive()
    assert len(rec.messages("ovstage.stage")) == 2, "clearing flushed what was queued"
    lifecycle("after clear")
    assert ovstage.flush_log(0), "no callback: trivially drained"
    assert len(rec.records) == 2
    assert not [t for t in threading.enumerate() if t.name == "ovstage-log-dispatcher"]


def test_a_replaced_callback_still_gets_what_was_queued_for_it(stage) -> None:
    entered, release = threading.Event(), threading.Event()
    first, second = Recorder(), Recorder()

    def gated(severity: LogSeverity, timestamp: float, message: str) -> None:
        entered.set()
        release.wait(FLUSH / 1e9)  # bounded: a failing test must not block the dispatcher
        first(severity, timestamp, message)

    ovstage.set_log_callback(gated, LogSeverity.INFO)
    lifecycle("old")  # created: being delivered; destroyed: queued for the old callback
    assert entered.wait(FLUSH / 1e9)
    ovstage.set_log_callback(second, LogSeverity.INFO)
    lifecycle("new")
    release.set()
    assert ovstage.flush_log(FLUSH)
    assert [m.split('"')[1] for m in first.messages("ovstage.stage")] == ["old", "old"]
    assert [m.split('"')[1] for m in second.messages("ovstage.stage")] == ["new", "new"]


def test_flush_and_clear_from_inside_the_callback(stage) -> None:
    seen: list[bool] = []

    def reentrant(severity: LogSeverity, timestamp: float, message: str) -> None:
        seen.append(ovstage.flush_log())  # cannot wait for itself: a poll
        if "destroyed" in message:
            ovstage.set_log_callback(None)

    ovstage.set_log_callback(reentrant, LogSeverity.INFO)
    lifecycle("reentrant")
    assert ovstage.flush_log(FLUSH)
    assert len(seen) == 2
    assert seen[1] is True, "only the message being delivered was pending"
    lifecycle("after the callback cleared itself")
    assert len(seen) == 2


def test_a_callback_installed_before_any_stage_receives_later_messages() -> None:
    """0.3.0: ``set_log_callback`` works before any Stage exists (in a fresh process)."""
    script = textwrap.dedent(
        """
        import ovstage
        got = []
        ovstage.set_log_callback(lambda *a: got.append(a), ovstage.LogSeverity.INFO)
        ovstage.Stage("first").destroy()
        print("flushed:", ovstage.flush_log(), sum('"first" created' in a[2] for a in got))
        ovstage.set_log_callback(None)
        """
    )
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["flushed: True 1"]
