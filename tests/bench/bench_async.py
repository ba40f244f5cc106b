"""Async-engine benchmarks (issue 5). Every figure comes from this one run and is printed next
to its target; ratios are measured within the run so machine noise cancels.

1. Python enqueue of a 1,000-prim float32 write without waiting (median), and the
   enqueue + wait round trip (median); the same enqueue through the general path (what the
   fast path of ``write_attribute`` skips), as a ratio.
2. Go-level enqueue of the same write (``go test -bench``, if a Go toolchain is on PATH).
3. Pipelined throughput: 8 attributes x 64 ordinals of 4 MiB writes submitted ahead, then
   drained; workers=2 vs workers=1.
4. Copy-in bandwidth: one 256 MiB write (enqueue + wait) vs ``numpy.copyto`` of the same bytes.
5. Memory: 1,000,000 prims x 3 float32 attributes, RSS growth / payload bytes (fresh process).

Usage: ``python tests/bench/bench_async.py`` (``--quick`` shrinks the sizes for a smoke run).
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import ovstage
from figures import figure
from ovstage import OrdinalRange, StageConfig
from ovstage._lib import native

REPO = Path(__file__).resolve().parents[2]


def report(name: str, value: str, target: str, ok: bool | None) -> None:
    verdict = "" if ok is None else ("  [meets target]" if ok else "  [misses target]")
    print(f"{name:<58} {value:>16}   target {target}{verdict}", flush=True)
    number, _, unit = value.partition(" ")
    figure(name, number, unit, "" if target.startswith("(") else target, ok)


def make_query(stage: ovstage.Stage, count: int, prefix: str) -> ovstage.Query:
    paths = ovstage.PathDictionary(stage)
    with paths.create_path_list_from_strings([f"/{prefix}/p{i}" for i in range(count)]) as lst:
        return stage.query_from_path_list(lst)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------- 1. Python enqueue


def bench_python_enqueue(samples: int) -> None:
    prims = 1000
    values = np.arange(prims, dtype=np.float32)
    with ovstage.Stage("bench-enqueue") as stage, make_query(stage, prims, "enq") as query:
        ordinal = 0

        def run(n: int, wait: bool, general: bool = False) -> float:
            nonlocal ordinal
            times: list[int] = []
            ops: list[ovstage.Operation] = []
            clock = time.perf_counter_ns
            # An int prim_mode (not the PrimMode member) takes the general path.
            kw: dict[str, object] = {"prim_mode": 0} if general else {}
            for i in range(n):
                ordinal += 1
                if wait:
                    t0 = clock()
                    stage.write_attribute(query, "w", ordinal, values, is_array=False).wait()
                    times.append(clock() - t0)
                else:
                    t0 = clock()
                    op = stage.write_attribute(query, "w", ordinal, values, is_array=False, **kw)
                    times.append(clock() - t0)
                    ops.append(op)
                if i % 64 == 63:  # a producer's frame: drain, seal (not timed)
                    for op in ops:
                        op.wait()
                    ops.clear()
                    stage.advance_write_floor(ordinal).wait()
            for op in ops:
                op.wait()
            return statistics.median(times) / 1000

        run(2000, False)
        run(2000, True)
        run(2000, False, general=True)
        enqueue = run(samples, False)
        round_trip = run(samples, True)
        general = run(samples, False, general=True)
    report(
        "Python enqueue, 1,000-prim float32 write (median)",
        f"{enqueue:.2f} us",
        "<= 2 us",
        enqueue <= 2,
    )
    report("Python enqueue + wait (median)", f"{round_trip:.2f} us", "<= 4 us", round_trip <= 4)
    report("Python enqueue, general path (median)", f"{general:.2f} us", "(for the ratio)", None)
    ratio = enqueue / general
    report("  fast path / general path enqueue", f"{ratio:.2f}", "< 1", ratio < 1)


# ---------------------------------------------------------------- 2. Go-level enqueue


def bench_go_enqueue() -> None:
    go = shutil.which("go")
    if go is None or not (REPO / "go.mod").exists():
        report("Go enqueue (go test -bench)", "skipped", "<= 500 ns, <= 3 allocs", None)
        return
    out = subprocess.run(
        [
            go,
            "test",
            "-run",
            "^$",
            "-bench",
            "^BenchmarkWriteEnqueue1000Prims$",
            "-benchmem",
            "-benchtime",
            "200000x",
            "-count",
            "3",
            "./core/",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    rows = re.findall(
        r"Benchmark\S+\s+\d+\s+([\d.]+) ns/op\s+\d+ B/op\s+(\d+) allocs/op", out.stdout
    )
    if not rows:
        report("Go enqueue (go test -bench)", "failed", "<= 500 ns, <= 3 allocs", False)
        print(out.stdout[-2000:], out.stderr[-2000:])
        return
    ns = statistics.median(float(r[0]) for r in rows)
    allocs = max(int(r[1]) for r in rows)
    report(
        "Go enqueue of the same write (median of 3 runs)", f"{ns:.0f} ns", "<= 500 ns", ns <= 500
    )
    report("Go allocations per enqueue", f"{allocs}", "<= 3", allocs <= 3)


# ---------------------------------------------------------------- 3. pipelined throughput


def pipelined_seconds(workers: int, attrs: int, ordinals: int, prims: int, lanes: int) -> float:
    sources = [np.full((prims, lanes), a, dtype=np.float32) for a in range(attrs)]
    names = [f"attr{a}" for a in range(attrs)]
    config = StageConfig(workers=workers)
    with (
        ovstage.Stage(f"pipe-{workers}", config=config) as stage,
        make_query(stage, prims, "pipe") as query,
    ):

        def frame(ordinal: int) -> list[ovstage.Operation]:
            ops = [
                stage.write_attribute(query, name, ordinal, src, is_array=False)
                for name, src in zip(names, sources, strict=True)
            ]
            ops.append(stage.advance_write_floor(ordinal))
            return ops

        for op in frame(1):  # warm-up: columns exist, buffers cached
            op.wait()
        start = time.perf_counter()
        ops = [op for o in range(2, ordinals + 2) for op in frame(o)]  # submitted ahead
        for op in ops:  # drained
            op.wait()
        elapsed = time.perf_counter() - start
        with stage.read_attributes(query, [names[-1]], OrdinalRange.latest(ordinals + 1)) as rd:
            for group in rd.groups():
                with group:
                    assert float(group.array(0).reshape(-1)[0]) == attrs - 1  # typed rows: flatten
        return elapsed


def bench_pipelined(quick: bool) -> None:
    attrs, ordinals, prims, lanes = 8, 64, 16384, 64  # 4 MiB per write
    if quick:
        ordinals = 8
    total = attrs * ordinals * prims * lanes * 4
    one: list[float] = []
    two: list[float] = []
    for _ in range(3):
        one.append(pipelined_seconds(1, attrs, ordinals, prims, lanes))
        two.append(pipelined_seconds(2, attrs, ordinals, prims, lanes))
        gc.collect()
    t1, t2 = statistics.median(one), statistics.median(two)
    print(
        f"pipelined: {attrs} attrs x {ordinals} ordinals x 4 MiB = {total / 2**30:.1f} GiB "
        f"submitted ahead; workers=1 {t1:.3f} s ({total / t1 / 1e9:.2f} GB/s), workers=2 "
        f"{t2:.3f} s ({total / t2 / 1e9:.2f} GB/s) (medians of 3)",
        flush=True,
    )
    ratio = t1 / t2
    report(
        "Pipelined throughput ratio workers=2 / workers=1", f"{ratio:.2f}", ">= 1.6", ratio >= 1.6
    )


# ---------------------------------------------------------------- 4. copy-in bandwidth


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_copy_in(quick: bool) -> None:
    lanes = 128  # float64 x 128 = 1 KiB per prim
    prims = (256 << 20) // 1024
    if quick:
        prims //= 16
    source = np.random.default_rng(1).random((prims, lanes))
    nbytes = source.nbytes
    with ovstage.Stage("bench-copy") as stage, make_query(stage, prims, "copy") as query:
        ordinal = 0

        def write() -> None:
            nonlocal ordinal
            ordinal += 1
            stage.write_attribute(query, "big", ordinal, source, is_array=False).wait()

        times = []
        for _ in range(6):
            times.append(median_seconds(write, 1))
            stage.advance_write_floor(ordinal).wait()  # not timed: seal, recycle the old buffer
        ours = statistics.median(times[1:])
    dst = np.empty_like(source)
    np.copyto(dst, source)
    numpy_t = median_seconds(lambda: np.copyto(dst, source), 5)
    print(
        f"copy-in: one {nbytes >> 20} MiB write + wait {ours * 1e3:.1f} ms "
        f"({nbytes / ours / 1e9:.2f} GB/s); numpy.copyto {numpy_t * 1e3:.1f} ms "
        f"({nbytes / numpy_t / 1e9:.2f} GB/s) (medians)",
        flush=True,
    )
    ratio = numpy_t / ours
    report("Copy-in bandwidth / numpy.copyto bandwidth", f"{ratio:.2f}", ">= 0.7", ratio >= 0.7)


# ---------------------------------------------------------------- 5. memory


def memory_child(prims: int) -> None:
    stage = ovstage.Stage("bench-memory")
    query = make_query(stage, prims, "World")
    sources = [np.full(prims, a, dtype=np.float32) for a in range(3)]

    def settled_rss() -> int:
        # Collect garbage on both sides and return free pages to the OS (Go keeps freed heap
        # pages mapped until its scavenger runs), so the difference is retained memory only.
        gc.collect()
        native.ReleaseMemory()
        return rss_bytes()

    before = settled_rss()
    for a, src in enumerate(sources):
        stage.write_attribute(query, f"a{a}", 1, src, is_array=False).wait()
    stage.advance_write_floor(1).wait()
    after = settled_rss()
    print(after - before, sum(s.nbytes for s in sources))
    query.release().wait()
    stage.destroy()


def bench_memory(quick: bool) -> None:
    prims = 100_000 if quick else 1_000_000
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", str(prims)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    growth, payload = (int(v) for v in out.stdout.split())
    ratio = growth / payload
    print(
        f"memory: {prims:,} prims x 3 float32: RSS growth {growth / 1e6:.1f} MB for "
        f"{payload / 1e6:.1f} MB of payload",
        flush=True,
    )
    report("RSS growth / payload bytes", f"{ratio:.2f}", "<= 1.5", ratio <= 1.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--enqueue", action="store_true", help="only the Python enqueue figures")
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child)
        return
    print(
        f"bench_async: {os.cpu_count()} CPUs, numpy {np.__version__}, ovstage "
        f"{ovstage.__version__}",
        flush=True,
    )
    if args.enqueue:
        bench_python_enqueue(2000 if args.quick else 20000)
        return
    bench_memory(args.quick)
    bench_python_enqueue(2000 if args.quick else 20000)
    bench_go_enqueue() if not args.quick else None
    bench_pipelined(args.quick)
    bench_copy_in(args.quick)


if __name__ == "__main__":
    main()
