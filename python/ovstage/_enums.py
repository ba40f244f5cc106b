"""Public enumerations of the ovstage Python API.

This module is pure Python and does not need the native extension.
"""

from __future__ import annotations

import enum

__all__ = [
    "AttributeMode",
    "AttributeSemantic",
    "FilterOp",
    "HierarchyComputationModel",
    "HierarchyRelation",
    "LogSeverity",
    "OrdinalAdmissionPolicy",
    "PopulationDomain",
    "PrimMode",
    "Scope",
]


class FilterOp(enum.IntEnum):
    """Operator of a query filter predicate."""

    HAS = 0
    IN = 1
    CONTAINS = 2
    PREFIX = 3
    LT = 4
    LE = 5
    GT = 6
    GE = 7


class PrimMode(enum.IntEnum):
    """How a write or map treats target prims: create-or-update, or create-only."""

    UPSERT = 0
    INSERT = 1


class AttributeMode(enum.IntEnum):
    """What a write or map does on a prim that carries the attribute with another schema:
    refuse (the default), or replace that prim's schema at the op's ordinal."""

    REJECT = 0
    FORCE = 1


class OrdinalAdmissionPolicy(enum.IntEnum):
    """Which mutations at an ordinal older than a retained change of the same cell (or prim
    lifecycle) a stage refuses. The write floors are always checked."""

    DEFAULT = 0  # the active process policy (a fresh process: NONDECREASING)
    FLOOR_ONLY = 1
    NONDECREASING = 2
    STRICTLY_INCREASING = 3


class Scope(enum.IntEnum):
    """Which attributes a write-floor advance applies to."""

    ALL = 0
    INCLUDE = 1
    EXCLUDE = 2


class AttributeSemantic(enum.IntEnum):
    """``ovstage_attribute_semantic_t``: the authored USD role of an attribute."""

    NONE = 0
    ASSET_PATH_ID = 1
    TOKEN_ID = 2
    PATH_EXPRESSION_STRING = 3
    RELATIONSHIP_PATH_ID = 4
    POINT = 5
    VECTOR = 6
    NORMAL = 7
    COLOR = 8
    QUATERNION = 9
    MATRIX = 10
    TEXTURE_COORDINATE = 11
    CONNECTION_PATH_ID = 12
    STRING = 13
    TIME_CODE = 14
    FRAME = 15


class HierarchyRelation(enum.IntEnum):
    """Relation requested from a hierarchy query."""

    PARENT = 0
    CHILDREN = 1
    SIBLINGS = 2


class HierarchyComputationModel(enum.IntEnum):
    """Hierarchy computation model; ``DEFAULT_CPU``/``DEFAULT_GPU`` are aliases."""

    INVALID = 0
    CPU_INCREMENTAL = 1
    GPU_INCREMENTAL = 2
    GPU_GLOBAL = 3
    RUNTIME_DEFAULT = 4
    DEFAULT_CPU = 1
    DEFAULT_GPU = 3


class LogSeverity(enum.IntEnum):
    """Severity of a log message (and the minimum severity of a log callback)."""

    VERBOSE = -2
    INFO = -1
    WARNING = 0
    ERROR = 1
    NONE = 3


class PopulationDomain(enum.IntFlag):
    """Domains populated from USD (bit flags)."""

    NONE = 0
    RENDERING = 1
    PHYSICS = 2
    ALL = 3
