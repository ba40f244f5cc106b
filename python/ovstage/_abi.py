"""ctypes mirrors of the C API's structs: the one encoding of every request and result that
crosses into the native extension.

The Python layer builds requests in these layouts and hands their addresses to the extension,
whose Go side decodes them with the code the C library runs (``abi/``, pybind/API.md); read
and map groups come back in them. Each class carries the field names of its C struct
(``include/``) and ``tests/python/test_abi_layout.py`` pins its size and offsets against
``tests/abi/layout.json``. The DLPack structs are defined in ``_dlpack.py`` (they carry the
public DLPack helpers) and re-exported here.

Pointers that a request holds (tensor arrays, index maps, strings) point into Python objects:
the builder of a request keeps those alive for the native call (and, for large writes, until
the engine no longer reads them).
"""

from __future__ import annotations

import ctypes

from ._dlpack import (
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackVersion,
    DLTensor,
)

__all__ = [
    "CONFIG_HISTORY_WINDOW_BYTES",
    "CONFIG_HISTORY_WINDOW_ORDINALS",
    "CONFIG_KEY_TYPE_UINT64",
    "CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL",
    "CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY",
    "AttributeMetaRaw",
    "AttributeWrite",
    "BuildInfoRaw",
    "CloneResultRaw",
    "ConfigEntryRaw",
    "ConfigEntryValue",
    "ConfigRaw",
    "CudaSync",
    "DLDataType",
    "DLDevice",
    "DLManagedTensor",
    "DLManagedTensorVersioned",
    "DLPackVersion",
    "DLTensor",
    "DataRaw",
    "FilterRaw",
    "HierarchyItemRaw",
    "HierarchyModelDescRaw",
    "HierarchyResultRaw",
    "MapDesc",
    "MapGroupRaw",
    "OrdinalRangeRaw",
    "OvxString",
    "OvxStringOrToken",
    "PlacementRaw",
    "PredicateRaw",
    "PrimGroupRaw",
    "QueryResultRaw",
    "ReadGroupRaw",
    "WriteData",
    "WriteFloorDesc",
    "ovx_string",
]


class OvxString(ctypes.Structure):
    """``ovx_string_t``: UTF-8 bytes and their length (no terminator needed)."""

    _fields_ = [("ptr", ctypes.c_char_p), ("length", ctypes.c_size_t)]

    def text(self) -> str:
        """The string (exactly ``length`` bytes, decoded)."""
        if not self.length:
            return ""
        addr = ctypes.c_void_p.from_buffer(self).value  # ``ptr``, as an address
        if addr is None:  # never read a length from NULL
            raise RuntimeError(f"ovstage string of length {self.length} at NULL")
        return ctypes.string_at(addr, self.length).decode("utf-8")


def ovx_string(data: bytes) -> OvxString:
    """An ``ovx_string_t`` over ``data`` (the struct keeps ``data`` alive)."""
    return OvxString(data, len(data))


class OvxStringOrToken(ctypes.Structure):
    """``ovx_string_or_token_t``: a non-zero token wins, else the string."""

    _fields_ = [("token", ctypes.c_uint64), ("string", OvxString)]


class BuildInfoRaw(ctypes.Structure):
    """``ovstage_build_info_t``: the library's build identity (library-owned strings)."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("build_number", ctypes.c_uint32),
        ("build_string", OvxString),
        ("git_branch", OvxString),
        ("git_hash", OvxString),
        ("build_location", OvxString),
    ]


class ConfigEntryValue(ctypes.Union):
    """The ``value`` union of ``ovstage_config_entry_t`` (the members Python sets or reads)."""

    _fields_ = [
        ("bool_value", ctypes.c_bool),
        ("int_value", ctypes.c_int64),
        ("uint_value", ctypes.c_uint64),
        ("double_value", ctypes.c_double),
        ("string_value", OvxString),
    ]


#: ``ovstage_config_key_type_t`` UINT64 and the keys of ``ovstage_config_uint64_t`` (the
#: HISTORY_WINDOW ones are ours).
CONFIG_KEY_TYPE_UINT64 = 2
CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL = 0
CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY = 1
CONFIG_HISTORY_WINDOW_ORDINALS = 2
CONFIG_HISTORY_WINDOW_BYTES = 3


class ConfigEntryRaw(ctypes.Structure):
    """``ovstage_config_entry_t``: one typed setting (``key`` is the key enum of ``key_type``)."""

    _fields_ = [("key_type", ctypes.c_int32), ("key", ctypes.c_int32), ("value", ConfigEntryValue)]


class ConfigRaw(ctypes.Structure):
    """``ovstage_config_t``: an array of configuration entries."""

    _fields_ = [("entries", ctypes.POINTER(ConfigEntryRaw)), ("entry_count", ctypes.c_size_t)]


class CudaSync(ctypes.Structure):
    """``ovstage_cuda_sync_t``."""

    _fields_ = [("stream", ctypes.c_size_t), ("wait_event", ctypes.c_size_t)]


class WriteData(ctypes.Structure):
    """``ovstage_write_data_t``: one write's payload and sparse addressing. ``index_map`` has
    ``count`` entries and ``mask`` (``ovstage_mask_t``, one pointer) ``ceil(count/64)`` words."""

    _fields_ = [
        ("tensors", ctypes.c_void_p),
        ("managed_tensors", ctypes.c_void_p),
        ("tensor_count", ctypes.c_uint32),
        ("count", ctypes.c_uint32),
        ("index_map", ctypes.c_void_p),
        ("mask", ctypes.c_void_p),
        ("cuda_sync", CudaSync),
        ("semantic", ctypes.c_int32),
        ("is_array", ctypes.c_bool),
        ("attribute_mode", ctypes.c_uint32),
    ]


class AttributeWrite(ctypes.Structure):
    """``ovstage_attribute_write_t``: one entry of a ``write_attributes`` batch."""

    _fields_ = [("attribute", OvxStringOrToken), ("data", WriteData)]


class PlacementRaw(ctypes.Structure):
    """``ovstage_placement_t`` (built by ``Placement._raw``)."""

    _fields_ = [
        ("device", DLDevice),
        ("stream", ctypes.c_size_t),
        ("availability_event", ctypes.c_size_t),
    ]


class WriteFloorDesc(ctypes.Structure):
    """``ovstage_write_floor_desc_t``."""

    _fields_ = [
        ("ordinal", ctypes.c_uint64),
        ("scope", ctypes.c_int32),
        ("attributes", ctypes.c_void_p),
        ("attribute_count", ctypes.c_size_t),
    ]


class OrdinalRangeRaw(ctypes.Structure):
    """``ovstage_ordinal_range_t``."""

    _fields_ = [
        ("start_ordinal", ctypes.c_uint64),
        ("end_ordinal", ctypes.c_uint64),
        ("has_start_ordinal", ctypes.c_bool),
    ]


class PredicateRaw(ctypes.Structure):
    """``ovstage_predicate_t``: ``values`` is an ``ovx_string_t[value_count]``."""

    _fields_ = [
        ("attribute", OvxStringOrToken),
        ("op", ctypes.c_int32),
        ("values", ctypes.c_void_p),
        ("value_count", ctypes.c_size_t),
    ]


class FilterRaw(ctypes.Structure):
    """``ovstage_filter_t``."""

    _fields_ = [("predicates", ctypes.c_void_p), ("count", ctypes.c_size_t)]


class MapDesc(ctypes.Structure):
    """``ovstage_map_desc_t`` (``dtype.bits`` 0: the attribute's existing schema)."""

    _fields_ = [
        ("attribute", OvxStringOrToken),
        ("dtype", DLDataType),
        ("semantic", ctypes.c_int32),
        ("prim_mode", ctypes.c_int32),
        ("attribute_mode", ctypes.c_uint32),
    ]


class DataRaw(ctypes.Structure):
    """``ovstage_data_t``: the tensors of a read or map group."""

    _fields_ = [
        ("tensors", ctypes.POINTER(DLTensor)),
        ("tensor_count", ctypes.c_uint32),
        ("count", ctypes.c_uint32),
        ("index_map", ctypes.POINTER(ctypes.c_uint32)),
        ("mask", ctypes.POINTER(ctypes.c_uint64)),
        ("cuda_sync", CudaSync),
    ]


class PrimGroupRaw(ctypes.Structure):
    """``ovstage_prim_group_t``."""

    _fields_ = [
        ("list", ctypes.c_uint64),
        ("offset", ctypes.c_uint32),
        ("count", ctypes.c_uint32),
        ("index_map", ctypes.POINTER(ctypes.c_uint32)),
    ]


class AttributeMetaRaw(ctypes.Structure):
    """``ovstage_attribute_meta_t``."""

    _fields_ = [
        ("attribute_write_floor_ordinal", ctypes.c_uint64),
        ("layout_generation", ctypes.c_uint64),
    ]


class ReadGroupRaw(ctypes.Structure):
    """``ovstage_read_group_t``."""

    _fields_ = [
        ("read_group_id", ctypes.c_uint64),
        ("attribute", ctypes.c_uint64),
        ("ordinal", ctypes.c_uint64),
        ("is_delete", ctypes.c_bool),
        ("is_array", ctypes.c_bool),
        ("semantic", ctypes.c_int32),
        ("prims", PrimGroupRaw),
        ("data", DataRaw),
        ("meta", AttributeMetaRaw),
    ]


class MapGroupRaw(ctypes.Structure):
    """``ovstage_map_group_t``."""

    _fields_ = [("prims", PrimGroupRaw), ("data", DataRaw), ("meta", AttributeMetaRaw)]


class QueryResultRaw(ctypes.Structure):
    """``ovstage_query_result_t``."""

    _fields_ = [
        ("query_result_id", ctypes.c_uint64),
        ("attributes", ctypes.POINTER(ctypes.c_uint64)),
        ("attribute_count", ctypes.c_size_t),
        ("all_handle", ctypes.c_uint64),
        ("total_prim_count", ctypes.c_size_t),
    ]


class HierarchyItemRaw(ctypes.Structure):
    """``ovstage_hierarchy_item_t``: the related paths of one input path."""

    _fields_ = [
        ("status", ctypes.c_int32),
        ("path_offset", ctypes.c_size_t),
        ("path_count", ctypes.c_size_t),
    ]


class HierarchyResultRaw(ctypes.Structure):
    """``ovstage_hierarchy_result_t``: ``items[input_count]`` index into ``paths[path_count]``."""

    _fields_ = [
        ("hierarchy_result_id", ctypes.c_uint64),
        ("ordinal", ctypes.c_uint64),
        ("items", ctypes.POINTER(HierarchyItemRaw)),
        ("input_count", ctypes.c_size_t),
        ("paths", ctypes.POINTER(OvxStringOrToken)),
        ("path_count", ctypes.c_size_t),
    ]


class HierarchyModelDescRaw(ctypes.Structure):
    """``ovstage_hierarchy_computation_model_desc_t``."""

    _fields_ = [("model_id", ctypes.c_int32), ("name", OvxString), ("description", OvxString)]


class CloneResultRaw(ctypes.Structure):
    """``ovstage_clone_result_t``: a clone's completion report (C field order)."""

    _fields_ = [
        ("ordinal", ctypes.c_uint64),
        ("target_count", ctypes.c_size_t),
        ("source_prim_count", ctypes.c_size_t),
        ("prims_cloned", ctypes.c_size_t),
    ]
