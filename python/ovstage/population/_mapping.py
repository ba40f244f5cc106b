"""USD value types to stage columns: dtype, lanes, array-ness and semantic, and the values.

One USD property (or metadata field) of one prim becomes one :class:`Cell`: the column type it
populates and the row it writes, as a numpy array taken from the USD value without a Python
loop over its elements. Strings, tokens, assets and paths become ids through an
:class:`Interner` (the stage's dictionary). The population writer gathers cells of one column
over many prims into one batched write.

Interface (used by the writer and the public API; keep it stable):
- :func:`map_property` — one attribute or relationship at a time code, or None when nothing
  is populated for it (``opaque``, an unconvertible value);
- :func:`map_metadata` — metadata fields of a prim, property or the stage;
- :func:`derived_transform_cells` — ``omni:xform`` / ``omni:resetXformStack`` of a prim;
- :func:`is_time_varying` — whether re-sampling at another time can change the value.

This first version maps numeric scalars, vectors, matrices and their arrays only; the full
mapping table replaces it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .._enums import AttributeSemantic
from ._usd import Usd

# DLPack type codes.
INT, UINT, FLOAT, BOOL = 0, 1, 2, 6


class Interner(Protocol):
    """Turns strings and paths into the stage's ids."""

    def token(self, text: str) -> int:
        """The id of a token or string (0 for the empty string)."""
        ...

    def path(self, path: str) -> int:
        """The id of a prim or property path."""
        ...


@dataclass(frozen=True)
class ColumnType:
    """What a column holds: DLPack dtype ``(code, bits, lanes)``, ragged or not, semantic."""

    code: int
    bits: int
    lanes: int
    is_array: bool
    semantic: int = AttributeSemantic.NONE

    @property
    def numpy_dtype(self) -> np.dtype[Any]:
        """The numpy scalar type of one lane."""
        kind = {INT: "i", UINT: "u", FLOAT: "f", BOOL: "b"}[self.code]
        return np.dtype(f"{kind}{self.bits // 8}") if kind != "b" else np.dtype(np.bool_)


@dataclass
class Cell:
    """One prim's value of one column.

    ``value``: for a fixed column an array of shape ``(lanes,)``; for an array column shape
    ``(k, lanes)`` (``(k,)`` when lanes is 1), ``k`` may be 0. ``force``: USD re-authored the
    property's declared type, so the writer replaces the column's schema (AttributeMode.FORCE).
    """

    name: str
    ctype: ColumnType
    value: np.ndarray[Any, Any]
    force: bool = False


# numpy dtype kind/size of a USD scalar type name -> (code, bits)
_SCALARS: dict[str, tuple[int, int]] = {
    "bool": (BOOL, 8),
    "uchar": (UINT, 8),
    "int": (INT, 32),
    "uint": (UINT, 32),
    "int64": (INT, 64),
    "uint64": (UINT, 64),
    "half": (FLOAT, 16),
    "float": (FLOAT, 32),
    "double": (FLOAT, 64),
}


def _column_type(type_name: Any) -> ColumnType | None:
    """The column of a USD value type (``Sdf.ValueTypeName``), None when not mapped here."""
    scalar = type_name.scalarType
    name = str(scalar)  # e.g. "float3"
    base = name.rstrip("234")
    lanes = int(name[len(base) :] or 1)
    if base.startswith("matrix") and base.endswith("d"):
        n = int(base[len("matrix")])
        return ColumnType(FLOAT, 64, n * n, type_name.isArray, AttributeSemantic.MATRIX)
    base = base[:-1] if base in ("matrix2d", "matrix3d") else base
    if name.endswith(("2", "3", "4")) and base[-1:] in ("f", "d", "h", "i"):
        base = {"f": "float", "d": "double", "h": "half", "i": "int"}[base[-1]]
    if base not in _SCALARS:
        return None
    code, bits = _SCALARS[base]
    return ColumnType(code, bits, lanes, type_name.isArray)


def map_property(prop: Any, time: Any, interner: Interner) -> Cell | None:
    """The cell of one attribute or relationship at ``time`` (a ``Usd.TimeCode``), or None."""
    del interner
    if not isinstance(prop, Usd.Attribute):
        return None
    ctype = _column_type(prop.GetTypeName())
    if ctype is None:
        return None
    value = prop.Get(time)
    if value is None:
        return None
    array = np.asarray(value, dtype=ctype.numpy_dtype)
    if ctype.is_array:
        array = array.reshape(-1, ctype.lanes) if ctype.lanes > 1 else array.reshape(-1)
    else:
        array = array.reshape(ctype.lanes)
    return Cell(prop.GetName(), ctype, array)


def map_metadata(owner: Any, paths: Sequence[str], prefix: str, interner: Interner) -> list[Cell]:
    """Cells ``<prefix>usd-metadata:<path>`` for the metadata ``paths`` of ``owner`` (a prim,
    a property or the stage). Not mapped in this first version."""
    del owner, paths, prefix, interner
    return []


def derived_transform_cells(prim: Any, time: Any) -> list[Cell]:
    """``omni:xform`` and ``omni:resetXformStack`` of an xformable prim. Not in this first
    version."""
    del prim, time
    return []


def is_time_varying(prop: Any) -> bool:
    """Whether the property's value may change with the time code."""
    return isinstance(prop, Usd.Attribute) and prop.ValueMightBeTimeVarying()
