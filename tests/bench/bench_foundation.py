"""Foundation benchmarks (issue 2). Prints ratios measured in one run, plus medians.

1. Python round trip ``write_attribute(...).wait()`` for 1,000 float32 prims, next to
   ``numpy.copyto`` of the same bytes (the copy-in the engine must do anyway).
2. Latest read + ``np.from_dlpack`` of a 1 MB and a 256 MB column: the read copies nothing,
   so the two should cost about the same (ratio close to 1).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import ovstage
from figures import figure


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def make_query(stage: ovstage.Stage, count: int, prefix: str) -> ovstage.Query:
    paths = ovstage.PathDictionary(stage)
    with paths.create_path_list_from_strings([f"/{prefix}/p{i}" for i in range(count)]) as lst:
        return stage.query_from_path_list(lst)


def bench_write_round_trip(stage: ovstage.Stage) -> None:
    prims = 1000
    values = np.arange(prims, dtype=np.float32)
    with make_query(stage, prims, "write") as query:
        ordinal = [0]

        def write_wait() -> None:
            ordinal[0] += 1
            stage.write_attribute(query, "w", ordinal[0], values, is_array=False).wait()

        for _ in range(200):
            write_wait()
        ours = median_seconds(write_wait, 2000)
    dst = np.empty_like(values)
    copy = median_seconds(lambda: np.copyto(dst, values), 2000)
    print(f"write_attribute(...).wait(), {prims} float32 prims: median {ours * 1e6:.1f} us")
    print(f"  numpy.copyto of the same {values.nbytes} bytes: median {copy * 1e6:.2f} us")
    figure(f"write_attribute + wait, {prims} float32 prims", ours * 1e6, "us")
    figure("  / numpy.copyto of the same bytes", ours / copy, "x")


def bench_read(stage: ovstage.Stage, nbytes: int, name: str) -> float:
    lanes = 64  # float32 x 64 = 256 bytes per prim
    prims = nbytes // (4 * lanes)
    values = np.ones((prims, lanes), dtype=np.float32)
    with make_query(stage, prims, name) as query:
        stage.write_attribute(query, name, 1, values, is_array=False).wait()
        stage.advance_write_floor(1).wait()

        def read_view() -> None:
            with stage.read_attributes(query, [name], ovstage.OrdinalRange.latest(1)) as read:
                for group in read.groups():
                    with group:
                        view = np.from_dlpack(group.dlpack(0))
                        assert view.nbytes == nbytes

        read_view()
        return median_seconds(read_view, 200)


def main() -> None:
    with ovstage.Stage("bench-write") as stage:
        bench_write_round_trip(stage)
    with ovstage.Stage("bench-read-1mb") as stage:
        small = bench_read(stage, 1 << 20, "col1mb")
    with ovstage.Stage("bench-read-256mb") as stage:
        large = bench_read(stage, 256 << 20, "col256mb")
    print(f"latest read + np.from_dlpack, 1 MB column: median {small * 1e6:.1f} us")
    print(f"latest read + np.from_dlpack, 256 MB column: median {large * 1e6:.1f} us")
    print(f"  ratio 256 MB / 1 MB: {large / small:.2f} (1.0 = size-independent, no copy)")
    figure("latest read + np.from_dlpack, 1 MB column", small * 1e6, "us")
    figure("latest read + np.from_dlpack, 256 MB column", large * 1e6, "us")
    figure("  256 MB / 1 MB", large / small, "x", "1.0 = no copy")


if __name__ == "__main__":
    main()
