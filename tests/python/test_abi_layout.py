"""The C headers of include/ and the Python ctypes mirrors, both against one ABI table.

tests/abi/layout.json states the ovstage C ABI (sizes, offsets, values, slot order, function
signatures). tests/abi/abi_checks.py turns it into C and C++ probes; this module compiles and
runs them against include/, builds and runs the inline-helper test, and compares every
``ctypes.Structure`` of the ``ovstage`` package that mirrors a C struct with the same table.
See docs/c-api.md.
"""

from __future__ import annotations

import ctypes
import difflib
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import ovstage
import pytest

REPO = Path(__file__).resolve().parents[2]
ABI_DIR = REPO / "tests" / "abi"


def _load_abi_checks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("abi_checks", ABI_DIR / "abi_checks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


abi = _load_abi_checks()
TABLE: dict[str, Any] = abi.load_table()

CC = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
NM = shutil.which("nm")
WARNINGS = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
INCLUDE = [f"-I{abi.INCLUDE}"]
SANITIZERS = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
STANDARDS = [("c", "c99"), ("c", "c11"), ("c++", "c++17")]

needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler on PATH (set CC)")
needs_cxx = pytest.mark.skipif(CXX is None, reason="no C++ compiler on PATH (set CXX)")


def _compiler(language: str) -> str:
    compiler = CC if language == "c" else CXX
    if compiler is None:
        pytest.skip(f"no {language} compiler on PATH")
    return compiler


def _run(cmd: Sequence[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def _compile(language: str, std: str, sources: Sequence[Path], *extra: str) -> None:
    cmd = [_compiler(language), f"-std={std}", *WARNINGS, *INCLUDE]
    if language == "c++":
        cmd += ["-x", "c++"]
    _run([*cmd, *extra, *map(str, sources)], f"{language} -std={std} build")


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return abi.write_sources(TABLE, tmp_path_factory.mktemp("abi"))


# ---------------------------------------------------------------------------------------------
# The table itself


def test_table_is_consistent() -> None:
    assert abi.table_problems(TABLE) == []


def test_table_has_the_whole_abi() -> None:
    """The counts the ABI is known by: 53 exports, 28/12-slot vtables, a 4-entry extension."""
    assert len(TABLE["functions"]) == 53
    slots = {vt["name"]: (len(vt["slots"]), vt["size"]) for vt in TABLE["vtables"]}
    assert slots == {
        "ovstage_vtable_t": (28, 224),
        "path_dictionary_vtable_t": (12, 96),
        "ovstage_placement_extension_v1_t": (4, 40),
    }
    population = [f for f in TABLE["functions"] if f[0].startswith("ovstage_population_")]
    exports = [f for f in population if f[0].startswith("ovstage_population_export_")]
    assert (len(population) - len(exports), len(exports)) == (15, 17)


def test_every_header_is_checked() -> None:
    on_disk = sorted(str(p.relative_to(abi.INCLUDE)) for p in abi.INCLUDE.rglob("*.h"))
    assert on_disk == sorted(abi.PUBLIC_HEADERS)


# ---------------------------------------------------------------------------------------------
# Headers against the table


def _probe_lines(binary: Path) -> list[str]:
    return _run([str(binary)], "probe").splitlines()


def _assert_probe_matches(got: list[str]) -> None:
    expected = abi.expected_probe_lines(TABLE)
    if got != expected:
        diff = "\n".join(difflib.unified_diff(expected, got, "table", "headers", lineterm="", n=0))
        pytest.fail(f"the headers disagree with tests/abi/layout.json:\n{diff}")


@needs_cc
def test_sizes_offsets_and_values_match_the_table(sources: dict[str, Path]) -> None:
    binary = sources["probe"].with_suffix("")
    _compile("c", "c11", [sources["probe"]], "-o", str(binary))
    _assert_probe_matches(_probe_lines(binary))


@needs_cc
@pytest.mark.parametrize(("language", "std"), STANDARDS, ids=[s for _, s in STANDARDS])
def test_each_header_compiles_alone(sources: dict[str, Path], language: str, std: str) -> None:
    """Each header alone provides what the table places in it, warning-free."""
    alone = {role.split(":", 1)[1]: path for role, path in sources.items() if ":" in role}
    cmd = [_compiler(language), f"-std={std}", *WARNINGS, *INCLUDE, "-fsyntax-only"]
    if language == "c++":
        cmd += ["-x", "c++"]
    proc = subprocess.run(
        [*cmd, *map(str, alone.values())], capture_output=True, text=True, timeout=180
    )
    if proc.returncode != 0:
        failing = [h for h, p in alone.items() if str(p) in proc.stderr]
        pytest.fail(f"not self-contained in {std}: {failing}\n{proc.stderr}")


@needs_cc
@pytest.mark.parametrize(("language", "std"), STANDARDS, ids=[s for _, s in STANDARDS])
def test_headers_included_twice(sources: dict[str, Path], language: str, std: str) -> None:
    """Include guards hold and no typedef is repeated (an error in C99)."""
    _compile(language, std, [sources["twice"]], "-fsyntax-only")


def _undefined_symbols(obj: Path) -> list[str]:
    if NM is None:
        pytest.skip("no nm on PATH")
    out = _run([NM, "-u", str(obj)], "nm")
    return sorted(line.split()[-1] for line in out.splitlines() if line.strip())


@needs_cc
def test_exported_functions_have_the_exact_c_signatures(sources: dict[str, Path]) -> None:
    """Each export assigns to a pointer of the table's type (a C error otherwise), the vtable
    slots are compatible, and the object names exactly the 53 exports."""
    obj = sources["signatures"].with_suffix(".o")
    _compile("c", "c11", [sources["signatures"]], "-c", "-o", str(obj))
    assert _undefined_symbols(obj) == sorted(abi.exported_names(TABLE))


@needs_cxx
def test_every_type_is_exact_and_exports_are_extern_c(sources: dict[str, Path]) -> None:
    """C++ sees the exact field, slot, typedef, define and function types of the table, and
    references the exports by their unmangled C names."""
    obj = sources["types"].with_suffix(".o")
    _compile("c++", "c++17", [sources["types"]], "-c", "-o", str(obj))
    assert _undefined_symbols(obj) == sorted(abi.exported_names(TABLE))


def _run_helper_test(binary: Path) -> None:
    out = _run([str(binary)], "inline helper test")
    assert re.fullmatch(r"[1-9]\d* passed, 0 failed\n", out), out


@needs_cc
@pytest.mark.parametrize(("language", "std"), STANDARDS, ids=[s for _, s in STANDARDS])
def test_inline_helpers(tmp_path: Path, language: str, std: str) -> None:
    """The ovstage_<slot> / path_dictionary_<slot> wrappers reach the right slot with the
    context and arguments, and the other header-only helpers behave as documented."""
    binary = tmp_path / "inline_helpers"
    _compile(language, std, [ABI_DIR / "inline_helpers_test.c"], "-o", str(binary), "-lm")
    _run_helper_test(binary)


def _sanitizers_work(tmp_path: Path) -> bool:
    assert CC is not None
    src = tmp_path / "empty.c"
    src.write_text("int main(void) { return 0; }\n")
    proc = subprocess.run(
        [CC, *SANITIZERS, str(src), "-o", str(tmp_path / "empty")],
        capture_output=True,
        timeout=120,
    )
    return proc.returncode == 0


@needs_cc
def test_inline_helpers_under_sanitizers(tmp_path: Path) -> None:
    """AddressSanitizer and UBSan over the helpers that touch memory (tensor_to_write, the
    wrappers, the builders)."""
    if not _sanitizers_work(tmp_path):
        pytest.skip("the C compiler cannot link AddressSanitizer/UBSan here")
    helpers = tmp_path / "helpers_asan"
    _compile("c", "c11", [ABI_DIR / "inline_helpers_test.c"], *SANITIZERS, "-o", str(helpers))
    _run_helper_test(helpers)


# ---------------------------------------------------------------------------------------------
# Python ctypes mirrors against the same table


def _mirror(module: str, name: str) -> type[ctypes.Structure]:
    cls: type[ctypes.Structure] = getattr(importlib.import_module(module), name)
    return cls


#: (module, class, C struct it mirrors).
MIRRORS = [
    ("ovstage._dlpack", "DLPackVersion", "DLPackVersion"),
    ("ovstage._dlpack", "DLDevice", "DLDevice"),
    ("ovstage._dlpack", "DLDataType", "DLDataType"),
    ("ovstage._dlpack", "DLTensor", "DLTensor"),
    ("ovstage._dlpack", "DLManagedTensor", "DLManagedTensor"),
    ("ovstage._dlpack", "DLManagedTensorVersioned", "DLManagedTensorVersioned"),
    ("ovstage._abi", "OvxString", "ovx_string_t"),
    ("ovstage._abi", "OvxStringOrToken", "ovx_string_or_token_t"),
    ("ovstage._abi", "BuildInfoRaw", "ovstage_build_info_t"),
    ("ovstage._abi", "ConfigEntryRaw", "ovstage_config_entry_t"),
    ("ovstage._abi", "ConfigRaw", "ovstage_config_t"),
    ("ovstage._abi", "CudaSync", "ovstage_cuda_sync_t"),
    ("ovstage._abi", "WriteData", "ovstage_write_data_t"),
    ("ovstage._abi", "AttributeWrite", "ovstage_attribute_write_t"),
    ("ovstage._abi", "PlacementRaw", "ovstage_placement_t"),
    ("ovstage._abi", "WriteFloorDesc", "ovstage_write_floor_desc_t"),
    ("ovstage._abi", "OrdinalRangeRaw", "ovstage_ordinal_range_t"),
    ("ovstage._abi", "PredicateRaw", "ovstage_predicate_t"),
    ("ovstage._abi", "FilterRaw", "ovstage_filter_t"),
    ("ovstage._abi", "MapDesc", "ovstage_map_desc_t"),
    ("ovstage._abi", "DataRaw", "ovstage_data_t"),
    ("ovstage._abi", "PrimGroupRaw", "ovstage_prim_group_t"),
    ("ovstage._abi", "AttributeMetaRaw", "ovstage_attribute_meta_t"),
    ("ovstage._abi", "ReadGroupRaw", "ovstage_read_group_t"),
    ("ovstage._abi", "MapGroupRaw", "ovstage_map_group_t"),
    ("ovstage._abi", "QueryResultRaw", "ovstage_query_result_t"),
    ("ovstage._abi", "HierarchyItemRaw", "ovstage_hierarchy_item_t"),
    ("ovstage._abi", "HierarchyResultRaw", "ovstage_hierarchy_result_t"),
    ("ovstage._abi", "HierarchyModelDescRaw", "ovstage_hierarchy_computation_model_desc_t"),
    ("ovstage._abi", "CloneResultRaw", "ovstage_clone_result_t"),
]

#: ctypes structures of the package that are not C ABI structs, and why.
NOT_ABI_STRUCTS: dict[tuple[str, str], str] = {}


def _struct(name: str) -> dict[str, Any]:
    return next(s for s in TABLE["structs"] if s["name"] == name)


def _mirror_key(param: tuple[str, str, str]) -> tuple[str, str]:
    return (param[0], param[1])


@pytest.mark.parametrize(
    ("module", "cls_name", "c_name"), MIRRORS, ids=[_mirror_key(p)[1] for p in MIRRORS]
)
def test_ctypes_mirror_matches_the_table(module: str, cls_name: str, c_name: str) -> None:
    cls = _mirror(module, cls_name)
    struct = _struct(c_name)
    got = {
        "size": ctypes.sizeof(cls),
        "align": ctypes.alignment(cls),
        "fields": [
            (f[0], getattr(cls, f[0]).offset, getattr(cls, f[0]).size) for f in cls._fields_
        ],
    }
    expected = {
        "size": struct["size"],
        "align": struct["align"],
        "fields": [(f[0], f[2], f[3]) for f in struct["fields"] if "." not in f[0]],
    }
    assert got == expected


def _package_structures() -> set[tuple[str, str]]:
    found = set()
    for info in pkgutil.iter_modules(ovstage.__path__, "ovstage."):
        if info.name.startswith("ovstage._native"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, ctypes.Structure) and obj.__module__ == module.__name__:
                found.add((module.__name__, name))
    return found


def test_every_ctypes_structure_is_pinned_or_explained() -> None:
    """A new ctypes mirror must be added to MIRRORS (or to NOT_ABI_STRUCTS with a reason)."""
    pinned = {_mirror_key(p) for p in MIRRORS}
    assert _package_structures() == pinned | set(NOT_ABI_STRUCTS)
