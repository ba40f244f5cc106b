"""How cost grows with the work: a PNG chart for ``make bench``.

Left: the median of a latest read (``with read_attributes``, ``groups()``, ``with group``,
``np.from_dlpack``) and of a write + wait of one float32 column, against the number of prims
(1,000 to 1,000,000). Right: ``write_attributes`` of N float32 attributes x 10,000 prims +
wait, against N (1 to 16), beside N separate ``write_attribute`` calls. Log-log axes: a line of
slope 1 is linear growth, a flat line a cost that does not grow.

The chart is written to ``build/bench/scaling.png`` (``--out`` to change) and its path is
printed as a figure. Needs matplotlib (the ``bench`` extra of pyproject.toml).
Usage: ``python tests/bench/bench_chart.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import ovstage
from figures import figure
from ovstage import OrdinalRange, WriteDesc

REPO = Path(__file__).resolve().parents[2]


def make_query(stage: ovstage.Stage, count: int, prefix: str) -> ovstage.Query:
    paths = ovstage.PathDictionary(stage)
    with paths.create_path_list_from_strings([f"/{prefix}/p{i}" for i in range(count)]) as lst:
        return stage.query_from_path_list(lst)


def median_us(fn: Callable[[], object], samples: int) -> float:
    for _ in range(max(3, samples // 10)):
        fn()
    times = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1000


def prims_medians(prims: int, samples: int) -> tuple[float, float]:
    """(read, write + wait) medians in microseconds over `prims` prims."""
    values = np.ones(prims, np.float32)
    with ovstage.Stage("chart-prims") as stage, make_query(stage, prims, "c") as query:
        ordinal = [1]
        stage.write_attribute(query, "col", 1, values, is_array=False).wait()
        stage.advance_write_floor(1).wait()

        def read() -> None:
            with stage.read_attributes(query, ["col"], OrdinalRange.latest(1)) as rd:
                for group in rd.groups():
                    with group:
                        np.from_dlpack(group.dlpack(0))

        def write() -> None:
            ordinal[0] += 1
            stage.write_attribute(query, "w", ordinal[0], values, is_array=False).wait()
            if ordinal[0] % 64 == 0:
                stage.advance_write_floor(ordinal[0]).wait()

        return median_us(read, samples), median_us(write, samples)


def attrs_medians(attrs: int, samples: int) -> tuple[float, float]:
    """(one write_attributes, `attrs` write_attribute) medians in microseconds, 10k prims."""
    prims = 10_000
    values = np.ones(prims, np.float32)
    names = [f"a{k}" for k in range(attrs)]
    with ovstage.Stage("chart-attrs") as stage, make_query(stage, prims, "c") as query:
        ordinal = [0]

        def seal_now_and_then() -> None:
            if ordinal[0] % 64 == 0:
                stage.advance_write_floor(ordinal[0]).wait()

        def one_batch() -> None:
            ordinal[0] += 1
            descs = [WriteDesc(name, values, False) for name in names]
            stage.write_attributes(query, descs, ordinal[0]).wait()
            seal_now_and_then()

        def separate_calls() -> None:
            ordinal[0] += 1
            ops = [
                stage.write_attribute(query, name, ordinal[0], values, is_array=False)
                for name in names
            ]
            for op in ops:
                op.wait()
            seal_now_and_then()

        return median_us(one_batch, samples), median_us(separate_calls, samples)


def draw(out: Path, sizes: list[int], reads: Sequence[float], writes: Sequence[float],
         counts: list[int], batch: Sequence[float], separate: Sequence[float]) -> None:  # fmt: skip
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    left.loglog(sizes, reads, "o-", label="latest read + np.from_dlpack")
    left.loglog(sizes, writes, "s-", label="write_attribute + wait")
    left.set_xlabel("prims (one float32 column)")
    left.set_ylabel("median time (us)")
    left.set_title("cost vs prims")
    right.loglog(counts, batch, "o-", label="write_attributes (one batch) + wait")
    right.loglog(counts, separate, "s-", label="N x write_attribute + waits")
    right.set_xlabel("attributes (float32 x 10,000 prims each)")
    right.set_title("cost vs attributes")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"ovstage-go {ovstage.__version__}: how cost grows (medians, log-log)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and samples")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "scaling.png")
    args = parser.parse_args()
    sizes = [1000, 10_000, 100_000] + ([] if args.quick else [1_000_000])
    counts = [1, 2, 4, 8] + ([] if args.quick else [16])
    samples = 50 if args.quick else 400
    by_prims = [prims_medians(p, max(20, samples * 1000 // p)) for p in sizes]
    by_attrs = [attrs_medians(a, samples // 4) for a in counts]
    reads, writes = [m[0] for m in by_prims], [m[1] for m in by_prims]
    batch, separate = [m[0] for m in by_attrs], [m[1] for m in by_attrs]
    for prims, r, w in zip(sizes, reads, writes, strict=True):
        print(f"{prims:>9,} prims: read {r:9.1f} us, write + wait {w:9.1f} us", flush=True)
    for attrs, b, s in zip(counts, batch, separate, strict=True):
        print(f"{attrs:>3} attrs x 10k: batch {b:9.1f} us, separate {s:9.1f} us", flush=True)
    figure(f"  read cost {sizes[-1]:,} / {sizes[0]:,} prims", reads[-1] / reads[0], "x")
    figure(f"  write cost {sizes[-1]:,} / {sizes[0]:,} prims", writes[-1] / writes[0], "x")
    try:
        draw(args.out, sizes, reads, writes, counts, batch, separate)
    except ImportError:
        figure("scaling chart (PNG)", "not drawn: matplotlib missing (pip install '.[bench]')")
        return
    figure("scaling chart (PNG)", str(args.out))


if __name__ == "__main__":
    main()
