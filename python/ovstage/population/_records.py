"""What population keeps per prim between ops: the columns it wrote there, and the
time-varying part that ``update_from_usd_time`` re-samples.

Applying USD changes removes what USD no longer has, and a column whose declared USD type
changed is replaced (FORCE): both need the columns population wrote before, per prim. Most
prims of a scene share a few layouts (the same names and types), so each distinct layout is
stored once and prims point at it.

Between ops these records hold no Python object per prim (docs/architecture.md "Memory"):
per-prim path strings made during a read, between the read's transient objects, would keep
the read's whole pymalloc arena set resident. A :class:`PathTable` therefore keeps its paths
as one joined string and its values as indices into the few distinct values, and makes the
path -> value dict again only while an op uses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Generic, TypeVar

import numpy as np

from ._mapping import ColumnType

__all__ = ["Layout", "PathTable", "WrittenColumns"]

#: The columns population wrote on one prim: name -> column type (read-only).
Layout = Mapping[str, ColumnType]

_EMPTY: Layout = MappingProxyType({})

V = TypeVar("V")

# USD prim paths never hold a NUL character.
_SEPARATOR = "\0"


class PathTable(Generic[V]):
    """Prim path -> value, where many prims share each value (compared by identity).

    Reading or changing it makes the dict form; :meth:`compact` (called once an op is done)
    packs it back into one string of paths and an index array."""

    def __init__(self, items: Mapping[str, V] | None = None) -> None:
        self._live: dict[str, V] | None = dict(items) if items else None
        self._paths = ""
        self._codes: np.ndarray = np.zeros(0, np.uint32)
        self._values: list[V] = []

    def _dict(self) -> dict[str, V]:
        live = self._live
        if live is None:
            if len(self._codes):
                values = self._values
                paths = self._paths.split(_SEPARATOR)
                live = dict(zip(paths, [values[c] for c in self._codes.tolist()], strict=True))
            else:
                live = {}
            self._live = live
            self._paths, self._codes, self._values = "", np.zeros(0, np.uint32), []
        return live

    def compact(self) -> None:
        """Pack the dict form (if made) into the per-prim-object-free form."""
        live = self._live
        if live is None:
            return
        index: dict[int, int] = {}
        values: list[V] = []
        codes = np.empty(len(live), np.uint32)
        for i, value in enumerate(live.values()):
            code = index.get(id(value))
            if code is None:
                code = index[id(value)] = len(values)
                values.append(value)
            codes[i] = code
        self._paths = _SEPARATOR.join(live)
        self._codes, self._values, self._live = codes, values, None

    def __contains__(self, path: object) -> bool:
        return path in self._dict()

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._live) if self._live is not None else len(self._codes)

    def __getitem__(self, path: str) -> V:
        return self._dict()[path]

    def __setitem__(self, path: str, value: V) -> None:
        self._dict()[path] = value

    def get(self, path: str, default: V | None = None) -> V | None:
        return self._dict().get(path, default)

    def pop(self, path: str, default: V | None = None) -> V | None:
        return self._dict().pop(path, default)

    def items(self) -> Iterable[tuple[str, V]]:
        return self._dict().items()

    def update(self, other: Mapping[str, V]) -> None:
        self._dict().update(other)

    def copy(self) -> PathTable[V]:
        return PathTable(self._dict())


class WrittenColumns:
    """Prim path -> the layout population wrote there."""

    def __init__(self) -> None:
        self._of: PathTable[Layout] = PathTable()
        self._shared: dict[frozenset[tuple[str, ColumnType]], Layout] = {}

    def __contains__(self, path: object) -> bool:
        return path in self._of

    def __iter__(self) -> Iterator[str]:
        return iter(self._of)

    def __len__(self) -> int:
        return len(self._of)

    def compact(self) -> None:
        """See :meth:`PathTable.compact`."""
        self._of.compact()

    def get(self, path: str) -> Layout:
        """The prim's layout (empty if population never wrote there)."""
        found = self._of.get(path)
        return _EMPTY if found is None else found

    def _store(self, path: str, columns: dict[str, ColumnType]) -> None:
        if not columns:
            self._of.pop(path)
            return
        key = frozenset(columns.items())
        layout = self._shared.get(key)
        if layout is None:
            layout = self._shared[key] = MappingProxyType(dict(columns))
        self._of[path] = layout

    def update(self, path: str, columns: Layout) -> None:
        """Record ``columns`` (read-only: it may be kept as is, shared with other prims) as
        written on ``path``, keeping the others."""
        if path not in self._of:
            if columns:
                self._of[path] = columns
            return
        merged = dict(self.get(path))
        merged.update(columns)
        self._store(path, merged)

    def remove(self, path: str, names: list[str] | None = None) -> None:
        """Forget ``names`` on ``path`` (None: the whole prim)."""
        if names is None:
            self._of.pop(path)
            return
        kept = {n: t for n, t in self.get(path).items() if n not in names}
        self._store(path, kept)

    def copy(self) -> WrittenColumns:
        other = WrittenColumns()
        other._of = self._of.copy()
        other._shared = self._shared
        return other
