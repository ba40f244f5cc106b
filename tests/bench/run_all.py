"""``make bench``: run every bench script, then print one table of all their figures.

Each script's own output is passed through as it runs; the figures it reports through
``figures.figure`` are collected and printed at the end, each with the limit it is compared
with and whether this run met it. Every ratio in the table is measured within one run.

Usage: ``python tests/bench/run_all.py [--quick]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from figures import parse

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "bench_foundation.py",
    "bench_async.py",
    "bench_c_api.py",
    "bench_typed_reads.py",
    "bench_scaling.py",
    "bench_step.py",
    "bench_threads.py",
    "bench_history.py",
    "bench_population.py",
    "bench_export.py",
    "bench_chart.py",
    "bench_replication.py",
]
QUICK = {
    "bench_step.py",
    "bench_threads.py",
    "bench_chart.py",
    "bench_async.py",
    "bench_c_api.py",
    "bench_typed_reads.py",
    "bench_scaling.py",
    "bench_history.py",
    "bench_population.py",
    "bench_export.py",
    "bench_replication.py",
}


def run(script: str, quick: bool) -> tuple[list[tuple[str, ...]], int]:
    cmd = [sys.executable, str(HERE / script)] + (["--quick"] if quick and script in QUICK else [])
    rows = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            fields = parse(line)
            if fields is None:
                print(line, end="", flush=True)
            else:
                rows.append((script.removesuffix(".py"), *fields))
    return rows, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = parser.parse_args()
    rows, failed = [], []
    for script in SCRIPTS:
        print(f"==> {script}", flush=True)
        got, rc = run(script, args.quick)
        rows += got
        if rc != 0:
            failed.append(f"{script} (exit {rc})")
    header = ("script", "figure", "value", "unit", "limit", "verdict")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(6)]
    print()
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(
            "  ".join(
                f.ljust(w) if i != 2 else f.rjust(w)
                for i, (f, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    met = sum(r[5] == "met" for r in rows)
    missed = sum(r[5] == "missed" for r in rows)
    print(f"\n{len(rows)} figures: {met} met their limit, {missed} missed", flush=True)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
