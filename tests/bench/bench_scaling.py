"""Figures whose cost must grow with the work, not with the stage (issue 15), as ratios
measured in this one run:

1. ``create_path_list_from_strings`` of N new flat paths (``/s/p<i>``), each N in a fresh
   stage: time per path at the largest N over time per path at the smallest (1.0 = linear).
2. ``clone`` of one 10-attribute prim to one new target: a stage holding 1.2M other prims
   over a fresh stage (1.0 = the stage's size does not matter); and the clone to 16 targets
   on a fresh stage. Every clone is waited for; the stage is sealed between clones, untimed.
3. ``write_attributes`` of 8 attributes x 10k prims over 8 ``write_attribute`` calls (each
   step waited for), alternating.

Usage: ``python tests/bench/bench_scaling.py`` (``--quick`` shrinks the sizes).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np
import ovstage
from figures import figure
from ovstage import WriteDesc


def path_list_ns_per_path(count: int) -> float:
    strs = [f"/s/p{i}" for i in range(count)]
    with ovstage.Stage("bench-paths") as stage:
        paths = ovstage.PathDictionary(stage)
        gc.collect()
        t0 = time.perf_counter_ns()
        with paths.create_path_list_from_strings(strs):
            elapsed = time.perf_counter_ns() - t0
    return elapsed / count


def bench_path_lists(quick: bool) -> None:
    sizes = (25_000, 100_000, 400_000) if quick else (250_000, 1_000_000, 4_000_000)
    path_list_ns_per_path(sizes[0])  # warm up (first allocations of the process)
    per = {n: path_list_ns_per_path(n) for n in sizes}
    for n, ns in per.items():
        figure(f"create_path_list_from_strings, {n:,} paths, per path", ns, "ns")
    ratio = per[sizes[-1]] / per[sizes[0]]
    figure(
        f"  per path {sizes[-1]:,} / {sizes[0]:,} paths",
        ratio,
        "x",
        "<= 1.3 (linear)",
        ratio <= 1.3,
    )


def clone_stage(stage: ovstage.Stage, others: int) -> None:
    paths = ovstage.PathDictionary(stage)
    if others:
        with (
            paths.create_path_list_from_strings([f"/big/p{i}" for i in range(others)]) as lst,
            stage.query_from_path_list(lst) as query,
        ):
            stage.write_attribute(
                query, "mass", 1, np.zeros(others, np.float32), is_array=False
            ).wait()
    with (
        paths.create_path_list_from_strings(["/src"]) as lst,
        stage.query_from_path_list(lst) as query,
    ):
        for a in range(10):
            stage.write_attribute(
                query, f"attr{a}", 1, np.full(1, a, np.float32), is_array=False
            ).wait()
    stage.advance_write_floor(1).wait()


def clone_median_us(others: int, targets: int, samples: int) -> float:
    with ovstage.Stage("bench-clone") as stage:
        clone_stage(stage, others)
        times = []
        for i in range(samples + 5):
            names = [f"/dst{i}_{t}" for t in range(targets)]
            t0 = time.perf_counter_ns()
            stage.clone("/src", names, i + 2)
            if i >= 5:  # the first clones build the stage's path index
                times.append(time.perf_counter_ns() - t0)
            stage.advance_write_floor(i + 2).wait()
    return statistics.median(times) / 1000


def bench_clone(quick: bool) -> None:
    others = 120_000 if quick else 1_200_000
    samples = 50 if quick else 300
    fresh = clone_median_us(0, 1, samples)
    big = clone_median_us(others, 1, samples)
    fan = clone_median_us(0, 16, samples)
    figure("clone 1 prim x 10 attributes -> 1 target, fresh stage", fresh, "us")
    figure(f"clone 1 prim x 10 attributes -> 1 target, stage of {others:,} prims", big, "us")
    ratio = big / fresh
    figure(
        f"  {others:,}-prim stage / fresh stage",
        ratio,
        "x",
        "<= 1.5 (stage size free)",
        ratio <= 1.5,
    )
    figure(
        "clone 1 prim x 10 attributes -> 16 targets, fresh stage",
        fan,
        "us",
        "<= 243 us (reference)",
        fan <= 243,
    )


def bench_batch(quick: bool) -> None:
    prims, attrs = 10_000, 8
    samples = 50 if quick else 300
    with ovstage.Stage("bench-batch") as stage:
        paths = ovstage.PathDictionary(stage)
        with paths.create_path_list_from_strings([f"/b/p{i}" for i in range(prims)]) as lst:
            query = stage.query_from_path_list(lst)
        values = [np.full(prims, a, np.float32) for a in range(attrs)]
        names = [f"a{a}" for a in range(attrs)]
        descs = [WriteDesc(names[a], values[a], False) for a in range(attrs)]
        ordinal = 0

        def batch() -> None:
            stage.write_attributes(query, descs, ordinal).wait()

        def separate() -> None:
            ops = [
                stage.write_attribute(query, names[a], ordinal, values[a], is_array=False)
                for a in range(attrs)
            ]
            for op in ops:
                op.wait()

        times: dict[str, list[int]] = {"batch": [], "separate": []}
        for i in range(samples + 10):
            for name, step in (("batch", batch), ("separate", separate)):
                ordinal += 1
                t0 = time.perf_counter_ns()
                step()
                if i >= 10:
                    times[name].append(time.perf_counter_ns() - t0)
            if i % 16 == 15:
                stage.advance_write_floor(ordinal).wait()
        query.release().wait()
    b = statistics.median(times["batch"]) / 1000
    s = statistics.median(times["separate"]) / 1000
    figure(f"write_attributes {attrs} attrs x {prims:,} prims + wait", b, "us")
    figure(f"{attrs} x write_attribute of the same + waits", s, "us")
    figure("  batch / separate calls", b / s, "x", "< 1", b / s < 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = parser.parse_args()
    bench_path_lists(args.quick)
    bench_clone(args.quick)
    bench_batch(args.quick)


if __name__ == "__main__":
    main()
