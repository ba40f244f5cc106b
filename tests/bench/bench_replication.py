"""Replication throughput (issue 18, docs/replication.md): sealed payload MB/s of one primary
publishing a float32x3 column of every prim at each ordinal through the embedded NATS
server to one replica, against the raw JetStream publish rate of the same bytes in messages
of the same size, measured in the same run (the Go benchmark ``replication/
throughput_bench_test.go``). Each size runs 3 times; the figures are the median ratio and the
spread.

Also the cost of a snapshot (``replication/snapshot_bench_test.go``) against one advance.

Usage: ``python tests/bench/bench_replication.py`` (``--quick``: 10k prims only, one run).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
from pathlib import Path

from figures import figure

ROOT = Path(__file__).resolve().parents[2]
TARGET = 0.7


def run(bench: str) -> dict[str, float]:
    """One run of a Go benchmark: its metrics by unit."""
    go = os.environ.get("GO", "go")
    cmd = [go, "test", "-run", "^$", "-bench", f"^{bench}$", "-benchtime=1x", "./replication/"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
    line = next(x for x in out.stdout.splitlines() if x.startswith(bench))
    return {unit: float(v) for v, unit in re.findall(r"([\d.e+-]+) (\S+/\S+|\S+/raw)", line)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k prims, one run")
    args = parser.parse_args()
    sizes = [("BenchmarkReplication10k", "10k")]
    if not args.quick:
        sizes.append(("BenchmarkReplication1M", "1M"))
    rounds = 1 if args.quick else 3
    for bench, label in sizes:
        runs = [run(bench) for _ in range(rounds)]
        for r in runs:
            print(f"{label}: " + ", ".join(f"{v:.3g} {k}" for k, v in sorted(r.items())))
        for metric in ("published/raw", "replicated/raw"):
            vals = [r[metric] for r in runs]
            med = statistics.median(vals)
            spread = f" (runs {min(vals):.2f}..{max(vals):.2f})" if len(vals) > 1 else ""
            figure(
                f"{label} prims/ordinal: {metric}{spread}", med, "", f">= {TARGET}", med >= TARGET
            )
        figure(
            f"{label} prims/ordinal: replicated MB/s",
            statistics.median(r["MB/s-replicated"] for r in runs),
            "MB/s",
        )
    # Snapshots (replication/snapshot_bench_test.go): storing one, and a late replica starting
    # from it, each as a ratio of one ordinary advance of the same bytes; no target.
    snaps = [run("BenchmarkSnapshot100k") for _ in range(rounds)]
    for metric in ("snapshot/advance", "start/advance"):
        vals = [r[metric] for r in snaps]
        spread = f" (runs {min(vals):.2f}..{max(vals):.2f})" if len(vals) > 1 else ""
        figure(f"100k prims: {metric}{spread}", statistics.median(vals), "")


if __name__ == "__main__":
    main()
