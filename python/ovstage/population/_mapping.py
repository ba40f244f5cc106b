"""USD value types to stage columns: dtype, lanes, array-ness and semantic, and the values.

One USD property (or metadata field) of one prim becomes one :class:`Cell`: the column type it
populates and the row it writes, as a numpy array taken from the USD value without a Python
loop over its numeric elements. Strings, tokens, assets and paths become ids through an
:class:`Interner` (the stage's dictionary), once per distinct string. The population writer
gathers cells of one column over many prims into one batched write.

Interface (used by the writer and the public API; keep it stable):
- :func:`map_property` — one attribute or relationship at a time code, or None when nothing
  is populated for it (``opaque``, a reserved name, an unconvertible value);
- :func:`map_metadata` — metadata fields of a prim, property or the stage;
- :func:`derived_transform_cells` — ``omni:xform`` / ``omni:resetXformStack`` of a prim;
- :func:`is_time_varying` — whether re-sampling at another time can change the value.
Helpers: :func:`map_connection` (an attribute's connection as a ``<name>.connect`` column),
:func:`world_matrix_cell`, :func:`needs_force`, :class:`DictionaryInterner`,
:data:`NEVER_PUBLISHED`.

Type mapping (numerics keep their bytes; a USD array keeps its element type, ``is_array``):

=====================================  ====================  ==========================
USD type                               dtype (code,bits,lanes)  semantic
=====================================  ====================  ==========================
bool / uchar                           Bool 8 1 / UInt 8 1   NONE
int, uint, int64, uint64               Int/UInt 32|64 1      NONE
half, float, double (+ 2/3/4 vectors)  Float 16|32|64 1..4   NONE
int2..4                                Int 32 2..4           NONE
point/normal/vector/color/texCoord     as the base vector    POINT/NORMAL/VECTOR/COLOR/
                                                             TEXTURE_COORDINATE
quath / quatf / quatd                  Float 16|32|64 4      QUATERNION (x, y, z, w)
matrix2d / 3d / 4d                     Float 64 4|9|16       MATRIX (row-major)
frame4d                                Float 64 16           FRAME
timecode                               Float 64 1            TIME_CODE
token                                  UInt 64 1 (id)        TOKEN_ID
string                                 UInt 64 1 (id)        NONE
asset                                  UInt 64 2 (ids)       ASSET_PATH_ID
pathExpression                         UInt 64 1 (id)        PATH_EXPRESSION_STRING
relationship targets                   UInt 64 1 path ids    RELATIONSHIP_PATH_ID, array
opaque (and group, duration)           nothing
=====================================  ====================  ==========================

An empty token, string, expression or asset half is id 0 (authored, so populated). ``extent``
on an imageable prim is ``{Float,64,6}`` fixed: min then max.

A ``string`` is *pinned to byte form* where the stage already holds that property of that prim
as a STRING column (ragged UTF-8 bytes, written by a client or by an earlier population):
the value is then written as a STRING row of its bytes (an empty string an empty row) in that
column, instead of an id (:class:`StringPins`); a ``string[]`` there is skipped with a warning
(ids cannot go into the column, which keeps its type and value).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Protocol

import numpy as np

from .._aliases import STORAGE_NAME
from .._enums import AttributeSemantic
from .._errors import ErrorCode, OvstageError, OvxError
from ._usd import Sdf, Usd, UsdGeom

# DLPack type codes.
INT, UINT, FLOAT, BOOL = 0, 1, 2, 6

_log = logging.getLogger("ovstage.population")

#: Public names of the derived transform columns (the stage stores them under the storage
#: names of its alias table, ``ovstage._aliases``, and resolves either name).
XFORM = "omni:xform"
RESET_XFORM_STACK = "omni:resetXformStack"
WORLD_MATRIX = "omni:fabric:worldMatrix"

#: Property names population never publishes from USD: they are derived transform columns
#: (or the storage names behind them), whatever a USD property of that name holds.
NEVER_PUBLISHED: frozenset[str] = frozenset(
    {XFORM, RESET_XFORM_STACK, WORLD_MATRIX, STORAGE_NAME[XFORM], STORAGE_NAME[RESET_XFORM_STACK]}
)


class Interner(Protocol):
    """Turns strings and paths into the stage's ids."""

    def token(self, text: str) -> int:
        """The id of a token or string (0 for the empty string)."""
        ...

    def path(self, path: str) -> int:
        """The id of a prim or property path."""
        ...


class DictionaryInterner:
    """An :class:`Interner` over an ``ovstage.PathDictionary``, remembering ids it handed out,
    so each distinct string costs one native call.

    The dictionary refuses empty strings; the empty token is id 0 here without asking it. A
    string the dictionary refuses raises OvstageError(INVALID_ARGUMENT) naming it.

    Given the stage, it also carries the op's :class:`StringPins` (``string_pins``), which
    the readers hand to :func:`map_property`.
    """

    def __init__(self, dictionary: Any, stage: Any = None) -> None:
        self.dictionary = dictionary
        self._tokens: dict[str, int] = {"": 0}
        self._paths: dict[str, int] = {}
        self.string_pins = None if stage is None else StringPins(stage, self)

    def token(self, text: str) -> int:
        found = self._tokens.get(text)
        if found is None:
            try:
                found = int(self.dictionary.intern_token(text))
            except OvxError as exc:
                raise OvstageError(
                    ErrorCode.INVALID_ARGUMENT, f"token {text!r}: {exc.message}"
                ) from None
            self._tokens[text] = found
        return found

    def path(self, path: str) -> int:
        found = self._paths.get(path)
        if found is None:
            try:
                found = int(self.dictionary.intern_path(path))
            except OvxError as exc:
                raise OvstageError(
                    ErrorCode.INVALID_ARGUMENT, f"path {path!r}: {exc.message}"
                ) from None
            self._paths[path] = found
        return found


class StringPins:
    """Which ``(prim, property)`` pairs the stage holds as STRING columns: the strings that
    population keeps in byte form there. Asked of the stage once per property name, for one
    op (the stage's committed state when first asked)."""

    def __init__(self, stage: Any, interner: Interner) -> None:
        self._stage = stage
        self._interner = interner
        self._by_name: dict[str, frozenset[int]] = {}

    def pinned(self, prim_path: str, name: str) -> bool:
        """Whether the string property ``name`` of prim ``prim_path`` is pinned to byte form."""
        held = self._by_name.get(name)
        if held is None:
            ids = self._stage._prims_holding(name, int(AttributeSemantic.STRING))
            held = self._by_name[name] = frozenset(ids)
        return bool(held) and self._interner.path(prim_path) in held


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
        return _numpy_dtype(self.code, self.bits)


@cache
def _numpy_dtype(code: int, bits: int) -> np.dtype[Any]:
    kind = {INT: "i", UINT: "u", FLOAT: "f", BOOL: "b"}[code]
    return np.dtype(f"{kind}{bits // 8}") if kind != "b" else np.dtype(np.bool_)


@dataclass
class Cell:
    """One prim's value of one column.

    ``value``: for a fixed column an array of shape ``(lanes,)``; for an array column shape
    ``(k, lanes)`` (``(k,)`` when lanes is 1), ``k`` may be 0. ``force``: USD re-authored the
    property's declared type, so the writer replaces the column's schema (AttributeMode.FORCE);
    :func:`map_property` sets it when given the column type written before (see
    :func:`needs_force`).
    """

    name: str
    ctype: ColumnType
    value: np.ndarray[Any, Any]
    force: bool = False

    def array_row_tensor(self) -> Any:
        """An array cell's row as ``write_attribute`` takes a ragged row: a ``DLTensor`` of
        ``k`` elements, each ``lanes`` wide (numpy would read ``(k, lanes)`` as ``k * lanes``
        one-lane elements)."""
        from .._dlpack import make_dltensor, numpy_to_dldatatype

        dtype = numpy_to_dldatatype(self.ctype.numpy_dtype, self.ctype.lanes)
        return make_dltensor(
            np.ascontiguousarray(self.value), dtype=dtype, shape=(len(self.value),)
        )


def needs_force(previous: ColumnType | None, current: ColumnType) -> bool:
    """Whether a write of ``current`` must replace the column (AttributeMode.FORCE).

    The writer remembers, per prim and column, the type it last populated (or reads the
    column's type from the stage). When USD now declares another type or role the new value
    replaces the column; a value that could not be mapped produces no cell and therefore
    never forces anything.
    """
    return previous is not None and previous != current


# --- the USD type table --------------------------------------------------------------------

#: How a USD value of a type becomes numbers.
_NUMERIC, _QUAT, _MATRIX, _TIMECODE, _TOKEN, _STRING, _ASSET, _EXPRESSION = range(8)


@dataclass(frozen=True)
class _UsdType:
    """One USD scalar type: its element column type and how its values are read."""

    code: int
    bits: int
    lanes: int
    semantic: int
    reader: int

    def column(self, is_array: bool) -> ColumnType:
        return _column(self, is_array)

    @property
    def convertible(self) -> bool:
        """Numeric conversion applies among plain numbers and int/half/float/double vectors
        (whatever their role), not quaternions, matrices or time codes."""
        return self.reader == _NUMERIC


@cache
def _column(usd_type: _UsdType, is_array: bool) -> ColumnType:
    """The (shared, immutable) column type of a USD type in scalar or array form."""
    u = usd_type
    return ColumnType(u.code, u.bits, u.lanes, is_array, u.semantic)


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
_ROLES = {
    "point": (AttributeSemantic.POINT, (3,)),
    "normal": (AttributeSemantic.NORMAL, (3,)),
    "vector": (AttributeSemantic.VECTOR, (3,)),
    "color": (AttributeSemantic.COLOR, (3, 4)),
    "texCoord": (AttributeSemantic.TEXTURE_COORDINATE, (2, 3)),
}


def _type_table() -> dict[str, _UsdType]:
    """Every mapped USD scalar type name (``Sdf.ValueTypeName.scalarType``)."""
    none = AttributeSemantic.NONE
    table = {name: _UsdType(c, b, 1, none, _NUMERIC) for name, (c, b) in _SCALARS.items()}
    for base in ("int", "half", "float", "double"):
        code, bits = _SCALARS[base]
        suffix = base[0]
        for n in (2, 3, 4):
            table[f"{base}{n}"] = _UsdType(code, bits, n, none, _NUMERIC)
        if base == "int":
            continue
        for role, (semantic, sizes) in _ROLES.items():
            for n in sizes:
                table[f"{role}{n}{suffix}"] = _UsdType(code, bits, n, semantic, _NUMERIC)
        table[f"quat{suffix}"] = _UsdType(code, bits, 4, AttributeSemantic.QUATERNION, _QUAT)
    for n in (2, 3, 4):
        table[f"matrix{n}d"] = _UsdType(FLOAT, 64, n * n, AttributeSemantic.MATRIX, _MATRIX)
    table["frame4d"] = _UsdType(FLOAT, 64, 16, AttributeSemantic.FRAME, _MATRIX)
    table["timecode"] = _UsdType(FLOAT, 64, 1, AttributeSemantic.TIME_CODE, _TIMECODE)
    table["token"] = _UsdType(UINT, 64, 1, AttributeSemantic.TOKEN_ID, _TOKEN)
    table["string"] = _UsdType(UINT, 64, 1, none, _STRING)
    table["asset"] = _UsdType(UINT, 64, 2, AttributeSemantic.ASSET_PATH_ID, _ASSET)
    table["pathExpression"] = _UsdType(
        UINT, 64, 1, AttributeSemantic.PATH_EXPRESSION_STRING, _EXPRESSION
    )
    return table


_TYPES: dict[str, _UsdType] = _type_table()


@cache
def _declared(type_name: str) -> tuple[_UsdType, bool, type] | None:
    """``(USD type, is_array, Python class of its values)`` of a value type name such as
    ``"point3f[]"``, or None when the type populates nothing (``opaque``, unknown types)."""
    vtn = Sdf.ValueTypeNames.Find(type_name)
    if not vtn:
        return None
    usd_type = _TYPES.get(str(vtn.scalarType))
    if usd_type is None:
        return None
    return usd_type, bool(vtn.isArray), type(vtn.defaultValue)


def _column_type(type_name: Any) -> ColumnType | None:
    """The column of a USD value type (``Sdf.ValueTypeName``), None when not mapped here."""
    declared = _declared(str(type_name))
    return None if declared is None else declared[0].column(declared[1])


# --- values --------------------------------------------------------------------------------


class _Unmappable(Exception):
    """A value that cannot be expressed in the column type; the message says why."""


def _ids(strings: Any, interner: Interner) -> np.ndarray[Any, Any]:
    """Token ids of a sequence of strings (0 for empty ones), interning each distinct string
    once: through a dict for a few strings, through ``np.unique`` for many."""
    if len(strings) <= _FEW_STRINGS:
        known: dict[str, int] = {}
        found_ids: list[int] = []
        for text in strings:
            found = known.get(text)
            if found is None:
                found = known[text] = interner.token(text) if text else 0
            found_ids.append(found)
        return np.array(found_ids, dtype=np.uint64)
    unique, inverse = np.unique(np.asarray(strings, dtype=str), return_inverse=True)
    ids = np.fromiter(
        (interner.token(str(s)) if s else 0 for s in unique), dtype=np.uint64, count=len(unique)
    )
    result: np.ndarray = ids[inverse.reshape(-1)]
    return result


_FEW_STRINGS = 64


def _shape(array: np.ndarray[Any, Any], lanes: int, is_array: bool) -> np.ndarray[Any, Any]:
    """A row in cell layout: ``(lanes,)`` fixed, ``(k, lanes)`` or ``(k,)`` array."""
    if is_array:
        return array.reshape(-1, lanes) if lanes > 1 else array.reshape(-1)
    return array.reshape(lanes)


def _read(
    value: Any, usd_type: _UsdType, is_array: bool, interner: Interner
) -> np.ndarray[Any, Any]:
    """The numbers of a USD value held in its own type (no conversion)."""
    dtype = usd_type.column(is_array).numpy_dtype
    reader = usd_type.reader
    if reader in (_NUMERIC, _MATRIX, _TIMECODE):
        if reader == _TIMECODE and not is_array:
            value = float(value)
        array = np.asarray(value, dtype=dtype)
    elif reader == _QUAT:
        if is_array:
            # Gf quaternions store the imaginary part first, the real part last: (x, y, z, w).
            array = np.asarray(value, dtype=dtype)
        else:
            array = np.array([*value.GetImaginary(), value.GetReal()], dtype=dtype)
    elif reader in (_TOKEN, _STRING):
        if is_array:
            array = _ids(value, interner)
        else:  # one string: skip the dedup machinery
            array = np.array([interner.token(value) if value else 0], dtype=np.uint64)
    elif reader == _EXPRESSION:
        texts = [value.GetText()] if not is_array else [e.GetText() for e in value]
        array = _ids(texts, interner)
    else:  # _ASSET: (authored path id, resolved path id) per element
        assets = [value] if not is_array else list(value)
        pairs = [(a.authoredPath, a.resolvedPath) for a in assets]
        flat = [text for pair in pairs for text in pair]
        array = _ids(flat, interner).reshape(-1, 2)
    return _shape(array, usd_type.lanes, is_array)


# --- numeric conversion --------------------------------------------------------------------


def _numeric_source(value: Any) -> tuple[np.ndarray[Any, Any], int, bool] | None:
    """``(numbers, lanes, is_array)`` of a numeric USD value (plain number, int/half/float/
    double vector, or an array of those), None for anything else."""
    if isinstance(value, (bool, int, float)):
        if isinstance(value, int) and not isinstance(value, bool):
            # Python ints are unbounded; outside 64 bits no target can hold them.
            if not -(2**63) <= value < 2**64:
                return np.array([float(value)]), 1, False
            return (
                np.array(value, dtype=np.uint64 if value >= 2**63 else np.int64).reshape(1),
                1,
                False,
            )
        return np.asarray(value).reshape(1), 1, False
    name = type(value).__name__
    is_array = name.endswith("Array")
    if not (is_array or name.startswith("Vec")):
        return None
    if "Quat" in name or "Matrix" in name or "TimeCode" in name:
        return None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    if array.dtype.kind not in "biuf":
        return None
    lanes = 1 if array.ndim <= (1 if is_array else 0) else int(array.shape[-1])
    return array, lanes, is_array


def _fits(array: np.ndarray[Any, Any], target: np.dtype[Any]) -> bool:
    """Whether every element converts to integer/bool ``target`` (in range; floats truncated
    toward zero first; never inf or NaN)."""
    lo, hi = (
        (0, 1) if target.kind == "b" else (int(np.iinfo(target).min), int(np.iinfo(target).max))
    )
    if array.dtype.kind == "f":
        whole = np.trunc(array.astype(np.float64))
        # lo and hi + 1 are powers of two (or 0, 2): exact in float64. NaN and inf fail both.
        return bool(((whole >= float(lo)) & (whole < float(hi + 1))).all())
    if array.dtype.kind == "b":
        array = array.astype(np.uint8)
    src = np.iinfo(array.dtype)
    lo, hi = max(lo, int(src.min)), min(hi, int(src.max))
    if lo > hi:
        return array.size == 0
    scalar = array.dtype.type
    return bool(((array >= scalar(lo)) & (array <= scalar(hi))).all())


def _convert(value: Any, usd_type: _UsdType, is_array: bool) -> np.ndarray[Any, Any]:
    """``value`` converted to the declared numeric type, element by element, or _Unmappable."""
    source = _numeric_source(value)
    if source is None or not usd_type.convertible:
        raise _Unmappable(f"a {type(value).__name__} value is not convertible to the declared type")
    array, lanes, src_is_array = source
    if src_is_array != is_array or lanes != usd_type.lanes:
        raise _Unmappable(
            f"the authored shape ({'array of ' if src_is_array else ''}{lanes} components) "
            f"does not match the declared one ({'array of ' if is_array else ''}{usd_type.lanes})"
        )
    target = usd_type.column(is_array).numpy_dtype
    if target.kind == "f":
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            converted = array.astype(target)
    else:
        if not _fits(array, target):
            raise _Unmappable(f"a value is out of range (or not finite) for {target}")
        converted = (
            np.trunc(array).astype(target) if array.dtype.kind == "f" else array.astype(target)
        )
    return _shape(converted, usd_type.lanes, is_array)


def _value_row(
    value: Any, declared: tuple[_UsdType, bool, type], interner: Interner
) -> np.ndarray[Any, Any]:
    """The row of ``value`` in the declared type: read as is when it has that type, else
    converted by the numeric rules (_Unmappable when it cannot be).

    The binding hands out tokens and strings alike as ``str``, so either one authored where
    the other is declared maps to its id."""
    usd_type, is_array, expected = declared
    cls = type(value)
    if cls is not expected:
        return _convert(value, usd_type, is_array)
    if usd_type.reader != _NUMERIC:
        return _read(value, usd_type, is_array, interner)
    if cls is int:
        return _convert(value, usd_type, is_array)  # the authored int may be wider: range check
    if cls is float:
        dtype = _numpy_dtype(usd_type.code, usd_type.bits)
        if abs(value) > _FLOAT_MAX[usd_type.bits]:  # rounds to inf (or to the largest value)
            with np.errstate(over="ignore"):
                return np.array([value]).astype(dtype)
        return np.array([value], dtype=dtype)
    if cls is bool:
        return np.array([value])
    # A Vt array or Gf vector of exactly the declared type: its buffer is the row,
    # (k, lanes) / (k,) / (lanes,) already.
    return np.asarray(value)


_FLOAT_MAX = {bits: float(np.finfo(f"f{bits // 8}").max) for bits in (16, 32, 64)}


def _is_extent(attr: Any, name: str) -> bool:
    """Whether ``attr`` is an imageable prim's ``extent`` (a fixed min/max column)."""
    return name == "extent" and attr.GetPrim().IsA(UsdGeom.Imageable)


def map_property(
    prop: Any,
    time: Any,
    interner: Interner,
    *,
    previous: ColumnType | None = None,
    string_bytes: bool = False,
    pins: StringPins | None = None,
    name: str | None = None,
) -> Cell | None:
    """The cell of one attribute or relationship at ``time`` (a ``Usd.TimeCode``), or None.

    The column type is the one the prim's schema declares for the property (USD reports it as
    the property's type name) or, for a property no schema declares, the authored one. A value
    authored with another numeric type is converted element by element: to integers and bool
    only when in range (floats truncated toward zero first, never inf or NaN), to floating
    point always (rounding). A value that cannot be converted — a failing element, another
    shape, a non-numeric mismatch — is skipped with a warning on the ``ovstage.population``
    logger and gives None.

    ``previous``: the column type this prim's column was populated with before; the cell is
    marked ``force`` when the type changed (:func:`needs_force`). ``string_bytes``: the column
    is pinned to byte form, so a ``string`` value becomes a STRING row of its UTF-8 bytes
    (an empty string an empty row) instead of an id; ``pins``: ask whether it is, for a
    ``string`` value only. ``name``: the property's name when the caller knows it (asking USD
    for it is slow).
    """
    if name is None:
        name = prop.GetName()
    if name in NEVER_PUBLISHED:
        return None
    kind = type(prop)  # an exact type test: isinstance on pxr classes is slow
    if kind is Usd.Attribute or (kind is not Usd.Relationship and isinstance(prop, Usd.Attribute)):
        cell = map_attribute(prop, name, time, interner, string_bytes, pins)
        if cell is NO_VALUE:
            return None
    elif kind is Usd.Relationship or isinstance(prop, Usd.Relationship):
        cell = _relationship_cell(prop, name, interner)
    else:
        return None
    if cell is not None:
        cell.force = needs_force(previous, cell.ctype)
    return cell


class _NoValue:
    """The type of :data:`NO_VALUE`."""


#: What :func:`map_attribute` returns for an attribute without a value at the time.
NO_VALUE: Any = _NoValue()


_RELATIONSHIP = ColumnType(UINT, 64, 1, True, AttributeSemantic.RELATIONSHIP_PATH_ID)
_EXTENT = ColumnType(FLOAT, 64, 6, False)
_STRING_BYTES = ColumnType(UINT, 8, 1, True, AttributeSemantic.STRING)


def _relationship_cell(rel: Any, name: str, interner: Interner) -> Cell:
    targets = [str(path) for path in rel.GetTargets()]
    ids = {path: interner.path(path) for path in set(targets)}
    value = np.fromiter((ids[path] for path in targets), dtype=np.uint64, count=len(targets))
    return Cell(name, _RELATIONSHIP, value)


def map_attribute(
    attr: Any,
    name: str,
    time: Any,
    interner: Interner,
    string_bytes: bool = False,
    pins: StringPins | None = None,
    type_name: Any = None,
) -> Cell | None:
    """The cell of attribute ``attr`` (named ``name``, never a :data:`NEVER_PUBLISHED` one) at
    ``time``, like :func:`map_property` (``force`` unset), except that an attribute without
    a value gives :data:`NO_VALUE` rather than None. ``pins``: the op's string pins (see
    :func:`map_property`); ``type_name``: the attribute's ``Sdf.ValueTypeName`` when the
    caller knows it (a schema-declared attribute's)."""
    if type_name is None:
        type_name = attr.GetTypeName()
    declared = _DECLARED.get(type_name, _UNSEEN)
    if declared is _UNSEEN:
        declared = _DECLARED[type_name] = _declared(str(type_name))
    if declared is None:
        return None
    value = attr.Get(time)
    if value is None:
        return NO_VALUE  # type: ignore[no-any-return]  # a sentinel the callers test by identity
    usd_type, is_array, _ = declared
    if usd_type.reader == _STRING:
        pinned = string_bytes or (pins is not None and pins.pinned(str(attr.GetPrimPath()), name))
        if pinned and not is_array and isinstance(value, str):
            data = np.frombuffer(value.encode("utf-8"), dtype=np.uint8).copy()
            return Cell(name, _STRING_BYTES, data)
        if pinned:
            # ids cannot go into a STRING column: the column keeps its type and value
            _log.warning(
                "skipping %s: a %s cannot be written into its STRING column",
                attr.GetPath(),
                type_name,
            )
            return None
    try:
        row = _value_row(value, declared, interner)
    except _Unmappable as exc:
        _log.warning("skipping %s (declared %s): %s", attr.GetPath(), type_name, exc)
        return None
    if _is_extent(attr, name):
        if row.shape != (2, 3) or usd_type.reader != _NUMERIC:
            _log.warning("skipping %s: extent needs two 3-component points", attr.GetPath())
            return None
        return Cell(name, _EXTENT, row.astype(np.float64).reshape(6))
    return Cell(name, usd_type.column(is_array), row)


#: ``_declared`` by ``Sdf.ValueTypeName`` (hashable; skips formatting the name each time).
_DECLARED: dict[Any, Any] = {}
_UNSEEN = object()


def map_connection(attr: Any, interner: Interner) -> Cell | None:
    """The connection of an attribute as column ``<name>.connect``: one ``(source prim path
    id, source property name id)`` pair, CONNECTION_PATH_ID. None when the attribute has no
    connection; an attribute connected to several sources is skipped with a warning (the
    stage takes exactly one connection per prim)."""
    sources = list(attr.GetConnections())
    if not sources:
        return None
    what = f"{attr.GetPath()}"
    if len(sources) > 1:
        _log.warning(
            "skipping the connections of %s: %d sources, the stage takes one", what, len(sources)
        )
        return None
    source = sources[0]
    if not source.IsPropertyPath():
        _log.warning("skipping the connection of %s: %s is not a property path", what, source)
        return None
    pair = np.array(
        [[interner.path(str(source.GetPrimPath())), interner.token(source.name)]], dtype=np.uint64
    )
    ctype = ColumnType(UINT, 64, 2, True, AttributeSemantic.CONNECTION_PATH_ID)
    return Cell(f"{attr.GetName()}.connect", ctype, pair)


# --- metadata ------------------------------------------------------------------------------

#: Metadata fields whose values USD holds as tokens (the binding hands them out as str).
_TOKEN_FIELDS = frozenset(
    {
        "kind",
        "typeName",
        "defaultPrim",
        "upAxis",
        "interpolation",
        "colorSpace",
        "renderSettingsPrimPath",
    }
)

METADATA = "usd-metadata"


def _split_metadata_path(path: str) -> list[str]:
    """The ``:``-separated components of a metadata path; ValueError for an empty one."""
    if not isinstance(path, str):
        raise TypeError(f"metadata path must be a str, got {type(path).__name__}")
    parts = path.split(":")
    if not path or any(not part for part in parts):
        raise ValueError(f"metadata path {path!r} has an empty component")
    return parts


def _metadata_type(value: Any, field: str, top_level: bool) -> tuple[_UsdType, bool, type] | None:
    """The USD type a metadata value is mapped with. The binding turns plain numbers and
    strings into Python values, so these take the widest faithful type: bool, int (Int 32
    when in range, else Int 64, else UInt 64), double; strings are tokens for the fields USD
    types as tokens, strings otherwise."""
    if isinstance(value, bool):
        name = "bool"
    elif isinstance(value, int):
        name = (
            "int"
            if -(2**31) <= value < 2**31
            else "int64"
            if -(2**63) <= value < 2**63
            else "uint64"
        )
        if not -(2**63) <= value < 2**64:
            return None
    elif isinstance(value, float):
        name = "double"
    elif isinstance(value, str):
        name = "token" if top_level and field in _TOKEN_FIELDS else "string"
    elif isinstance(value, (list, tuple, dict)):
        return None  # a list of values of mixed types has no column type
    else:
        try:
            vtn = Sdf.GetValueTypeNameForValue(value)
        except Exception:
            return None
        name = str(vtn) if vtn else ""
    return _declared(name) if name else None


def _metadata_leaves(value: Any, parts: list[str]) -> Iterable[tuple[list[str], Any]]:
    """``(path components, value)`` of each non-dictionary value at or below ``value``."""
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _metadata_leaves(value[key], [*parts, str(key)])
    else:
        yield parts, value


def _metadata_value(owner: Any, parts: list[str]) -> Any:
    """The composed value of a metadata path on a prim, property or stage (None if absent)."""
    field = parts[0]
    if len(parts) == 1:
        return owner.GetMetadata(field) if owner.HasMetadata(field) else None
    key = ":".join(parts[1:])
    if not owner.HasMetadataDictKey(field, key):
        return None
    return owner.GetMetadataByDictKey(field, key)


def map_metadata(owner: Any, paths: Sequence[str], prefix: str, interner: Interner) -> list[Cell]:
    """Cells ``<prefix>usd-metadata:<path>`` for the metadata ``paths`` of ``owner`` (a prim,
    a property or the stage); ``prefix`` is ``""`` for prims and the stage and
    ``"<property>:"`` for a property.

    A path is a field name followed by dictionary keys, ``:``-separated (``customData:a:b``).
    Naming a dictionary populates each value below it as its own cell. Values are the composed
    ones USD reports, fallbacks of the prim's schema included. Absent fields and values of a
    type that maps to nothing (list ops, specifiers) give no cell; a value reached through two
    of the paths gives one cell. A path with an empty component raises ValueError naming it,
    before anything is read.
    """
    split = [_split_metadata_path(path) for path in paths]
    cells: list[Cell] = []
    named: set[str] = set()
    for parts in split:
        value = _metadata_value(owner, parts)
        if value is None:
            continue
        for leaf_parts, leaf in _metadata_leaves(value, parts):
            declared = _metadata_type(leaf, leaf_parts[0], len(leaf_parts) == 1)
            name = f"{prefix}{METADATA}:{':'.join(leaf_parts)}"
            if name in named:
                continue
            named.add(name)
            if declared is None:
                _log.debug("metadata %s: a %s value maps to no column", name, type(leaf).__name__)
                continue
            try:
                row = _value_row(leaf, declared, interner)
            except _Unmappable as exc:
                _log.warning("skipping metadata %s: %s", name, exc)
                continue
            cells.append(Cell(name, declared[0].column(declared[1]), row))
    return cells


# --- derived transforms --------------------------------------------------------------------


def derived_transform_cells(prim: Any, time: Any) -> list[Cell]:
    """``omni:xform`` (the local transform from the prim's xform ops, row-major, translation
    at elements 12..14) and ``omni:resetXformStack`` of an xformable prim; [] otherwise."""
    xformable = UsdGeom.Xformable(prim)
    if not xformable:
        return []
    matrix = np.asarray(xformable.GetLocalTransformation(time)).reshape(16)
    reset = np.array([xformable.GetResetXformStack()], dtype=np.bool_)
    return [Cell(XFORM, _XFORM, matrix), Cell(RESET_XFORM_STACK, _RESET, reset)]


_XFORM = ColumnType(FLOAT, 64, 16, False, AttributeSemantic.MATRIX)
_RESET = ColumnType(BOOL, 8, 1, False)


def world_matrix_cell(xform: Cell) -> Cell:
    """The initial ``omni:fabric:worldMatrix`` of a prim: its local transform (``xform`` is
    the prim's ``omni:xform`` cell). Written once when created; hierarchy computation owns it
    afterwards."""
    return replace(xform, name=WORLD_MATRIX, value=xform.value.copy(), force=False)


def is_time_varying(prop: Any) -> bool:
    """Whether the property's value may change with the time code."""
    return isinstance(prop, Usd.Attribute) and prop.ValueMightBeTimeVarying()


__all__ = [
    "BOOL",
    "FLOAT",
    "INT",
    "METADATA",
    "NEVER_PUBLISHED",
    "NO_VALUE",
    "RESET_XFORM_STACK",
    "UINT",
    "WORLD_MATRIX",
    "XFORM",
    "Cell",
    "ColumnType",
    "DictionaryInterner",
    "Interner",
    "StringPins",
    "derived_transform_cells",
    "is_time_varying",
    "map_attribute",
    "map_connection",
    "map_metadata",
    "map_property",
    "needs_force",
    "world_matrix_cell",
]
