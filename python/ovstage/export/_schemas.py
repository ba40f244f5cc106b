"""USD schema lookups an export needs: declared properties, their types and fallbacks.

A prim's effective schemas are its ``usd-prim-type`` and ``usd-schemas`` (what population
recorded); ``Usd.SchemaRegistry.BuildComposedPrimDefinition`` composes them as USD would, so
multiple-apply instances (``CollectionAPI:lightLink``) resolve their property templates.
Every lookup is cached per distinct (type, schemas) pair: a large stage has few of them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ..population._usd import Sdf, Usd

__all__ = ["Declared", "declared", "declared_by", "is_known_api", "is_known_type"]


def _registry() -> Any:
    return Usd.SchemaRegistry()


class Declared:
    """The properties a composed prim definition declares: name -> (type name, fallback,
    is relationship)."""

    def __init__(self, definition: Any) -> None:
        self.types: dict[str, str] = {}
        self.fallbacks: dict[str, Any] = {}
        self.uniform: set[str] = set()
        self.relationships: set[str] = set()
        self.names: frozenset[str] = frozenset()
        if definition is None:
            return
        for name in definition.GetPropertyNames():
            attr = definition.GetAttributeDefinition(name)
            if attr:
                self.types[name] = str(attr.GetTypeName())
                self.fallbacks[name] = attr.GetFallbackValue()
                if attr.GetVariability() == Sdf.VariabilityUniform:
                    self.uniform.add(name)
            else:
                self.relationships.add(name)
        self.names = frozenset(self.types) | frozenset(self.relationships)


@cache
def declared(type_name: str, schemas: tuple[str, ...]) -> Declared:
    """What a prim of ``type_name`` with applied ``schemas`` declares (unknown names are
    left out)."""
    registry = _registry()
    known = [s for s in schemas if is_known_api(s)]
    definition = None
    try:
        if known:
            definition = registry.BuildComposedPrimDefinition(type_name or "", known)
        elif type_name:
            definition = registry.FindConcretePrimDefinition(type_name)
    except Exception:  # USD refused the combination: declares nothing
        definition = None
    return Declared(definition)


@cache
def declared_by(names: tuple[str, ...]) -> frozenset[str]:
    """Property names declared by any of the schemas ``names`` (typed or applied API)."""
    registry = _registry()
    out: set[str] = set()
    for name in names:
        definition = registry.FindConcretePrimDefinition(name) or (
            registry.FindAppliedAPIPrimDefinition(name)
        )
        if definition:
            out.update(definition.GetPropertyNames())
    return frozenset(out)


@cache
def is_known_type(type_name: str) -> bool:
    """Whether USD knows prim type ``type_name`` (concrete or abstract typed schema)."""
    return bool(_registry().GetTypeFromSchemaTypeName(type_name))


@cache
def is_known_api(schema: str) -> bool:
    """Whether ``schema`` (``Name`` or ``Name:instance``) is an applied API schema USD knows
    and can apply as written (a multiple-apply family needs its instance name)."""
    family, _, instance = schema.partition(":")
    registry = _registry()
    if not registry.GetTypeFromSchemaTypeName(family):
        return False
    if not Usd.SchemaRegistry.IsAppliedAPISchema(family):
        return False
    return bool(instance) == bool(Usd.SchemaRegistry.IsMultipleApplyAPISchema(family))
