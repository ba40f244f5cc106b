"""The read half of a population: everything it will write, gathered from USD first.

A :class:`Batch` holds, per column (attribute name and column type), the prims that get a
value and their values, plus the prims and attributes to delete. It is filled entirely from
USD before anything is written, so a failure while reading leaves the stage as it was; the
writer (:mod:`._writer`) then writes each column once for all its prims.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from ._mapping import (
    NO_VALUE,
    UINT,
    WORLD_MATRIX,
    XFORM,
    Cell,
    ColumnType,
    Interner,
    derived_transform_cells,
    map_attribute,
    map_connection,
    map_metadata,
    map_property,
    needs_force,
    world_matrix_cell,
)
from ._records import Layout
from ._selection import (
    PrimKind,
    PrimScope,
    Scope,
    builtins_of,
    prim_kind,
    publishable_properties,
    schema_property_names,
)
from ._usd import Usd, UsdGeom

__all__ = [
    "ANCESTOR_TYPES",
    "PRIM_TYPE",
    "SCHEMAS",
    "WORLD_MATRIX",
    "XFORM",
    "Batch",
    "Column",
    "SampledPrim",
    "read_scope",
    "read_time_samples",
]

#: The layout population wrote on a prim before (empty if none).
Previous = Callable[[str], Layout]

_NOTHING: Layout = MappingProxyType({})


def _no_previous(path: str) -> Layout:
    del path
    return _NOTHING


PRIM_TYPE = "usd-prim-type"
SCHEMAS = "usd-schemas"
ANCESTOR_TYPES = "usd-ancestor-types"

_UNSEEN = object()

_TOKEN = ColumnType(UINT, 64, 1, False)
_TOKENS = ColumnType(UINT, 64, 1, True)
_STRING_ID = _TOKEN  # the column type of a string as an id (what a pin turns to bytes)

#: ``progress(done, total)``: prims read so far and prims in scope.
Progress = Callable[[int, int], object]


class Column:
    """One column of a batch, packed as it is read: the prims (indices into ``Batch.paths``)
    and their rows back to back in one growing buffer (array columns also keep each row's
    element count), so a column costs its bytes, not one numpy array per prim."""

    __slots__ = ("_data", "_dtype", "_lanes", "_lengths", "ctype", "force", "name", "prims")

    def __init__(self, name: str, ctype: ColumnType) -> None:
        self.name = name
        self.ctype = ctype
        self.prims = array("q")
        self.force = False
        self._dtype = ctype.numpy_dtype
        self._lanes = ctype.lanes
        self._data = bytearray()
        self._lengths = array("q") if ctype.is_array else None

    def __len__(self) -> int:
        return len(self.prims)

    def append(self, index: int, value: np.ndarray[Any, Any], force: bool) -> None:
        """Add prim ``index``'s row (``Cell.value`` layout: ``(lanes,)`` fixed, ``(k, lanes)``
        or ``(k,)`` array)."""
        row = np.ascontiguousarray(value, dtype=self._dtype)
        if self._lengths is None:
            if row.size != self._lanes:
                raise ValueError(
                    f"column {self.name!r}: a row of {row.size} elements, expected {self._lanes}"
                )
        else:
            self._lengths.append(row.size // self._lanes)
        self.prims.append(index)
        self._data += row.data
        if force:
            self.force = True

    def append_packed(self, index: int, cell: PackedCell) -> None:
        """Add prim ``index``'s row from a cell packed for this column type."""
        if self._lengths is not None:
            self._lengths.append(cell.elements)
        self.prims.append(index)
        self._data += cell.raw
        if cell.force:
            self.force = True

    def values(self) -> np.ndarray[Any, Any]:
        """Every row's elements back to back, one lane per element (a view of the buffer)."""
        return np.frombuffer(self._data, dtype=self._dtype)

    def lengths(self) -> array[int]:
        """The element count of each row of an array column, in prim order."""
        assert self._lengths is not None, "a fixed column has no row lengths"
        return self._lengths


@dataclass(frozen=True, slots=True)
class PackedCell:
    """A cell that prims alike share (a built-in, a schema fallback), its row packed once:
    ``raw`` the row's bytes, ``elements`` its element count (array columns)."""

    name: str
    ctype: ColumnType
    raw: bytes
    elements: int
    force: bool = False

    @classmethod
    def of(cls, cell: Cell) -> PackedCell:
        row = np.ascontiguousarray(cell.value, dtype=cell.ctype.numpy_dtype)
        lanes = cell.ctype.lanes
        if not cell.ctype.is_array and row.size != lanes:
            raise ValueError(f"column {cell.name!r}: a row of {row.size} elements, not {lanes}")
        return cls(cell.name, cell.ctype, row.tobytes(), row.size // lanes, cell.force)


@dataclass(frozen=True)
class SampledPrim:
    """What ``update_from_usd_time`` re-samples on one populated prim: the names of its
    time-varying attributes, and whether its derived transform attributes follow the time.
    Prims alike share one (the prim is found again by path when re-sampled)."""

    names: tuple[str, ...]
    transform: bool


class Batch:
    """Columns to write and prims/attributes to delete, at one ordinal."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self._index: dict[str, int] = {}
        self.columns: dict[tuple[str, ColumnType], Column] = {}
        # name -> its columns (usually one): a lookup by name and identity first, since
        # hashing a ColumnType costs more than comparing the few a name has
        self._by_name: dict[str, list[Column]] = {}
        #: Prims to delete whole (gone from USD).
        self.deleted_prims: list[str] = []
        #: Attributes to delete, per prim (USD no longer has them).
        self.deleted_attributes: dict[str, list[str]] = {}
        #: Columns written per prim path (what population now owns there); prims with the
        #: same columns share one read-only layout.
        self.written: dict[str, Layout] = {}
        # (names, column type ids) -> the shared layout; the ids stay valid while the layout
        # holding those column types lives here
        self._layouts: dict[tuple[Any, ...], Layout] = {}

    def __len__(self) -> int:
        return sum(len(c) for c in self.columns.values())

    def prim_index(self, path: str) -> int:
        index = self._index.get(path)
        if index is None:
            index = self._index[path] = len(self.paths)
            self.paths.append(path)
            self.written[path] = _NOTHING
        return index

    def _column(self, name: str, ctype: ColumnType) -> Column:
        columns = self._by_name.get(name)
        if columns is None:
            columns = self._by_name[name] = []
        for column in columns:
            if column.ctype is ctype or column.ctype == ctype:
                return column
        column = Column(name, ctype)
        columns.append(column)
        self.columns[(name, ctype)] = column
        return column

    def _shared_layout(self, columns: dict[str, ColumnType]) -> Layout:
        key = (*columns, *map(id, columns.values()))
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = MappingProxyType(columns)
        return layout

    def add_all(self, path: str, cells: Iterable[Cell | PackedCell]) -> None:
        """Add cells of prim ``path``; a cell whose name the prim already has in the batch is
        ignored (the first one read wins)."""
        index = self.prim_index(path)
        written = self.written[path]
        added: dict[str, ColumnType] | None = None
        for cell in cells:
            name = cell.name
            if name in written or (added is not None and name in added):
                continue
            ctype = cell.ctype
            if added is None:
                added = dict(written)
            added[name] = ctype
            if isinstance(cell, PackedCell):
                self._column(name, ctype).append_packed(index, cell)
            else:
                self._column(name, ctype).append(index, cell.value, cell.force)
        if added is not None:
            self.written[path] = self._shared_layout(added)

    def add(self, path: str, cell: Cell) -> None:
        """Add one cell of prim ``path`` (see :meth:`add_all`)."""
        self.add_all(path, (cell,))

    def has_cell(self, path: str, name: str) -> bool:
        return name in self.written.get(path, _NOTHING)

    def attribute_names(self) -> set[str]:
        """Every attribute the batch writes or deletes."""
        names = {name for name, _ in self.columns}
        for attrs in self.deleted_attributes.values():
            names.update(attrs)
        return names


def _token_array(names: Iterable[str], interner: Interner) -> np.ndarray[Any, Any]:
    return np.array([interner.token(n) for n in names], dtype=np.uint64)


class _PrimReader:
    """Reads the cells of the prims of one scope at one time, caching what prims alike share:
    their built-ins, and the cells of properties that only have a schema fallback (the same
    value on every prim of one type and applied schemas)."""

    def __init__(self, domains: int, time: Any, interner: Interner) -> None:
        self.domains = domains
        self.time = time
        self.interner = interner
        self._builtins: dict[tuple[Any, ...], list[PackedCell]] = {}
        self._fallbacks: dict[tuple[Any, ...], Any] = {}
        self._sampled: dict[SampledPrim, SampledPrim] = {}
        self._types: dict[tuple[PrimKind, str], Any] = {}
        self.pins = getattr(interner, "string_pins", None)  # the op's StringPins, if any

    def _builtin_cells(self, entry: PrimScope, kind: tuple[Any, ...]) -> list[PackedCell]:
        """The reserved-name cells of a prim (``kind``: its type and applied schemas)."""
        key = (kind, entry.instance_tags, entry.instance_root, entry.in_prototype)
        found = self._builtins.get(key)
        if found is not None:
            return found
        builtins = builtins_of(entry, self.domains)
        interner = self.interner
        cells = []
        if builtins.prim_type:
            token = np.array([interner.token(builtins.prim_type)], "u8")
            cells.append(Cell(PRIM_TYPE, _TOKEN, token))
        cells.append(Cell(SCHEMAS, _TOKENS, _token_array(builtins.schemas, interner)))
        cells.append(Cell(ANCESTOR_TYPES, _TOKENS, _token_array(builtins.ancestor_types, interner)))
        packed = self._builtins[key] = [PackedCell.of(c) for c in cells]
        return packed

    def _fallback_cell(self, prim: Any, kind: tuple[Any, ...], name: str) -> Any:
        """The cell of a property that only has its schema fallback (None or NO_VALUE when
        it populates nothing)."""
        key = (kind, name)
        found = self._fallbacks.get(key, _UNSEEN)
        if found is _UNSEEN:
            attr = prim.GetAttribute(name)
            found = map_attribute(attr, name, self.time, self.interner)
            if isinstance(found, Cell):
                found = PackedCell.of(found)
            self._fallbacks[key] = found
        if (
            self.pins is not None
            and isinstance(found, PackedCell)
            and found.ctype == _STRING_ID
            and self.pins.pinned(str(prim.GetPath()), name)
        ):
            # a string this prim's STRING column pins to byte form: not the shared cell
            attr = prim.GetAttribute(name)
            return map_attribute(attr, name, self.time, self.interner, pins=self.pins)
        return found

    def _declared_type(self, prim: Any, kind: PrimKind, name: str) -> Any:
        """The ``Sdf.ValueTypeName`` of a schema-declared attribute (the same on every prim of
        ``kind``), None for any other (its authored type is asked for on each prim)."""
        key = (kind, name)
        found = self._types.get(key, _UNSEEN)
        if found is _UNSEEN:
            declared = name in schema_property_names(prim, kind)
            found = self._types[key] = prim.GetAttribute(name).GetTypeName() if declared else None
        return found

    def read(
        self, entry: PrimScope, previous: Layout, sampled: bool
    ) -> tuple[list[Cell | PackedCell], SampledPrim | None]:
        """Every cell of one prim of the scope (``previous``: what the prim got before) and,
        when ``sampled``, its time-varying part (None when nothing varies)."""
        prim, time, interner = entry.prim, self.time, self.interner
        kind = prim_kind(prim)
        cells: list[Cell | PackedCell] = list(self._builtin_cells(entry, kind))
        if entry.type_metadata:
            cells.extend(map_metadata(prim, ("typeName",), "", interner))
        if entry.prim_metadata_paths:
            cells.extend(map_metadata(prim, entry.prim_metadata_paths, "", interner))
        varying: list[str] = []
        metadata_paths = entry.property_metadata_paths
        if entry.lazy:
            properties = publishable_properties(prim, lazy=True, kind=kind)
        else:
            properties = list(zip(entry.property_names, entry.properties, strict=True))
        for name, prop in properties:
            if prop is None:  # only a schema fallback (a lazy entry)
                cell = self._fallback_cell(prim, kind, name)
                if cell is NO_VALUE:
                    continue
                if cell is not None:
                    force = needs_force(previous.get(name), cell.ctype)
                    cells.append(replace(cell, force=True) if force else cell)
                if metadata_paths:
                    prop = prim.GetAttribute(name)
                    cells.extend(map_metadata(prop, metadata_paths, f"{name}:", interner))
                continue
            is_attribute = type(prop) is Usd.Attribute
            if is_attribute:
                cell = map_attribute(
                    prop,
                    name,
                    time,
                    interner,
                    pins=self.pins,
                    type_name=self._declared_type(prim, kind, name),
                )
                if cell is NO_VALUE:
                    continue  # an authored attribute without a value is not published
                if cell is not None:
                    cell.force = needs_force(previous.get(name), cell.ctype)
            else:
                cell = map_property(prop, time, interner, previous=previous.get(name), name=name)
            if cell is not None:
                cells.append(cell)
            if is_attribute and prop.HasAuthoredConnections():
                connection = map_connection(prop, interner)
                if connection is not None:
                    cells.append(connection)
            if metadata_paths:
                cells.extend(map_metadata(prop, metadata_paths, f"{name}:", interner))
            if sampled and is_attribute and prop.ValueMightBeTimeVarying():
                varying.append(name)
        transform_varies = False
        if entry.derived_transform:
            transform = derived_transform_cells(prim, time)
            cells.extend(transform)
            if entry.world_matrix and WORLD_MATRIX not in previous:
                # Created once from the local transform; hierarchy computation owns it after.
                cells.extend(world_matrix_cell(c) for c in transform if c.name == XFORM)
            if sampled:
                transform_varies = _transform_varies(prim)
        if not sampled or not (varying or transform_varies):
            return cells, None
        found = SampledPrim(tuple(varying), transform_varies)
        return cells, self._sampled.setdefault(found, found)


def _transform_varies(prim: Any) -> bool:
    xformable = UsdGeom.Xformable(prim)
    return bool(xformable) and xformable.TransformMightBeTimeVarying()


def read_scope(
    scope: Scope,
    usd_stage: Any,
    time: Any,
    interner: Interner,
    *,
    batch: Batch | None = None,
    previous: Previous = _no_previous,
    sampled: dict[str, SampledPrim] | None = None,
    progress: Progress | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> Batch:
    """Read every prim of ``scope`` at ``time`` (a ``Usd.TimeCode``) into ``batch`` (a new one
    by default). ``previous`` gives what population wrote on a prim before (to replace a
    column whose declared type changed, and to create the world matrix once). ``sampled``
    receives each prim's time-varying part; ``progress`` is called
    now and then with ``(prims read, prims in scope)``, never with ``done == total`` (the
    caller reports that once the writes are done)."""
    batch = Batch() if batch is None else batch
    reader = _PrimReader(scope.domains, time, interner)
    total = len(scope.prims)
    step = max(1, total // 100)
    if scope.stage_metadata_paths:
        for cell in map_metadata(usd_stage, scope.stage_metadata_paths, "", interner):
            batch.add("/", cell)
    for i, entry in enumerate(scope.prims):
        if i % step == 0:
            if checkpoint is not None:
                checkpoint()
            if progress is not None and i:
                progress(i, total)
        path = entry.path
        cells, found = reader.read(entry, previous(path), sampled is not None)
        batch.add_all(path, cells)
        if sampled is not None:
            if found is None:
                sampled.pop(path, None)
            else:
                sampled[path] = found
    return batch


def read_time_samples(
    sampled: dict[str, SampledPrim],
    usd_stage: Any,
    time: Any,
    interner: Interner,
    *,
    batch: Batch | None = None,
    previous: Previous = _no_previous,
    checkpoint: Callable[[], None] | None = None,
) -> Batch:
    """Re-sample the time-varying part of populated prims of ``usd_stage`` at ``time``;
    prims already in ``batch`` (republished by the same op) keep the cells read there."""
    batch = Batch() if batch is None else batch
    pins = getattr(interner, "string_pins", None)
    for i, (path, entry) in enumerate(sampled.items()):
        if checkpoint is not None and i % 1024 == 0:
            checkpoint()
        prim = usd_stage.GetPrimAtPath(path)
        if not prim.IsValid():
            continue  # gone from USD; the next apply_usd_changes removes it
        before = previous(path)
        for name in entry.names:
            attr = prim.GetAttribute(name)
            if not attr.IsValid():
                continue
            cell = map_property(
                attr, time, interner, previous=before.get(name), name=name, pins=pins
            )
            if cell is not None:
                batch.add(path, cell)
        if entry.transform:
            for cell in derived_transform_cells(prim, time):
                batch.add(path, cell)
    return batch
