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
        "after clone [7. 8. 9.]",
        "clones [7. 7.]",
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


def _run_example(name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(EXAMPLES / name / "main.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


EXAMPLES = REPO / "examples" / "python"


@pytest.fixture(scope="module")
def write_flavors_run() -> subprocess.CompletedProcess[str]:
    return _run_example("write-flavors")


def test_write_flavors_example_exits_cleanly(write_flavors_run) -> None:
    assert write_flavors_run.returncode == 0, write_flavors_run.stderr
    assert write_flavors_run.stderr == ""


def test_write_flavors_example_output(write_flavors_run) -> None:
    assert write_flavors_run.stdout.splitlines() == [
        "batch write at ordinal 1 (one op)",
        "  temperature [20.0, 21.0, 22.0, 23.0]",
        "  position    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]",
        "  label       ['alpha', 'b', '', 'delta']",
        # Typed reads: scalar lanes plus component axes.
        "  temperature reads as [(4,)]",
        "  position reads as [(4, 3)]",
        "  xform reads as [(4, 4, 4)]",
        # A <- row 1, B <- row 1, C <- row 0, D untouched.
        "index_map [1, 1, 0] at ordinal 2",
        "  temperature [200.0, 200.0, 100.0, 23.0]",
        # Only B and D (bits 1 and 3).
        "mask 0b1010 at ordinal 3",
        "  temperature [200.0, -2.0, 100.0, -4.0]",
        # Only the leading two prims.
        "count 2 at ordinal 4",
        "  temperature [7.0, 8.0, 100.0, -4.0]",
        "ragged arrays at ordinal 5",
        "  weights     [[0, 1], [2, 3], [4, 5], [6, 7]]",
        "  samples     [[20, 21], [30, 31, 32], [10], []]",
        "  samples rows read as [(2,), (3,), (1,), (0,)]",
        "CPU ahead: submitted 5 ops for ordinals 6..9, drained 5",
        "  temperature [90.0, 90.0, 90.0, 90.0]",
    ]


@pytest.fixture(scope="module")
def time_and_ordinals_run() -> subprocess.CompletedProcess[str]:
    return _run_example("time-and-ordinals")


def test_time_and_ordinals_example_exits_cleanly(time_and_ordinals_run) -> None:
    assert time_and_ordinals_run.returncode == 0, time_and_ordinals_run.stderr
    assert time_and_ordinals_run.stderr == ""


def test_time_and_ordinals_example_output(time_and_ordinals_run) -> None:
    assert time_and_ordinals_run.stdout.splitlines() == [
        "after INCLUDE [pose] to 3:",
        "  pose 3 color 0 global 0 (the minimum over attributes)",
        "after EXCLUDE [pose] to 3:",
        "  pose 3 color 3 global 3",
        "consumer at t=0.100s: changes in [1, 3]",
        "  /World/A color = [0.3, 0.0, 0.0]",
        "  /World/A pose = [3.0, 0.0, 0.0]",
        "  /World/B color = [0.3, 0.0, 0.0]",
        "  /World/B pose = [3.0, 0.0, 0.0]",
        "  /World/C color = [0.3, 0.0, 0.0]",
        "  /World/C pose = [3.0, 0.0, 0.0]",
        "consumer at t=0.133s: changes in [4, 4]",
        "  /World/A pose = [4.0, 1.0, 0.0]",
        "  /World/B pose = [4.0, 1.0, 0.0]",
        "  /World/C pose = [4.0, 1.0, 0.0]",
        "consumer at t=0.167s: changes in [5, 5]",
        "  /World/A pose = [5.0, 5.0, 5.0]",
        # Step 6 (a delete) and step 7 are read together.
        "consumer at t=0.233s: changes in [6, 7]",
        "  /World/B color deleted",
        "  /World/C color = [0.7, 0.7, 0.7]",
        # The whole-prim delete of /World/C at 8 tombstones both of its attributes.
        "consumer at t=0.300s: changes in [8, 9]",
        "  /World/A pose = [9.0, 9.0, 9.0]",
        "  /World/B pose = [9.0, 9.0, 9.0]",
        "  /World/C color deleted",
        "  /World/C pose deleted",
        "time 0.2s is ordinal 6",
        "oldest preserved ordinal 0",
    ]


def test_torch_handoff_example_prints_what_its_readme_shows() -> None:
    """The torch handoff example (torch comes with the test extra)."""
    pytest.importorskip("torch", reason="torch is not importable (the test extra installs it)")
    result = _run_example("torch-handoff")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    readme = (EXAMPLES / "torch-handoff" / "README.md").read_text(encoding="utf-8")
    documented = readme.split("It prints:\n", 1)[1].split("```\n", 2)[1]
    assert result.stdout == documented
