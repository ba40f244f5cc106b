"""Population descriptions: prim and property predicates, selectors and descs.

Immutable trees a population call takes to choose which prims and properties it reads from
USD (see :mod:`ovstage.population`). Evaluating them against a USD stage is
:mod:`._selection`'s job.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .._enums import PopulationDomain


class PrimPredicateKind(enum.IntEnum):
    """Kinds of prim predicates (``ovstage_population`` ABI values)."""

    NONE = 0
    ALL = 1
    AND = 2
    OR = 3
    NOT = 4
    HAS_PARENT = 5
    HAS_ANCESTOR = 6
    HAS_PROPERTY = 7
    HAS_TYPE = 8
    IS_A_TYPE = 9
    HAS_SCHEMA = 10
    HAS_APPLIED_SCHEMA = 11
    HAS_APPLIED_SCHEMA_IN_NAMESPACE = 12
    HAS_PATH = 13
    IS_UNDER_PATH = 14
    HAS_KIND = 15
    HAS_PURPOSE = 16
    HAS_METADATA = 17


class PropertyPredicateKind(enum.IntEnum):
    """Kinds of property predicates (``ovstage_population`` ABI values)."""

    NONE = 0
    ALL = 1
    AND = 2
    OR = 3
    NOT = 4
    DECLARED_BY_SCHEMA = 5
    HAS_NAME = 6
    IN_NAMESPACE = 7
    HAS_METADATA = 8
    IS_ATTRIBUTE = 9
    IS_RELATIONSHIP = 10
    IS_CUSTOM = 11
    IS_AUTHORED = 12


@dataclass(frozen=True)
class PrimPredicate:
    """An immutable prim-predicate tree: a kind, a string argument, child predicates.

    Build with the static constructors (``PrimPredicate.has_type("Mesh")``,
    ``PrimPredicate.and_(a, b)``, ...).
    """

    kind: PrimPredicateKind
    value: str = ""
    children: tuple[PrimPredicate, ...] = ()

    @staticmethod
    def none() -> PrimPredicate:
        """Matches no prim."""
        return PrimPredicate(PrimPredicateKind.NONE)

    @staticmethod
    def all() -> PrimPredicate:
        """Matches every prim."""
        return PrimPredicate(PrimPredicateKind.ALL)

    @staticmethod
    def and_(*predicates: PrimPredicate) -> PrimPredicate:
        """Matches prims every predicate matches."""
        return PrimPredicate(PrimPredicateKind.AND, children=tuple(predicates))

    @staticmethod
    def or_(*predicates: PrimPredicate) -> PrimPredicate:
        """Matches prims some predicate matches."""
        return PrimPredicate(PrimPredicateKind.OR, children=tuple(predicates))

    @staticmethod
    def not_(predicate: PrimPredicate) -> PrimPredicate:
        """Matches prims the predicate does not match."""
        return PrimPredicate(PrimPredicateKind.NOT, children=(predicate,))

    @staticmethod
    def has_parent(path: str) -> PrimPredicate:
        """Prims whose parent is ``path``."""
        return PrimPredicate(PrimPredicateKind.HAS_PARENT, path)

    @staticmethod
    def has_ancestor(path: str) -> PrimPredicate:
        """Prims with ``path`` among their ancestors."""
        return PrimPredicate(PrimPredicateKind.HAS_ANCESTOR, path)

    @staticmethod
    def has_property(name: str) -> PrimPredicate:
        """Prims with a property ``name``."""
        return PrimPredicate(PrimPredicateKind.HAS_PROPERTY, name)

    @staticmethod
    def has_type(type_name: str) -> PrimPredicate:
        """Prims of exactly ``type_name``."""
        return PrimPredicate(PrimPredicateKind.HAS_TYPE, type_name)

    @staticmethod
    def is_a_type(type_name: str) -> PrimPredicate:
        """Prims of ``type_name`` or a derived type."""
        return PrimPredicate(PrimPredicateKind.IS_A_TYPE, type_name)

    @staticmethod
    def has_schema(name: str) -> PrimPredicate:
        """Prims with schema ``name``."""
        return PrimPredicate(PrimPredicateKind.HAS_SCHEMA, name)

    @staticmethod
    def has_applied_schema(name: str) -> PrimPredicate:
        """Prims with applied API schema ``name``."""
        return PrimPredicate(PrimPredicateKind.HAS_APPLIED_SCHEMA, name)

    @staticmethod
    def has_applied_schema_in_namespace(namespace: str) -> PrimPredicate:
        """Prims with an applied API schema in ``namespace``."""
        return PrimPredicate(PrimPredicateKind.HAS_APPLIED_SCHEMA_IN_NAMESPACE, namespace)

    @staticmethod
    def has_path(path: str) -> PrimPredicate:
        """The prim at ``path``."""
        return PrimPredicate(PrimPredicateKind.HAS_PATH, path)

    @staticmethod
    def is_under_path(path: str) -> PrimPredicate:
        """Prims at or below ``path``."""
        return PrimPredicate(PrimPredicateKind.IS_UNDER_PATH, path)

    @staticmethod
    def has_kind(kind: str) -> PrimPredicate:
        """Prims of model kind ``kind``."""
        return PrimPredicate(PrimPredicateKind.HAS_KIND, kind)

    @staticmethod
    def has_purpose(purpose: str) -> PrimPredicate:
        """Prims of purpose ``purpose``."""
        return PrimPredicate(PrimPredicateKind.HAS_PURPOSE, purpose)

    @staticmethod
    def has_metadata(key: str) -> PrimPredicate:
        """Prims with metadata ``key``."""
        return PrimPredicate(PrimPredicateKind.HAS_METADATA, key)


@dataclass(frozen=True)
class PropertyPredicate:
    """An immutable property-predicate tree (see :class:`PrimPredicate`)."""

    kind: PropertyPredicateKind
    value: str = ""
    children: tuple[PropertyPredicate, ...] = ()

    @staticmethod
    def none() -> PropertyPredicate:
        """Matches no property."""
        return PropertyPredicate(PropertyPredicateKind.NONE)

    @staticmethod
    def all() -> PropertyPredicate:
        """Matches every property."""
        return PropertyPredicate(PropertyPredicateKind.ALL)

    @staticmethod
    def and_(*predicates: PropertyPredicate) -> PropertyPredicate:
        """Matches properties every predicate matches."""
        return PropertyPredicate(PropertyPredicateKind.AND, children=tuple(predicates))

    @staticmethod
    def or_(*predicates: PropertyPredicate) -> PropertyPredicate:
        """Matches properties some predicate matches."""
        return PropertyPredicate(PropertyPredicateKind.OR, children=tuple(predicates))

    @staticmethod
    def not_(predicate: PropertyPredicate) -> PropertyPredicate:
        """Matches properties the predicate does not match."""
        return PropertyPredicate(PropertyPredicateKind.NOT, children=(predicate,))

    @staticmethod
    def declared_by_schema() -> PropertyPredicate:
        """Properties declared by the prim's schemas."""
        return PropertyPredicate(PropertyPredicateKind.DECLARED_BY_SCHEMA)

    @staticmethod
    def has_name(name: str) -> PropertyPredicate:
        """The property ``name``."""
        return PropertyPredicate(PropertyPredicateKind.HAS_NAME, name)

    @staticmethod
    def in_namespace(namespace: str) -> PropertyPredicate:
        """Properties in ``namespace``."""
        return PropertyPredicate(PropertyPredicateKind.IN_NAMESPACE, namespace)

    @staticmethod
    def has_metadata(key: str) -> PropertyPredicate:
        """Properties with metadata ``key``."""
        return PropertyPredicate(PropertyPredicateKind.HAS_METADATA, key)

    @staticmethod
    def is_attribute() -> PropertyPredicate:
        """Attributes."""
        return PropertyPredicate(PropertyPredicateKind.IS_ATTRIBUTE)

    @staticmethod
    def is_relationship() -> PropertyPredicate:
        """Relationships."""
        return PropertyPredicate(PropertyPredicateKind.IS_RELATIONSHIP)

    @staticmethod
    def is_custom() -> PropertyPredicate:
        """Custom properties."""
        return PropertyPredicate(PropertyPredicateKind.IS_CUSTOM)

    @staticmethod
    def is_authored() -> PropertyPredicate:
        """Authored properties."""
        return PropertyPredicate(PropertyPredicateKind.IS_AUTHORED)


@dataclass(frozen=True)
class Selector:
    """Which prims and properties a population description selects."""

    prim: PrimPredicate = field(default_factory=PrimPredicate.all)
    property: PropertyPredicate = field(default_factory=PropertyPredicate.all)
    prim_metadata_paths: tuple[str, ...] = ()
    property_metadata_paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class Desc:
    """A population description: domains, selectors and stage metadata paths."""

    domains: PopulationDomain = PopulationDomain.ALL
    selectors: tuple[Selector, ...] = ()
    stage_metadata_paths: tuple[str, ...] = ()
