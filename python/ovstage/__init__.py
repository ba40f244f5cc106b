"""ovstage: an in-process runtime data stage (Go core), API-compatible with NVIDIA ovstage.

Writes carry an explicit ordinal; data becomes readable once the write floor is advanced
past it (sealing). Every mutating or data-producing call is an asynchronous enqueue that
returns an :class:`Operation` at once.
"""

from __future__ import annotations

from . import gates  # noqa: F401  (test hooks: importable as ovstage.gates, not in __all__)
from ._config import StageConfig
from ._dlpack import (
    DLDataType,
    DLDataTypeCode,
    DLDevice,
    DLDeviceType,
    DLTensor,
    ManagedDLTensor,
    dltensor_to_numpy,
    make_dltensor,
    numpy_to_dldatatype,
)
from ._enums import (
    AttributeSemantic,
    FilterOp,
    HierarchyComputationModel,
    HierarchyRelation,
    LogSeverity,
    PopulationDomain,
    PrimMode,
    Scope,
)
from ._errors import (
    OVSTAGE_TIMEOUT_INFINITE,
    OVX_API_ERROR,
    OVX_API_SUCCESS,
    TIMEOUT_INFINITE,
    ErrorCode,
    OvstageError,
    OvxError,
)
from ._groups import AttributeMeta, ReadGroup
from ._handles import OrdinalQuery, Query, Read
from ._ops import Operation
from ._pathdict import PathDictionary, PathList
from ._stage import OrdinalRange, Stage, WriteDesc, library_version

try:
    from ._version import __version__
except ImportError:
    __version__ = "0.2.1"

__all__ = [
    "OVSTAGE_TIMEOUT_INFINITE",
    "OVX_API_ERROR",
    "OVX_API_SUCCESS",
    "TIMEOUT_INFINITE",
    "AttributeMeta",
    "AttributeSemantic",
    "DLDataType",
    "DLDataTypeCode",
    "DLDevice",
    "DLDeviceType",
    "DLTensor",
    "ErrorCode",
    "FilterOp",
    "HierarchyComputationModel",
    "HierarchyRelation",
    "LogSeverity",
    "ManagedDLTensor",
    "Operation",
    "OrdinalQuery",
    "OrdinalRange",
    "OvstageError",
    "OvxError",
    "PathDictionary",
    "PathList",
    "PopulationDomain",
    "PrimMode",
    "Query",
    "Read",
    "ReadGroup",
    "Scope",
    "Stage",
    "StageConfig",
    "WriteDesc",
    "__version__",
    "dltensor_to_numpy",
    "library_version",
    "make_dltensor",
    "numpy_to_dldatatype",
]
