"""A producer's whole step, as a simulator runs it: write, wait, seal, read back.

1. Step of a 1,000-prim float32 column: ``write_attribute(...).wait()``,
   ``advance_write_floor(o).wait()``, then a latest read (``with read_attributes``,
   ``groups()``, ``with group``, ``np.from_dlpack``). Median microseconds, target <= 25 us.
2. Isaac-style step: the same with an ``(N, 4, 4)`` float32 transform column (a MATRIX
   attribute), N = 4,096 and 65,536, divided by ``numpy.copyto`` of the same bytes (the copy
   the write must make anyway): targets <= 3x and <= 1.5x. Each part of the step (write
   enqueue, write wait, seal, read enqueue, fetch + dlpack, release) is printed against
   ``numpy.copyto`` too, so a miss shows where the time goes.

Medians of alternating samples; the ratios come from this one run. Usage:
``python tests/bench/bench_step.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import ovstage
from figures import figure
from ovstage import AttributeSemantic, OrdinalRange


def make_query(stage: ovstage.Stage, count: int, prefix: str) -> ovstage.Query:
    paths = ovstage.PathDictionary(stage)
    with paths.create_path_list_from_strings([f"/{prefix}/p{i}" for i in range(count)]) as lst:
        return stage.query_from_path_list(lst)


# The parts of a step, in order, as bench_step splits it (each ends where the next begins).
PARTS = ("write enqueue", "write wait", "seal", "read enqueue", "fetch + dlpack", "release")


def step_times(
    values: np.ndarray,
    semantic: AttributeSemantic,
    samples: int,
    parts: list[list[int]] | None = None,
) -> list[int]:
    """Nanoseconds of each of `samples` steps (after warm-up) writing `values`; with `parts`
    (one list per entry of PARTS), each part's nanoseconds are appended there too."""
    prims = values.shape[0]
    with ovstage.Stage("bench-step") as stage, make_query(stage, prims, "step") as query:
        clock = time.perf_counter_ns
        times = []
        for ordinal in range(1, samples + 101):  # the first 100: warm-up
            t0 = clock()
            op = stage.write_attribute(
                query, "xform", ordinal, values, is_array=False, semantic=semantic
            )
            t1 = clock()
            op.wait()
            t2 = clock()
            stage.advance_write_floor(ordinal).wait()
            t3 = clock()
            with stage.read_attributes(query, ["xform"], OrdinalRange.latest(ordinal)) as rd:
                t4 = clock()
                for group in rd.groups():
                    with group:
                        view = np.from_dlpack(group.dlpack(0))
                t5 = clock()
            t6 = clock()
            assert view.shape[0] == prims
            if ordinal > 100:
                times.append(t6 - t0)
                if parts is not None:
                    marks = (t0, t1, t2, t3, t4, t5, t6)
                    for k, part in enumerate(parts):
                        part.append(marks[k + 1] - marks[k])
        return times


def copy_times(values: np.ndarray, samples: int) -> list[int]:
    dst = np.empty_like(values)
    clock = time.perf_counter_ns
    times = []
    for _ in range(samples):
        t0 = clock()
        np.copyto(dst, values)
        times.append(clock() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (smoke run)")
    args = parser.parse_args()
    print(f"bench_step: {os.cpu_count()} CPUs, medians", flush=True)

    samples = 500 if args.quick else 5000
    scalar = np.arange(1000, dtype=np.float32)
    step = statistics.median(step_times(scalar, AttributeSemantic.NONE, samples)) / 1000
    print(f"step (write + wait + seal + read), 1,000 float32 prims: {step:.1f} us", flush=True)
    figure("step: write + wait + seal + read, 1,000 float32", step, "us", "<= 25 us", step <= 25)

    for prims, limit in ((4096, 3.0), (65536, 1.5)):
        n = max(50, samples // (4 if prims > 10000 else 1) // 5)
        values = np.tile(np.eye(4, dtype=np.float32), (prims, 1, 1))
        ours, copy = [], []
        parts: list[list[int]] = [[] for _ in PARTS]
        for _ in range(5):  # alternate, so load on a shared machine hits both alike
            ours += step_times(values, AttributeSemantic.MATRIX, n, parts)
            copy += copy_times(values, n)
        t, c = statistics.median(ours) / 1000, statistics.median(copy) / 1000
        ratio = t / c
        print(
            f"Isaac step, ({prims}, 4, 4) float32 ({values.nbytes >> 10} KiB): {t:.1f} us; "
            f"numpy.copyto {c:.1f} us; ratio {ratio:.2f}",
            flush=True,
        )
        # Where the step's time goes, each part's median against copyto's (the medians of the
        # parts need not add up to the step's median).
        split = ", ".join(
            f"{name} {statistics.median(part) / 1000 / c:.2f}x"
            for name, part in zip(PARTS, parts, strict=True)
        )
        print(f"  parts / numpy.copyto: {split}", flush=True)
        figure(f"Isaac step ({prims:,}, 4, 4) float32", t, "us")
        figure(
            f"  / numpy.copyto of the same {values.nbytes >> 10} KiB",
            ratio,
            "x",
            f"<= {limit}",
            ratio <= limit,
        )


if __name__ == "__main__":
    main()
