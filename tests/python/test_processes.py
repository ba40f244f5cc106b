"""Processes and signals: fork() guard, spawn/forkserver children, Ctrl-C during a wait.

Each scenario runs in a fresh interpreter (tests/python/helpers/processes.py), with hard
timeouts, so a regression can never hang the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

HELPER = Path(__file__).resolve().parent / "helpers" / "processes.py"
FORK_ERROR = "cannot be used in a fork()ed child"


def run_helper(scenario: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(HELPER), scenario],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_use_in_a_forked_child_raises_a_clear_error_at_once() -> None:
    results = json.loads(run_helper("fork").stdout)
    assert "hung" not in results
    assert results["exit_status"] == 0
    for name in (
        "write_attribute",
        "operation_wait",
        "read_attributes",
        "new_stage",
        "intern_token",
    ):
        code, message = results[name]
        assert code == 6, name  # NOT_SUPPORTED
        assert FORK_ERROR in message and "spawn" in message
    assert results["elapsed_s"] < 1.0
    assert results["parent_after_fork"] == [5.0, 6.0], "the parent keeps working"


def test_spawn_and_forkserver_children_run_their_own_stage() -> None:
    lines = [json.loads(line) for line in run_helper("spawn").stdout.splitlines()]
    assert lines == [
        {"method": "spawn", "ok": True, "exitcode": 0},
        {"method": "forkserver", "ok": True, "exitcode": 0},
    ]


class LineReader:
    """Lines of a child's stdout, read on a daemon thread so each read has a timeout."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        with contextlib.suppress(ValueError, OSError):  # the test closed the stream
            for line in stream:
                self._lines.put(line)
        self._lines.put("")  # end of stream

    def next(self, timeout: float = 60) -> str:
        try:
            return self._lines.get(timeout=timeout).strip()
        except queue.Empty:
            raise AssertionError(f"the child printed nothing for {timeout} s") from None


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_interrupts_a_blocked_wait_promptly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-u", str(HELPER), "sigint"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = LineReader(proc.stdout)
        assert lines.next() == "ready"
        time.sleep(0.2)  # let the main thread settle inside Operation.wait()
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        line = lines.next()
        latency = time.monotonic() - sent
        assert line == "interrupted"
        assert latency < 0.5, f"KeyboardInterrupt took {latency:.3f} s"
        assert lines.next() == "clean exit"
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
