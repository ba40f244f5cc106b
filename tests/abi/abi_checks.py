"""Checks of include/ against the ABI table tests/abi/layout.json.

The table is the single statement of the C ABI in this repository. This module reads it and
writes the C and C++ sources that compare the headers with it:

* ``probe.c`` prints sizeof / alignment / offsetof / values of everything in the table; its
  output is compared with what the table expects (:func:`expected_probe_lines`).
* ``types.cpp`` asserts at compile time that every field, typedef, vtable slot, exported
  function and inline helper has exactly the C type the table gives (C++ ``std::is_same``,
  which does not treat an enum as its underlying integer the way C does).
* ``signatures.c`` takes the address of every exported function into a pointer of the
  expected type (a C compile error on mismatch); its object file must reference exactly the
  exported names, unmangled (the C++ object must too: that proves ``extern "C"``).
* one translation unit per header for the self-containment checks.

``python tests/abi/abi_checks.py OUTDIR`` writes the generated sources for inspection.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ABI_DIR = Path(__file__).resolve().parent
REPO = ABI_DIR.parent.parent
INCLUDE = REPO / "include"
TABLE = ABI_DIR / "layout.json"

#: Every header a C program of the reference may include (paths under include/).
PUBLIC_HEADERS = (
    "dlpack/dlpack.h",
    "ovx/dlpack/dlpack.h",
    "ovx/string_types.h",
    "ovx/types.h",
    "ovx/config_tokens.h",
    "ovx/path_dictionary/path_dictionary.h",
    "ovx/path_dictionary/path_dictionary_utils.h",
    "ovx/path_dictionary/path_dictionary_helper.h",
    "ovstage/ovstage_api/ovstage_api_defines.h",
    "ovstage/ovstage_api/ovstage_api_types.h",
    "ovstage/ovstage_api/ovstage_api.h",
    "ovstage/ovstage_api/ovstage_api_utils.h",
    "ovstage/ovstage_api/ovstage_tensor_utils.h",
    "ovstage/ovstage_api/experimental/ovstage_placement_extension.h",
    "ovstage/ovstage_types.h",
    "ovstage/ovstage_config.h",
    "ovstage/ovstage_instancing.h",
    "ovstage/ovstage_population_predicate.h",
    "ovstage/ovstage_population.h",
    "ovstage/ovstage_population_export.h",
    "ovstage/ovstage.h",
)

Table = dict[str, Any]


def load_table(path: Path = TABLE) -> Table:
    with path.open(encoding="utf-8") as f:
        table: Table = json.load(f)
    return table


# ---------------------------------------------------------------------------------------------
# The table's own consistency (catches transcription slips before any compiler runs)


def table_problems(table: Table) -> list[str]:
    """Fields and padding that do not tile a struct exactly, misplaced slots, duplicate names."""
    problems: list[str] = []
    names: set[str] = set()
    for struct in table["structs"]:
        name = struct["name"]
        if name in names:
            problems.append(f"{name}: listed twice")
        names.add(name)
        spans = [(f[2], f[3], f[0]) for f in struct["fields"] if "." not in f[0]]
        spans += [(off, size, "padding") for off, size in struct["padding"]]
        spans.sort()
        cursor = 0
        for offset, size, what in spans:
            if offset != cursor:
                problems.append(f"{name}.{what}: at {offset}, expected {cursor}")
            cursor = offset + size
        if cursor != struct["size"]:
            problems.append(f"{name}: fields and padding end at {cursor}, size {struct['size']}")
        if struct["size"] % struct["align"]:
            problems.append(f"{name}: size {struct['size']} not a multiple of {struct['align']}")
        for fname, _, offset, size in struct["fields"]:
            if "." in fname:
                parent = next(f for f in struct["fields"] if f[0] == fname.rsplit(".", 1)[0])
                if not (parent[2] <= offset and offset + size <= parent[2] + parent[3]):
                    problems.append(f"{name}.{fname}: outside {parent[0]}")
    for vt in table["vtables"]:
        cursor = sum(f[3] for f in vt["leading_fields"])
        for slot, offset, _, _ in vt["slots"]:
            if offset != cursor:
                problems.append(f"{vt['name']}.{slot}: at {offset}, expected {cursor}")
            cursor = offset + 8
        if cursor != vt["size"]:
            problems.append(f"{vt['name']}: slots end at {cursor}, size {vt['size']}")
    constants = [c for e in table["enums"] for c, _ in e["values"]]
    if len(constants) != len(set(constants)):
        problems.append("an enum constant is listed twice")
    functions = [f[0] for f in table["functions"]]
    if len(functions) != len(set(functions)):
        problems.append("an exported function is listed twice")
    for item in _all_header_items(table):
        if item not in PUBLIC_HEADERS:
            problems.append(f"header {item} is not in PUBLIC_HEADERS")
    return problems


def _all_header_items(table: Table) -> set[str]:
    headers = {t[2] for t in table["typedefs"]} | {d[1] for d in table["defines"]}
    for key in ("enums", "structs", "vtables"):
        headers |= {e["header"] for e in table[key]}
    for key in ("functions", "inline_functions", "declared_not_exported"):
        headers |= {f[1] for f in table[key]}
    return headers


# ---------------------------------------------------------------------------------------------
# Helpers shared by the generated sources


def _includes() -> str:
    return "".join(f"#include <{h}>\n" for h in PUBLIC_HEADERS)


def _fn_pointer(returns: str, params: list[str]) -> str:
    return f"{returns} (*)({', '.join(params) if params else 'void'})"


def _slot_pointer(vtable: dict[str, Any], slot: list[Any]) -> str:
    return _fn_pointer(slot[2], [vtable["context"], *slot[3]])


def wrapper_functions(table: Table) -> list[tuple[str, str, str, list[str]]]:
    """(name, header, return type, parameters) of every ovstage_<slot> style inline wrapper."""
    vtables = {vt["name"]: vt for vt in table["vtables"]}
    out = []
    for spec in table["inline_wrappers"]:
        for slot, _, returns, params in vtables[spec["vtable"]]["slots"]:
            out.append(
                (spec["prefix"] + slot, spec["header"], returns, [spec["instance"], *params])
            )
    return out


def exported_names(table: Table) -> list[str]:
    return [f[0] for f in table["functions"]]


# ---------------------------------------------------------------------------------------------
# probe.c: prints what the compiler makes of the headers


def probe_source(table: Table) -> str:
    lines = [
        "/* Generated from tests/abi/layout.json by tests/abi/abi_checks.py. */",
        "#include <math.h>",
        "#include <stddef.h>",
        "#include <stdio.h>",
        "#include <string.h>",
        _includes(),
        "#define ALIGN_OF(T) ((unsigned long long)_Alignof(T))",
        "#define SIZE_OF(x) ((unsigned long long)sizeof(x))",
        "#define MEMBER(T, m) (((T*)0)->m)",
        "#define OFFSET(T, m) ((unsigned long long)offsetof(T, m))",
        "",
        "int main(void)",
        "{",
    ]
    emit = lines.append
    for name, _, _, _ in table["typedefs"]:
        emit(f'    printf("typedef {name} %llu\\n", SIZE_OF({name}));')
    for struct in (*table["structs"], *table["vtables"]):
        name = struct["name"]
        emit(f'    printf("struct {name} %llu %llu\\n", SIZE_OF({name}), ALIGN_OF({name}));')
        for field in (*struct.get("fields", ()), *struct.get("leading_fields", ())):
            f = field[0]
            emit(
                f'    printf("field {name}.{f} %llu %llu\\n", OFFSET({name}, {f}), '
                f"SIZE_OF(MEMBER({name}, {f})));"
            )
        for slot in struct.get("slots", ()):
            s = slot[0]
            emit(
                f'    printf("field {name}.{s} %llu %llu\\n", OFFSET({name}, {s}), '
                f"SIZE_OF(MEMBER({name}, {s})));"
            )
    for enum in table["enums"]:
        name = enum["name"]
        emit(f'    printf("enum {name} %llu\\n", SIZE_OF({name}));')
        for const, _ in enum["values"]:
            emit(f'    printf("const {const} %lld\\n", (long long){const});')
    for name, _, kind, value, _ in table["defines"]:
        if kind == "int":
            emit(f'    printf("define {name} %llu\\n", (unsigned long long)({name}));')
        elif kind == "string":
            emit(f'    printf("define {name} \\"%s\\"\\n", {name});')
        elif kind == "nan":
            emit(f'    printf("define {name} isnan=%d\\n", isnan({name}) ? 1 : 0);')
        elif kind == "zero_init":
            emit("    {")
            emit(f"        static const unsigned char zero[sizeof({value})];")
            emit(f"        {value} v = {name};")
            emit(
                f'        printf("define {name} zero=%d\\n", '
                "memcmp(&v, zero, sizeof v) == 0 ? 1 : 0);"
            )
            emit("    }")
        elif kind == "defined":
            emit(f"#ifdef {name}")
            emit(f'    printf("define {name} defined\\n");')
            emit("#endif")
        else:
            raise ValueError(f"{name}: unknown define kind {kind!r}")
    emit("    return 0;")
    emit("}")
    return "\n".join(lines) + "\n"


def expected_probe_lines(table: Table) -> list[str]:
    """The probe's output if the headers match the table, line for line."""
    out: list[str] = []
    for name, _, _, size in table["typedefs"]:
        out.append(f"typedef {name} {size}")
    for struct in (*table["structs"], *table["vtables"]):
        name = struct["name"]
        out.append(f"struct {name} {struct['size']} {struct['align']}")
        for f, _, offset, size in (*struct.get("fields", ()), *struct.get("leading_fields", ())):
            out.append(f"field {name}.{f} {offset} {size}")
        for s, offset, _, _ in struct.get("slots", ()):
            out.append(f"field {name}.{s} {offset} 8")
    for enum in table["enums"]:
        out.append(f"enum {enum['name']} 4")
        out.extend(f"const {const} {value}" for const, value in enum["values"])
    for name, _, kind, value, _ in table["defines"]:
        out.append(
            {
                "int": f"define {name} {value}",
                "string": f'define {name} "{value}"',
                "nan": f"define {name} isnan=1",
                "zero_init": f"define {name} zero=1",
                "defined": f"define {name} defined",
            }[kind]
        )
    return out


# ---------------------------------------------------------------------------------------------
# types.cpp: exact C types, checked by the C++ type system


def types_cpp_source(table: Table) -> str:
    lines = [
        "// Generated from tests/abi/layout.json by tests/abi/abi_checks.py.",
        "#include <type_traits>",
        "#include <utility>",
        _includes(),
        "#define SAME(what, A, ...) static_assert(std::is_same<A, __VA_ARGS__>::value, what)",
        "#define MEMBER_TYPE(T, m) decltype(std::declval<T&>().m)",
        "",
    ]
    emit = lines.append
    for name, underlying, _, _ in table["typedefs"]:
        emit(f'SAME("typedef {name}", {name}, {underlying});')
    for struct in (*table["structs"], *table["vtables"]):
        name = struct["name"]
        emit(f'static_assert(std::is_standard_layout<{name}>::value, "{name} standard layout");')
        emit(f'static_assert(std::is_trivial<{name}>::value, "{name} trivial");')
        for f, ctype, _, _ in (*struct.get("fields", ()), *struct.get("leading_fields", ())):
            if ctype in ("union", "struct"):
                trait = "is_union" if ctype == "union" else "is_class"
                emit(f'static_assert(std::{trait}<MEMBER_TYPE({name}, {f})>::value, "{f}");')
            else:
                emit(f'SAME("{name}.{f}", MEMBER_TYPE({name}, {f}), {ctype});')
        for slot in struct.get("slots", ()):
            pointer = _slot_pointer(struct, slot)
            emit(f'SAME("{name}.{slot[0]}", MEMBER_TYPE({name}, {slot[0]}), {pointer});')
    for enum in table["enums"]:
        name = enum["name"]
        emit(f'static_assert(std::is_enum<{name}>::value, "{name} is an enum");')
        for const, _ in enum["values"]:
            emit(f'SAME("{const}", decltype({const}), {name});')
    for name, _, kind, _, ctype in table["defines"]:
        if kind == "int" and ctype:
            emit(f'SAME("{name}", std::decay<decltype({name})>::type, {ctype});')
    callables = [
        *table["functions"],
        *table["declared_not_exported"],
        *table["inline_functions"],
        *wrapper_functions(table),
    ]
    for name, _, returns, params in callables:
        emit(f'SAME("{name}", decltype(&{name}), {_fn_pointer(returns, params)});')
    emit("")
    emit("// One reference per exported function, so the object file names each symbol.")
    for i, name in enumerate(exported_names(table)):
        emit(f"extern decltype(&{name}) const abi_ref_{i};")
        emit(f"decltype(&{name}) const abi_ref_{i} = &{name};")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# signatures.c: the exported functions through C's eyes


def signatures_c_source(table: Table) -> str:
    lines = [
        "/* Generated from tests/abi/layout.json by tests/abi/abi_checks.py. */",
        _includes(),
    ]
    for i, (name, _, returns, params) in enumerate(table["functions"]):
        decl = _fn_pointer(returns, params).replace("(*)", f"(*const abi_ref_{i})", 1)
        lines.append(f"extern {decl};")
        lines.append(f"{decl} = &{name};")
    for vt in table["vtables"]:
        for slot in vt["slots"]:
            pointer = _slot_pointer(vt, slot)
            lines.append(
                "_Static_assert(__builtin_types_compatible_p("
                f"__typeof__((({vt['name']}*)0)->{slot[0]}), {pointer}), "
                f'"{vt["name"]}.{slot[0]}");'
            )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Self-containment: each header alone provides what the table attributes to it


def self_contained_source(table: Table, header: str) -> str:
    """A translation unit including only ``header`` that uses everything the table places in
    it (for ovstage/ovstage.h also everything of the headers it promises to include), and
    checks that ovstage.h leaves the export and placement headers out."""
    provided = {header, *table["umbrella"].get(header, ())}
    lines = [f"#include <{header}>", "#include <stddef.h>", ""]
    uses: list[str] = []
    for name, _, where, _ in table["typedefs"]:
        if where in provided:
            uses.append(f"sizeof({name})")
    for key in ("structs", "vtables"):
        for struct in table[key]:
            if struct["header"] in provided:
                uses.append(f"sizeof({struct['name']})")
    for enum in table["enums"]:
        if enum["header"] in provided:
            uses.extend(f"(size_t){const}" for const, _ in enum["values"])
    for name, where, kind, _, _ in table["defines"]:
        if where in provided:
            lines += [f"#ifndef {name}", f'#error "{name} missing from {header}"', "#endif"]
            if kind == "int":
                uses.append(f"(size_t)({name})")
    if header == "ovstage/ovstage.h":
        for absent in (
            "OVSTAGE_PLACEMENT_EXTENSION_NAME",
            "OVSTAGE_POPULATION_EXPORT_INVALID_DESTINATION_HANDLE",
        ):
            lines += [f"#ifdef {absent}", f'#error "ovstage.h must not define {absent}"', "#endif"]
    uses.append("0")
    lines.append(f"const size_t abi_uses[] = {{{', '.join(uses)}}};")
    calls = [
        f"    (void)&{name};"
        for name, where, _, _ in (
            *table["functions"],
            *table["declared_not_exported"],
            *table["inline_functions"],
            *wrapper_functions(table),
        )
        if where in provided
    ]
    lines += ["void abi_use_functions(void);", "void abi_use_functions(void)", "{", *calls, "}"]
    return "\n".join(lines) + "\n"


def every_header_twice_source() -> str:
    """All headers, then all again in reverse: include guards and single typedefs (C99)."""
    return (
        _includes()
        + "".join(f"#include <{h}>\n" for h in reversed(PUBLIC_HEADERS))
        + ("typedef int abi_nonempty_unit;\n")
    )


def write_sources(table: Table, out: Path) -> dict[str, Path]:
    """Writes every generated source into ``out``; returns them by role."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "probe": ("probe.c", probe_source(table)),
        "types": ("types.cpp", types_cpp_source(table)),
        "signatures": ("signatures.c", signatures_c_source(table)),
        "twice": ("every_header_twice.c", every_header_twice_source()),
    }
    for i, header in enumerate(PUBLIC_HEADERS):
        files[f"alone:{header}"] = (f"alone_{i:02d}.c", self_contained_source(table, header))
    paths = {}
    for role, (name, text) in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        paths[role] = path
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUTDIR")
    for role, path in write_sources(load_table(), Path(sys.argv[1])).items():
        print(f"{role}: {path}")
