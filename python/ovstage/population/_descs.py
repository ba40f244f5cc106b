"""Population descriptions: prim and property predicates, selectors and descs.

Immutable trees a population call takes to choose which prims and properties it reads from
USD (see :mod:`ovstage.population`). Evaluating them against a USD stage is
:mod:`._selection`'s job.

A predicate has a ``kind`` and exactly one live value slot, the one its kind names:
``strings`` (alternatives, OR-ed), ``subpredicates`` (children of the same predicate type) or,
for a prim ``HAS_PROPERTY``, ``nested`` (one property predicate). The other slots are empty
(``()`` / ``None``). Build predicates with the static constructors.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Iterable
from typing import Any, NoReturn, TypeVar

from .._enums import PopulationDomain
from .._errors import ErrorCode, OvstageError


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


# Which value slot each kind uses. Kinds missing from these sets take no value.
_PRIM_STRING_KINDS = frozenset(
    {
        PrimPredicateKind.HAS_TYPE,
        PrimPredicateKind.IS_A_TYPE,
        PrimPredicateKind.HAS_SCHEMA,
        PrimPredicateKind.HAS_APPLIED_SCHEMA,
        PrimPredicateKind.HAS_APPLIED_SCHEMA_IN_NAMESPACE,
        PrimPredicateKind.HAS_PATH,
        PrimPredicateKind.IS_UNDER_PATH,
        PrimPredicateKind.HAS_KIND,
        PrimPredicateKind.HAS_PURPOSE,
        PrimPredicateKind.HAS_METADATA,
    }
)
_PRIM_SINGLE_CHILD_KINDS = frozenset(
    {PrimPredicateKind.NOT, PrimPredicateKind.HAS_PARENT, PrimPredicateKind.HAS_ANCESTOR}
)
_PROPERTY_STRING_KINDS = frozenset(
    {
        PropertyPredicateKind.DECLARED_BY_SCHEMA,
        PropertyPredicateKind.HAS_NAME,
        PropertyPredicateKind.IN_NAMESPACE,
        PropertyPredicateKind.HAS_METADATA,
    }
)
_COMBINATOR_VALUES = frozenset({2, 3})  # AND, OR in both enums
_NOT_VALUE = 4

_P = TypeVar("_P", "PrimPredicate", "PropertyPredicate")


def _strings(what: str, values: Iterable[Any], *, at_least_one: bool = True) -> tuple[str, ...]:
    """``values`` as a tuple of non-empty strings; TypeError/ValueError naming ``what``."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what}: expected a sequence of str, got a bare {type(values).__name__}")
    try:
        items = tuple(values)
    except TypeError:
        raise TypeError(
            f"{what}: expected a sequence of str, got {type(values).__name__}"
        ) from None
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{what}: expected str values, got {type(item).__name__}")
        if not item:
            raise ValueError(f"{what}: empty string")
    if at_least_one and not items:
        raise ValueError(f"{what}: at least one value is required")
    return items


def _children(what: str, cls: type[_P], values: Iterable[Any]) -> tuple[_P, ...]:
    """``values`` as a non-empty tuple of ``cls`` instances; TypeError naming ``what``."""
    items = tuple(values)
    for item in items:
        if not isinstance(item, cls):
            raise TypeError(
                f"{what}: expected {cls.__name__} subpredicates, got {type(item).__name__}"
            )
    if not items:
        raise TypeError(f"{what}: at least one {cls.__name__} is required")
    return items


class _Frozen:
    """Rejects assignment and deletion once ``__init__`` has set the slots."""

    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable (cannot delete {name!r})")

    def _init(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class PrimPredicate(_Frozen):
    """An immutable prim-predicate tree.

    Build with the static constructors (``PrimPredicate.has_type("Mesh")``,
    ``PrimPredicate.and_(a, b)``, ...). ``strings`` are alternatives: the predicate is true
    when one of them matches.
    """

    __slots__ = ("kind", "nested", "strings", "subpredicates")
    kind: PrimPredicateKind
    strings: tuple[str, ...]
    subpredicates: tuple[PrimPredicate, ...]
    nested: PropertyPredicate | None

    def __init__(
        self,
        kind: PrimPredicateKind | int,
        strings: Iterable[str] = (),
        subpredicates: Iterable[PrimPredicate] = (),
        nested: PropertyPredicate | None = None,
    ) -> None:
        kind = PrimPredicateKind(kind)
        what = f"PrimPredicate {kind.name}"
        strs = _strings(f"{what} strings", strings, at_least_one=False)
        subs = tuple(subpredicates)
        if kind in _PRIM_STRING_KINDS:
            if subs or nested is not None:
                raise TypeError(f"{what} takes strings only")
            strs = _strings(what, strs)
        elif kind == PrimPredicateKind.HAS_PROPERTY:
            if strs or subs:
                raise TypeError(f"{what} takes one nested PropertyPredicate only")
            if not isinstance(nested, PropertyPredicate):
                raise TypeError(
                    f"{what}: expected a PropertyPredicate, got {type(nested).__name__}"
                )
        elif kind in _COMBINATOR_VALUES or kind in _PRIM_SINGLE_CHILD_KINDS:
            if strs or nested is not None:
                raise TypeError(f"{what} takes subpredicates only")
            subs = _children(what, PrimPredicate, subs)
            if kind in _PRIM_SINGLE_CHILD_KINDS and len(subs) != 1:
                raise TypeError(f"{what} takes exactly one subpredicate, got {len(subs)}")
        elif strs or subs or nested is not None:
            raise TypeError(f"{what} takes no value")
        self._init(kind=kind, strings=strs, subpredicates=subs, nested=nested)

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
        return PrimPredicate(PrimPredicateKind.AND, subpredicates=predicates)

    @staticmethod
    def or_(*predicates: PrimPredicate) -> PrimPredicate:
        """Matches prims some predicate matches."""
        return PrimPredicate(PrimPredicateKind.OR, subpredicates=predicates)

    @staticmethod
    def not_(predicate: PrimPredicate) -> PrimPredicate:
        """Matches prims the predicate does not match."""
        return PrimPredicate(PrimPredicateKind.NOT, subpredicates=(predicate,))

    @staticmethod
    def has_parent(predicate: PrimPredicate) -> PrimPredicate:
        """Prims whose parent matches ``predicate`` (never a top-level prim)."""
        return PrimPredicate(PrimPredicateKind.HAS_PARENT, subpredicates=(predicate,))

    @staticmethod
    def has_ancestor(predicate: PrimPredicate) -> PrimPredicate:
        """Prims with a strict ancestor matching ``predicate``."""
        return PrimPredicate(PrimPredicateKind.HAS_ANCESTOR, subpredicates=(predicate,))

    @staticmethod
    def has_property(predicate: PropertyPredicate) -> PrimPredicate:
        """Prims with a property (authored or schema-declared) matching ``predicate``."""
        return PrimPredicate(PrimPredicateKind.HAS_PROPERTY, nested=predicate)

    @staticmethod
    def has_type(*names: str) -> PrimPredicate:
        """Prims whose type name is exactly one of ``names``."""
        return PrimPredicate(PrimPredicateKind.HAS_TYPE, names)

    @staticmethod
    def is_a_type(*names: str) -> PrimPredicate:
        """Prims of one of the types ``names`` or a type derived from one."""
        return PrimPredicate(PrimPredicateKind.IS_A_TYPE, names)

    @staticmethod
    def has_schema(*names: str) -> PrimPredicate:
        """Prims whose type name or one of whose applied API schemas is in ``names``."""
        return PrimPredicate(PrimPredicateKind.HAS_SCHEMA, names)

    @staticmethod
    def has_applied_schema(*names: str) -> PrimPredicate:
        """Prims with one of the applied API schemas ``names`` (``:instance`` included)."""
        return PrimPredicate(PrimPredicateKind.HAS_APPLIED_SCHEMA, names)

    @staticmethod
    def has_applied_schema_in_namespace(*families: str) -> PrimPredicate:
        """Prims with an applied API schema whose leading ``:`` components are a family."""
        return PrimPredicate(PrimPredicateKind.HAS_APPLIED_SCHEMA_IN_NAMESPACE, families)

    @staticmethod
    def has_path(*paths: str) -> PrimPredicate:
        """The prims at ``paths`` (absolute prim paths)."""
        return PrimPredicate(PrimPredicateKind.HAS_PATH, paths)

    @staticmethod
    def is_under_path(*paths: str) -> PrimPredicate:
        """Prims at or below one of ``paths`` (whole path components)."""
        return PrimPredicate(PrimPredicateKind.IS_UNDER_PATH, paths)

    @staticmethod
    def has_kind(*kinds: str) -> PrimPredicate:
        """Prims whose model kind is exactly one of ``kinds``."""
        return PrimPredicate(PrimPredicateKind.HAS_KIND, kinds)

    @staticmethod
    def has_purpose(*purposes: str) -> PrimPredicate:
        """Imageable prims whose (inherited) purpose is one of ``purposes``."""
        return PrimPredicate(PrimPredicateKind.HAS_PURPOSE, purposes)

    @staticmethod
    def has_metadata(*paths: str) -> PrimPredicate:
        """Prims on which one of the metadata ``paths`` resolves (whatever its value)."""
        return PrimPredicate(PrimPredicateKind.HAS_METADATA, paths)


class PropertyPredicate(_Frozen):
    """An immutable property-predicate tree (see :class:`PrimPredicate`); ``nested`` is
    always None."""

    __slots__ = ("kind", "nested", "strings", "subpredicates")
    kind: PropertyPredicateKind
    strings: tuple[str, ...]
    subpredicates: tuple[PropertyPredicate, ...]
    nested: None

    def __init__(
        self,
        kind: PropertyPredicateKind | int,
        strings: Iterable[str] = (),
        subpredicates: Iterable[PropertyPredicate] = (),
        nested: None = None,
    ) -> None:
        kind = PropertyPredicateKind(kind)
        what = f"PropertyPredicate {kind.name}"
        if nested is not None:
            raise TypeError(f"{what}: property predicates have no nested predicate")
        strs = _strings(f"{what} strings", strings, at_least_one=False)
        subs = tuple(subpredicates)
        if kind in _PROPERTY_STRING_KINDS:
            if subs:
                raise TypeError(f"{what} takes strings only")
            strs = _strings(what, strs)
        elif kind in _COMBINATOR_VALUES or kind == _NOT_VALUE:
            if strs:
                raise TypeError(f"{what} takes subpredicates only")
            subs = _children(what, PropertyPredicate, subs)
            if kind == _NOT_VALUE and len(subs) != 1:
                raise TypeError(f"{what} takes exactly one subpredicate, got {len(subs)}")
        elif strs or subs:
            raise TypeError(f"{what} takes no value")
        self._init(kind=kind, strings=strs, subpredicates=subs, nested=None)

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
        return PropertyPredicate(PropertyPredicateKind.AND, subpredicates=predicates)

    @staticmethod
    def or_(*predicates: PropertyPredicate) -> PropertyPredicate:
        """Matches properties some predicate matches."""
        return PropertyPredicate(PropertyPredicateKind.OR, subpredicates=predicates)

    @staticmethod
    def not_(predicate: PropertyPredicate) -> PropertyPredicate:
        """Matches properties the predicate does not match."""
        return PropertyPredicate(PropertyPredicateKind.NOT, subpredicates=(predicate,))

    @staticmethod
    def declared_by_schema(*names: str) -> PropertyPredicate:
        """Properties whose name one of the schemas ``names`` declares (applied or not)."""
        return PropertyPredicate(PropertyPredicateKind.DECLARED_BY_SCHEMA, names)

    @staticmethod
    def has_name(*names: str) -> PropertyPredicate:
        """The properties named ``names``."""
        return PropertyPredicate(PropertyPredicateKind.HAS_NAME, names)

    @staticmethod
    def in_namespace(*namespaces: str) -> PropertyPredicate:
        """Properties strictly inside one of ``namespaces`` (on ``:`` boundaries)."""
        return PropertyPredicate(PropertyPredicateKind.IN_NAMESPACE, namespaces)

    @staticmethod
    def has_metadata(*paths: str) -> PropertyPredicate:
        """Properties on which one of the metadata ``paths`` resolves."""
        return PropertyPredicate(PropertyPredicateKind.HAS_METADATA, paths)

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
        """Properties declared ``custom``."""
        return PropertyPredicate(PropertyPredicateKind.IS_CUSTOM)

    @staticmethod
    def is_authored() -> PropertyPredicate:
        """Properties with an authored opinion (not only a schema fallback)."""
        return PropertyPredicate(PropertyPredicateKind.IS_AUTHORED)


class Selector(_Frozen):
    """Which prims and properties a population description selects.

    A ``None`` predicate means ``none()``, so a bare ``Selector()`` selects nothing. The
    metadata paths name prim and property metadata to populate for the selected prims.
    """

    __slots__ = (
        "prim_metadata_paths",
        "prim_predicate",
        "property_metadata_paths",
        "property_predicate",
    )
    prim_predicate: PrimPredicate
    property_predicate: PropertyPredicate
    prim_metadata_paths: tuple[str, ...]
    property_metadata_paths: tuple[str, ...]

    def __init__(
        self,
        prim_predicate: PrimPredicate | None = None,
        property_predicate: PropertyPredicate | None = None,
        prim_metadata_paths: Iterable[str] = (),
        property_metadata_paths: Iterable[str] = (),
    ) -> None:
        if prim_predicate is None:
            prim_predicate = PrimPredicate.none()
        if property_predicate is None:
            property_predicate = PropertyPredicate.none()
        if not isinstance(prim_predicate, PrimPredicate):
            raise TypeError(
                f"Selector prim_predicate: expected a PrimPredicate, got "
                f"{type(prim_predicate).__name__}"
            )
        if not isinstance(property_predicate, PropertyPredicate):
            raise TypeError(
                f"Selector property_predicate: expected a PropertyPredicate, got "
                f"{type(property_predicate).__name__}"
            )
        self._init(
            prim_predicate=prim_predicate,
            property_predicate=property_predicate,
            prim_metadata_paths=_strings(
                "Selector prim_metadata_paths", prim_metadata_paths, at_least_one=False
            ),
            property_metadata_paths=_strings(
                "Selector property_metadata_paths", property_metadata_paths, at_least_one=False
            ),
        )


def as_domains(value: object, what: str = "Desc") -> PopulationDomain | int:
    """``value`` as a uint32 domain bitmask: a ``PopulationDomain`` when every bit is known,
    else the int (unknown bits pass through). TypeError / ValueError name ``what``."""
    if isinstance(value, bool):
        raise TypeError(f"{what}: domains must be a PopulationDomain or int, got bool")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{what}: domains must be a PopulationDomain or int, got {type(value).__name__}"
        ) from None
    if not 0 <= number < 1 << 32:
        raise ValueError(f"{what}: domains must fit in uint32, got {number}")
    known = number & int(PopulationDomain.ALL)
    return PopulationDomain(known) if known == number else number


class Desc(_Frozen):
    """A population description: domains, selectors and stage metadata paths.

    ``domains`` defaults to NONE: a desc populates what its selectors choose, plus whatever
    its domains bring.
    """

    __slots__ = ("domains", "selectors", "stage_metadata_paths")
    domains: PopulationDomain | int
    selectors: tuple[Selector, ...]
    stage_metadata_paths: tuple[str, ...]

    def __init__(
        self,
        domains: PopulationDomain | int = PopulationDomain.NONE,
        selectors: Iterable[Selector] = (),
        stage_metadata_paths: Iterable[str] = (),
    ) -> None:
        if isinstance(selectors, Selector):
            raise TypeError("Desc selectors: expected a sequence of Selector, got a Selector")
        try:
            items = tuple(selectors)
        except TypeError:
            raise TypeError(
                f"Desc selectors: expected a sequence of Selector, got {type(selectors).__name__}"
            ) from None
        for item in items:
            if not isinstance(item, Selector):
                raise TypeError(f"Desc selectors: expected Selector, got {type(item).__name__}")
        self._init(
            domains=as_domains(domains),
            selectors=items,
            stage_metadata_paths=_strings(
                "Desc stage_metadata_paths", stage_metadata_paths, at_least_one=False
            ),
        )


def normalize_descs(descs: Any) -> tuple[Desc, ...]:
    """One :class:`Desc` or a sequence of them, as a tuple; TypeError naming ``descs``."""
    if isinstance(descs, Desc):
        return (descs,)
    if isinstance(descs, (str, bytes)) or not isinstance(descs, Iterable):
        raise TypeError(f"descs: expected a Desc or a sequence of Desc, got {type(descs).__name__}")
    items = tuple(descs)
    for item in items:
        if not isinstance(item, Desc):
            raise TypeError(f"descs: expected Desc elements, got {type(item).__name__}")
    return items


def _invalid(message: str) -> NoReturn:
    raise OvstageError(ErrorCode.INVALID_ARGUMENT, message)


def _check_metadata_path(what: str, path: str) -> None:
    if any(not part for part in path.split(":")):
        _invalid(f"{what}: metadata path {path!r} has an empty ':' component")


def _is_prim_path(path: str) -> bool:
    """Whether ``path`` is ``/`` or an absolute prim path (no property, target or variant)."""
    if path == "/":
        return True
    from ._usd import Sdf

    if Sdf is not None:
        if not Sdf.Path.IsValidPathString(path):
            return False
        sdf_path = Sdf.Path(path)
        return bool(
            sdf_path.IsAbsolutePath()
            and sdf_path.IsPrimPath()
            and not sdf_path.ContainsPrimVariantSelection()
        )
    # Without USD: the same rule for plain identifiers.
    parts = path.split("/")
    return parts[0] == "" and all(p.isidentifier() for p in parts[1:])


def _check_prim_predicate(where: str, pred: PrimPredicate, seen: set[int]) -> None:
    if id(pred) in seen:
        return
    seen.add(id(pred))
    kind = pred.kind
    if kind in (PrimPredicateKind.HAS_PATH, PrimPredicateKind.IS_UNDER_PATH):
        for path in pred.strings:
            if not _is_prim_path(path):
                _invalid(
                    f"{where}: {kind.name} needs absolute prim paths (no property, target or "
                    f"variant selection), got {path!r}"
                )
    elif kind == PrimPredicateKind.HAS_METADATA:
        for path in pred.strings:
            _check_metadata_path(f"{where} HAS_METADATA", path)
    for sub in pred.subpredicates:
        _check_prim_predicate(where, sub, seen)
    if pred.nested is not None:
        _check_property_predicate(where, pred.nested, seen)


def _check_property_predicate(where: str, pred: PropertyPredicate, seen: set[int]) -> None:
    if id(pred) in seen:
        return
    seen.add(id(pred))
    if pred.kind == PropertyPredicateKind.HAS_METADATA:
        for path in pred.strings:
            _check_metadata_path(f"{where} HAS_METADATA", path)
    for sub in pred.subpredicates:
        _check_property_predicate(where, sub, seen)


def validate_paths(descs: Iterable[Desc]) -> None:
    """Reject path arguments a population cannot use: ``HAS_PATH`` / ``IS_UNDER_PATH`` values
    that are not absolute prim paths and metadata paths with an empty component
    (``OvstageError(INVALID_ARGUMENT)`` naming the desc and selector)."""
    seen: set[int] = set()
    for d, desc in enumerate(descs):
        for path in desc.stage_metadata_paths:
            _check_metadata_path(f"descs[{d}].stage_metadata_paths", path)
        for s, selector in enumerate(desc.selectors):
            where = f"descs[{d}].selectors[{s}]"
            for path in selector.prim_metadata_paths:
                _check_metadata_path(f"{where}.prim_metadata_paths", path)
            for path in selector.property_metadata_paths:
                _check_metadata_path(f"{where}.property_metadata_paths", path)
            _check_prim_predicate(f"{where}.prim_predicate", selector.prim_predicate, seen)
            _check_property_predicate(
                f"{where}.property_predicate", selector.property_predicate, seen
            )
