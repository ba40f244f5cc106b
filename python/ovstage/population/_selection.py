"""Which prims and properties a population reads: domains and descs evaluated on a USD stage.

Interface (used by the writer and the public API; keep it stable):
- :func:`resolve_scope` — the prims to populate, parents before children, each with the
  properties chosen for it and what else it receives (metadata, derived transforms);
- :func:`builtins_of` — the reserved ``usd-prim-type`` / ``usd-schemas`` /
  ``usd-ancestor-types`` values of a populated prim;
- :func:`instancing_table` — instance roots and their prototypes, for ``ovstage.instancing``;
  :func:`register_table` / :func:`table_for` keep the table of each populated stage.

Candidates. The prims USD's default traversal visits (active, loaded, defined, not abstract)
below the root, without descending into native instances (no instance proxies), followed by
the prototypes those instances use (``/__Prototype_<n>`` paths), traversed the same way.

Domains (a bitmask; several descs OR theirs):

- RENDERING claims imageable and shading content: ``UsdGeom.Imageable`` prims (geometry,
  xforms, scopes, cameras, ...), ``UsdShade`` materials, node graphs and shaders, lights (the
  ``UsdLux`` ``LightAPI``), every native instance root, and typeless prims (the containers
  such content is grouped in). It publishes their attributes and relationships (see
  "published properties"). Typed prims of other schemas (a physics scene, render settings,
  ...) are not rendering content.
- PHYSICS claims prims with a physics schema: a schema whose name starts with ``Physics``
  (UsdPhysics) or ``Physx`` (PhysX) as the prim's type, one of the type's base types or an
  applied API schema (rigid bodies, colliders, mass, articulation roots, joints, physics
  scenes, collision groups, physics materials, drives, limits, ...). It publishes the
  properties those physics schemas declare, every property in a ``physics:`` or ``physx*:``
  namespace, and for a collider (``PhysicsCollisionAPI``) the properties its geometry type
  declares (the shape: ``radius``, ``points``, ...). It also writes ``usd-metadata:typeName``.

Selectors: a prim is populated when at least one selector's prim predicate accepts it; it gets
the union of the properties the property predicates of those selectors accept (among all of
its authored and schema-declared properties), and their metadata paths. A prim both a domain
and selectors claim gets the union of both.

Published properties: an attribute that has a value (authored, or a schema fallback), a
relationship that is authored (even without targets). Never the transform storage names
(``omni:xform``, ``omni:resetXformStack``, ``omni:fabric:*`` matrices).

Ancestors come along: every ancestor of a populated prim that is not populated in its own right
is populated with only the reserved names (plus the derived transform when xformable).
Derived transforms (``omni:xform`` / ``omni:resetXformStack``) go to every populated xformable
prim; ``omni:fabric:worldMatrix`` is created for them only when RENDERING is not among the
domains.

Built-ins: ``usd-prim-type`` on typed prims, ``usd-schemas`` (applied API schemas, plus the
family of each multiple-apply instance) on every prim, ``usd-ancestor-types`` = the base
schema types of the prim's type down to ``Typed``. Instance roots get ``XformInstance``
(``ScopeInstance`` for a ``Scope``), ``GeomInstanceAPI`` and, outside prototypes,
``GeomInstanceRootAPI`` added to their schemas, and just ``Xformable`` as ancestor type; an
instance root PHYSICS or a selector populates also writes ``usd-metadata:typeName``. An
instanceable prim below a point instancer that PHYSICS or a selector populates keeps its own
built-ins (no ancestor types when RENDERING is on) and is still an instance root.

Path predicates (``HAS_PATH``, ``IS_UNDER_PATH``) never match a prim inside a prototype.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._enums import PopulationDomain
from ._descs import (
    Desc,
    PrimPredicate,
    PrimPredicateKind,
    PropertyPredicate,
    PropertyPredicateKind,
    Selector,
    normalize_descs,
    validate_paths,
)
from ._mapping import NEVER_PUBLISHED
from ._usd import AVAILABLE, Sdf, Tf, Usd, UsdGeom

if TYPE_CHECKING:
    from .._stage import Stage

if AVAILABLE:
    from pxr import UsdLux, UsdShade
else:  # pragma: no cover - exercised without usd-core
    UsdLux = UsdShade = None

_RENDERING = int(PopulationDomain.RENDERING)
_PHYSICS = int(PopulationDomain.PHYSICS)
_KNOWN_DOMAINS = int(PopulationDomain.ALL)

#: Stage column names that USD properties are never published under (the derived transform
#: attributes and the storage names behind them).
TRANSFORM_STORAGE_NAMES = NEVER_PUBLISHED

#: Name prefixes of physics schemas (UsdPhysics, PhysX).
_PHYSICS_SCHEMA_PREFIXES = ("Physics", "Physx")
_INSTANCE_NAME = "__INSTANCE_NAME__"


@dataclass(slots=True)
class PrimScope:
    """One prim to populate.

    ``properties``: the USD properties chosen for it (empty for an ancestor that only came
    along, ``reserved_only``). ``derived_transform``: write ``omni:xform`` /
    ``omni:resetXformStack``; ``world_matrix``: also create ``omni:fabric:worldMatrix``
    (RENDERING not among the domains); ``type_metadata``: write ``usd-metadata:typeName``.
    ``instance_root``: a native instance root (``prototype`` is its prototype's path);
    ``instance_tags``: it gets the instance-root built-ins (``XformInstance`` ...);
    ``in_prototype``: the prim lives inside a prototype. ``domains``: the domain bits that
    claimed it; ``by_selector``: a selector claimed it. ``path``: the prim's path (filled in
    when not given); ``property_names``: the names of ``properties``, in the same order
    (asking USD for a property's name is slow). ``lazy`` (RENDERING claimed the prim, for a
    reader that takes every property): ``properties`` is empty and the reader takes
    ``publishable_properties(prim, lazy=True)`` itself when it reads the prim.
    """

    prim: Any
    properties: list[Any] = field(default_factory=list)
    reserved_only: bool = False
    prim_metadata_paths: tuple[str, ...] = ()
    property_metadata_paths: tuple[str, ...] = ()
    derived_transform: bool = False
    world_matrix: bool = False
    type_metadata: bool = False
    instance_root: bool = False
    instance_tags: bool = False
    in_prototype: bool = False
    prototype: str = ""
    domains: int = 0
    by_selector: bool = False
    path: str = ""
    property_names: list[str] = field(default_factory=list)
    lazy: bool = False

    def __post_init__(self) -> None:
        if not self.path:
            self.path = str(self.prim.GetPath())
        if not self.lazy and len(self.property_names) != len(self.properties):
            self.property_names = [p.GetName() for p in self.properties]


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

    def prototype_roots(self) -> list[str]:
        """The prototype roots some instance root uses, sorted."""
        return sorted(set(self.prototype_of.values()))

    def instance_roots(self, prototype_root: str) -> list[str]:
        """The instance roots using ``prototype_root``, sorted (empty if none)."""
        return sorted(i for i, p in self.prototype_of.items() if p == prototype_root)


# -- schema facts (cached: the schema registry does not change once built) -----------------


@functools.cache
def _schema_type(name: str) -> Any:
    """The Tf.Type of a schema type name (``Mesh``) or C++ type name (``UsdGeomMesh``)."""
    tf_type = Usd.SchemaRegistry.GetTypeFromSchemaTypeName(name)
    if tf_type.isUnknown:
        tf_type = Tf.Type.FindByName(name)
    return tf_type


@functools.cache
def ancestor_type_names(type_name: str) -> tuple[str, ...]:
    """The schema types ``type_name`` derives from, nearest first, down to ``Typed`` (its own
    type and ``SchemaBase`` excluded); empty for "" and types no loaded schema defines."""
    if not type_name:
        return ()
    tf_type = Usd.SchemaRegistry.GetTypeFromSchemaTypeName(type_name)
    if tf_type.isUnknown:
        return ()
    names = []
    for base in tf_type.GetAllAncestorTypes()[1:]:
        name = str(Usd.SchemaRegistry.GetSchemaTypeName(base))
        if name and name != "SchemaBase":
            names.append(name)
    return tuple(names)


def _is_physics_name(name: str) -> bool:
    return name.startswith(_PHYSICS_SCHEMA_PREFIXES)


@functools.cache
def _declared_by(name: str) -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
    """Property names schema ``name`` declares (tried as a type and as an API schema), and
    ``(prefix, suffix)`` templates of a multiple-apply family named without an instance."""
    registry = Usd.SchemaRegistry()
    names: set[str] = set()
    templates: list[tuple[str, str]] = []
    definition = registry.FindConcretePrimDefinition(name)
    if definition is not None:
        names.update(definition.GetPropertyNames())
    else:
        cls = getattr(_schema_type(name), "pythonClass", None)
        if cls is not None and hasattr(cls, "GetSchemaAttributeNames"):
            names.update(cls.GetSchemaAttributeNames(True))
    family, _, instance = name.partition(":")
    definition = registry.FindAppliedAPIPrimDefinition(family)
    if definition is not None:
        for prop in definition.GetPropertyNames():
            if _INSTANCE_NAME not in prop:
                names.add(prop)
            elif instance:
                names.add(prop.replace(_INSTANCE_NAME, instance))
            else:
                prefix, _, suffix = prop.partition(_INSTANCE_NAME)
                templates.append((prefix, suffix))
    return frozenset(names), tuple(templates)


def _declares(name: str, prop_name: str) -> bool:
    names, templates = _declared_by(name)
    if prop_name in names:
        return True
    for prefix, suffix in templates:
        middle = prop_name[len(prefix) : len(prop_name) - len(suffix)]
        if (
            len(prop_name) > len(prefix) + len(suffix)
            and prop_name.startswith(prefix)
            and prop_name.endswith(suffix)
            and ":" not in middle
        ):
            return True
    return False


@functools.cache
def _own_declared(type_name: str) -> frozenset[str]:
    """Properties a physics type declares beyond its nearest non-physics base type."""
    names, _ = _declared_by(type_name)
    for base in ancestor_type_names(type_name):
        if not _is_physics_name(base):
            inherited, _ = _declared_by(base)
            return names - inherited
    return names


def applied_schema_names(prim: Any) -> tuple[str, ...]:
    """The prim's applied API schemas; an instance ``Family:name`` of a multiple-apply schema
    also contributes ``Family`` (once, after its first instance)."""
    names: list[str] = []
    for schema in prim.GetAppliedSchemas():
        schema = str(schema)
        if schema not in names:
            names.append(schema)
        family, sep, _ = schema.partition(":")
        if sep and family not in names:
            names.append(family)
    return tuple(names)


def _metadata_resolves(obj: Any, path: str) -> bool:
    field_name, _, key_path = path.partition(":")
    if key_path:
        return bool(obj.HasMetadataDictKey(field_name, key_path))
    return bool(obj.HasMetadata(field_name))


def _in_namespace(name: str, namespace: str) -> bool:
    return name.startswith(namespace + ":") and len(name) > len(namespace) + 1


#: A prim's type name and applied schemas: prims of one kind share a prim definition.
PrimKind = tuple[str, tuple[str, ...]]

_definitions: dict[PrimKind, tuple[frozenset[str], frozenset[str]]] = {}


def prim_kind(prim: Any) -> PrimKind:
    """The prim's type name and applied schemas (what its prim definition depends on)."""
    return (str(prim.GetTypeName()), tuple(prim.GetAppliedSchemas()))


def _definition_names(prim: Any, kind: PrimKind | None) -> tuple[frozenset[str], frozenset[str]]:
    key = prim_kind(prim) if kind is None else kind
    names = _definitions.get(key)
    if names is None:
        definition = prim.GetPrimDefinition()
        declared = frozenset(definition.GetPropertyNames())
        fallback = frozenset(
            n for n in declared if definition.GetAttributeFallbackValue(n) is not None
        )
        names = _definitions[key] = (fallback, declared)
    return names


def _fallback_names(prim: Any, kind: PrimKind | None = None) -> frozenset[str]:
    """Names of the attributes the prim's schemas give a fallback value (cached per kind;
    ``kind``: the prim's, when the caller has it)."""
    return _definition_names(prim, kind)[0]


def schema_property_names(prim: Any, kind: PrimKind | None = None) -> frozenset[str]:
    """Names of the properties the prim's schemas declare (cached per kind): their value
    type is the schema's on every prim of that kind."""
    return _definition_names(prim, kind)[1]


def publishable_properties(
    prim: Any, *, lazy: bool = False, kind: PrimKind | None = None
) -> list[tuple[str, Any]]:
    """``(name, property)`` of the prim's properties that have something to populate:
    attributes with a value (authored, or a schema fallback), authored relationships; never
    the transform storage names. In property-name order.

    ``lazy`` (what a reader that takes every property wants; it is much cheaper): a property
    with only a schema fallback comes as ``(name, None)``, the reader taking its value from
    the schema, and an authored attribute is not asked whether it holds a value (the reader
    skips it when it reads none). ``kind``: the prim's, when the caller has it."""
    if lazy:
        # Wrappers for the authored properties only; both lists are in property-name order.
        authored = dict(
            zip(prim.GetAuthoredPropertyNames(), prim.GetAuthoredProperties(), strict=True)
        )
        fallback = _fallback_names(prim, kind)
        lazy_found: list[tuple[str, Any]] = []
        for name in prim.GetPropertyNames():
            if name in TRANSFORM_STORAGE_NAMES:
                continue
            prop = authored.get(name)
            if prop is not None or name in fallback:
                lazy_found.append((name, prop))
        return lazy_found
    authored_names = set(prim.GetAuthoredPropertyNames())
    fallback = _fallback_names(prim)
    found = []
    # Both lists are in property-name order; taking the names in one call is much cheaper
    # than asking each property for its name.
    for name, prop in zip(prim.GetPropertyNames(), prim.GetProperties(), strict=True):
        if name in TRANSFORM_STORAGE_NAMES:
            continue
        if name in authored_names:
            if isinstance(prop, Usd.Relationship) or prop.HasValue():
                found.append((name, prop))
        elif name in fallback:
            found.append((name, prop))
    return found


def _under_point_instancer(prim: Any) -> bool:
    parent = prim.GetParent()
    while parent and not parent.IsPseudoRoot():
        if parent.IsA(UsdGeom.PointInstancer):
            return True
        parent = parent.GetParent()
    return False


# -- predicate evaluation ------------------------------------------------------------------


class _Evaluator:
    """Evaluates predicate trees on the prims of one USD stage, memoising results on
    ancestors (``HAS_PARENT`` / ``HAS_ANCESTOR`` walk up the tree)."""

    def __init__(self) -> None:
        self._memo: dict[tuple[int, str], bool] = {}

    def prim(self, pred: PrimPredicate, prim: Any) -> bool:
        kind = pred.kind
        if kind == PrimPredicateKind.NONE:
            return False
        if kind == PrimPredicateKind.ALL:
            return True
        if kind == PrimPredicateKind.AND:
            return all(self.prim(p, prim) for p in pred.subpredicates)
        if kind == PrimPredicateKind.OR:
            return any(self.prim(p, prim) for p in pred.subpredicates)
        if kind == PrimPredicateKind.NOT:
            return not self.prim(pred.subpredicates[0], prim)
        if kind == PrimPredicateKind.HAS_PARENT:
            parent = prim.GetParent()
            return (
                bool(parent)
                and not parent.IsPseudoRoot()
                and self._memoised(pred.subpredicates[0], parent)
            )
        if kind == PrimPredicateKind.HAS_ANCESTOR:
            parent = prim.GetParent()
            if not parent or parent.IsPseudoRoot():
                return False
            return self._memoised(pred.subpredicates[0], parent) or self._memoised(pred, parent)
        if kind == PrimPredicateKind.HAS_PROPERTY:
            nested = pred.nested
            assert nested is not None
            return any(self.property(nested, prop) for prop in prim.GetProperties())
        strings = pred.strings
        if kind == PrimPredicateKind.HAS_TYPE:
            return str(prim.GetTypeName()) in strings
        if kind == PrimPredicateKind.IS_A_TYPE:
            for name in strings:
                tf_type = _schema_type(name)
                if not tf_type.isUnknown and prim.IsA(tf_type):
                    return True
            return False
        if kind == PrimPredicateKind.HAS_SCHEMA:
            if str(prim.GetTypeName()) in strings:
                return True
            return any(str(s) in strings for s in prim.GetAppliedSchemas())
        if kind == PrimPredicateKind.HAS_APPLIED_SCHEMA:
            return any(str(s) in strings for s in prim.GetAppliedSchemas())
        if kind == PrimPredicateKind.HAS_APPLIED_SCHEMA_IN_NAMESPACE:
            applied = [str(s) for s in prim.GetAppliedSchemas()]
            return any(s == f or s.startswith(f + ":") for s in applied for f in strings)
        if kind in (PrimPredicateKind.HAS_PATH, PrimPredicateKind.IS_UNDER_PATH):
            if prim.IsInPrototype() or prim.IsPrototype() or prim.IsInstanceProxy():
                return False
            path = prim.GetPath()
            if kind == PrimPredicateKind.HAS_PATH:
                return str(path) in strings
            return any(path.HasPrefix(Sdf.Path(p)) for p in strings)
        if kind == PrimPredicateKind.HAS_KIND:
            return str(Usd.ModelAPI(prim).GetKind()) in strings
        if kind == PrimPredicateKind.HAS_PURPOSE:
            if not prim.IsA(UsdGeom.Imageable):
                return False
            return str(UsdGeom.Imageable(prim).ComputePurpose()) in strings
        if kind == PrimPredicateKind.HAS_METADATA:
            return any(_metadata_resolves(prim, p) for p in strings)
        raise AssertionError(f"unhandled prim predicate kind {kind!r}")

    def _memoised(self, pred: PrimPredicate, prim: Any) -> bool:
        key = (id(pred), str(prim.GetPath()))
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self.prim(pred, prim)
        return hit

    def property(self, pred: PropertyPredicate, prop: Any) -> bool:
        kind = pred.kind
        if kind == PropertyPredicateKind.NONE:
            return False
        if kind == PropertyPredicateKind.ALL:
            return True
        if kind == PropertyPredicateKind.AND:
            return all(self.property(p, prop) for p in pred.subpredicates)
        if kind == PropertyPredicateKind.OR:
            return any(self.property(p, prop) for p in pred.subpredicates)
        if kind == PropertyPredicateKind.NOT:
            return not self.property(pred.subpredicates[0], prop)
        if kind == PropertyPredicateKind.DECLARED_BY_SCHEMA:
            name = prop.GetName()
            return any(_declares(schema, name) for schema in pred.strings)
        if kind == PropertyPredicateKind.HAS_NAME:
            return prop.GetName() in pred.strings
        if kind == PropertyPredicateKind.IN_NAMESPACE:
            name = prop.GetName()
            return any(_in_namespace(name, ns) for ns in pred.strings)
        if kind == PropertyPredicateKind.HAS_METADATA:
            return any(_metadata_resolves(prop, p) for p in pred.strings)
        if kind == PropertyPredicateKind.IS_ATTRIBUTE:
            return isinstance(prop, Usd.Attribute)
        if kind == PropertyPredicateKind.IS_RELATIONSHIP:
            return isinstance(prop, Usd.Relationship)
        if kind == PropertyPredicateKind.IS_CUSTOM:
            return bool(prop.IsCustom())
        if kind == PropertyPredicateKind.IS_AUTHORED:
            return bool(prop.IsAuthored())
        raise AssertionError(f"unhandled property predicate kind {kind!r}")


# -- domains -------------------------------------------------------------------------------


def _rendering_claims(prim: Any) -> bool:
    return bool(
        prim.IsInstance()
        or not prim.GetTypeName()
        or prim.IsA(UsdGeom.Imageable)
        or prim.IsA(UsdShade.NodeGraph)
        or prim.IsA(UsdShade.Shader)
        or prim.HasAPI(UsdLux.LightAPI)
    )


def _physics_schemas(prim: Any) -> list[str]:
    """The physics schemas of a prim: its type when it or a base type is one, and its
    applied physics API schemas."""
    found = []
    type_name = str(prim.GetTypeName())
    if type_name and (
        _is_physics_name(type_name) or any(map(_is_physics_name, ancestor_type_names(type_name)))
    ):
        found.append(type_name)
    found.extend(s for s in map(str, prim.GetAppliedSchemas()) if _is_physics_name(s))
    return found


def _physics_property(prim: Any, schemas: list[str], name: str) -> bool:
    if name.startswith("physics:") or (name.startswith("physx") and ":" in name):
        return True
    type_name = str(prim.GetTypeName())
    for schema in schemas:
        if schema == type_name:
            if name in _own_declared(schema):
                return True
        elif _declares(schema, name):
            return True
    if "PhysicsCollisionAPI" in schemas and type_name:
        return name in _declared_by(type_name)[0]
    return False


# -- scope ---------------------------------------------------------------------------------


def _candidates(usd_stage: Any, root: str) -> Iterable[Any]:
    """The prims to consider, parents before children: the stage below ``root`` without
    instance proxies, then the prototypes of the instances met (all of them for ``/``)."""
    start = usd_stage.GetPrimAtPath(root)
    if not start:
        return
    prototypes: dict[str, Any] = {}
    for prim in Usd.PrimRange(start):
        if prim.IsPseudoRoot():
            continue
        yield prim
        if prim.IsInstance():
            proto = prim.GetPrototype()
            prototypes.setdefault(str(proto.GetPath()), proto)
    if root == "/":
        for proto in usd_stage.GetPrototypes():
            prototypes.setdefault(str(proto.GetPath()), proto)
    done: set[str] = set()
    pending = list(prototypes.values())
    while pending:
        proto = pending.pop(0)
        key = str(proto.GetPath())
        if key in done:
            continue
        done.add(key)
        for prim in Usd.PrimRange(proto):
            yield prim
            if prim.IsInstance():  # nested instancing
                pending.append(prim.GetPrototype())


def _merge(into: list[str], more: Sequence[str]) -> None:
    for item in more:
        if item not in into:
            into.append(item)


def _entry(
    prim: Any,
    path: str,
    domains: int,
    selectors: Sequence[Selector],
    evaluator: _Evaluator,
    lazy: bool,
) -> PrimScope | None:
    """The scope of one prim, or None when neither a domain nor a selector claims it
    (``lazy``: see :func:`resolve_scope`)."""
    claimed = 0
    physics: list[str] = []
    if domains & _RENDERING and _rendering_claims(prim):
        claimed |= _RENDERING
    if domains & _PHYSICS:
        physics = _physics_schemas(prim)
        if physics:
            claimed |= _PHYSICS
    chosen = [s for s in selectors if evaluator.prim(s.prim_predicate, prim)]
    if not claimed and not chosen:
        return None
    prim_md: list[str] = []
    prop_md: list[str] = []
    for selector in chosen:
        _merge(prim_md, selector.prim_metadata_paths)
        _merge(prop_md, selector.property_metadata_paths)
    lazy = lazy and bool(claimed & _RENDERING)  # RENDERING publishes them all
    # A lazy entry lists nothing: the reader takes publishable_properties(lazy=True) itself,
    # so the scope holds no property (nor name) of any prim while it is read.
    found = [] if lazy else publishable_properties(prim)
    if not claimed & _RENDERING:
        found = [
            (name, prop)
            for name, prop in found
            if (claimed & _PHYSICS and _physics_property(prim, physics, name))
            or any(evaluator.property(s.property_predicate, prop) for s in chosen)
        ]
    instance = bool(prim.IsInstance())
    in_prototype = bool(prim.IsInPrototype() or prim.IsPrototype())
    # An instanceable prim below a point instancer keeps its authored built-ins when PHYSICS
    # or a selector populates it.
    tags = instance and not ((claimed & _PHYSICS or chosen) and _under_point_instancer(prim))
    return PrimScope(
        prim,
        [prop for _, prop in found],
        prim_metadata_paths=tuple(prim_md),
        property_metadata_paths=tuple(prop_md),
        derived_transform=bool(prim.IsA(UsdGeom.Xformable)),
        type_metadata=bool(claimed & _PHYSICS) or (tags and bool(chosen)),
        instance_root=instance,
        instance_tags=tags,
        in_prototype=in_prototype,
        prototype=str(prim.GetPrototype().GetPath()) if instance else "",
        domains=claimed,
        by_selector=bool(chosen),
        path=path,
        property_names=[name for name, _ in found],
        lazy=lazy,
    )


def _ancestor_entry(prim: Any, path: str = "") -> PrimScope:
    return PrimScope(
        prim,
        path=path,
        reserved_only=True,
        derived_transform=bool(prim.IsA(UsdGeom.Xformable)),
        in_prototype=bool(prim.IsInPrototype() or prim.IsPrototype()),
    )


def resolve_scope(
    usd_stage: Any, descs: Sequence[Desc] | Desc, root: str = "/", *, lazy: bool = False
) -> Scope:
    """The prims under ``root`` (``/``: the whole stage) that ``descs`` select, with their
    properties, parents before children (see the module docstring for the rules).

    ``descs`` is one :class:`Desc` or a sequence of them (TypeError otherwise); bad path
    arguments raise ``OvstageError(INVALID_ARGUMENT)`` (:func:`validate_paths`, which the
    entry points also call before they enqueue). ``lazy``: entries RENDERING claims list
    their properties lazily (see :class:`PrimScope`), for a reader that takes them all.
    """
    items = normalize_descs(descs)
    validate_paths(items)
    domains = 0
    selectors: list[Selector] = []
    stage_md: list[str] = []
    for desc in items:
        domains |= int(desc.domains)
        selectors.extend(desc.selectors)
        _merge(stage_md, desc.stage_metadata_paths)
    domains &= _KNOWN_DOMAINS
    evaluator = _Evaluator()
    visited: list[tuple[str, Any]] = []
    entries: dict[str, PrimScope] = {}
    needed: set[str] = set()
    if domains or selectors:
        for prim in _candidates(usd_stage, root):
            path = str(prim.GetPath())
            visited.append((path, prim))
            entry = _entry(prim, path, domains, selectors, evaluator, lazy)
            if entry is None:
                continue
            entries[path] = entry
            # Mark the ancestors, walking the path text (prim paths hold no variant here).
            parent = path[: path.rfind("/")]
            while parent and parent not in needed:
                needed.add(parent)
                parent = parent[: parent.rfind("/")]
    prims: list[PrimScope] = []
    if entries and root != "/":
        # Ancestors above the root are not visited: bring them first, top-down.
        above = []
        parent = usd_stage.GetPrimAtPath(root).GetParent()
        while parent and not parent.IsPseudoRoot():
            above.append(parent)
            parent = parent.GetParent()
        prims.extend(_ancestor_entry(p) for p in reversed(above))
    world_matrix = not domains & _RENDERING
    for path, prim in visited:
        entry = entries.get(path)
        if entry is None and path in needed:
            entry = _ancestor_entry(prim, path)
        if entry is not None:
            entry.world_matrix = entry.derived_transform and world_matrix
            prims.append(entry)
    return Scope(domains, prims, tuple(stage_md))


def builtins_of(entry: PrimScope, domains: int) -> Builtins:
    """The reserved names of one populated prim."""
    prim = entry.prim
    schemas = applied_schema_names(prim)
    if entry.instance_tags:
        type_name = "ScopeInstance" if str(prim.GetTypeName()) == "Scope" else "XformInstance"
        extra = (
            ("GeomInstanceAPI",)
            if entry.in_prototype
            else (
                "GeomInstanceAPI",
                "GeomInstanceRootAPI",
            )
        )
        return Builtins(
            type_name, schemas + tuple(e for e in extra if e not in schemas), ("Xformable",)
        )
    type_name = str(prim.GetTypeName())
    ancestors = ancestor_type_names(type_name)
    if entry.instance_root and domains & _RENDERING:
        ancestors = ()  # an instanceable prim below a point instancer, RENDERING on
    return Builtins(type_name or None, schemas, ancestors)


def instancing_table(usd_stage: Any, scope: Scope | None = None) -> InstancingTable:
    """Instance roots and their prototypes: every native instance of the stage and of its
    prototypes (nested instancing), or only the instance roots ``scope`` populates."""
    table = InstancingTable()
    if scope is not None:
        for entry in scope.prims:
            if entry.instance_root and not entry.reserved_only:
                table.prototype_of[entry.path] = entry.prototype
        return table
    for prim in _candidates(usd_stage, "/"):
        if prim.IsInstance():
            table.prototype_of[str(prim.GetPath())] = str(prim.GetPrototype().GetPath())
    return table


# -- per-stage tables ----------------------------------------------------------------------

_tables: weakref.WeakKeyDictionary[Stage, InstancingTable] = weakref.WeakKeyDictionary()


def register_table(stage: Stage, table: InstancingTable) -> None:
    """Record the instancing table of a stage after a successful population (replaces the
    previous one)."""
    _tables[stage] = table


def table_for(stage: Stage) -> InstancingTable | None:
    """The instancing table of a populated stage, None if it was never populated."""
    return _tables.get(stage)
