"""Memory of a fire-and-forget producer (``make leakcheck`` runs it after leakcheck.py).

A producer that never waits: it drops the ``Operation`` of every write and of every floor
advance sealing them (one advance per 64 writes), and never calls ``release_op``. An op whose
``Operation`` is gone must stop being tracked once it completes, so the stage's tracked-op
count and the process RSS stay flat however many writes go by.

Prints the baseline RSS (after a warm-up), the RSS at ten checkpoints, and the tracked-op count
(``Stage._diagnostics()["ops"]``) once the producer is done and its last floor advance has
completed. ``OVSTAGE_FAF_WRITES`` (default 1,000,000) sets the write count;
``OVSTAGE_FAF_MAX_MB`` (default 50) is the allowed RSS growth over the baseline.
Exit status 1 when the growth exceeds it or ops stay tracked.
"""

from __future__ import annotations

import gc
import os
import sys
import time

import numpy as np
import ovstage
from ovstage._lib import native

PRIMS = [f"/World/Env{i}/Body" for i in range(16)]
ATTR = "physics:pose"
SEAL_EVERY = 64


def rss_mib() -> float:
    """Resident set size of this process, after returning freed memory to the OS."""
    gc.collect()
    native.ReleaseMemory()
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> int:
    writes = int(os.environ.get("OVSTAGE_FAF_WRITES", "1000000"))
    limit = float(os.environ.get("OVSTAGE_FAF_MAX_MB", "50"))
    stage = ovstage.Stage("fire-and-forget")
    paths = ovstage.PathDictionary(stage)
    values = np.zeros((len(PRIMS), 3), np.float32)
    plist = paths.create_path_list_from_strings(PRIMS)
    query = stage.query_from_path_list(plist)

    def produce(first: int, last: int) -> None:
        for i in range(first, last + 1):
            values[:, 0] = i
            stage.write_attribute(query, ATTR, i, values, is_array=False)  # dropped
            if i % SEAL_EVERY == 0:
                stage.advance_write_floor(i)  # dropped too

    warmup = max(SEAL_EVERY, writes // 100)
    produce(1, warmup)
    stage.advance_write_floor(warmup).wait()
    baseline = rss_mib()
    ops_before = stage._diagnostics()["ops"]
    print(f"fire-and-forget: {writes} writes of {len(PRIMS)} prims, Operations dropped unwaited")
    print(f"  baseline RSS {baseline:.1f} MiB, tracked ops {ops_before} (after {warmup} warm-up)")
    start = time.perf_counter()
    done = warmup
    peak = baseline
    for k in range(1, 11):
        target = warmup + (writes - warmup) * k // 10
        produce(done + 1, target)
        done = target
        rss = rss_mib()
        peak = max(peak, rss)
        ops = stage._diagnostics()["ops"]
        growth = rss - baseline
        print(f"  after {done:>9} writes: RSS {rss:8.1f} MiB ({growth:+.1f}), tracked ops {ops}")
    elapsed = time.perf_counter() - start
    stage.advance_write_floor(done).wait()  # every write is complete once this is
    gc.collect()
    final = rss_mib()
    ops_after = stage._diagnostics()["ops"]
    print(
        f"  done in {elapsed:.1f} s; final RSS {final:.1f} MiB ({final - baseline:+.1f} MiB over "
        f"baseline, peak {peak - baseline:+.1f}), tracked ops {ops_after}"
    )
    query.release().wait()
    plist.release()
    stage.destroy()
    ok = True
    if peak - baseline >= limit:
        print(f"  FAIL: RSS grew by {peak - baseline:.1f} MiB (limit {limit} MiB)")
        ok = False
    if ops_after > ops_before:
        print(f"  FAIL: {ops_after - ops_before} ops still tracked")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
