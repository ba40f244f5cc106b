"""The vocabulary of an export: enums, constants, rule records and the checked options.

Everything a caller passes to an export is turned into an immutable :class:`ExportOptions`
here, before any state is read, so a bad argument fails with nothing done and a message that
names it. Rules come in as dicts (or, for attribute rules, a bare ``str``); unknown keys,
values of the wrong type and unknown enum values are refused.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any

from .._guards import as_uint64
from ..population._descs import PrimPredicate, PropertyPredicate


class ExportSelection(enum.IntEnum):
    """Which state an export looks at."""

    EXPLICIT_PREDICATE = 0
    CHANGED_PROPERTIES_SINCE_ORDINAL = 1


class LayerMode(enum.IntEnum):
    """Specifier of new prim specs."""

    OVER = 0
    DEF = 1


class PathMatch(enum.IntEnum):
    EXACT = 0
    PREFIX = 1


class NameMatch(enum.IntEnum):
    EXACT = 0
    GLOB = 1


class TransformPolicy(enum.IntEnum):
    USD_XFORM_OP = 0
    NONE = 1
    USD_MATRIX_OP = 2


class UnknownMetadataPolicy(enum.IntEnum):
    DROP = 0
    PRESERVE = 1
    FAIL = 2


class SourceApiSchemaPolicy(enum.IntEnum):
    """Whether the applied API schemas population recorded (``usd-schemas``) are exported."""

    EXPLICIT_ONLY = 0
    APPLY_RECORDED = 1


class ExportProjection(enum.IntEnum):
    """Which attributes an export writes besides its attribute rules."""

    EXPLICIT_RULES = 0
    SCHEMA_DECLARED = 1


class RuleFlags(enum.IntFlag):
    NONE = 0
    EXPORT_DEFAULT_VALUE = 1
    DERIVED_ALLOWED = 2
    INFER_CUSTOM_TYPE = 8
    REQUIRED = 16


class PropertyKind(enum.IntEnum):
    INVALID = 0
    RELATIONSHIP = 1
    CONNECTION = 2
    MATERIAL_BINDING = 3


class MetadataKind(enum.IntEnum):
    PRIM = 0
    LAYER_CUSTOM_DATA = 1
    REFERENCES = 2
    LAYER_STANDARD = 3


class ExportDestinationMode(enum.IntEnum):
    """How a destination starts: empty, or from the stored layer."""

    EMPTY = 0
    OPEN_EXISTING = 1


INVALID_DESTINATION_HANDLE = 0
UNKNOWN_APPLIED_API_SCHEMAS_CUSTOM_DATA_KEY = "ovpopulation:unknownAppliedAPISchemas"

#: Most rules of one kind an export takes.
MAX_RULES = 4096


# -- checks ------------------------------------------------------------------------------


def as_enum(value: object, cls: type[enum.IntEnum], name: str) -> Any:
    """``value`` as a member of the closed enum ``cls``: TypeError for a non-int, ValueError
    for a value it does not have."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int ({cls.__name__}), got {type(value).__name__}")
    try:
        return cls(int(value))
    except ValueError:
        raise ValueError(f"{name}: {value} is not a {cls.__name__} value") from None


def as_flags(value: object, name: str) -> int:
    """A uint32 bitmask."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int (uint32 flags), got {type(value).__name__}")
    if not 0 <= value < 2**32:
        raise ValueError(f"{name}: {value} is not a uint32")
    return int(value)


def _as_str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def path_matches(rule_path: str, match: PathMatch, path: str) -> bool:
    """Whether a rule's ``path`` selects prim ``path`` (an empty rule path selects all)."""
    if not rule_path:
        return True
    if match == PathMatch.EXACT:
        return path == rule_path
    return rule_path == "/" or path == rule_path or path.startswith(rule_path + "/")


def name_matches(pattern: str, match: NameMatch, name: str) -> bool:
    """Whether a rule's name (or glob) selects property ``name``."""
    if match == NameMatch.EXACT:
        return name == pattern
    return _glob(pattern)(name) is not None


@cache
def _glob(pattern: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(fnmatch.translate(pattern)).match


# -- rules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttributeRule:
    path: str = ""
    path_match: PathMatch = PathMatch.EXACT
    source_attribute_name: str = ""
    source_attribute_name_match: NameMatch = NameMatch.EXACT
    destination_attribute_name: str = ""
    usd_type_name: str = ""
    required_schema_name: str = ""
    flags: int = 0


@dataclass(frozen=True)
class PrimRule:
    path: str = ""
    path_match: PathMatch = PathMatch.EXACT
    usd_type_name: str = ""
    unknown_type_metadata_key: str = ""


@dataclass(frozen=True)
class ApiSchemaRule:
    path: str = ""
    path_match: PathMatch = PathMatch.EXACT
    schema_name: str = ""
    instance_name: str = ""
    flags: int = 0


@dataclass(frozen=True)
class PropertyRule:
    path: str = ""
    path_match: PathMatch = PathMatch.EXACT
    source_property_name: str = ""
    destination_property_name: str = ""
    usd_type_name: str = ""
    property_kind: PropertyKind = PropertyKind.INVALID
    flags: int = 0


@dataclass(frozen=True)
class MetadataRule:
    path: str = ""
    path_match: PathMatch = PathMatch.EXACT
    source_metadata_name: str = ""
    destination_metadata_name: str = ""
    metadata_kind: MetadataKind = MetadataKind.PRIM
    flags: int = 0


_ENUM_KEYS: dict[str, type[enum.IntEnum]] = {
    "path_match": PathMatch,
    "source_attribute_name_match": NameMatch,
    "property_kind": PropertyKind,
    "metadata_kind": MetadataKind,
}


def _rule(cls: type, entry: object, name: str) -> Any:
    """One rule from its dict: every key known, every value of its type."""
    if not isinstance(entry, Mapping):
        raise TypeError(f"{name} must be a dict, got {type(entry).__name__}")
    known = {f.name for f in fields(cls)}
    values: dict[str, Any] = {}
    for key, value in entry.items():
        if key not in known:
            raise ValueError(f"{name}: unknown key {key!r} (known: {', '.join(sorted(known))})")
        what = f"{name}[{key!r}]"
        if key == "flags":
            values[key] = as_flags(value, what)
        elif key in _ENUM_KEYS:
            values[key] = as_enum(value, _ENUM_KEYS[key], what)
        else:
            values[key] = _as_str(value, what)
    if cls is PropertyRule:
        if "property_kind" not in values:
            raise ValueError(f"{name}: 'property_kind' is required")
        if values["property_kind"] == PropertyKind.INVALID:
            raise ValueError(f"{name}: property_kind INVALID (0) is not a property kind")
    return cls(**values)


def _rules(cls: type, value: object, name: str, bare_str: bool = False) -> tuple[Any, ...]:
    """A rule table: None (no rules) or a list/tuple of rule dicts."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of dicts, got {type(value).__name__}")
    if len(value) > MAX_RULES:
        raise ValueError(f"{name}: {len(value)} rules, at most {MAX_RULES}")
    out = []
    for i, entry in enumerate(value):
        if bare_str and isinstance(entry, str):
            entry = {"source_attribute_name": entry}
        out.append(_rule(cls, entry, f"{name}[{i}]"))
    return tuple(out)


# -- options -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportOptions:
    """The checked arguments of one export (the reference's descriptor)."""

    ordinal: int
    since_ordinal: int = 0
    selection: ExportSelection = ExportSelection.EXPLICIT_PREDICATE
    layer_mode: LayerMode = LayerMode.OVER
    transform_policy: TransformPolicy = TransformPolicy.USD_XFORM_OP
    unknown_metadata_policy: UnknownMetadataPolicy = UnknownMetadataPolicy.DROP
    source_api_schema_policy: SourceApiSchemaPolicy = SourceApiSchemaPolicy.EXPLICIT_ONLY
    projection: ExportProjection = ExportProjection.EXPLICIT_RULES
    prim_predicate: Any = None
    property_predicate: Any = None
    prim_rules: tuple[PrimRule, ...] = field(default=())
    api_schema_rules: tuple[ApiSchemaRule, ...] = field(default=())
    attribute_rules: tuple[AttributeRule, ...] = field(default=())
    property_rules: tuple[PropertyRule, ...] = field(default=())
    metadata_rules: tuple[MetadataRule, ...] = field(default=())


def make_options(
    ordinal: object,
    *,
    since_ordinal: object = 0,
    selection: object = ExportSelection.EXPLICIT_PREDICATE,
    layer_mode: object = LayerMode.OVER,
    transform_policy: object = TransformPolicy.USD_XFORM_OP,
    unknown_metadata_policy: object = UnknownMetadataPolicy.DROP,
    source_api_schema_policy: object = SourceApiSchemaPolicy.EXPLICIT_ONLY,
    projection: object = ExportProjection.EXPLICIT_RULES,
    prim_predicate: object = None,
    property_predicate: object = None,
    prim_rules: object = None,
    api_schema_rules: object = None,
    attribute_rules: object = None,
    property_rules: object = None,
    metadata_rules: object = None,
) -> ExportOptions:
    """Check every export keyword (see the module documentation) into ExportOptions."""
    if prim_predicate is None:
        prim_predicate = PrimPredicate.all()
    elif not isinstance(prim_predicate, PrimPredicate):
        raise TypeError(
            f"prim_predicate must be a PrimPredicate, got {type(prim_predicate).__name__}"
        )
    if property_predicate is None:
        property_predicate = PropertyPredicate.all()
    elif not isinstance(property_predicate, PropertyPredicate):
        raise TypeError(
            "property_predicate must be a PropertyPredicate, got "
            f"{type(property_predicate).__name__}"
        )
    return ExportOptions(
        ordinal=as_uint64(ordinal, "ordinal"),
        since_ordinal=as_uint64(since_ordinal, "since_ordinal"),
        selection=as_enum(selection, ExportSelection, "selection"),
        layer_mode=as_enum(layer_mode, LayerMode, "layer_mode"),
        transform_policy=as_enum(transform_policy, TransformPolicy, "transform_policy"),
        unknown_metadata_policy=as_enum(
            unknown_metadata_policy, UnknownMetadataPolicy, "unknown_metadata_policy"
        ),
        source_api_schema_policy=as_enum(
            source_api_schema_policy, SourceApiSchemaPolicy, "source_api_schema_policy"
        ),
        projection=as_enum(projection, ExportProjection, "projection"),
        prim_predicate=prim_predicate,
        property_predicate=property_predicate,
        prim_rules=_rules(PrimRule, prim_rules, "prim_rules"),
        api_schema_rules=_rules(ApiSchemaRule, api_schema_rules, "api_schema_rules"),
        attribute_rules=_rules(AttributeRule, attribute_rules, "attribute_rules", bare_str=True),
        property_rules=_rules(PropertyRule, property_rules, "property_rules"),
        metadata_rules=_rules(MetadataRule, metadata_rules, "metadata_rules"),
    )


#: The 23 report counters, in the reference's order.
REPORT_KEYS: tuple[str, ...] = (
    "prims_examined",
    "prims_exported",
    "prims_skipped",
    "attributes_examined",
    "attributes_exported",
    "attributes_skipped",
    "attributes_unsupported",
    "api_schemas_examined",
    "api_schemas_applied",
    "api_schemas_skipped",
    "custom_attributes_inferred",
    "unknown_metadata_preserved",
    "transforms_examined",
    "transforms_exported",
    "property_edges_examined",
    "property_edges_exported",
    "property_edges_skipped",
    "property_edges_unsupported",
    "metadata_examined",
    "metadata_exported",
    "metadata_skipped",
    "metadata_unsupported",
    "source_states_unavailable",
)


def new_report() -> dict[str, int]:
    """An all-zero report."""
    return dict.fromkeys(REPORT_KEYS, 0)
