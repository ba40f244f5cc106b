"""What population wrote on each prim: the columns it owns there and their types.

Applying USD changes removes what USD no longer has, and a column whose declared USD type
changed is replaced (FORCE): both need the columns population wrote before, per prim. Most
prims of a scene share a few layouts (the same names and types), so each distinct layout is
stored once and prims point at it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from ._mapping import ColumnType

__all__ = ["Layout", "WrittenColumns"]

#: The columns population wrote on one prim: name -> column type (read-only).
Layout = Mapping[str, ColumnType]

_EMPTY: Layout = MappingProxyType({})


class WrittenColumns:
    """Prim path -> the layout population wrote there."""

    def __init__(self) -> None:
        self._of: dict[str, Layout] = {}
        self._shared: dict[frozenset[tuple[str, ColumnType]], Layout] = {}

    def __contains__(self, path: object) -> bool:
        return path in self._of

    def __iter__(self) -> Iterator[str]:
        return iter(self._of)

    def __len__(self) -> int:
        return len(self._of)

    def get(self, path: str) -> Layout:
        """The prim's layout (empty if population never wrote there)."""
        return self._of.get(path, _EMPTY)

    def _store(self, path: str, columns: dict[str, ColumnType]) -> None:
        if not columns:
            self._of.pop(path, None)
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
            self._of.pop(path, None)
            return
        kept = {n: t for n, t in self.get(path).items() if n not in names}
        self._store(path, kept)

    def copy(self) -> WrittenColumns:
        other = WrittenColumns()
        other._of = dict(self._of)
        other._shared = self._shared
        return other
