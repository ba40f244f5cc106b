"""Which prims and properties a population reads: domains and descs evaluated on a USD stage.

Interface (used by the writer and the public API; keep it stable):
- :func:`resolve_scope` — the prims to populate, parents before children, each with the
  properties chosen for it and what else it receives (metadata, derived transforms);
- :func:`builtins_of` — the reserved ``usd-prim-type`` / ``usd-schemas`` /
  ``usd-ancestor-types`` values of a populated prim;
- :func:`instancing_table` — instance roots and their prototypes, for ``ovstage.instancing``.

This first version treats every non-NONE domain as "every prim with its authored
attributes" and ignores selectors; the full rules replace it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._descs import Desc
from ._usd import Usd


@dataclass
class PrimScope:
    """One prim to populate.

    ``properties``: the USD properties chosen for it (empty for an ancestor that only came
    along, ``reserved_only``). ``derived_transform``: write ``omni:xform`` /
    ``omni:resetXformStack``; ``world_matrix``: also create ``omni:fabric:worldMatrix``
    (RENDERING not among the domains); ``type_metadata``: write ``usd-metadata:typeName``.
    """

    prim: Any
    properties: list[Any] = field(default_factory=list)
    reserved_only: bool = False
    prim_metadata_paths: tuple[str, ...] = ()
    property_metadata_paths: tuple[str, ...] = ()
    derived_transform: bool = False
    world_matrix: bool = False
    type_metadata: bool = False

    @property
    def path(self) -> str:
        """The prim's path as a string."""
        return str(self.prim.GetPath())


@dataclass
class Scope:
    """What one population reads: the union of its descs' domains, the prims (parents before
    children) and the stage metadata paths."""

    domains: int
    prims: list[PrimScope]
    stage_metadata_paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class Builtins:
    """Reserved names of a populated prim (None / empty: not written)."""

    prim_type: str | None
    schemas: tuple[str, ...]
    ancestor_types: tuple[str, ...]


@dataclass
class InstancingTable:
    """Instance roots of the populated scene and the prototype root each one uses."""

    prototype_of: dict[str, str] = field(default_factory=dict)


def resolve_scope(stage: Any, descs: Sequence[Desc], root: str = "/") -> Scope:
    """The prims under ``root`` (``/``: the whole stage) that ``descs`` select, with their
    properties."""
    domains = 0
    for desc in descs:
        domains |= int(desc.domains)
    prims: list[PrimScope] = []
    if domains:
        start = stage.GetPrimAtPath(root)
        for prim in Usd.PrimRange(start):
            if prim.IsPseudoRoot():
                continue
            props = [a for a in prim.GetAttributes() if a.HasAuthoredValue()]
            prims.append(PrimScope(prim, props))
    return Scope(domains, prims)


def builtins_of(entry: PrimScope, domains: int) -> Builtins:
    """The reserved names of one populated prim."""
    del domains
    prim = entry.prim
    type_name = str(prim.GetTypeName())
    return Builtins(type_name or None, tuple(prim.GetAppliedSchemas()), ())


def instancing_table(stage: Any) -> InstancingTable:
    """Instance roots and their prototypes. Empty in this first version."""
    del stage
    return InstancingTable()
