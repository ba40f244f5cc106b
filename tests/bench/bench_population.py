"""USD population benchmark (issue 13). Every figure comes from this one run.

A generated scene of N mesh prims (default 100,000; under 100 xform groups) — each with 8
points, an extent, three primvars (display color, texture coordinates, a float) and a
time-sampled translate — is saved as a .usdc file, then:

1. time: usd-core alone opening the file and reading the same attributes into numpy (the
   practical limit: population cannot read USD faster than USD does) against
   ``population.open_usd`` of the same file (RENDERING, at time 0) into a fresh stage,
   repeats alternated, medians; target population <= 2x usd-core. "The same attributes":
   what RENDERING publishes, every attribute with a value (schema fallbacks included), the
   prim type, the applied schemas and the local transform;
2. memory, each in a fresh process: the RSS the population adds on top of the open USD stage
   it keeps (for later re-sampling), against the payload bytes (the numpy arrays usd-core
   reads: the values of the scene, local transforms included); target <= 1.5x. The bytes of
   the built-ins the spec has population store besides (reserved names, reset flags) are
   printed apart, with the ratio against payload + built-ins (shown, not the target). Peak
   RSS growth is printed beside it, the engine's own share (its value buffers and the Go
   heap of its tables, docs/architecture.md "Memory"), and the ratio again from two children
   with one glibc malloc arena (``MALLOC_ARENA_MAX=1``: the per-thread arenas' share).

Usage: ``python tests/bench/bench_population.py [--prims N] [--repeats R]`` (or
``OVSTAGE_BENCH_POPULATION_PRIMS=N``; ``--quick`` = 5,000 prims, 2 repeats).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import ovstage
from figures import figure
from ovstage import population
from ovstage._lib import native

GROUP_SIZE = 1000  # meshes per xform group
TIME = 0.0  # seconds; the scene has 24 time codes per second


def report(name: str, value: str, target: str, ok: bool | None) -> None:
    """One figure, as a FIGURE line for run_all.py's table."""
    figure(name, value, "", target, ok)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _malloc_trim() -> None:
    """Return the C heap's free pages to the OS (glibc), so RSS counts retained memory."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL(None).malloc_trim(0)


def settled_rss() -> int:
    """RSS after collecting garbage on every side (Python, Go, the C heap)."""
    gc.collect()
    native.ReleaseMemory()
    _malloc_trim()
    return rss_bytes()


def reset_peak_rss() -> None:
    """Start a new peak-RSS window (Linux: writing 5 to clear_refs resets VmHWM)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


# ---------------------------------------------------------------- the scene


CUBE = "(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1)"
ST = "(0, 0), (1, 0), (0, 1), (1, 1), (0, 0), (1, 0), (0, 1), (1, 1)"
HEADER = '#usda 1.0\n(\n    timeCodesPerSecond = 24\n    upAxis = "Z"\n)\n\n'


def mesh_text(i: int) -> str:
    """One mesh: 8 points, extent, 3 primvars, a translate sampled at 0 s and 1 s."""
    x, y = float(i % 100), float(i // 100 % 1000)
    return "\n".join(
        (
            f'        def Mesh "M{i}"',
            "        {",
            f"            point3f[] points = [{CUBE}, ({i % 7}, 1, 1)]",
            f"            float3[] extent = [(0, 0, 0), ({i % 7 + 1}, 1, 1)]",
            f"            color3f[] primvars:displayColor = [({i % 10 / 10}, 0.5, 0.25)] (",
            '                interpolation = "constant")',
            f'            texCoord2f[] primvars:st = [{ST}] (interpolation = "vertex")',
            f"            float primvars:temperature = {20 + i % 50}",
            f"            double3 xformOp:translate.timeSamples = {{0: ({x}, {y}, 0), "
            f"24: ({x}, {y}, 1)}}",
            '            uniform token[] xformOpOrder = ["xformOp:translate"]',
            "        }",
            "",
        )
    )


def generate_scene(path: Path, prims: int) -> None:
    """Write the scene as text (fast), then let usd-core save it in the format of ``path``."""
    from pxr import Sdf

    text = [HEADER, 'def Xform "World"\n{\n']
    for g in range(0, prims, GROUP_SIZE):
        text.append(f'    def Xform "G{g // GROUP_SIZE}"\n    {{\n')
        text.extend(mesh_text(i) for i in range(g, min(g + GROUP_SIZE, prims)))
        text.append("    }\n")
    text.append("}\n")
    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.ImportFromString("".join(text))
    layer.Export(str(path))


# ---------------------------------------------------------------- what is timed


def as_payload(value: Any) -> np.ndarray:
    """A USD value as the numpy array it is stored as (a string-like value: uint64 ids)."""
    if isinstance(value, str):
        return np.zeros(1, np.uint64)
    array = np.asarray(value)
    return np.zeros(array.shape, np.uint64) if array.dtype.kind in "OUS" else array


def usd_core_read(path: Path) -> tuple[Any, list[np.ndarray]]:
    """usd-core alone: open the file and read, for every prim, what the RENDERING domain
    publishes — every attribute that has a value at TIME (authored or a schema fallback) —
    into numpy, plus the prim's type, applied schemas and local transform. Returns the USD
    stage and the arrays."""
    from pxr import Usd, UsdGeom

    usd = Usd.Stage.Open(str(path))
    code = Usd.TimeCode(TIME * usd.GetTimeCodesPerSecond())
    arrays: list[np.ndarray] = []
    for prim in usd.Traverse():
        prim.GetTypeName()
        prim.GetAppliedSchemas()
        if prim.IsA(UsdGeom.Xformable):
            arrays.append(np.array(UsdGeom.Xformable(prim).GetLocalTransformation(code)))
        for attr in prim.GetAttributes():
            value = attr.Get(code)
            if value is not None:
                arrays.append(as_payload(value))
    return usd, arrays


def builtin_bytes(usd: Any) -> int:
    """The bytes of what population stores beyond the values usd-core's read returns: the
    reserved built-ins of every prim (``usd-prim-type`` on typed prims, ``usd-schemas``,
    ``usd-ancestor-types``: 8-byte token ids) and ``omni:resetXformStack`` (1 byte per
    xformable; its local transform, ``omni:xform``, is in the payload already). RENDERING
    creates no world matrix (docs/population.md "Domains"). Not timed."""
    from ovstage.population._selection import ancestor_type_names, applied_schema_names
    from pxr import UsdGeom

    total = 0
    for prim in usd.Traverse():
        type_name = str(prim.GetTypeName())
        tokens = len(applied_schema_names(prim)) + len(ancestor_type_names(type_name))
        total += 8 * (tokens + bool(type_name)) + prim.IsA(UsdGeom.Xformable)
    return total


def populate(path: Path) -> ovstage.Stage:
    stage = ovstage.Stage("bench-population")
    population.open_usd(stage, str(path), 1, TIME)
    return stage


def bench_time(path: Path, repeats: int) -> None:
    usd_times, pop_times = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        usd, arrays = usd_core_read(path)
        usd_times.append(time.perf_counter() - start)
        del usd, arrays
        gc.collect()
        start = time.perf_counter()
        stage = populate(path)
        pop_times.append(time.perf_counter() - start)
        stage.destroy()
        gc.collect()
    usd_t, pop_t = statistics.median(usd_times), statistics.median(pop_times)
    print(
        f"usd-core open + read into numpy: median {usd_t:.2f} s; population.open_usd: "
        f"median {pop_t:.2f} s ({repeats} alternated repeats)",
        flush=True,
    )
    ratio = pop_t / usd_t
    report("population time / usd-core open + read time", f"{ratio:.2f}", "<= 2.0", ratio <= 2.0)


# ---------------------------------------------------------------- memory (fresh processes)


#: A tiny scene both memory children read first, so that what USD builds once per process
#: (the schema registry, plugin and type tables) is not counted as either side's cost.
WARM_UP = '#usda 1.0\ndef Xform "W"\n{\n    def Mesh "M"\n    {\n    }\n}\n'


def memory_child(kind: str, path: Path) -> dict[str, int]:
    """RSS figures of one fresh process: ``usd`` (usd-core alone) or ``population``."""
    if kind == "usd":
        warm = Path(path).with_name("warm.usda")
        warm.write_text(WARM_UP)
        usd_core_read(warm)
        before = settled_rss()
        reset_peak_rss()
        usd, arrays = usd_core_read(path)
        peak = peak_rss_bytes()
        with_arrays = settled_rss()
        payload = sum(a.nbytes for a in arrays)
        del arrays
        stage_only = settled_rss()
        builtins = builtin_bytes(usd)
        del usd
        return {
            "payload": payload,
            "builtins": builtins,
            "with_arrays": with_arrays - before,
            "stage_only": stage_only - before,
            "peak": peak - before,
        }
    warm_stage = ovstage.Stage("warm-up")
    population.open_usd_from_string(warm_stage, WARM_UP, 1)
    warm_stage.destroy()
    del warm_stage
    before = settled_rss()
    heap, buffers = native.GoHeapInUse(), native.BufferLiveBytes()
    reset_peak_rss()
    stage = populate(path)
    peak = peak_rss_bytes()
    figures = {"growth": settled_rss() - before, "peak": peak - before}
    # The engine's own share (settled_rss ran a Go collection): its tables on the Go heap
    # and the value buffers it holds.
    figures["go_heap"] = native.GoHeapInUse() - heap
    figures["buffers"] = native.BufferLiveBytes() - buffers
    stage.destroy()
    return figures


def run_child(kind: str, path: Path, env: dict[str, str] | None = None) -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", kind, str(path)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
        env=None if env is None else {**os.environ, **env},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_memory(path: Path) -> None:
    usd = run_child("usd", path)
    pop = run_child("population", path)
    payload, builtins = usd["payload"], usd["builtins"]
    arrays = usd["with_arrays"] - usd["stage_only"]
    added = pop["growth"] - usd["stage_only"]
    print(
        f"memory: payload {payload / 1e6:.1f} MB (the values usd-core's read returns, local "
        f"transforms included: the target's denominator); the engine also stores "
        f"{builtins / 1e6:.1f} MB the spec requires that the read does not return (built-ins, "
        f"omni:resetXformStack); usd-core RSS growth: "
        f"{usd['stage_only'] / 1e6:.1f} MB the stage, {arrays / 1e6:.1f} MB the numpy arrays "
        f"(peak {usd['peak'] / 1e6:.1f}); population RSS growth {pop['growth'] / 1e6:.1f} MB "
        f"(peak {pop['peak'] / 1e6:.1f}), of which the engine holds {pop['buffers'] / 1e6:.1f} MB "
        f"of value buffers and {pop['go_heap'] / 1e6:.1f} MB of Go heap",
        flush=True,
    )
    ratio = added / payload
    report(
        "population RSS beyond the USD stage / payload bytes",
        f"{ratio:.2f}",
        "<= 1.5",
        ratio <= 1.5,
    )
    report(
        "  population RSS beyond the USD stage / (payload + built-ins)",
        f"{added / (payload + builtins):.2f}",
        "(shown)",
        None,
    )
    report(
        "  usd-core's numpy arrays RSS / payload bytes", f"{arrays / payload:.2f}", "(shown)", None
    )
    peak = (pop["peak"] - usd["stage_only"]) / payload
    report("  peak population RSS beyond the USD stage / payload", f"{peak:.2f}", "(shown)", None)
    # The engine alone: what the stage holds (value buffers, which include the built-ins
    # population adds, and the Go heap of its tables) against the same payload.
    engine = (pop["buffers"] + pop["go_heap"]) / payload
    report("  engine (value buffers + Go heap) / payload", f"{engine:.2f}", "(shown)", None)
    report("  engine Go heap / payload", f"{pop['go_heap'] / payload:.2f}", "(shown)", None)
    # The C heap's share: the same two children with one glibc malloc arena. What the writes
    # leave in per-thread arenas (pages a few live blocks keep resident after malloc_trim) is
    # then not there: the difference is allocator retention, not data (docs/architecture.md).
    one = {"MALLOC_ARENA_MAX": "1"}
    usd_one, pop_one = run_child("usd", path, one), run_child("population", path, one)
    single = (pop_one["growth"] - usd_one["stage_only"]) / payload
    report(
        "  the same with one malloc arena (MALLOC_ARENA_MAX=1) / payload",
        f"{single:.2f}",
        "(shown)",
        None,
    )


REPO = Path(__file__).resolve().parents[2]


def bench_engine_report(prims: int) -> None:
    """The engine's Go heap per stored value for the same column shapes, from Go
    (``core/mem_population_test.go``; docs/architecture.md "Memory"): no USD, no Python."""
    go = shutil.which("go")
    if go is None or not (REPO / "go.mod").exists():
        report("  engine Go heap per value (Go report)", "skipped", "(shown)", None)
        return
    out = subprocess.run(
        [go, "test", "-run", "^TestPopulationShapedMemoryReport$", "-v", "-count=1", "./core/"],
        cwd=REPO,
        env={**os.environ, "OVSTAGE_MEM_PRIMS": str(prims)},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    sealed = r"sealed: .*Go heap \+[\d.]+ MB \(([\d.]+) B/value\).* / payload ([\d.]+)"
    found = re.search(sealed, out.stdout)
    if found is None:
        report("  engine Go heap per value (Go report)", "failed", "(shown)", False)
        print(out.stdout[-2000:], out.stderr[-2000:])
        return
    report("  engine Go heap per stored value (Go report)", f"{found[1]} B", "(shown)", None)
    report("  engine (buffers + Go heap) / payload (Go report)", found[2], "(shown)", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = int(os.environ.get("OVSTAGE_BENCH_POPULATION_PRIMS", "100000"))
    parser.add_argument("--prims", type=int, default=default, help="meshes in the scene")
    parser.add_argument("--repeats", type=int, default=3, help="alternated timing repeats")
    parser.add_argument("--format", default="usdc", choices=("usdc", "usda"))
    parser.add_argument("--quick", action="store_true", help="5,000 prims, 2 repeats")
    parser.add_argument("--memory-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child[0], Path(args.memory_child[1]))))
        return
    if not population.available():
        print(f"bench_population: skipped, {population.last_error() or 'USD is not available'}")
        return
    prims, repeats = (5000, 2) if args.quick else (args.prims, args.repeats)
    print(
        f"bench_population: {os.cpu_count()} CPUs, numpy {np.__version__}, ovstage "
        f"{ovstage.__version__}, {prims:,} meshes in a .{args.format} file",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"scene.{args.format}"
        start = time.perf_counter()
        generate_scene(path, prims)
        print(
            f"scene: {path.stat().st_size / 1e6:.1f} MB written in "
            f"{time.perf_counter() - start:.1f} s",
            flush=True,
        )
        bench_time(path, repeats)
        bench_memory(path)
    bench_engine_report(prims)


if __name__ == "__main__":
    main()
