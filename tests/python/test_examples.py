"""The runnable examples under examples/python, run as scripts with this interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MINIMAL = REPO / "examples" / "python" / "minimal" / "main.py"
PRODUCER_CONSUMER = REPO / "examples" / "python" / "producer-consumer" / "main.py"


@pytest.fixture(scope="module")
def minimal_run() -> subprocess.CompletedProcess[str]:
    """One run of the minimal example, leaked handles escalated to errors."""
    return subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(MINIMAL)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_minimal_example_exits_cleanly(minimal_run) -> None:
    assert minimal_run.returncode == 0, minimal_run.stderr
    assert minimal_run.stderr == ""


def test_minimal_example_reads_back_the_first_write(minimal_run) -> None:
    assert "read back ordinal 1 [1. 2. 3.]" in minimal_run.stdout.splitlines()


def test_minimal_example_prints_every_step(minimal_run) -> None:
    assert minimal_run.stdout.splitlines() == [
        "read back ordinal 1 [1. 2. 3.]",
        "read back ordinal 2 [4. 5. 6.]",
        "read back ordinal 3 [7. 8. 9.]",
        "after destroy [7. 8. 9.]",
    ]


def test_readme_tour_snippet_runs() -> None:
    """The README's Python snippet is runnable as written."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    snippet = readme.split("```python\n", 1)[1].split("```", 1)[0]
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-c", snippet],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[20.5 21. ]"


def test_producer_consumer_example_output_is_deterministic() -> None:
    """The producer/consumer example prints the same lines on every run, as its README says."""
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(PRODUCER_CONSUMER)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    readme = (PRODUCER_CONSUMER.parent / "README.md").read_text(encoding="utf-8")
    documented = readme.split("consumer saw depends on timing, so it is not printed):")[1]
    documented = documented.split("```\n", 2)[1]
    assert result.stdout == documented
    assert result.stdout.splitlines() == [
        "producer: 120 frames, 240 writes, all operations completed",
        "consumer: read at least one frame: True",
        "consumer: frames never went backwards: True",
        "consumer: every read was one consistent sealed frame: True",
        "final temperature: [140.0, 140.5, 141.0, 141.5, 142.0, 142.5, 143.0, 143.5]",
        "final position of sensor 7: [120.0, 7.0, -120.0]",
    ]
