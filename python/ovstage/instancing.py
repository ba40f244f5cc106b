"""``ovstage.instancing``: scene-graph instancing queries on a populated stage.

USD population records, per stage, the native instance roots it populated and the prototype
root (``/__Prototype_<n>``) each one uses; these functions answer from that record. A stage
never populated from USD has no instancing: its lists are empty. Without OpenUSD (the
``ovstage-go[usd]`` extra) nothing can be populated: ``available()`` is False and every query
raises ``OvstageError(NOT_SUPPORTED)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import ErrorCode, OvstageError
from .population import _usd
from .population._selection import InstancingTable, table_for

# Population records each populated stage's table through this name.
from .population._selection import register_table as register_table

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = [
    "available",
    "get_instance_roots",
    "get_prototype_root",
    "get_prototype_roots",
]


def available() -> bool:
    """Whether instancing queries work (OpenUSD can be imported)."""
    return bool(_usd.AVAILABLE)


def _table(stage: Stage, what: str) -> InstancingTable | None:
    from ._stage import Stage

    if not _usd.AVAILABLE:
        raise OvstageError(ErrorCode.NOT_SUPPORTED, f"instancing.{what}: {_usd.REASON}")
    if not isinstance(stage, Stage):
        raise TypeError(f"instancing.{what}: stage must be a Stage, got {type(stage).__name__}")
    stage._require_live(f"instancing.{what}")
    return table_for(stage)


def _path(what: str, name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"instancing.{what}: {name} must be a str, got {type(value).__name__}")
    return value


def get_prototype_roots(stage: Stage) -> list[str]:
    """All prototype roots the populated instance roots use, sorted (empty if none)."""
    table = _table(stage, "get_prototype_roots")
    return table.prototype_roots() if table is not None else []


def get_prototype_root(stage: Stage, instance_root: str) -> str:
    """The prototype root ``instance_root`` uses; NOT_FOUND if it is not a populated instance
    root."""
    path = _path("get_prototype_root", "instance_root", instance_root)
    table = _table(stage, "get_prototype_root")
    prototype = table.prototype_of.get(path) if table is not None else None
    if prototype is None:
        raise OvstageError(
            ErrorCode.NOT_FOUND,
            f"instancing.get_prototype_root: {path!r} is not a populated instance root",
        )
    return prototype


def get_instance_roots(stage: Stage, prototype_root: str) -> list[str]:
    """The populated instance roots using ``prototype_root``, sorted (empty if none)."""
    path = _path("get_instance_roots", "prototype_root", prototype_root)
    table = _table(stage, "get_instance_roots")
    return table.instance_roots(path) if table is not None else []
