"""Threads that add throughput instead of taking it away.

1. Latest reads of a sealed 100,000-prim float32 column (``with read_attributes``,
   ``groups()``, ``with group``, ``np.from_dlpack``) from 1, 2 and 4 Python threads, each
   reading in a loop for a fixed time: total reads/s. Targets: 2 and 4 threads >= 1.0x of one.
2. A writer (5,000 prims: write + wait + seal per ordinal) while 1 and then 2 reader threads
   read the column it writes: writes/s. Target: <= 20% loss from 1 to 2 readers.

Every thread runs ovstage's Python layer, which holds the GIL, so on a machine with few cores
"no loss" is the goal, not a speed-up. Ratios are from this one run (alternating rounds).
Usage: ``python tests/bench/bench_threads.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import numpy as np
import ovstage
from figures import figure
from ovstage import OrdinalRange


def make_query(stage: ovstage.Stage, count: int, prefix: str) -> ovstage.Query:
    paths = ovstage.PathDictionary(stage)
    with paths.create_path_list_from_strings([f"/{prefix}/p{i}" for i in range(count)]) as lst:
        return stage.query_from_path_list(lst)


def read_once(stage: ovstage.Stage, query: ovstage.Query, attr: str, end: int) -> None:
    with stage.read_attributes(query, [attr], OrdinalRange.latest(end)) as rd:
        for group in rd.groups():
            with group:
                np.from_dlpack(group.dlpack(0))


def readers(stage: ovstage.Stage, query: ovstage.Query, threads: int, seconds: float) -> float:
    """Total reads/s of `threads` threads reading for `seconds`."""
    stop = threading.Event()
    counts = [0] * threads
    errors: list[BaseException] = []

    def loop(k: int) -> None:
        try:
            n = 0
            while not stop.is_set():
                read_once(stage, query, "col", 1)
                n += 1
            counts[k] = n
        except BaseException as exc:  # reported below: a benchmark that failed says so
            errors.append(exc)

    workers = [threading.Thread(target=loop, args=(k,)) for k in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    time.sleep(seconds)
    stop.set()
    for w in workers:
        w.join(timeout=60)
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return sum(counts) / elapsed


def bench_readers(quick: bool) -> None:
    prims = 100_000
    seconds = 0.3 if quick else 1.0
    with ovstage.Stage("bench-threads") as stage, make_query(stage, prims, "r") as query:
        stage.write_attribute(query, "col", 1, np.ones(prims, np.float32), is_array=False).wait()
        stage.advance_write_floor(1).wait()
        for _ in range(200):
            read_once(stage, query, "col", 1)
        rates: dict[int, list[float]] = {1: [], 2: [], 4: []}
        for _ in range(3):  # alternate the thread counts, so load hits each alike
            for n in rates:
                rates[n].append(readers(stage, query, n, seconds))
    one = statistics.median(rates[1])
    print(f"latest reads of a {prims:,}-prim column, total reads/s (medians of 3):", flush=True)
    for n, values in rates.items():
        rate = statistics.median(values)
        print(f"  {n} thread(s): {rate:,.0f} reads/s ({rate / one:.2f}x of 1 thread)", flush=True)
        figure(f"latest reads, 100k prims, {n} thread(s)", rate, "reads/s")
        if n > 1:
            ratio = rate / one
            figure(f"  {n} threads / 1 thread", ratio, "x", ">= 1.0", ratio >= 1.0)


def writer_rate(readers_count: int, seconds: float) -> float:
    """Writes/s (write + wait + seal of 5,000 prims) with `readers_count` reader threads."""
    prims = 5000
    values = np.ones(prims, np.float32)
    with ovstage.Stage("bench-writer") as stage, make_query(stage, prims, "w") as query:
        stage.write_attribute(query, "col", 1, values, is_array=False).wait()
        stage.advance_write_floor(1).wait()
        stop = threading.Event()
        floor = [1]
        errors: list[BaseException] = []

        def read_loop() -> None:
            try:
                while not stop.is_set():
                    try:
                        read_once(stage, query, "col", floor[0])
                    except ovstage.OvstageError as exc:
                        # The writer sealed past that ordinal meanwhile: read the newer one.
                        if exc.code != ovstage.ErrorCode.OUT_OF_RANGE:
                            raise
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=read_loop) for _ in range(readers_count)]
        for t in threads:
            t.start()
        ordinal, writes = 1, 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            ordinal += 1
            stage.write_attribute(query, "col", ordinal, values, is_array=False).wait()
            stage.advance_write_floor(ordinal).wait()
            floor[0] = ordinal
            writes += 1
        elapsed = time.perf_counter() - start
        stop.set()
        for t in threads:
            t.join(timeout=60)
        if errors:
            raise errors[0]
        return writes / elapsed


def bench_writer(quick: bool) -> None:
    seconds = 0.3 if quick else 1.0
    rates: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(3):
        for n in rates:
            rates[n].append(writer_rate(n, seconds))
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    loss = 1 - two / one
    print(
        f"writer, 5,000 prims write + wait + seal: {one:,.0f} writes/s with 1 reader, "
        f"{two:,.0f} with 2 ({loss:.0%} loss; medians of 3)",
        flush=True,
    )
    figure("writer 5k prims, 1 reader thread", one, "writes/s")
    figure("writer 5k prims, 2 reader threads", two, "writes/s")
    figure("  loss from 1 to 2 readers", loss * 100, "%", "<= 20%", loss <= 0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short rounds (smoke run)")
    args = parser.parse_args()
    print(f"bench_threads: {os.cpu_count()} CPUs", flush=True)
    bench_readers(args.quick)
    bench_writer(args.quick)


if __name__ == "__main__":
    main()
