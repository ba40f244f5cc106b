"""History window benchmarks (issue 14). Every figure comes from this one run and is printed
next to its target; ratios are measured within the run so machine noise cancels.

1. Memory: a 1,000,000-prim float32x3 column, 1% of its rows changed per ordinal, window 16:
   (column bytes + the versions' bytes) / (16 x changed bytes + column bytes).
2. Producer throughput: write 1% of the rows + seal per ordinal, window 16 vs window 0
   (the same stage shape; the two alternate in rounds, the figure is the median of the
   rounds' ratios).
3. A reader 8 ordinals behind the floor vs a reader at the floor while the producer advances
   (each read at a new N; median of the pairs' ratios).

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
    """Window 16 vs window 0 in one process: each round runs ``steps`` ordinals on each (the
    order alternating), the figure is the median over rounds of the round's ratio, so drift
    and the other processes' load hit both sides of each ratio alike."""
    on, off = Producer(prims, WINDOW, WINDOW + 4), Producer(prims, 0, WINDOW + 4)
    wall: list[float] = []
    cpu: list[float] = []
    try:
        for p in (on, off):  # warm up: fill the window
            for _ in range(WINDOW + 2):
                p.step()
        for r in range(rounds):
            took: dict[bool, tuple[float, float]] = {}
            for windowed in (True, False) if r % 2 == 0 else (False, True):
                p = on if windowed else off
                t0, c0 = time.perf_counter(), time.process_time()
                for _ in range(steps):
                    p.step()
                took[windowed] = (time.perf_counter() - t0, time.process_time() - c0)
            wall.append(took[False][0] / took[True][0])  # throughput on / throughput off
            cpu.append(took[False][1] / max(took[True][1], 1e-9))
        ratio = statistics.median(wall)
        print(
            f"producer: {rounds} rounds of {steps} ordinals of {on.changed:,} rows + seal each: "
            f"throughput window 16 / window 0 per round {min(wall):.2f}..{max(wall):.2f} "
            f"(wall), CPU-time ratio median {statistics.median(cpu):.3f}",
            flush=True,
        )
        report(
            "write+seal throughput, window 16 / window 0 (median of rounds)",
            f"{ratio:.3f}",
            ">= 0.9",
            ratio >= 0.9,
        )
    finally:
        on.close()
        off.close()


def timed_read(p: Producer, end: int) -> float:
    t0 = time.perf_counter()
    p.read(end)
    return time.perf_counter() - t0


def bench_lagging_reader(prims: int, samples: int) -> None:
    """A reader 8 ordinals behind vs a reader at the floor, both following the producer: before
    each pair of reads (in alternating order) the producer seals one more ordinal, so every read
    is at a new N. Also the same N read again (a state already assembled)."""
    p = Producer(prims, WINDOW, WINDOW + 4)
    try:
        for _ in range(WINDOW):
            p.step()
        ratios, floor_t, behind_t = [], [], []
        for k in range(samples):
            p.step()
            ends = (p.ordinal, p.ordinal - 8) if k % 2 == 0 else (p.ordinal - 8, p.ordinal)
            took = {end: timed_read(p, end) for end in ends}
            floor_t.append(took[p.ordinal])
            behind_t.append(took[p.ordinal - 8])
            ratios.append(behind_t[-1] / floor_t[-1])
        ratio = statistics.median(ratios)
        same = statistics.median(
            timed_read(p, p.ordinal - 8) / timed_read(p, p.ordinal) for _ in range(samples)
        )
        # A reader that still holds its previous group: no state can be rewritten in place,
        # so each new N costs a copy of the column (what every new N cost before).
        copied = []
        for _ in range(samples):
            p.step()
            with p.stage.read_attributes(
                p.all, ["pos"], OrdinalRange.latest(p.ordinal - 9)
            ) as held:
                held.wait()
                kept = list(held.groups())
            copied.append(timed_read(p, p.ordinal - 8) / timed_read(p, p.ordinal))
            for group in kept:
                group.release()
        t_floor, t_behind = statistics.median(floor_t), statistics.median(behind_t)
        print(
            f"reader following the producer: latest(floor) {t_floor * 1e6:.0f} us,"
            f" latest(floor - 8) {t_behind * 1e6:.0f} us (medians of {samples});"
            f" the same N again: {same:.2f} x the floor read; a new N while the previous"
            f" group is held (one column copy): {statistics.median(copied):.2f} x",
            flush=True,
        )
        report(
            "read time 8 behind / at the floor, each read at a new N (median of pairs)",
            f"{ratio:.2f}",
            "~1 (as fast)",
            ratio <= 1.25,
        )
    finally:
        p.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = parser.parse_args()
    prims = 100_000 if args.quick else 1_000_000
    bench_memory(prims)
    bench_throughput(prims, rounds=4 if args.quick else 15, steps=10)
    bench_lagging_reader(prims, samples=5 if args.quick else 21)


if __name__ == "__main__":
    main()
