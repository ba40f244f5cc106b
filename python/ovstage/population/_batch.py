"""The read half of a population: everything it will write, gathered from USD first.

A :class:`Batch` holds, per column (attribute name and column type), the prims that get a
value and their values, plus the prims and attributes to delete. It is filled entirely from
USD before anything is written, so a failure while reading leaves the stage as it was; the
writer (:mod:`._writer`) then writes each column once for all its prims.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ._mapping import (
    UINT,
    WORLD_MATRIX,
    XFORM,
    Cell,
    ColumnType,
    Interner,
    derived_transform_cells,
    is_time_varying,
    map_connection,
    map_metadata,
    map_property,
    world_matrix_cell,
)
from ._records import Layout
from ._selection import Builtins, PrimScope, Scope, builtins_of
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

_TOKEN = ColumnType(UINT, 64, 1, False)
_TOKENS = ColumnType(UINT, 64, 1, True)

#: ``progress(done, total)``: prims read so far and prims in scope.
Progress = Callable[[int, int], object]


@dataclass
class Column:
    """One column of a batch: the prims (indices into ``Batch.paths``) and their rows."""

    name: str
    ctype: ColumnType
    prims: list[int] = field(default_factory=list)
    values: list[np.ndarray[Any, Any]] = field(default_factory=list)
    force: bool = False


@dataclass
class SampledPrim:
    """What ``update_from_usd_time`` re-samples on one populated prim: its time-varying
    properties (with their names), and whether its derived transform attributes follow the
    time."""

    prim: Any
    properties: list[tuple[Any, str]]
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
        #: Columns written per prim path (what population now owns there).
        self.written: dict[str, dict[str, ColumnType]] = {}

    def __len__(self) -> int:
        return sum(len(c.prims) for c in self.columns.values())

    def prim_index(self, path: str) -> int:
        index = self._index.get(path)
        if index is None:
            index = self._index[path] = len(self.paths)
            self.paths.append(path)
            self.written[path] = {}
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

    def add_all(self, path: str, cells: Iterable[Cell]) -> None:
        """Add cells of prim ``path``; a cell whose name the prim already has in the batch is
        ignored (the first one read wins)."""
        index = self.prim_index(path)
        written = self.written[path]
        for cell in cells:
            name = cell.name
            if name in written:
                continue
            ctype = cell.ctype
            written[name] = ctype
            column = self._column(name, ctype)
            column.prims.append(index)
            column.values.append(cell.value)
            if cell.force:
                column.force = True

    def add(self, path: str, cell: Cell) -> None:
        """Add one cell of prim ``path`` (see :meth:`add_all`)."""
        self.add_all(path, (cell,))

    def has_cell(self, path: str, name: str) -> bool:
        return name in self.written.get(path, ())

    def attribute_names(self) -> set[str]:
        """Every attribute the batch writes or deletes."""
        names = {name for name, _ in self.columns}
        for attrs in self.deleted_attributes.values():
            names.update(attrs)
        return names


def _builtin_cells(
    entry: PrimScope, domains: int, interner: Interner, cache: dict[Builtins, list[Cell]]
) -> list[Cell]:
    """The reserved-name cells of a prim; prims with the same names share them (the writer
    only reads the values)."""
    builtins = builtins_of(entry, domains)
    found = cache.get(builtins)
    if found is not None:
        return found
    cells = cache[builtins] = []
    if builtins.prim_type:
        cells.append(Cell(PRIM_TYPE, _TOKEN, np.array([interner.token(builtins.prim_type)], "u8")))
    cells.append(Cell(SCHEMAS, _TOKENS, _token_array(builtins.schemas, interner)))
    cells.append(Cell(ANCESTOR_TYPES, _TOKENS, _token_array(builtins.ancestor_types, interner)))
    return cells


def _token_array(names: Iterable[str], interner: Interner) -> np.ndarray[Any, Any]:
    return np.array([interner.token(n) for n in names], dtype=np.uint64)


def _prim_cells(
    entry: PrimScope,
    domains: int,
    time: Any,
    interner: Interner,
    previous: Layout,
    builtins: dict[Builtins, list[Cell]],
) -> list[Cell]:
    """Every cell one prim of the scope gets (``previous``: what the prim got before)."""
    prim = entry.prim
    cells = list(_builtin_cells(entry, domains, interner, builtins))
    if entry.type_metadata:
        cells.extend(map_metadata(prim, ("typeName",), "", interner))
    if entry.prim_metadata_paths:
        cells.extend(map_metadata(prim, entry.prim_metadata_paths, "", interner))
    for prop, name in zip(entry.properties, entry.property_names, strict=True):
        cells.extend(_property_cells(prop, name, time, interner, previous))
        if entry.property_metadata_paths:
            cells.extend(map_metadata(prop, entry.property_metadata_paths, f"{name}:", interner))
    if entry.derived_transform:
        transform = derived_transform_cells(prim, time)
        cells.extend(transform)
        if entry.world_matrix and WORLD_MATRIX not in previous:
            # Created once from the local transform; hierarchy computation owns it afterwards.
            cells.extend(world_matrix_cell(c) for c in transform if c.name == XFORM)
    return cells


def _property_cells(
    prop: Any, name: str, time: Any, interner: Interner, previous: Layout
) -> list[Cell]:
    """The value cell of a property and, for a connected attribute, its connection cell."""
    cells = []
    pins = getattr(interner, "string_pins", None)
    cell = map_property(prop, time, interner, previous=previous.get(name), pins=pins)
    if cell is not None:
        cells.append(cell)
    if type(prop) is Usd.Attribute and prop.HasAuthoredConnections():
        connection = map_connection(prop, interner)
        if connection is not None:
            cells.append(connection)
    return cells


def _sampled(entry: PrimScope) -> SampledPrim | None:
    props = [
        (p, n)
        for p, n in zip(entry.properties, entry.property_names, strict=True)
        if is_time_varying(p)
    ]
    transform = entry.derived_transform and _transform_varies(entry.prim)
    return SampledPrim(entry.prim, props, transform) if props or transform else None


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
    builtins: dict[Builtins, list[Cell]] = {}
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
        batch.add_all(
            path, _prim_cells(entry, scope.domains, time, interner, previous(path), builtins)
        )
        if sampled is not None:
            found = _sampled(entry)
            if found is None:
                sampled.pop(path, None)
            else:
                sampled[path] = found
    return batch


def read_time_samples(
    sampled: dict[str, SampledPrim],
    time: Any,
    interner: Interner,
    *,
    batch: Batch | None = None,
    previous: Previous = _no_previous,
    checkpoint: Callable[[], None] | None = None,
) -> Batch:
    """Re-sample the time-varying part of populated prims at ``time``; prims already in
    ``batch`` (republished by the same op) keep the cells read there."""
    batch = Batch() if batch is None else batch
    for i, (path, entry) in enumerate(sampled.items()):
        if checkpoint is not None and i % 1024 == 0:
            checkpoint()
        if not entry.prim.IsValid():
            continue  # gone from USD; the next apply_usd_changes removes it
        before = previous(path)
        pins = getattr(interner, "string_pins", None)
        for prop, name in entry.properties:
            if not prop.IsValid():
                continue
            cell = map_property(prop, time, interner, previous=before.get(name), pins=pins)
            if cell is not None:
                batch.add(path, cell)
        if entry.transform:
            for cell in derived_transform_cells(entry.prim, time):
                batch.add(path, cell)
    return batch
