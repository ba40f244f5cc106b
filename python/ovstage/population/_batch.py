"""The read half of a population: everything it will write, gathered from USD first.

A :class:`Batch` holds, per column (attribute name and column type), the prims that get a
value and their values, plus the prims and attributes to delete. It is filled entirely from
USD before anything is written, so a failure while reading leaves the stage as it was; the
writer (:mod:`._writer`) then writes each column once for all its prims.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._enums import AttributeSemantic
from ._mapping import (
    UINT,
    Cell,
    ColumnType,
    Interner,
    derived_transform_cells,
    is_time_varying,
    map_metadata,
    map_property,
)
from ._selection import PrimScope, Scope, builtins_of

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

PRIM_TYPE = "usd-prim-type"
SCHEMAS = "usd-schemas"
ANCESTOR_TYPES = "usd-ancestor-types"
WORLD_MATRIX = "omni:fabric:worldMatrix"
XFORM = "omni:xform"

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
    properties, and whether its derived transform attributes follow the time."""

    prim: Any
    properties: list[Any]
    transform: bool


class Batch:
    """Columns to write and prims/attributes to delete, at one ordinal."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self._index: dict[str, int] = {}
        self.columns: dict[tuple[str, ColumnType], Column] = {}
        self._cells: set[tuple[int, str]] = set()
        #: Prims to delete whole (gone from USD).
        self.deleted_prims: list[str] = []
        #: Attributes to delete, per prim (USD no longer has them).
        self.deleted_attributes: dict[str, list[str]] = {}
        #: Attributes written per prim path (what population now owns there).
        self.written: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return sum(len(c.prims) for c in self.columns.values())

    def prim_index(self, path: str) -> int:
        index = self._index.get(path)
        if index is None:
            index = self._index[path] = len(self.paths)
            self.paths.append(path)
            self.written[path] = set()
        return index

    def add(self, path: str, cell: Cell) -> None:
        """Add one cell of prim ``path`` (a second cell of the same name for the prim is
        ignored: the first one read wins)."""
        index = self.prim_index(path)
        key = (index, cell.name)
        if key in self._cells:
            return
        self._cells.add(key)
        column = self.columns.get((cell.name, cell.ctype))
        if column is None:
            column = self.columns[(cell.name, cell.ctype)] = Column(cell.name, cell.ctype)
        column.prims.append(index)
        column.values.append(cell.value)
        column.force = column.force or cell.force
        self.written[path].add(cell.name)

    def has_cell(self, path: str, name: str) -> bool:
        index = self._index.get(path)
        return index is not None and (index, name) in self._cells

    def attribute_names(self) -> set[str]:
        """Every attribute the batch writes or deletes."""
        names = {name for name, _ in self.columns}
        for attrs in self.deleted_attributes.values():
            names.update(attrs)
        return names


def _builtin_cells(entry: PrimScope, domains: int, interner: Interner) -> list[Cell]:
    builtins = builtins_of(entry, domains)
    cells = []
    if builtins.prim_type:
        cells.append(Cell(PRIM_TYPE, _TOKEN, np.array([interner.token(builtins.prim_type)], "u8")))
    cells.append(Cell(SCHEMAS, _TOKENS, _token_array(builtins.schemas, interner)))
    cells.append(Cell(ANCESTOR_TYPES, _TOKENS, _token_array(builtins.ancestor_types, interner)))
    return cells


def _token_array(names: Iterable[str], interner: Interner) -> np.ndarray[Any, Any]:
    return np.array([interner.token(n) for n in names], dtype=np.uint64)


def _prim_cells(
    entry: PrimScope, domains: int, time: Any, interner: Interner, world_matrix_done: set[str]
) -> list[Cell]:
    """Every cell one prim of the scope gets."""
    prim = entry.prim
    cells = _builtin_cells(entry, domains, interner)
    if entry.type_metadata:
        cells.extend(map_metadata(prim, ("typeName",), "", interner))
    if entry.prim_metadata_paths:
        cells.extend(map_metadata(prim, entry.prim_metadata_paths, "", interner))
    for prop in entry.properties:
        cell = map_property(prop, time, interner)
        if cell is not None:
            cells.append(cell)
        if entry.property_metadata_paths:
            prefix = f"{prop.GetName()}:"
            cells.extend(map_metadata(prop, entry.property_metadata_paths, prefix, interner))
    if entry.derived_transform:
        transform = derived_transform_cells(prim, time)
        cells.extend(transform)
        if entry.world_matrix and entry.path not in world_matrix_done:
            # Created once from the local transform; hierarchy computation owns it afterwards.
            for cell in transform:
                if cell.name == XFORM:
                    matrix = ColumnType(
                        cell.ctype.code,
                        cell.ctype.bits,
                        cell.ctype.lanes,
                        False,
                        AttributeSemantic.MATRIX,
                    )
                    cells.append(Cell(WORLD_MATRIX, matrix, cell.value))
    return cells


def _sampled(entry: PrimScope) -> SampledPrim | None:
    props = [p for p in entry.properties if is_time_varying(p)]
    transform = entry.derived_transform and _transform_varies(entry.prim)
    return SampledPrim(entry.prim, props, transform) if props or transform else None


def _transform_varies(prim: Any) -> bool:
    from ._usd import UsdGeom

    xformable = UsdGeom.Xformable(prim)
    return bool(xformable) and xformable.TransformMightBeTimeVarying()


def read_scope(
    scope: Scope,
    usd_stage: Any,
    time: Any,
    interner: Interner,
    *,
    batch: Batch | None = None,
    world_matrix_done: set[str] | None = None,
    sampled: dict[str, SampledPrim] | None = None,
    progress: Progress | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> Batch:
    """Read every prim of ``scope`` at ``time`` (a ``Usd.TimeCode``) into ``batch`` (a new one
    by default). ``sampled`` receives each prim's time-varying part; ``progress`` is called
    now and then with ``(prims read, prims in scope)``, never with ``done == total`` (the
    caller reports that once the writes are done)."""
    batch = Batch() if batch is None else batch
    done_matrices = world_matrix_done if world_matrix_done is not None else set()
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
        batch.prim_index(path)
        for cell in _prim_cells(entry, scope.domains, time, interner, done_matrices):
            batch.add(path, cell)
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
        for prop in entry.properties:
            if not prop.IsValid():
                continue
            cell = map_property(prop, time, interner)
            if cell is not None:
                batch.add(path, cell)
        if entry.transform:
            for cell in derived_transform_cells(entry.prim, time):
                batch.add(path, cell)
    return batch
