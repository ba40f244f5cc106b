"""The import surface matches the reference's ``ovstage.__all__`` name for name."""

from __future__ import annotations

import ovstage

SPEC_ALL = [
    "Stage",
    "StageConfig",
    "Query",
    "Read",
    "Map",
    "OrdinalQuery",
    "Hierarchy",
    "PathDictionary",
    "PathList",
    "Placement",  # 0.3.0
    "Operation",
    "WriteDesc",
    "OrdinalRange",
    "Predicate",
    "Filter",
    "ReadGroup",
    "MapGroup",
    "AttributeMeta",
    "QueryResult",
    "HierarchyItem",
    "HierarchyResult",
    "HierarchyComputationModelDesc",
    "DLTensor",
    "ManagedDLTensor",
    "DLDataType",
    "DLDevice",
    "DLDeviceType",
    "DLDataTypeCode",
    "OvstageError",
    "OvxError",
    "ErrorCode",
    "FilterOp",
    "PrimMode",
    "AttributeMode",  # 0.3.0
    "OrdinalAdmissionPolicy",  # 0.3.0
    "AttributeSemantic",
    "HierarchyRelation",
    "HierarchyComputationModel",
    "Scope",
    "PopulationDomain",
    "LogSeverity",
    "make_dltensor",
    "dltensor_to_numpy",
    "numpy_to_dldatatype",
    "typed_tensor_to_write",
    "library_version",
    "set_log_callback",
    "flush_log",
    "instancing",
    "population",
    "TIMEOUT_INFINITE",
    "OVSTAGE_TIMEOUT_INFINITE",
    "OVX_API_SUCCESS",
    "OVX_API_ERROR",
    "__version__",
    # 0.3.0 additions
    "CloneOperation",
    "CloneResult",
    "BuildInfo",
    "get_build_info",
]


def test_all_is_exactly_the_reference_list() -> None:
    assert sorted(ovstage.__all__) == sorted(SPEC_ALL)
    assert len(ovstage.__all__) == len(set(ovstage.__all__))


def test_every_listed_name_exists() -> None:
    for name in ovstage.__all__:
        assert hasattr(ovstage, name), name


def test_gates_importable_but_not_listed() -> None:
    import ovstage.gates

    assert "gates" not in ovstage.__all__
    assert ovstage.gates is ovstage.gates
    assert callable(ovstage.gates.available)


def test_constants() -> None:
    assert ovstage.TIMEOUT_INFINITE == ovstage.OVSTAGE_TIMEOUT_INFINITE == 2**64 - 1
    assert (ovstage.OVX_API_SUCCESS, ovstage.OVX_API_ERROR) == (0, 1)
    assert ovstage.library_version() == (0, 3, 0)
