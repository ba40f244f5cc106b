"""Stage columns back to USD values: the inverse of population's type mapping.

Population maps each USD value type to a column type (``population/_mapping.py``: dtype,
lanes, array-ness, semantic). Export goes the other way: :func:`inferred_type_name` gives the
USD type a column type came from (the first USD type of that column type in population's
table, so ``uint64`` rather than ``string`` for a plain uint64 id column), and
:func:`usd_values` turns a column's rows into one USD value per prim in a chosen USD type.
Numeric rows go through ``Vt.*Array.FromNumpy`` (no Python loop over elements); token, string,
asset, path-expression ids are resolved to strings once per distinct id.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from .._enums import AttributeSemantic
from ..population import _mapping as mapping
from ..population._usd import Sdf, Vt
from ._select import Column, Resolver

__all__ = ["Unsupported", "compatible", "inferred_type_name", "references", "usd_values"]

_NUMERIC, _QUAT, _MATRIX, _TIMECODE, _TOKEN, _STRING, _ASSET, _EXPRESSION = range(8)


class Unsupported(Exception):
    """A column that has no value in the requested USD type; the message says why."""


@cache
def _inverse_table() -> dict[tuple[int, int, int, int], str]:
    """(code, bits, lanes, semantic) -> USD scalar type name, the first in population's table."""
    table: dict[tuple[int, int, int, int], str] = {}
    for name, usd_type in mapping._TYPES.items():
        key = (usd_type.code, usd_type.bits, usd_type.lanes, int(usd_type.semantic))
        table.setdefault(key, name)
    return table


_STRING_ID = (mapping.UINT, 64, 1, int(AttributeSemantic.NONE))
_EXTENT = mapping.ColumnType(mapping.FLOAT, 64, 6, False)
_STRING_BYTES = mapping.ColumnType(mapping.UINT, 8, 1, True, AttributeSemantic.STRING)


def inferred_type_name(name: str, ctype: mapping.ColumnType) -> str | None:
    """The USD value type a column of ``ctype`` was populated from, or None (relationships,
    connections and types population never writes)."""
    if ctype == _STRING_BYTES:
        return "string"
    if name == "extent" and ctype == _EXTENT:
        return "float3[]"
    scalar = _inverse_table().get((ctype.code, ctype.bits, ctype.lanes, int(ctype.semantic)))
    if scalar is None:
        return None
    return f"{scalar}[]" if ctype.is_array else scalar


@cache
def _declared(type_name: str) -> tuple[Any, bool, Any] | None:
    """(population's USD type, is_array, Vt array class of the scalar type) of a type name."""
    found = mapping._declared(type_name)
    if found is None:
        return None
    usd_type, is_array, _ = found
    scalar = str(Sdf.ValueTypeNames.Find(type_name).scalarType)
    array_class = Sdf.ValueTypeNames.Find(f"{scalar}[]").type.pythonClass
    return usd_type, is_array, array_class


def compatible(type_name: str, name: str, ctype: mapping.ColumnType) -> str | None:
    """Why a column cannot be written as ``type_name`` (None when it can)."""
    declared = _declared(type_name)
    if declared is None:
        return f"USD type {type_name!r} is not one export writes"
    usd_type, is_array, _ = declared
    if ctype == _STRING_BYTES:
        return None if usd_type.reader == _STRING and not is_array else "a string column"
    if name == "extent" and ctype == _EXTENT:
        return (
            None
            if is_array and usd_type.lanes == 3 and usd_type.reader == _NUMERIC
            else ("extent holds two 3-component points")
        )
    if is_array != ctype.is_array or usd_type.lanes != ctype.lanes:
        return (
            f"the column ({'array of ' if ctype.is_array else ''}{ctype.lanes} components) "
            f"does not match {type_name}"
        )
    same_kind = usd_type.code == ctype.code or (
        usd_type.reader == _NUMERIC and ctype.code in (mapping.INT, mapping.UINT, mapping.FLOAT)
    )
    if not same_kind or (usd_type.reader != _NUMERIC and usd_type.bits != ctype.bits):
        return f"a ({ctype.code}, {ctype.bits}) column is not a {type_name} value"
    return None


def usd_values(type_name: str, column: Column, resolver: Resolver) -> list[Any]:
    """One USD value of ``type_name`` per prim of ``column`` (its ``paths`` order).

    The caller has checked :func:`compatible`. Numbers are cast to the USD type's element
    type (population stores them in it, so this only matters for an explicit rule type)."""
    declared = _declared(type_name)
    if declared is None:
        raise Unsupported(f"{type_name} is not a USD value type population maps")
    usd_type, is_array, array_class = declared
    ctype = column.ctype
    reader = usd_type.reader
    if ctype == _STRING_BYTES:
        return [bytes(np.asarray(r, dtype=np.uint8)).decode("utf-8") for r in column.rows]
    if column.name == "extent" and ctype == _EXTENT:
        points = np.asarray(column.fixed, dtype=np.float32).reshape(-1, 2, 3)
        return [array_class.FromNumpy(p) for p in points]
    dtype = usd_type.column(is_array).numpy_dtype
    if reader in (_NUMERIC, _QUAT, _MATRIX, _TIMECODE):
        shape = _component_shape(reader, usd_type.lanes)
        if is_array:
            return [
                array_class.FromNumpy(np.ascontiguousarray(r, dtype=dtype).reshape(-1, *shape))
                for r in column.rows
            ]
        values = np.ascontiguousarray(column.fixed, dtype=dtype)
        if shape == () and reader == _NUMERIC:
            scalars: list[Any] = values.reshape(-1).tolist()
            return scalars
        if reader == _TIMECODE:
            return [Sdf.TimeCode(v) for v in values.reshape(-1).tolist()]
        return list(array_class.FromNumpy(values.reshape(-1, *shape)))
    if reader in (_TOKEN, _STRING):
        if is_array:
            return [array_class(resolver.tokens(r)) for r in column.rows]
        return resolver.tokens(column.fixed_rows())
    if reader == _EXPRESSION:
        if is_array:
            return [
                array_class([Sdf.PathExpression(t) for t in resolver.tokens(r)])
                for r in column.rows
            ]
        return [Sdf.PathExpression(t) for t in resolver.tokens(column.fixed_rows())]
    # _ASSET: (authored, resolved) id pairs; the authored path is the opinion
    if is_array:
        return [
            array_class(
                [Sdf.AssetPath(t) for t in resolver.tokens(np.asarray(r).reshape(-1, 2)[:, 0])]
            )
            for r in column.rows
        ]
    authored = np.asarray(column.fixed).reshape(-1, 2)[:, 0]
    return [Sdf.AssetPath(t) for t in resolver.tokens(authored)]


def _component_shape(reader: int, lanes: int) -> tuple[int, ...]:
    """The numpy shape of one element for ``FromNumpy``: matrices square, others flat."""
    if reader == _MATRIX:
        side = round(lanes**0.5)
        return (side, side)
    return () if lanes == 1 else (lanes,)


def transform_values(column: Column) -> list[Any]:
    """``omni:xform`` rows (row-major 4x4 doubles) as ``Gf.Matrix4d`` values."""
    matrices = np.ascontiguousarray(column.fixed, dtype=np.float64).reshape(-1, 4, 4)
    return list(Vt.Matrix4dArray.FromNumpy(matrices))


def path_targets(ids: np.ndarray, resolver: Resolver) -> list[Any]:
    """Relationship targets from RELATIONSHIP_PATH_ID ids."""
    return [Sdf.Path(resolver.path(int(i))) for i in np.asarray(ids).reshape(-1)]


def connection_targets(pairs: np.ndarray, resolver: Resolver) -> list[Any]:
    """Connection sources from CONNECTION_PATH_ID (prim path id, property name id) pairs."""
    out = []
    for prim_id, name_id in np.asarray(pairs, dtype=np.uint64).reshape(-1, 2).tolist():
        out.append(Sdf.Path(resolver.path(prim_id)).AppendProperty(resolver.token(name_id)))
    return out


def metadata_value(column: Column, row: int, resolver: Resolver) -> Any:
    """A ``usd-metadata:*`` cell as a plain Python value (token and string ids as strings)."""
    ctype = column.ctype
    type_name = inferred_type_name(column.name, ctype)
    if (ctype.code, ctype.bits, ctype.lanes, int(ctype.semantic)) == _STRING_ID:
        # population maps metadata strings to ids (only integers >= 2**63 become uint64)
        type_name = "string[]" if ctype.is_array else "string"
    if type_name is None:
        raise Unsupported(f"metadata column {column.name} has no USD type")
    single = Column(column.name, ctype, [column.paths[row]])
    if ctype.is_array:
        single.rows = [column.rows[row]]
    else:
        single.fixed = column.fixed_rows()[row : row + 1]
    return usd_values(type_name, single, resolver)[0]


def references(value: Any) -> list[Any]:
    """The ``Sdf.Reference`` list a REFERENCES metadata cell names (docs/export.md, "Metadata").

    The cell holds one reference or an array of them, each a string, token or asset path in
    USD's own spelling: ``@asset@``, ``@asset@</Prim>``, or ``</Prim>`` for a reference inside
    the layer (a bare ``asset`` or ``asset</Prim>`` is read as if it were quoted). Anything else
    (a number, an empty string, a prim path that is not absolute) raises Unsupported."""
    if isinstance(value, str | Sdf.AssetPath):
        items: list[Any] = [value]
    elif isinstance(value, Vt.StringArray | Vt.TokenArray | Sdf.AssetPathArray | list):
        items = list(value)
    else:
        raise Unsupported(f"a {type(value).__name__} value names no references")
    return [_reference(item) for item in items]


def _reference(item: Any) -> Any:
    text = item.path if isinstance(item, Sdf.AssetPath) else item
    if not isinstance(text, str):
        raise Unsupported(f"a {type(text).__name__} value names no reference")
    asset, prim = text, ""
    if asset.endswith(">") and "<" in asset:
        asset, _, prim = asset[:-1].rpartition("<")
    if len(asset) >= 2 and asset[0] == "@" and asset[-1] == "@":
        asset = asset[1:-1]
    if "@" in asset or "<" in asset or ">" in asset:
        raise Unsupported(f"{text!r} is not a reference (@asset@ or @asset@</Prim>)")
    if not asset and not prim:
        raise Unsupported(f"{text!r} names neither an asset nor a prim")
    prim_path = Sdf.Path(prim) if prim else Sdf.Path()
    if prim and not (
        Sdf.Path.IsValidPathString(prim) and prim_path.IsAbsolutePath() and prim_path.IsPrimPath()
    ):
        raise Unsupported(f"{text!r}: {prim!r} is not an absolute prim path")
    return Sdf.Reference(asset, prim_path)
