"""History window benchmarks (issue 14). Every figure comes from this one run and is printed
next to its target; ratios are measured within the run so machine noise cancels.

1. Memory: a 1,000,000-prim float32x3 column, 1% of its rows changed per ordinal, window 16:
   (column bytes + the versions' bytes) / (16 x changed bytes + column bytes).
2. Producer throughput: write 1% of the rows + seal per ordinal, window 16 vs window 0
   (the same stage shape; the two alternate in rounds so drift hits both).
3. A lagging reader 8 ordinals behind the floor vs a reader at the floor (median read time).

Usage: ``python tests/bench/bench_history.py`` (``--quick`` shrinks the sizes for a smoke run).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import ovstage
from figures import figure
from ovstage import OrdinalRange, StageConfig

WINDOW = 16


def report(name: str, value: str, target: str, ok: bool | None) -> None:
    """One figure, as a FIGURE line for run_all.py's table."""
    figure(name, value, "", target, ok)


class Producer:
    """A stage with one float32x3 column over ``prims`` prims and queries over disjoint 1%
    slices of them, written one slice per ordinal."""

    def __init__(self, prims: int, window: int, slices: int) -> None:
        self.stage = ovstage.Stage("bench-history", config=StageConfig(history_ordinals=window))
        paths = ovstage.PathDictionary(self.stage)
        names = [f"/h/p{i}" for i in range(prims)]
        with paths.create_path_list_from_strings(names) as lst:
            self.all = self.stage.query_from_path_list(lst)
        rng = np.random.default_rng(7)
        order = rng.permutation(prims)
        self.changed = max(1, prims // 100)
        self.slices = []
        for k in range(slices):
            rows = sorted(order[k * self.changed : (k + 1) * self.changed])
            with paths.create_path_list_from_strings([names[r] for r in rows]) as lst:
                self.slices.append(self.stage.query_from_path_list(lst))
        self.column = np.zeros((prims, 3), np.float32)
        self.update = np.ones((self.changed, 3), np.float32)
        self.ordinal = 1
        self.stage.write_attribute(self.all, "pos", 1, self.column, is_array=False).wait()
        self.stage.advance_write_floor(1).wait()

    def step(self) -> None:
        self.ordinal += 1
        query = self.slices[self.ordinal % len(self.slices)]
        self.update[:] = self.ordinal
        self.stage.write_attribute(query, "pos", self.ordinal, self.update, is_array=False)
        self.stage.advance_write_floor(self.ordinal).wait()

    def read(self, end: int) -> None:
        with self.stage.read_attributes(self.all, ["pos"], OrdinalRange.latest(end)) as read:
            read.wait()
            for group in read.groups():
                group.release()

    def close(self) -> None:
        for q in self.slices:
            q.release().wait()
        self.all.release().wait()
        self.stage.destroy()


def bench_memory(prims: int) -> None:
    p = Producer(prims, WINDOW, WINDOW + 4)
    try:
        for _ in range(WINDOW + 8):
            p.step()
        versions = p.stage._diagnostics()["version_bytes"]
        column = prims * 12
        changed = p.changed * 12
        ratio = (column + versions) / (WINDOW * changed + column)
        print(
            f"memory: {prims:,} prims x float32x3, {p.changed:,} rows changed per ordinal: "
            f"versions {versions / 1e6:.2f} MB, column {column / 1e6:.1f} MB",
            flush=True,
        )
        report(
            "retained / (16 x changed bytes + column bytes)", f"{ratio:.3f}", "<= 1.5", ratio <= 1.5
        )
    finally:
        p.close()


def bench_throughput(prims: int, rounds: int, steps: int) -> None:
    on, off = Producer(prims, WINDOW, WINDOW + 4), Producer(prims, 0, WINDOW + 4)
    times: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for p in (on, off):  # warm up: fill the window
            for _ in range(WINDOW + 2):
                p.step()
        for r in range(rounds):
            pair = (("on", on), ("off", off)) if r % 2 == 0 else (("off", off), ("on", on))
            for name, p in pair:
                t0 = time.perf_counter()
                for _ in range(steps):
                    p.step()
                times[name].append(time.perf_counter() - t0)
        t_on, t_off = statistics.median(times["on"]), statistics.median(times["off"])
        ratio = t_off / t_on  # throughput on / throughput off
        print(
            f"producer: {steps} ordinals of {on.changed:,} rows + seal: window 16 "
            f"{steps / t_on:.0f}/s, window 0 {steps / t_off:.0f}/s (median of {rounds} rounds)",
            flush=True,
        )
        report(
            "write+seal throughput, window 16 / window 0", f"{ratio:.3f}", ">= 0.9", ratio >= 0.9
        )
    finally:
        on.close()
        off.close()


def bench_lagging_reader(prims: int, samples: int) -> None:
    p = Producer(prims, WINDOW, WINDOW + 4)
    try:
        for _ in range(WINDOW):
            p.step()
        floor = p.ordinal
        at_floor, behind = [], []
        for _ in range(samples):
            for end, out in ((floor, at_floor), (floor - 8, behind)):
                t0 = time.perf_counter()
                p.read(end)
                out.append(time.perf_counter() - t0)
        t_floor, t_behind = statistics.median(at_floor), statistics.median(behind)
        ratio = t_behind / t_floor
        print(
            f"reader: latest(floor) {t_floor * 1e6:.0f} us, latest(floor - 8) "
            f"{t_behind * 1e6:.0f} us (median of {samples})",
            flush=True,
        )
        report("read time 8 behind / at the floor", f"{ratio:.2f}", "~1 (as fast)", ratio <= 1.25)
    finally:
        p.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = parser.parse_args()
    prims = 100_000 if args.quick else 1_000_000
    bench_memory(prims)
    bench_throughput(prims, rounds=4 if args.quick else 10, steps=10 if args.quick else 20)
    bench_lagging_reader(prims, samples=5 if args.quick else 21)


if __name__ == "__main__":
    main()
