"""The C API next to the Python package: the same measurements, in the same run.

Builds tests/bench/bench_c.c against build/lib/libovstage.so (``make libovstage`` first; ``make
bench`` does), runs it, takes the equivalent Python figures in this process, and prints them
side by side with their targets. Medians; the machine may be shared, so compare the columns of
one run rather than absolute times across runs.

1. ``write_attribute`` + wait (C: ``wait_op`` + ``release_op``; Python: ``Operation.wait()``)
   of a 1,000-prim float32 write, each at a fresh ordinal, the ops drained and the floor
   advanced every 64 writes (untimed), as in bench_async.py.
2. The enqueue alone (the op is waited for untimed).
3. A latest read of one float32 column over 1,000 and 1,000,000 prims: C ``read_attributes``,
   ``fetch_read_next`` to END_OF_ITERATION, ``release_group``, ``release_read``, every op
   waited and released; Python ``with read_attributes(...)``, ``groups()``, ``with group`` and
   ``np.from_dlpack(group.dlpack(0))`` (the view a Python consumer needs).

Usage: ``python tests/bench/bench_c_api.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import ovstage
from figures import figure
from ovstage import OrdinalRange

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "build" / "lib" / "libovstage.so"
FRAME = 64


def make_query(stage: ovstage.Stage, count: int, prefix: str) -> ovstage.Query:
    paths = ovstage.PathDictionary(stage)
    with paths.create_path_list_from_strings([f"/{prefix}/p{i}" for i in range(count)]) as lst:
        return stage.query_from_path_list(lst)


# ---------------------------------------------------------------- the C figures


def c_figures(quick: bool) -> dict[str, float]:
    """Builds and runs bench_c; its medians in microseconds by name."""
    if not LIB.is_file():
        sys.exit(f"{LIB} is missing: run `make libovstage` first")
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc") or "cc"
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "bench_c"
        subprocess.run(
            [cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
             f"-I{REPO / 'build' / 'include'}", str(REPO / "tests" / "bench" / "bench_c.c"),
             f"-L{LIB.parent}", "-lovstage", f"-Wl,-rpath,{LIB.parent}", "-o", str(exe)],
            check=True, timeout=300,
        )  # fmt: skip
        out = subprocess.run(
            [str(exe), *(["--quick"] if quick else [])],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    if out.returncode != 0:
        sys.exit(f"bench_c failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    figures = {}
    for line in out.stdout.splitlines():
        name, ns, _samples = line.split()
        figures[name] = int(ns) / 1000
    return figures


# ---------------------------------------------------------------- the Python figures


def python_writes(samples: int) -> tuple[float, float]:
    """(enqueue, enqueue + wait) medians in microseconds, the loop of bench_c.c."""
    prims = 1000
    values = np.arange(prims, dtype=np.float32)
    with ovstage.Stage("bench-c-api") as stage, make_query(stage, prims, "enq") as query:
        ordinal = 0

        def run(n: int, wait: bool) -> float:
            nonlocal ordinal
            times: list[int] = []
            ops: list[ovstage.Operation] = []
            clock = time.perf_counter_ns
            for i in range(n):
                ordinal += 1
                t0 = clock()
                op = stage.write_attribute(query, "w", ordinal, values, is_array=False)
                if wait:
                    op.wait()
                times.append(clock() - t0)
                if not wait:
                    ops.append(op)
                if i % FRAME == FRAME - 1:  # a producer's frame: drain, seal (not timed)
                    for op in ops:
                        op.wait()
                    ops.clear()
                    stage.advance_write_floor(ordinal).wait()
            for op in ops:
                op.wait()
            return statistics.median(times) / 1000

        run(2000, False)
        run(2000, True)
        return run(samples, False), run(samples, True)


def python_read(prims: int, samples: int) -> float:
    """Median microseconds of a latest read over `prims` prims, the loop of bench_c.c."""
    name = f"read_{prims}"
    with ovstage.Stage("bench-c-api-read") as stage, make_query(stage, prims, name) as query:
        stage.write_attribute(query, name, 1, np.ones(prims, np.float32), is_array=False).wait()
        stage.advance_write_floor(1).wait()

        return read_median_us(stage, query, name, prims, samples)


def read_median_us(
    stage: ovstage.Stage, query: ovstage.Query, attr: str, prims: int, samples: int
) -> float:
    """Median microseconds of one latest read of `attr` (read, groups, ``np.from_dlpack``)
    over `samples` reads after 20 warm-up reads."""

    def read() -> None:
        with stage.read_attributes(query, [attr], OrdinalRange.latest(1)) as rd:
            for group in rd.groups():
                with group:
                    view = np.from_dlpack(group.dlpack(0))
                    assert view.shape[0] == prims

    times = []
    for i in range(samples + 20):  # the first 20: warm-up
        t0 = time.perf_counter_ns()
        read()
        if i >= 20:
            times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1000


# ---------------------------------------------------------------- the table


def row(name: str, c: float, py: float, targets: list[tuple[str, bool]]) -> None:
    """One figure: C, Python, their ratio, and each target with whether this run met it."""
    verdicts = "; ".join(f"{t} [{'met' if ok else 'missed'}]" for t, ok in targets) or "-"
    print(f"{name:<48} {c:>9.2f} {py:>9.2f} {py / c:>7.1f}x   {verdicts}", flush=True)
    limits = dict(targets)
    for side, value in (("C", c), ("Python", py)):
        limit = next((t for t in limits if t.startswith(side + " ")), "")
        figure(f"{name} ({side})", value, "us", limit.removeprefix(side + " "), limits.get(limit))
    figure(f"  {name}: Python / C", py / c, "x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (smoke run)")
    args = parser.parse_args()
    samples = 2000 if args.quick else 20000
    reads = (200, 20) if args.quick else (2000, 200)

    py_enqueue, py_round_trip = python_writes(samples)
    py_read_1k = python_read(1000, reads[0])
    py_read_1m = python_read(1_000_000, reads[1])
    c = c_figures(args.quick)

    print(f"bench_c_api: {os.cpu_count()} CPUs, medians in microseconds", flush=True)
    print(f"{'':<48} {'C':>9} {'Python':>9} {'Py/C':>8}   target", flush=True)
    row(
        "write_attribute + wait, 1,000 float32 prims",
        c["write_wait"],
        py_round_trip,
        [("C <= 3 us", c["write_wait"] <= 3), ("Python <= 4 us", py_round_trip <= 4)],
    )
    row("enqueue only", c["enqueue"], py_enqueue, [("Python <= 2 us", py_enqueue <= 2)])
    row(
        "latest read + fetch + release, 1,000 prims",
        c["read_1k"],
        py_read_1k,
        [("Python <= 10 us", py_read_1k <= 10)],
    )
    row("latest read + fetch + release, 1,000,000 prims", c["read_1m"], py_read_1m, [])


if __name__ == "__main__":
    main()
