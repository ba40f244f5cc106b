"""ovstage: an in-process runtime data stage (Go core), API-compatible with NVIDIA ovstage.

Writes carry an explicit ordinal; data becomes readable once the write floor is advanced
past it (sealing). Every mutating or data-producing call is an asynchronous enqueue that
returns an :class:`Operation` at once.
"""

from __future__ import annotations

import importlib.metadata

# ``gates`` (test hooks) is importable as ovstage.gates but stays out of ``__all__``.
from . import gates as gates
from . import instancing, population
from ._buildinfo import BuildInfo, get_build_info, library_version

# Where a wheel install keeps the C library (ovstage-go extensions, not in __all__).
from ._c_files import get_include as get_include
from ._c_files import get_library_dir as get_library_dir
from ._c_files import get_prefix as get_prefix
from ._clone import CloneOperation, CloneResult
from ._config import StageConfig

# GPU extensions of ovstage-go: importable, but not in __all__ (which lists the reference API).
from ._cuda import cuda_available as cuda_available
from ._cuda import cuda_device_count as cuda_device_count
from ._cuda import cuda_status as cuda_status
from ._cuda import cuda_unavailable_reason as cuda_unavailable_reason
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
    typed_tensor_to_write,
)
from ._enums import (
    AttributeMode,
    AttributeSemantic,
    FilterOp,
    HierarchyComputationModel,
    HierarchyRelation,
    LogSeverity,
    OrdinalAdmissionPolicy,
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
from ._groups import AttributeMeta, MapGroup, ReadGroup
from ._handles import Map, OrdinalQuery, Query, Read
from ._hierarchy import Hierarchy, HierarchyComputationModelDesc, HierarchyItem, HierarchyResult
from ._logging import flush_log, set_log_callback
from ._ops import Operation
from ._pathdict import PathDictionary, PathList
from ._placement import Placement
from ._query import Filter, Predicate, QueryResult
from ._stage import OrdinalRange, Stage, WriteDesc

try:
    #: The package version (pyproject.toml): the API version it implements.
    __version__ = importlib.metadata.version("ovstage-go")
except importlib.metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = ".".join(str(part) for part in library_version())

__all__ = [
    "OVSTAGE_TIMEOUT_INFINITE",
    "OVX_API_ERROR",
    "OVX_API_SUCCESS",
    "TIMEOUT_INFINITE",
    "AttributeMeta",
    "AttributeMode",
    "AttributeSemantic",
    "BuildInfo",
    "CloneOperation",
    "CloneResult",
    "DLDataType",
    "DLDataTypeCode",
    "DLDevice",
    "DLDeviceType",
    "DLTensor",
    "ErrorCode",
    "Filter",
    "FilterOp",
    "Hierarchy",
    "HierarchyComputationModel",
    "HierarchyComputationModelDesc",
    "HierarchyItem",
    "HierarchyRelation",
    "HierarchyResult",
    "LogSeverity",
    "ManagedDLTensor",
    "Map",
    "MapGroup",
    "Operation",
    "OrdinalAdmissionPolicy",
    "OrdinalQuery",
    "OrdinalRange",
    "OvstageError",
    "OvxError",
    "PathDictionary",
    "PathList",
    "Placement",
    "PopulationDomain",
    "Predicate",
    "PrimMode",
    "Query",
    "QueryResult",
    "Read",
    "ReadGroup",
    "Scope",
    "Stage",
    "StageConfig",
    "WriteDesc",
    "__version__",
    "dltensor_to_numpy",
    "flush_log",
    "get_build_info",
    "instancing",
    "library_version",
    "make_dltensor",
    "numpy_to_dldatatype",
    "population",
    "set_log_callback",
    "typed_tensor_to_write",
]
