"""Latest read + ``np.from_dlpack`` of fixed columns of different tuple widths.

A read publishes each tensor in its typed layout (``(N,)``, ``(N, 3)``, ``(N, 4, 4)``); building
that shape must cost nothing per read next to a scalar column. For 1,000 and 1,000,000 prims
this prints the median of one read (``with read_attributes``, ``groups()``, ``with group``,
``np.from_dlpack(group.dlpack(0))``) of a float32 column, a point (float32 x 3) column and a
MATRIX float64 x 16 column, and each one's ratio to the float32 read of the same run. The
machine may be shared: compare the ratios of one run, not absolute times across runs.

Usage: ``python tests/bench/bench_typed_reads.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import ovstage
from bench_c_api import read_median_us
from figures import figure
from ovstage import AttributeSemantic

COLUMNS = (
    ("float32", np.float32, 1, AttributeSemantic.NONE),
    ("point3f", np.float32, 3, AttributeSemantic.NONE),
    ("matrix4d", np.float64, 16, AttributeSemantic.MATRIX),
)


def read_median(prims: int, samples: int) -> dict[str, float]:
    """Median microseconds of one read of each column over `prims` prims."""
    medians = {}
    with ovstage.Stage("bench-typed-reads") as stage:
        paths = ovstage.PathDictionary(stage)
        with paths.create_path_list_from_strings([f"/t/p{i}" for i in range(prims)]) as lst:
            query = stage.query_from_path_list(lst)
        with query:
            for name, dtype, width, semantic in COLUMNS:
                values = np.ones((prims, width) if width > 1 else prims, dtype)
                stage.write_attribute(
                    query, name, 1, values, is_array=False, semantic=semantic
                ).wait()
            stage.advance_write_floor(1).wait()
            for name, *_layout in COLUMNS:
                medians[name] = read_median_us(stage, query, name, prims, samples)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (smoke run)")
    args = parser.parse_args()
    print(f"bench_typed_reads: {os.cpu_count()} CPUs, medians in microseconds", flush=True)
    sizes = ((1000, 200 if args.quick else 2000), (1_000_000, 20 if args.quick else 200))
    for prims, samples in sizes:
        medians = read_median(prims, samples)
        base = medians["float32"]
        for name, value in medians.items():
            print(f"read + from_dlpack, {prims:>9,} prims, {name:<9} {value:>10.2f}  "
                  f"{value / base:>5.2f}x float32", flush=True)
            figure(f"read + from_dlpack, {prims:,} prims, {name}", value, "us")
            if name != "float32":
                figure(f"  {name} / float32", value / base, "x")


if __name__ == "__main__":
    main()
