"""USD export benchmark (issue 16). Every figure comes from this one run.

A stage of N prims (default 100,000, under 100 groups) is written through the ordinary write
API, as population writes it: per prim a local transform (``omni:xform``), a float
temperature and a float3 velocity, and the reserved ``usd-prim-type`` token; sealed at 1.
Then, repeats alternated, medians:

1. full export: ``population.export_to_usd_layer`` of every prim (the two custom attributes
   by one GLOB rule, the transform as ``xformOp:transform``) into an empty layer, against
   usd-core authoring the same values into an empty layer directly (the practical limit: the
   exporter cannot author USD faster than ``Sdf`` does; the baseline has the numpy arrays
   already in hand and uses one ``Sdf.ChangeBlock``); target <= 2x;
2. change-only: 1% of the prims get a new temperature and transform at ordinal 2; a
   destination that holds the full export exports what changed since 1
   (CHANGED_PROPERTIES_SINCE_ORDINAL), against usd-core setting those values on the existing
   specs of a layer with the full content; target <= 2x.

Usage: ``python tests/bench/bench_export.py [--prims N] [--repeats R]`` (``--quick`` = 5,000
prims, 2 repeats).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import ovstage
from figures import figure
from ovstage import population

GROUP_SIZE = 1000
RULES = [
    {
        "source_attribute_name": "sim:*",
        "source_attribute_name_match": 1,  # GLOB
        "flags": 8,  # INFER_CUSTOM_TYPE
    }
]
CHANGED = 1  # CHANGED_PROPERTIES_SINCE_ORDINAL


def prim_paths(prims: int) -> list[str]:
    return [f"/World/G{i // GROUP_SIZE}/P{i}" for i in range(prims)]


def values(prims: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    xforms = np.tile(np.eye(4), (prims, 1, 1))
    xforms[:, 3, :3] = rng.random((prims, 3))
    return {
        "omni:xform": xforms.reshape(prims, 16),
        "sim:temperature": rng.random(prims, dtype=np.float32) * 100,
        "sim:velocity": rng.random((prims, 3), dtype=np.float32),
    }


def write(
    stage: ovstage.Stage, paths: list[str], columns: dict[str, np.ndarray], ordinal: int
) -> None:
    dictionary = ovstage.PathDictionary(stage)
    with dictionary.create_path_list_from_strings(paths) as path_list:
        query = stage.query_from_path_list(path_list)
        for name, array in columns.items():
            semantic = ovstage.AttributeSemantic.MATRIX if name == "omni:xform" else 0
            stage.write_attribute(
                query, name, ordinal, array, is_array=False, semantic=semantic
            ).wait()
        stage.release_query(query).wait()
    stage.advance_write_floor(ordinal).wait()


def build_stage(paths: list[str], columns: dict[str, np.ndarray]) -> ovstage.Stage:
    stage = ovstage.Stage("bench-export")
    dictionary = ovstage.PathDictionary(stage)
    typed = dict(columns)
    typed["usd-prim-type"] = np.full(len(paths), dictionary.intern_token("Xform"), dtype=np.uint64)
    write(stage, paths, typed, 1)
    return stage


def usd_core_author(layer: Any, paths: list[str], columns: dict[str, np.ndarray]) -> None:
    """The baseline: the same opinions authored with Sdf directly from the arrays."""
    from pxr import Sdf, Vt

    matrices = Vt.Matrix4dArray.FromNumpy(columns["omni:xform"].reshape(-1, 4, 4))
    temperature = columns["sim:temperature"].tolist()
    velocity = Vt.Vec3fArray.FromNumpy(columns["sim:velocity"])
    order = Vt.TokenArray(["xformOp:transform"])
    names = Sdf.ValueTypeNames
    with Sdf.ChangeBlock():
        for i, path in enumerate(paths):
            prim = layer.GetPrimAtPath(path) or Sdf.CreatePrimInLayer(layer, path)
            for name, type_name, value, uniform, custom in (
                ("xformOp:transform", names.Matrix4d, matrices[i], False, False),
                ("xformOpOrder", names.TokenArray, order, True, False),
                ("sim:temperature", names.Float, temperature[i], False, True),
                ("sim:velocity", names.Float3, velocity[i], False, True),
            ):
                attr = prim.attributes.get(name)
                if attr is None:
                    variability = Sdf.VariabilityUniform if uniform else Sdf.VariabilityVarying
                    attr = Sdf.AttributeSpec(prim, name, type_name, variability, custom)
                attr.default = value


def usd_core_update(layer: Any, paths: list[str], columns: dict[str, np.ndarray]) -> None:
    """The change baseline: new values on the existing specs of the changed prims."""
    from pxr import Sdf, Vt

    matrices = Vt.Matrix4dArray.FromNumpy(columns["omni:xform"].reshape(-1, 4, 4))
    temperature = columns["sim:temperature"].tolist()
    with Sdf.ChangeBlock():
        for i, path in enumerate(paths):
            layer.GetAttributeAtPath(f"{path}.xformOp:transform").default = matrices[i]
            layer.GetAttributeAtPath(f"{path}.sim:temperature").default = temperature[i]


def timed(run: Any, *args: Any, **kwargs: Any) -> float:
    return timed_report(run, *args, **kwargs)[0]


def timed_report(run: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = run(*args, **kwargs)
    return time.perf_counter() - start, result


def check_report(label: str, report: dict[str, int], prims: int, attributes: int) -> None:
    """The export measured did the baseline's work: every transform and custom value (a
    figure of an export that silently wrote less would mean nothing)."""
    got = (report["transforms_exported"], report["attributes_exported"])
    if got != (prims, attributes):
        raise SystemExit(
            f"bench_export: the {label} export wrote {got[0]} transforms and {got[1]} "
            f"attributes, not {prims} and {attributes}"
        )


def bench(prims: int, repeats: int) -> None:
    from pxr import Sdf

    paths = prim_paths(prims)
    columns = values(prims, 1)
    start = time.perf_counter()
    stage = build_stage(paths, columns)
    print(f"stage: {prims:,} prims written and sealed in {time.perf_counter() - start:.1f} s")
    # Ordinal 2 changes 1% of the prims. The full exports run at 2 (the committed ordinal):
    # every prim, with those prims' newer values; the baseline authors the same values.
    picked = np.arange(0, prims, 100)
    changed = [paths[i] for i in picked]
    update = {
        "omni:xform": values(prims, 2)["omni:xform"][picked],
        "sim:temperature": columns["sim:temperature"][picked] + 1,
    }
    write(stage, changed, update, 2)
    current = {name: array.copy() for name, array in columns.items()}
    for name, array in update.items():
        current[name][picked] = array
    usd_full, ours_full, usd_change, ours_change = [], [], [], []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(repeats):
                baseline = Sdf.Layer.CreateAnonymous("baseline.usda")
                usd_full.append(timed(usd_core_author, baseline, paths, current))
                usd_change.append(timed(usd_core_update, baseline, changed, update))
                del baseline
                ours = Sdf.Layer.CreateAnonymous("ours.usda")
                elapsed, report = timed_report(
                    population.export_to_usd_layer, stage, ours, 2, attribute_rules=RULES
                )
                check_report("full", report, prims, 2 * prims)
                ours_full.append(elapsed)
                del ours
                out = Path(tmp) / f"dest{r}.usda"
                with population.create_export_destination(stage, out) as destination:
                    destination.export(2, attribute_rules=RULES)
                    elapsed, report = timed_report(
                        destination.export,
                        2,
                        since_ordinal=1,
                        selection=CHANGED,
                        attribute_rules=RULES,
                    )
                    check_report("change-only", report, len(changed), len(changed))
                    ours_change.append(elapsed)
                gc.collect()
    finally:
        stage.destroy()
    for label, ours, usd in (
        ("full", ours_full, usd_full),
        ("change-only (1%)", ours_change, usd_change),
    ):
        o, u = statistics.median(ours), statistics.median(usd)
        print(
            f"{label}: export median {o * 1e3:.1f} ms, usd-core authoring median "
            f"{u * 1e3:.1f} ms ({repeats} alternated repeats)",
            flush=True,
        )
        ratio = o / u
        figure(
            f"export {label} time / usd-core authoring time",
            f"{ratio:.2f}",
            "",
            "<= 2.0",
            ratio <= 2.0,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prims", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="5,000 prims, 2 repeats")
    args = parser.parse_args()
    if not population.export_available():
        print("bench_export: skipped, USD is not available (pip install 'ovstage-go[usd]')")
        return
    prims, repeats = (5000, 2) if args.quick else (args.prims, args.repeats)
    print(
        f"bench_export: {os.cpu_count()} CPUs, numpy {np.__version__}, ovstage "
        f"{ovstage.__version__}, {prims:,} prims",
        flush=True,
    )
    bench(prims, repeats)


if __name__ == "__main__":
    main()
