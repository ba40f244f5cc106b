"""Interpreter exit finishes promptly with status 0 whatever is left behind.

Each case runs in a fresh interpreter (tests/python/helpers/blocking_calls.py ``exit``): a log
callback that never returns or that raises, ops that a test gate holds forever (with a daemon
thread blocked fetching one), live exported views and open handles. The exit is timed from the
child's last statement to the end of the process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

HELPER = Path(__file__).resolve().parent / "helpers" / "blocking_calls.py"
#: The bound the exit must meet (the log dispatcher gets at most 1 s to deliver what is
#: pending).
EXIT_BOUND_S = 2.0


def exit_child(case: str) -> tuple[float, list[str]]:
    """Run exit case ``case``: (seconds from its last statement to its end, stdout lines)."""
    proc = subprocess.Popen(
        [sys.executable, "-u", str(HELPER), "exit", case],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate(timeout=30)
        pytest.fail(f"the interpreter did not exit within 30 s ({case}): {stdout} {stderr}")
    ended = time.monotonic()  # CLOCK_MONOTONIC is shared by the processes of one machine
    assert proc.returncode == 0, stderr
    lines = stdout.splitlines()
    marks = [json.loads(line)["exiting_at"] for line in lines if line.startswith('{"exiting_at"')]
    assert len(marks) == 1, stdout
    exit_s = ended - marks[0]
    print(f"{case}: exit took {exit_s:.3f} s")  # shown with -s
    return exit_s, lines


@pytest.mark.parametrize(
    "case", ["blocked_callback", "raising_callback", "pending_ops", "live_views", "everything"]
)
def test_exit_is_prompt_and_clean(case: str) -> None:
    exit_s, _ = exit_child(case)
    assert exit_s <= EXIT_BOUND_S, f"exit took {exit_s:.3f} s ({case})"


def test_exit_still_delivers_what_a_slow_callback_has_pending() -> None:
    """Giving up on a stuck callback does not drop messages of one that is merely slow."""
    exit_s, lines = exit_child("slow_callback")
    assert exit_s <= EXIT_BOUND_S
    delivered = [line for line in lines if line.startswith("delivered: ")]
    for i in range(10):
        assert sum(f'"slow-{i}"' in line for line in delivered) == 2, (i, delivered)
