"""Leak check (``make leakcheck``; not part of CI).

Runs write+wait cycles (sealing as a producer does), read/export/release cycles,
unwaited-write cycles (a producer that only waits its floor advances, releasing the write
op ids) and
delete/rewrite/range-read/floor-query cycles against one stage and checks that

* the process RSS grows by less than ``OVSTAGE_LEAK_MAX_MB`` (default 5) over each phase,
  measured after a warm-up of the first 5 % of the cycles, and
* the engine's live object counts (``Stage._diagnostics()``: ops, queries, reads, groups,
  columns, buffers, ordinal queries, maps, path lists) return to their values before the
  phase.

``OVSTAGE_LEAK_WRITES`` (default 1,000,000) and ``OVSTAGE_LEAK_READS`` (default 100,000; also
the count of the last two phases) scale the cycle counts, e.g. ``OVSTAGE_LEAK_WRITES=20000
OVSTAGE_LEAK_READS=5000`` for a quick run.
Exit status 1 when a check fails; every figure is printed either way.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable

import numpy as np
import ovstage

PRIMS = [f"/World/Env{i}/Body" for i in range(16)]
ATTR = "physics:pose"


def rss_bytes() -> int:
    """Resident set size of this process."""
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(name: str, cycles: int, body: Callable[[int], None], stage: ovstage.Stage) -> bool:
    """Run ``body(i)`` for ``i`` in ``1..cycles``; report RSS growth and diagnostics."""
    warmup = max(1, cycles // 20)
    for i in range(1, warmup + 1):
        body(i)
    gc.collect()
    before_diag = stage._diagnostics()
    before_rss = rss_bytes()
    start = time.perf_counter()
    for i in range(warmup + 1, cycles + 1):
        body(i)
    elapsed = time.perf_counter() - start
    gc.collect()
    after_rss = rss_bytes()
    after_diag = stage._diagnostics()
    growth = (after_rss - before_rss) / 2**20
    limit = float(os.environ.get("OVSTAGE_LEAK_MAX_MB", "5"))
    measured = cycles - warmup
    print(
        f"{name}: {measured} cycles in {elapsed:.1f} s ({elapsed / max(measured, 1) * 1e6:.1f} us"
        f"/cycle); RSS {before_rss / 2**20:.1f} -> {after_rss / 2**20:.1f} MiB "
        f"(growth {growth:+.2f} MiB, limit {limit} MiB)"
    )
    print(f"  diagnostics before {before_diag}")
    print(f"  diagnostics after  {after_diag}")
    ok = True
    if growth >= limit:
        print(f"  FAIL: RSS grew by {growth:.2f} MiB")
        ok = False
    # The history window's versions are bounded memory, not objects: they follow the data.
    before_diag.pop("version_bytes", None)
    after_diag.pop("version_bytes", None)
    if before_diag != after_diag:
        print("  FAIL: live engine objects did not return to their starting counts")
        ok = False
    return ok


def main() -> int:
    """Run both phases; return the exit status."""
    writes = int(os.environ.get("OVSTAGE_LEAK_WRITES", "1000000"))
    reads = int(os.environ.get("OVSTAGE_LEAK_READS", "100000"))
    stage = ovstage.Stage("leakcheck")
    paths = ovstage.PathDictionary(stage)
    n = len(PRIMS)
    dense = np.zeros((n, 3), np.float32)
    gathered = np.zeros((2, 3), np.float32)
    index_map = np.arange(n, dtype=np.uint32) % 2
    mask = [0x5555]
    ok = True
    with (
        paths.create_path_list_from_strings(PRIMS) as plist,
        stage.query_from_path_list(plist) as query,
    ):

        def write_cycle(i: int) -> None:
            # Rotate the write flavours; seal each ordinal as a producer does.
            dense[:, 0] = i
            flavour = i % 3
            if flavour == 0:
                op = stage.write_attribute(query, ATTR, i, dense, is_array=False)
            elif flavour == 1:
                op = stage.write_attribute(
                    query, ATTR, i, gathered, is_array=False, index_map=index_map
                )
            else:
                op = stage.write_attribute(
                    query, ATTR, i, dense, is_array=False, mask=mask, count=n
                )
            op.wait()
            stage.advance_write_floor(i).wait()

        ok &= measure("write+wait+seal", writes, write_cycle, stage)
        last = writes

        def read_cycle(i: int) -> None:
            del i
            # The common consumer pattern: iterate the groups without waiting the read's op.
            with stage.read_attributes(query, [ATTR], ovstage.OrdinalRange.latest(last)) as read:
                for group in read.groups():
                    with group:
                        view = group.array()  # export through a legacy capsule
                        versioned = np.from_dlpack(group.dlpack(0))  # versioned capsule
                        assert view.size == versioned.size

        ok &= measure("read+export+release", reads, read_cycle, stage)

        def fire_and_forget_cycle(i: int) -> None:
            # A producer that never waits its writes, only the floor advance sealing them; as
            # in the reference, an op stays tracked until waited or released, so it releases
            # the write's op id once the advance (ordered after the write) is done.
            dense[:, 0] = i
            op = stage.write_attribute(query, ATTR, last + i, dense, is_array=False)
            stage.advance_write_floor(last + i).wait()
            stage.release_op(op.op_id)

        ok &= measure("unwaited write+seal", reads, fire_and_forget_cycle, stage)
        base = last + reads + 10

        def churn_cycle(i: int) -> None:
            # Delete, rewrite, seal, range-read the change and query the floor: tombstones,
            # change membership (pruned beyond the retention budget) and ordinal queries.
            o = base + 3 * i
            stage.delete_attributes(query, [ATTR], o).wait()
            dense[:, 0] = i
            op = stage.write_attribute(query, ATTR, o + 1, dense, is_array=False)
            stage.advance_write_floor(o + 1).wait()
            stage.release_op(op.op_id)
            rng = ovstage.OrdinalRange.between(o, o + 1)
            with stage.read_attributes(query, [ATTR], rng) as read:
                for group in read.groups():
                    with group:
                        assert not group.is_delete
            with stage.get_attribute_write_floor(ATTR) as floor:
                assert floor.fetch() == o + 1

        ok &= measure("delete+rewrite+range read+floor query", reads, churn_cycle, stage)
    stage.destroy()
    print("leakcheck:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
