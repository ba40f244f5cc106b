"""DLPack 1.x ABI structures and tensor helpers.

Everything here is ctypes and numpy; the native extension is not needed. The only
native hook is :meth:`ManagedDLTensor._from_native`, through which the stage layer
wraps a managed tensor exported by the Go core.
"""

from __future__ import annotations

import ctypes
import math
import operator
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from ._guards import as_int32, as_uint

__all__ = [
    "DLPACK_FLAG_BITMASK_IS_COPIED",
    "DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED",
    "DLPACK_FLAG_BITMASK_READ_ONLY",
    "DLPACK_MAJOR_VERSION",
    "DLPACK_MINOR_VERSION",
    "DLDataType",
    "DLDataTypeCode",
    "DLDevice",
    "DLDeviceType",
    "DLManagedTensor",
    "DLManagedTensorVersioned",
    "DLPackVersion",
    "DLTensor",
    "ManagedDLTensor",
    "dlpack_cuda_stream",
    "dltensor_to_numpy",
    "make_dltensor",
    "numpy_to_dldatatype",
    "typed_tensor_to_write",
]

# The DLPack version our versioned capsules declare (the headers' version).
DLPACK_MAJOR_VERSION = 1
DLPACK_MINOR_VERSION = 3

DLPACK_FLAG_BITMASK_READ_ONLY = 1
DLPACK_FLAG_BITMASK_IS_COPIED = 2
DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED = 4

_MAX_LANES = 255


class _CEnum:
    """Behaviour shared by the ctypes-integer enum types below.

    The class attributes are plain ``int`` constants. An instance (what a struct field of
    this type reads as) holds one value in ``.value``; it also compares, hashes and converts
    (``int()``, ``operator.index``) as that int, so code written for an int keeps working.
    """

    value: int
    _names: dict[int, str]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._names = {
            v: k for k, v in vars(cls).items() if k.startswith("kDL") and type(v) is int
        }

    @classmethod
    def name_of(cls, value: int) -> str | None:
        """The constant's name for ``value`` (``None`` for a value this module does not name)."""
        return cls._names.get(int(value))

    @property
    def name(self) -> str | None:
        return self.name_of(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __index__(self) -> int:
        return int(self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _CEnum):
            return bool(self.value == other.value)
        if isinstance(other, int):
            return bool(self.value == other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        name = self.name
        return f"{type(self).__name__}.{name}" if name else f"{type(self).__name__}({self.value})"


class DLDeviceType(_CEnum, ctypes.c_int):
    """``DLDeviceType`` (a ``ctypes.c_int``): where a tensor's memory lives.
    ``DLDevice.device_type`` reads as an instance: use ``.value`` (or ``int()``)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17
    kDLTrn = 18


class DLDataTypeCode(_CEnum, ctypes.c_uint8):
    """``DLDataTypeCode`` (a ``ctypes.c_uint8``): the type class of a tensor element. The
    C header also defines FP8/FP6/FP4 codes 7..17; Python names 0..6."""

    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLOpaqueHandle = 3
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6


# Devices whose memory the CPU may read directly (numpy views are allowed on them).
_HOST_DEVICES = (
    DLDeviceType.kDLCPU,
    DLDeviceType.kDLCUDAHost,
    DLDeviceType.kDLROCMHost,
)
# Producers that take a ``stream`` argument in ``__dlpack__``.
_STREAM_DEVICES = (DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged)


class DLDevice(ctypes.Structure):
    """``DLDevice {int32 device_type; int32 device_id}``."""

    _fields_ = [("device_type", DLDeviceType), ("device_id", ctypes.c_int32)]

    def __repr__(self) -> str:
        return f"DLDevice({_device_name(self.device_type)}, {self.device_id})"

    def __iter__(self) -> Iterator[int]:
        """``(device_type, device_id)`` as plain ints (so a device unpacks like a pair)."""
        return iter((self.device_type.value, self.device_id))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (DLDevice, tuple)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable ctypes structure


class DLDataType(ctypes.Structure):
    """``DLDataType {uint8 code; uint8 bits; uint16 lanes}``."""

    _fields_ = [
        ("code", ctypes.c_uint8),
        ("bits", ctypes.c_uint8),
        ("lanes", ctypes.c_uint16),
    ]

    def __repr__(self) -> str:
        code = DLDataTypeCode.name_of(self.code) or self.code
        return f"DLDataType({code}, bits={self.bits}, lanes={self.lanes})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DLDataType):
            return NotImplemented
        return (self.code, self.bits, self.lanes) == (
            other.code,
            other.bits,
            other.lanes,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable ctypes structure


class DLTensor(ctypes.Structure):
    """``DLTensor`` (DLPack 1.x layout).

    Instances built by this module keep whatever owns their memory alive (attribute
    ``_keepalive``); a tensor ingested with :meth:`from_dlpack` releases the producer's
    managed tensor when it is garbage-collected.
    """

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]

    @property
    def shape_tuple(self) -> tuple[int, ...]:
        """The shape as a tuple of ``ndim`` ints (``()`` for a 0-d tensor)."""
        if self.ndim <= 0 or not self.shape:
            return ()
        return tuple(self.shape[i] for i in range(self.ndim))

    @property
    def strides_tuple(self) -> tuple[int, ...] | None:
        """The strides in elements, or ``None`` when ``strides`` is NULL (compact)."""
        if not self.strides:
            return None
        return tuple(self.strides[i] for i in range(max(self.ndim, 0)))

    def __repr__(self) -> str:
        return (
            f"DLTensor(shape={self.shape_tuple}, dtype={self.dtype!r}, "
            f"device={self.device!r}, strides={self.strides_tuple})"
        )

    @classmethod
    def from_dlpack(cls, obj: Any, stream: Any = None) -> DLTensor:
        """Ingest a DLPack producer zero-copy through its legacy ``"dltensor"`` capsule.

        ``stream`` is passed to ``obj.__dlpack__`` only for CUDA / CUDA-managed
        producers. The capsule is renamed ``"used_dltensor"``; the producer object is
        kept alive and the managed tensor's deleter runs exactly once, when the returned
        tensor is collected.
        """
        if not hasattr(obj, "__dlpack__"):
            raise TypeError(f"{type(obj).__name__} does not implement __dlpack__")
        device = _producer_device(obj)
        capsule = obj.__dlpack__(stream=stream) if device in _STREAM_DEVICES else obj.__dlpack__()
        if not _capsule_is_valid(capsule, _LEGACY_NAME):
            raise BufferError("__dlpack__() did not return an unconsumed 'dltensor' capsule")
        managed_addr = _capsule_get_pointer(capsule, _LEGACY_NAME)
        managed = DLManagedTensor.from_address(managed_addr)
        # Validate and copy before consuming: on failure the capsule keeps ownership.
        tensor = cls._copy_of(managed.dl_tensor)
        deleter = managed.deleter
        _capsule_set_name(capsule, _USED_LEGACY_NAME)
        tensor._keepalive = obj
        # Re-descriptions of the tensor (shape, lanes) must stay inside what the producer showed.
        tensor._backing_nbytes = tensor.byte_offset + _described_nbytes(tensor)
        # A legacy capsule cannot say "read-only"; our own read-only exports are kept so.
        tensor._read_only = isinstance(obj, ManagedDLTensor) and obj.readonly
        weakref.finalize(tensor, _run_deleter, deleter, managed_addr, obj)
        return tensor

    @classmethod
    def _copy_of(cls, src: DLTensor) -> DLTensor:
        """Validate ``src`` and copy it, with shape/strides in arrays the copy owns."""
        ndim = src.ndim
        if ndim < 0:
            raise ValueError(f"DLPack tensor has negative ndim {ndim}")
        if ndim > 0 and not src.shape:
            raise ValueError("DLPack tensor has a NULL shape")
        _check_lanes(src.dtype.lanes)
        shape = _int64_array(src.shape[i] for i in range(ndim)) if ndim else None
        strides = _int64_array(src.strides[i] for i in range(ndim)) if src.strides else None
        tensor = cls(
            data=src.data,
            device=DLDevice(src.device.device_type.value, src.device.device_id),
            ndim=ndim,
            dtype=DLDataType(src.dtype.code, src.dtype.bits, src.dtype.lanes),
            shape=shape,
            strides=strides,
            byte_offset=src.byte_offset,
        )
        tensor._arrays = (shape, strides)
        return tensor


class DLManagedTensor(ctypes.Structure):
    """Legacy (pre-1.0) managed tensor carried by a ``"dltensor"`` capsule."""

    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class DLPackVersion(ctypes.Structure):
    """``DLPackVersion {uint32 major; uint32 minor}``."""

    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    """DLPack 1.x managed tensor carried by a ``"dltensor_versioned"`` capsule."""

    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# Where a versioned managed tensor keeps its device type: __dlpack__ of a native export reads
# it there (no DLTensor copy on the hot path).
_DEVICE_TYPE_OFFSET = (
    DLManagedTensorVersioned.dl_tensor.offset + DLTensor.device.offset + DLDevice.device_type.offset
)
_int32_at = ctypes.c_int32.from_address


# ------------------------------------------------------------------------------
# PyCapsule access (private prototypes: other users of ctypes.pythonapi are unaffected)

_LEGACY_NAME = b"dltensor"
_VERSIONED_NAME = b"dltensor_versioned"
_USED_LEGACY_NAME = b"used_dltensor"

_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi)
)
_capsule_new = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p
)(("PyCapsule_New", ctypes.pythonapi))
_DELETER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


# The engine rejects a larger ndim before it reads the shape (abi.MaxDims).
_ENGINE_MAX_DIMS = 32


def private_dltensor(src: DLTensor) -> DLTensor:
    """A copy of a caller's ``DLTensor`` for the engine, unvalidated, owning its shape and
    strides and keeping ``src`` alive.

    The engine reads a descriptor after the GIL is released; a copy taken while it is held
    cannot change under it when another thread assigns ``src.shape`` or ``src.ndim`` (the
    old shape array may be freed). An ndim the engine rejects is kept, without its shape.
    """
    # Straight-line field reads and pointer slices, no calls: CPython switches threads only
    # at calls and backward jumps, so no other thread changes ``src`` in between.
    ndim = src.ndim
    shape_ptr, strides_ptr = src.shape, src.strides
    dims = ndim if 0 < ndim <= _ENGINE_MAX_DIMS else 0
    shape_values = shape_ptr[:dims] if dims and shape_ptr else None
    stride_values = strides_ptr[:dims] if dims and strides_ptr else None
    data, byte_offset, device, dtype = src.data, src.byte_offset, src.device, src.dtype
    device_type, device_id = device.device_type.value, device.device_id
    code, bits, lanes = dtype.code, dtype.bits, dtype.lanes
    shape = None if shape_values is None else _int64_array(shape_values)
    strides = None if stride_values is None else _int64_array(stride_values)
    tensor = DLTensor(
        data=data,
        device=DLDevice(device_type, device_id),
        ndim=ndim,
        dtype=DLDataType(code, bits, lanes),
        shape=shape,
        strides=strides,
        byte_offset=byte_offset,
    )
    tensor._arrays = (shape, strides)
    tensor._keepalive = src
    return tensor


def _run_deleter(deleter: int | None, managed_addr: int, producer: object) -> None:
    """Call a DLPack deleter ``void (*)(DLManagedTensor*)``, then drop ``producer``."""
    if deleter:
        _DELETER_TYPE(deleter)(managed_addr)
    del producer


# ------------------------------------------------------------------------------
# small helpers


def _device_name(device_type: int) -> str:
    return DLDeviceType.name_of(device_type) or str(int(device_type))


def _device_tuple(device: DLDevice) -> tuple[int, int]:
    """``(device_type, device_id)`` as plain ints."""
    return (device.device_type.value, device.device_id)


def _producer_device(obj: Any) -> int:
    """Return the device type a producer reports (CPU without ``__dlpack_device__``)."""
    if not hasattr(obj, "__dlpack_device__"):
        return DLDeviceType.kDLCPU
    device_type, _device_id = obj.__dlpack_device__()
    return operator.index(device_type)


def _int64_array(values: Any) -> ctypes.Array[ctypes.c_int64]:
    items = list(values)
    return (ctypes.c_int64 * len(items))(*items)


def _check_lanes(lanes: int) -> None:
    if not 1 <= lanes <= _MAX_LANES:
        raise ValueError(f"dtype lanes must be in 1..{_MAX_LANES}, got {lanes}")


def _described_nbytes(tensor: DLTensor) -> int:
    """Bytes from the first element to the end of the last one that ``tensor`` describes (0
    when it has no elements; negative strides reach before the first and are not counted)."""
    dims = tensor.shape_tuple
    if 0 in dims:
        return 0
    strides = tensor.strides_tuple or _compact_strides(dims)
    highest = sum(max(0, (d - 1) * st) for d, st in zip(dims, strides, strict=True))
    size: int = -(-(highest + 1) * tensor.dtype.bits * tensor.dtype.lanes // 8)
    return size


def _compact_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides, in elements, of a compact tensor of ``shape``."""
    strides = []
    step = 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def _is_compact(tensor: DLTensor) -> bool:
    """Tell whether ``tensor`` is compact row-major (NULL or equivalent strides)."""
    strides = tensor.strides_tuple
    if strides is None:
        return True
    shape = tensor.shape_tuple
    if 0 in shape:
        return True
    return all(
        dim == 1 or stride == expected
        for dim, stride, expected in zip(shape, strides, _compact_strides(shape), strict=True)
    )


def _as_dims(values: Sequence[int], name: str) -> list[int]:
    """Validate a shape: a sequence of non-negative ints that fit in int64."""
    return [as_uint(v, f"{name}[{i}]", 63) for i, v in enumerate(values)]


def _as_strides(values: Sequence[int], name: str) -> list[int]:
    """Validate strides: a sequence of ints that fit in int64."""
    return [_signed64(value, f"{name}[{i}]") for i, value in enumerate(values)]


def _signed64(value: object, name: str) -> int:
    try:
        result = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if not -(1 << 63) <= result < 1 << 63:
        raise ValueError(f"{name} must fit in int64, got {result}")
    return result


def _as_dldatatype(dtype: Any) -> DLDataType:
    """Return a validated copy of a ``DLDataType``, or convert a numpy dtype-like."""
    if isinstance(dtype, DLDataType):
        _check_lanes(dtype.lanes)
        if dtype.bits == 0:
            raise ValueError(
                f"a dtype override needs positive source and requested bit widths, got {dtype!r}"
            )
        return DLDataType(dtype.code, dtype.bits, dtype.lanes)
    return numpy_to_dldatatype(dtype)


# ------------------------------------------------------------------------------
# numpy <-> DLPack dtypes

_NUMPY_KIND_CODES = {
    "i": DLDataTypeCode.kDLInt,
    "u": DLDataTypeCode.kDLUInt,
    "f": DLDataTypeCode.kDLFloat,
}


# The refusal of an element type no write takes, for numpy arrays and DLPack producers alike.
_UNSUPPORTED_DTYPE = (
    "unsupported dtype {} (need float16/32/64, [u]int8..64, bool, or bfloat16 from a DLPack "
    "producer)"
)


def numpy_to_dldatatype(np_dtype: Any, lanes: int = 1) -> DLDataType:
    """Convert a numpy dtype (any spelling) to a ``DLDataType`` with ``lanes`` lanes.

    Supported: float16/32/64, int8/16/32/64, uint8/16/32/64 and bool (``{kDLBool, 8}``).
    Anything else, a non-native byte order, or lanes outside 1..255 raise
    ``ValueError``.
    """
    if np_dtype is None:  # np.dtype(None) would silently mean float64
        raise ValueError("np_dtype must be a numpy dtype, got None")
    lanes = as_uint(lanes, "lanes", 16)
    _check_lanes(lanes)
    try:
        dt = np.dtype(np_dtype)
    except TypeError as exc:
        raise ValueError(f"unsupported dtype {np_dtype!r}: {exc}") from None
    if not dt.isnative:
        raise ValueError(f"unsupported dtype {dt}: non-native byte order")
    if dt.kind == "b":
        return DLDataType(DLDataTypeCode.kDLBool, 8, lanes)
    code = _NUMPY_KIND_CODES.get(dt.kind)
    sizes = (2, 4, 8) if dt.kind == "f" else (1, 2, 4, 8)
    if code is None or dt.itemsize not in sizes or dt.fields is not None:
        raise ValueError(_UNSUPPORTED_DTYPE.format(dt))
    return DLDataType(code, dt.itemsize * 8, lanes)


_DL_TO_NUMPY: dict[tuple[int, int], np.dtype[Any]] = {
    (DLDataTypeCode.kDLInt, 8): np.dtype(np.int8),
    (DLDataTypeCode.kDLInt, 16): np.dtype(np.int16),
    (DLDataTypeCode.kDLInt, 32): np.dtype(np.int32),
    (DLDataTypeCode.kDLInt, 64): np.dtype(np.int64),
    (DLDataTypeCode.kDLUInt, 8): np.dtype(np.uint8),
    (DLDataTypeCode.kDLUInt, 16): np.dtype(np.uint16),
    (DLDataTypeCode.kDLUInt, 32): np.dtype(np.uint32),
    (DLDataTypeCode.kDLUInt, 64): np.dtype(np.uint64),
    (DLDataTypeCode.kDLFloat, 16): np.dtype(np.float16),
    (DLDataTypeCode.kDLFloat, 32): np.dtype(np.float32),
    (DLDataTypeCode.kDLFloat, 64): np.dtype(np.float64),
    # numpy has no bfloat16: surface the raw bits.
    (DLDataTypeCode.kDLBfloat, 16): np.dtype(np.uint16),
    (DLDataTypeCode.kDLComplex, 64): np.dtype(np.complex64),
    (DLDataTypeCode.kDLComplex, 128): np.dtype(np.complex128),
    (DLDataTypeCode.kDLBool, 8): np.dtype(np.bool_),
}


def _numpy_dtype(dtype: DLDataType) -> np.dtype[Any]:
    try:
        return _DL_TO_NUMPY[(dtype.code, dtype.bits)]
    except KeyError:
        raise ValueError(f"no numpy equivalent for {dtype!r}") from None


# ------------------------------------------------------------------------------
# make_dltensor


def make_dltensor(
    array: Any,
    *,
    dtype: DLDataType | Any | None = None,
    shape: Sequence[int] | None = None,
    ndim: int | None = None,
    strides: Sequence[int] | None = None,
    device_type: int = DLDeviceType.kDLCPU,
    device_id: int = 0,
) -> DLTensor:
    """Describe ``array`` as a ``DLTensor`` (zero-copy where possible).

    numpy arrays (and lists/tuples/array-likes) are made C-contiguous (copied only if
    needed); the tensor aliases that memory and keeps it alive. ``dtype`` (a
    ``DLDataType`` or numpy dtype), ``shape``, ``ndim``, ``strides`` (in elements) and
    the device may be overridden; the described bytes must lie inside the array.

    Other DLPack producers (and ``DLTensor`` objects) are ingested zero-copy; overrides
    are then only allowed as a fold of complete trailing dimensions into lanes
    (``dtype`` required).
    """
    if isinstance(array, (np.ndarray, np.generic, list, tuple)):
        return _numpy_tensor(array, dtype, shape, ndim, strides, device_type, device_id)
    if isinstance(array, DLTensor):
        return _folded_tensor(array, dtype, shape, ndim, strides, device_type, device_id)
    if hasattr(array, "__dlpack__"):
        # With a dtype override the caller describes the elements (a lanes fold checks it).
        source = _producer_tensor(array, check_dtype=dtype is None)
        return _folded_tensor(source, dtype, shape, ndim, strides, device_type, device_id)
    if hasattr(array, "__array__") or hasattr(array, "__array_interface__"):
        return _numpy_tensor(array, dtype, shape, ndim, strides, device_type, device_id)
    raise TypeError(
        "array must be a numpy array, a DLTensor or an object implementing __dlpack__, "
        f"got {type(array).__name__}"
    )


# (code, bits) of the element types a write takes (the engine's value types).
_WRITABLE_TYPES = frozenset(
    [(DLDataTypeCode.kDLInt, b) for b in (8, 16, 32, 64)]
    + [(DLDataTypeCode.kDLUInt, b) for b in (8, 16, 32, 64)]
    + [(DLDataTypeCode.kDLFloat, b) for b in (16, 32, 64)]
    + [(DLDataTypeCode.kDLBfloat, 16), (DLDataTypeCode.kDLBool, 8)]
)


def _producer_tensor(producer: Any, check_dtype: bool) -> DLTensor:
    """Ingest a DLPack producer (a torch tensor, a cupy array ...) zero-copy, seen as the numpy
    path sees an array, so both are accepted and refused alike.

    A tensor that requires grad is exported through ``detach()`` (the same memory; torch refuses
    to export it otherwise, and a write only reads it). A 0-d tensor is one row, as
    ``np.ascontiguousarray`` makes a 0-d array. With ``check_dtype``, an element type no write
    takes raises ``ValueError`` naming it, as ``numpy_to_dldatatype`` does for numpy.
    """
    if getattr(producer, "requires_grad", False) is True and callable(
        getattr(producer, "detach", None)
    ):
        producer = producer.detach()
    tensor = DLTensor.from_dlpack(producer)
    dtype = tensor.dtype
    if check_dtype and (dtype.code, dtype.bits) not in _WRITABLE_TYPES:
        known = _DL_TO_NUMPY.get((dtype.code, dtype.bits))
        name = known.name if known is not None else repr(dtype)
        raise ValueError(_UNSUPPORTED_DTYPE.format(name))
    if tensor.ndim != 0:
        return tensor
    one_row = _int64_array([1])
    row = DLTensor(
        data=tensor.data,
        device=DLDevice(tensor.device.device_type.value, tensor.device.device_id),
        ndim=1,
        dtype=DLDataType(dtype.code, dtype.bits, dtype.lanes),
        shape=one_row,
        strides=None,
        byte_offset=tensor.byte_offset,
    )
    row._keepalive = tensor
    row._arrays = (one_row, None)
    row._backing_nbytes = tensor._backing_nbytes
    return row


def _numpy_tensor(
    array: Any,
    dtype: Any,
    shape: Sequence[int] | None,
    ndim: int | None,
    strides: Sequence[int] | None,
    device_type: int,
    device_id: int,
) -> DLTensor:
    if isinstance(array, np.ndarray):
        # A view copies the header in one step: its dtype, shape and strides are ours alone,
        # so a thread reassigning array.shape / array.dtype cannot tear what is read below.
        array = array.view()
    arr = np.ascontiguousarray(array)
    if arr.dtype.hasobject:
        raise TypeError(f"array must hold plain data, got dtype {arr.dtype}")
    dl_dtype = _as_dldatatype(dtype) if dtype is not None else numpy_to_dldatatype(arr.dtype)
    dims = _as_dims(arr.shape if shape is None else shape, "shape")
    if ndim is not None:
        ndim = as_uint(ndim, "ndim", 31)
        if ndim > len(dims):
            raise ValueError(f"ndim {ndim} exceeds len(shape) {len(dims)}")
        dims = dims[:ndim]
    steps = None
    if strides is not None:
        steps = _as_strides(strides, "strides")
        if len(steps) < len(dims):
            raise ValueError(f"len(strides) {len(steps)} is less than ndim {len(dims)}")
        steps = steps[: len(dims)]
    _check_extent(dims, steps, dl_dtype, arr.nbytes)
    shape_arr = _int64_array(dims) if dims else None
    strides_arr = _int64_array(steps) if steps else None
    tensor = DLTensor(
        data=arr.__array_interface__["data"][0],
        device=DLDevice(as_int32(device_type, "device_type"), as_int32(device_id, "device_id")),
        ndim=len(dims),
        dtype=dl_dtype,
        shape=shape_arr,
        strides=strides_arr,
        byte_offset=0,
    )
    tensor._keepalive = arr
    tensor._arrays = (shape_arr, strides_arr)
    tensor._backing_nbytes = arr.nbytes
    return tensor


def _check_extent(
    dims: Sequence[int], strides: Sequence[int] | None, dtype: DLDataType, nbytes: int
) -> None:
    """Raise ``ValueError`` if the described tensor reaches outside ``nbytes`` bytes."""
    count = math.prod(dims)
    if count == 0:
        return
    element_bits = dtype.bits * dtype.lanes
    if strides is None:
        lowest, highest = 0, count - 1
    else:
        lowest = sum(min(0, (d - 1) * s) for d, s in zip(dims, strides, strict=True))
        highest = sum(max(0, (d - 1) * s) for d, s in zip(dims, strides, strict=True))
    needed = -(-(highest + 1) * element_bits // 8)
    if lowest < 0 or needed > nbytes:
        raise ValueError(
            f"shape/strides/dtype describe {needed} bytes (lowest element {lowest}) "
            f"but the array holds {nbytes} bytes"
        )


def _folded_tensor(
    source: DLTensor,
    dtype: Any,
    shape: Sequence[int] | None,
    ndim: int | None,
    strides: Sequence[int] | None,
    device_type: int,
    device_id: int,
) -> DLTensor:
    """Apply the only override allowed on a producer: fold trailing dims into lanes."""
    requested = (as_int32(device_type, "device_type"), as_int32(device_id, "device_id"))
    actual = (source.device.device_type.value, source.device.device_id)
    if requested not in ((DLDeviceType.kDLCPU, 0), actual):
        raise ValueError(f"cannot move a DLPack tensor on {actual} to device {requested}")
    if dtype is None and shape is None and ndim is None and strides is None:
        return source
    if dtype is None:
        raise ValueError("overriding a DLPack producer's layout requires dtype (a lanes fold)")
    new = _as_dldatatype(dtype)
    old = source.dtype
    if (new.code, new.bits) != (old.code, old.bits):
        raise ValueError(f"a lanes fold must keep code and bits: {old!r} -> {new!r}")
    if new.lanes % old.lanes:
        raise ValueError(f"lanes {new.lanes} is not a multiple of the source lanes {old.lanes}")
    if (old.bits * old.lanes) % 8:
        raise ValueError(f"a lanes fold needs byte-aligned elements, got {old!r}")
    if not _is_compact(source):
        raise ValueError("a lanes fold needs a compact row-major source")
    target = _fold_target(source.shape_tuple, new.lanes // old.lanes, shape, ndim)
    if strides is not None:
        steps = _as_strides(strides, "strides")
        if tuple(steps[: len(target)]) != _compact_strides(target) or len(steps) < len(target):
            raise ValueError("strides of a lanes fold must be the compact row-major strides")
    shape_arr = _int64_array(target)
    tensor = DLTensor(
        data=source.data,
        device=DLDevice(*actual),
        ndim=len(target),
        dtype=new,
        shape=shape_arr,
        strides=None,
        byte_offset=source.byte_offset,
    )
    tensor._keepalive = source
    tensor._arrays = (shape_arr, None)
    return tensor


def _fold_target(
    dims: tuple[int, ...], factor: int, shape: Sequence[int] | None, ndim: int | None
) -> tuple[int, ...]:
    """Return the shape left by folding trailing dims (product ``factor``) to lanes."""
    if shape is not None:
        target = tuple(_as_dims(shape, "shape"))
        if ndim is not None:
            count = as_uint(ndim, "ndim", 31)
            if count > len(target):
                raise ValueError(f"ndim {count} exceeds len(shape) {len(target)}")
            target = target[:count]
        kept = len(target)
        if kept and target == dims[:kept] and math.prod(dims[kept:]) == factor:
            return target
        if target == (1,) and math.prod(dims) == factor:
            return target
        raise ValueError(f"shape {target} is not a fold of {dims} into {factor} lanes")
    if ndim is not None:
        kept = as_uint(ndim, "ndim", 31)
        if 1 <= kept <= len(dims) and math.prod(dims[kept:]) == factor:
            return dims[:kept]
        if kept == 1 and math.prod(dims) == factor:
            return (1,)
        raise ValueError(f"ndim {kept} is not a fold of {dims} into {factor} lanes")
    for kept in range(len(dims), 0, -1):
        if math.prod(dims[kept:]) == factor:
            return dims[:kept]
    if math.prod(dims) == factor:
        return (1,)
    raise ValueError(f"no fold of trailing dims of {dims} gives {factor} lanes")


# ------------------------------------------------------------------------------
# dltensor_to_numpy


def dltensor_to_numpy(tensor: DLTensor, *, readonly: bool = False) -> np.ndarray:
    """Return a flat zero-copy numpy view of a host-memory ``DLTensor``.

    The view has ``prod(shape) * lanes`` base elements (lanes folded into the length).
    float16 is a real numpy float16, bool a numpy bool, bfloat16 the raw uint16 bits.
    Non-host devices raise ``NotImplementedError``; non-compact strides raise
    ``ValueError``. With ``readonly=True`` the view is backed by a read-only buffer
    (``WRITEABLE`` cannot be turned back on). The view keeps ``tensor`` alive.

    A tensor of sealed data (``ReadGroup.tensor(i)``, the ``raw_dltensor`` of a read-only
    export) must never be written: with ``readonly=False`` it comes back as a writable private
    copy, not a view.
    """
    if not isinstance(tensor, DLTensor):
        raise TypeError(f"tensor must be a DLTensor, got {type(tensor).__name__}")
    if tensor.device.device_type.value not in _HOST_DEVICES:
        where = _device_name(tensor.device.device_type.value)
        raise NotImplementedError(f"numpy views need host memory; tensor is on {where}")
    # The field is a uint16: a lanes value set above 65535 has already wrapped, and any
    # value outside the transport range is refused rather than decoded.
    _check_lanes(tensor.dtype.lanes)
    np_dtype = _numpy_dtype(tensor.dtype)
    if tensor.ndim < 0 or (tensor.ndim > 0 and not tensor.shape):
        raise ValueError(f"tensor has ndim {tensor.ndim} and no usable shape")
    if not _is_compact(tensor):
        raise ValueError(f"tensor is not compact row-major (strides {tensor.strides_tuple})")
    dims = tensor.shape_tuple
    if any(d < 0 for d in dims):
        raise ValueError(f"tensor shape {dims} has a negative dimension")
    count = math.prod(dims) * tensor.dtype.lanes
    nbytes = count * np_dtype.itemsize
    backing = getattr(tensor, "_backing_nbytes", None)
    if backing is not None and tensor.byte_offset + nbytes > backing:
        raise ValueError(
            f"tensor describes {nbytes} bytes at byte offset {tensor.byte_offset} but its "
            f"backing buffer holds {backing}"
        )
    if count == 0:
        if readonly:
            # Backed by immutable bytes: WRITEABLE cannot be turned back on.
            return np.frombuffer(b"", dtype=np_dtype)
        return np.empty(0, dtype=np_dtype)
    if not tensor.data:
        raise ValueError("tensor data pointer is NULL")
    buffer = (ctypes.c_char * nbytes).from_address(tensor.data + tensor.byte_offset)
    buffer._owner = tensor
    view = memoryview(buffer).cast("B")
    sealed = getattr(tensor, "_read_only", False)
    if readonly or sealed:
        view = view.toreadonly()
    result = np.frombuffer(view, dtype=np_dtype, count=count)
    return result.copy() if sealed and not readonly else result


# ------------------------------------------------------------------------------
# ManagedDLTensor


class NativeExporter(Protocol):
    """What the stage layer provides to wrap a native managed-tensor template."""

    def to_capsule_pointer(self, addr: int, versioned: bool) -> int:
        """Return a fresh ``DLManagedTensor[Versioned]*`` for one capsule."""
        ...

    def free(self, addr: int) -> None:
        """Drop the template at ``addr``."""
        ...

    def capsule_destructor(self) -> int:
        """Address of the C ``void(PyObject*)`` destructor for ``PyCapsule_New``."""
        ...

    def stream_wait(self, addr: int, stream: int) -> None:
        """Make CUDA ``stream`` wait until the data of the export at ``addr`` is ready."""
        ...


# DLPack ``stream`` values for CUDA consumers (array API ``__dlpack__``).
_CUDA_LEGACY_STREAM = 1
_CUDA_NO_SYNC = -1


def dlpack_cuda_stream(stream: object) -> int | None:
    """Map a consumer's DLPack ``stream`` argument to the CUDA stream to synchronize.

    ``None`` means the legacy default stream (``1``); ``-1`` means no synchronization
    (returns ``None``); ``1`` (legacy default), ``2`` (per-thread default) and any other
    positive integer (a ``CUstream`` handle) are returned as is. ``0`` is ambiguous for
    CUDA and, like other negative values, raises ``ValueError``; a non-integer raises
    ``TypeError``.
    """
    if stream is None:
        return _CUDA_LEGACY_STREAM
    if isinstance(stream, bool):
        raise TypeError("stream must be an int or None, got bool")
    try:
        value = operator.index(stream)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"stream must be an int or None, got {type(stream).__name__}") from None
    if value == _CUDA_NO_SYNC:
        return None
    if value == 0:
        raise ValueError(
            "stream 0 is ambiguous for CUDA tensors: pass 1 (legacy default stream), "
            "2 (per-thread default stream), a stream handle, or -1 (no synchronization)"
        )
    if value < 0:
        raise ValueError(f"stream must be -1, None or a positive stream handle, got {value}")
    return value


# Exports of caller-constructed ManagedDLTensors still held by a capsule or a consumer,
# keyed by the address of their managed struct.
_PLAIN_EXPORTS: dict[int, tuple[object, ...]] = {}


def _forget_plain_export(managed_addr: int | None) -> None:
    """Run as the DLPack deleter of a plain export: forget its record and struct."""
    if managed_addr is not None:
        _PLAIN_EXPORTS.pop(managed_addr, None)


# The ctypes callback must live as long as the module: consumers call it at any time.
_PLAIN_DELETER = _DELETER_TYPE(_forget_plain_export)
_PLAIN_DELETER_ADDR = ctypes.cast(_PLAIN_DELETER, ctypes.c_void_p).value


class ManagedDLTensor:
    """A tensor exportable through ``__dlpack__`` (for ``np/torch/wp.from_dlpack``).

    ``ManagedDLTensor(dl_tensor, manager_ctx, deleter_callback=None, readonly=True)``
    wraps a caller-owned ``DLTensor``: the data is borrowed (``manager_ctx`` is only
    kept alive), and ``deleter_callback(manager_ctx)``, if given, runs once when this
    object and every view exported from it are gone. The stage layer builds instances
    over native exports with :meth:`_from_native`; those views keep their storage alive.

    Exports of a multi-lane dtype get one extra trailing axis with ``lanes == 1``;
    strides are always filled. ``shape``/``dtype`` report the raw, unexpanded tensor.

    A caller-constructed instance builds each exported managed tensor in ctypes memory,
    kept (with this object) until the consumer calls the DLPack deleter; a capsule
    dropped without being consumed keeps that small record forever (see ``__dlpack__``).
    """

    def __init__(
        self,
        dl_tensor: DLTensor,
        manager_ctx: object,
        deleter_callback: Callable[[object], object] | None = None,
        readonly: bool = True,
    ) -> None:
        if not isinstance(dl_tensor, DLTensor):
            raise TypeError(f"dl_tensor must be a DLTensor, got {type(dl_tensor).__name__}")
        self._tensor_copy: DLTensor | None = dl_tensor
        self._manager_ctx = manager_ctx
        self._deleter_callback = deleter_callback
        self._readonly = bool(readonly)
        self._exporter: NativeExporter | None = None
        self._native_addr = 0
        if deleter_callback is not None:
            weakref.finalize(self, deleter_callback, manager_ctx)

    @classmethod
    def _from_native(
        cls, versioned_addr: int, readonly: bool, exporter: NativeExporter
    ) -> ManagedDLTensor:
        """Wrap a native ``DLManagedTensorVersioned*`` template (freed with this). Its
        ``DLTensor`` is copied when first asked for: ``np.from_dlpack`` never asks."""
        self = cls.__new__(cls)
        self._native_addr = versioned_addr
        self._tensor_copy = None
        self._manager_ctx = versioned_addr
        self._deleter_callback = None
        self._readonly = bool(readonly)
        self._exporter = exporter
        return self

    def __del__(self) -> None:
        addr = getattr(self, "_native_addr", 0)
        if addr:
            self._native_addr = 0
            try:
                self._exporter.free(addr)  # type: ignore[union-attr]
            except Exception:  # a finalizer never raises (interpreter shutdown, say)
                return

    @property
    def _tensor(self) -> DLTensor:
        """The wrapped ``DLTensor``: for a native export, a copy of its template's."""
        tensor = self._tensor_copy
        if tensor is None:
            template = DLManagedTensorVersioned.from_address(self._native_addr)
            tensor = DLTensor._copy_of(template.dl_tensor)
            # The raw tensor of a read-only export views sealed data (see dltensor_to_numpy).
            tensor._read_only = self._readonly
            self._tensor_copy = tensor
        return tensor

    @property
    def raw_dltensor(self) -> DLTensor:
        """The wrapped ``DLTensor`` (raw layout: multi-lane dtype, no extra axis)."""
        return self._tensor

    @property
    def shape(self) -> tuple[int, ...]:
        """The raw shape (lanes not expanded)."""
        return self._tensor.shape_tuple

    @property
    def ndim(self) -> int:
        """The raw number of dimensions."""
        return int(self._tensor.ndim)

    @property
    def dtype(self) -> DLDataType:
        """The raw ``DLDataType`` (with lanes)."""
        dtype: DLDataType = self._tensor.dtype
        return dtype

    @property
    def data(self) -> int:
        """The raw ``data`` pointer as an int (``byte_offset`` not applied)."""
        return self._tensor.data or 0

    @property
    def device(self) -> DLDevice:
        """The tensor's ``DLDevice`` (a copy; it unpacks and compares like the
        ``(device_type, device_id)`` pair)."""
        device = self._tensor.device
        return DLDevice(device.device_type.value, device.device_id)

    @property
    def readonly(self) -> bool:
        """Whether exports are flagged read-only (versioned capsules only)."""
        return self._readonly

    def numpy(self) -> np.ndarray:
        """``np.from_dlpack(self)``: a zero-copy numpy view (CPU tensors only: other devices
        raise ``NotImplementedError``). numpy has no bfloat16: such a tensor comes back as its
        raw ``uint16`` bits (a view, read-only if the export is); a dtype numpy cannot hold at
        all (float8, int4 ...) raises ``ValueError`` naming it."""
        raw = self._tensor
        if raw.device.device_type.value not in _HOST_DEVICES:
            where = _device_name(raw.device.device_type.value)
            raise NotImplementedError(f"numpy views need host memory; tensor is on {where}")
        if (raw.dtype.code, raw.dtype.bits) not in _DL_TO_NUMPY:
            raise ValueError(f"numpy has no dtype for this tensor's {raw.dtype!r}")
        if raw.dtype.code != DLDataTypeCode.kDLBfloat:
            return np.from_dlpack(self)
        view = DLTensor._copy_of(raw)
        view._keepalive = self  # the export owns the storage
        view._read_only = getattr(raw, "_read_only", False)
        bits = dltensor_to_numpy(view, readonly=self._readonly)
        lanes = raw.dtype.lanes
        return bits.reshape(raw.shape_tuple + ((lanes,) if lanes > 1 else ()))

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(device_type, device_id)`` as plain ints."""
        return _device_tuple(self._tensor.device)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export a DLPack capsule (versioned when ``max_version >= (1, 0)``).

        For tensors a read group exports from a GPU column, ``stream`` is the consumer's
        CUDA stream, which is made to wait (on the GPU) until the data is ready: ``None``
        means the legacy default stream, ``-1`` no synchronization (see
        :func:`dlpack_cuda_stream`). Otherwise ``stream`` is ignored (host data is ready).
        ``copy=True`` and a ``dl_device`` other than this tensor's raise ``BufferError``.
        """
        if copy:
            raise BufferError("ManagedDLTensor exports views only (copy=True is not supported)")
        if dl_device is not None:
            self._check_device(dl_device)
        if (
            self._exporter is not None
            and _int32_at(self._native_addr + _DEVICE_TYPE_OFFSET).value in _STREAM_DEVICES
        ):
            handle = dlpack_cuda_stream(stream)
            if handle is not None:
                self._exporter.stream_wait(self._native_addr, handle)
        versioned = _wants_versioned(max_version)
        name = _VERSIONED_NAME if versioned else _LEGACY_NAME
        if self._exporter is not None:
            addr = self._exporter.to_capsule_pointer(self._native_addr, versioned)
            if not addr:
                raise BufferError("the native exporter returned a NULL managed tensor")
            return _capsule_new(addr, name, self._exporter.capsule_destructor())
        addr = self._export_plain(versioned)
        try:
            # No capsule destructor: one written in Python could run while an exception
            # is in flight (a consumer rejecting the capsule) and clobber it. A capsule
            # dropped unconsumed therefore leaks its small export record.
            return _capsule_new(addr, name, None)
        except BaseException:
            _PLAIN_EXPORTS.pop(addr, None)
            raise

    def _check_device(self, dl_device: Any) -> None:
        try:
            device_type, device_id = dl_device
            requested = (operator.index(device_type), operator.index(device_id))
        except (TypeError, ValueError):
            raise TypeError(
                f"dl_device must be a (device_type, device_id) pair, got {dl_device!r}"
            ) from None
        if requested != self.__dlpack_device__():
            raise BufferError(f"cannot export a tensor on {self.device} to device {requested}")

    def _export_plain(self, versioned: bool) -> int:
        """Build one capsule's managed struct in ctypes memory; return its address."""
        raw = self._tensor
        lanes = raw.dtype.lanes
        dims = list(raw.shape_tuple)
        steps = list(raw.strides_tuple or _compact_strides(dims))
        if lanes > 1:
            dims.append(lanes)
            steps = [step * lanes for step in steps] + [1]
        shape_arr = _int64_array(dims)
        strides_arr = _int64_array(steps)
        dl = DLTensor(
            data=raw.data,
            device=DLDevice(raw.device.device_type.value, raw.device.device_id),
            ndim=len(dims),
            dtype=DLDataType(raw.dtype.code, raw.dtype.bits, 1),
            shape=shape_arr,
            strides=strides_arr,
            byte_offset=raw.byte_offset,
        )
        managed: ctypes.Structure
        if versioned:
            flags = DLPACK_FLAG_BITMASK_READ_ONLY if self._readonly else 0
            managed = DLManagedTensorVersioned(
                version=DLPackVersion(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION),
                deleter=_PLAIN_DELETER_ADDR,
                flags=flags,
                dl_tensor=dl,
            )
        else:
            managed = DLManagedTensor(dl_tensor=dl, deleter=_PLAIN_DELETER_ADDR)
        addr = ctypes.addressof(managed)
        _PLAIN_EXPORTS[addr] = (managed, shape_arr, strides_arr, self)
        return addr

    def __repr__(self) -> str:
        return (
            f"ManagedDLTensor(shape={self.shape}, dtype={self.dtype!r}, "
            f"device={self._tensor.device!r}, readonly={self._readonly})"
        )


def _wants_versioned(max_version: object) -> bool:
    """Tell whether the consumer accepts our versioned capsule: a ``max_version`` of major 1
    (any minor). Without one, or for another major version, the legacy capsule is exported."""
    if max_version is None:
        return False
    if type(max_version) is tuple and len(max_version) == 2:  # what consumers pass
        major, minor = max_version
        if major.__class__ is int and minor.__class__ is int:
            return bool(major == DLPACK_MAJOR_VERSION)
    try:
        major = operator.index(max_version[0])  # type: ignore[index]
        operator.index(max_version[1])  # type: ignore[index]
    except (TypeError, IndexError):
        raise TypeError(f"max_version must be a (major, minor) pair, got {max_version!r}") from None
    return major == DLPACK_MAJOR_VERSION


# ------------------------------------------------------------------------------
# typed_tensor_to_write


def typed_tensor_to_write(tensor: DLTensor) -> DLTensor:
    """Describe a typed read/map tensor in the lane layout writes take, without copying.

    A group tensor has scalar lanes and component axes (``(N, 3)``, ``(N, 4, 4)``); a write
    takes ``(N,)`` with the components in ``lanes`` (3, 16), which matters for ragged writes:
    they take ``lanes`` literally. The trailing axes (at most 255 components) must be compact;
    the row stride must be a non-negative multiple of their product and becomes the stride in
    lane elements (0 keeps a broadcast). Anything else raises ``ValueError``.

    The result shares ``tensor``'s data, device, code, bits and byte offset and keeps
    ``tensor`` alive (``_source``) with its own two-entry shape/stride array
    (``_layout_storage``). Write it back with the column's semantic and ``is_array``.
    """
    if not isinstance(tensor, DLTensor):
        raise TypeError(f"tensor must be a DLTensor, got {type(tensor).__name__}")
    ndim = tensor.ndim
    if not tensor.shape:
        raise ValueError("typed_tensor_to_write: tensor shape is NULL")
    if tensor.dtype.lanes != 1:
        raise ValueError(f"typed_tensor_to_write: dtype lanes must be 1, got {tensor.dtype.lanes}")
    if not 1 <= ndim <= 3:
        raise ValueError(f"typed_tensor_to_write: ndim must be in 1..3, got {ndim}")
    rows = tensor.shape[0]
    if rows < 0:
        raise ValueError(f"typed_tensor_to_write: shape[0] must be non-negative, got {rows}")
    strides = tensor.strides
    components = 1
    for axis in range(ndim - 1, 0, -1):
        extent = tensor.shape[axis]
        if not 1 <= extent <= _MAX_LANES // components:
            raise ValueError(
                f"typed_tensor_to_write: shape[{axis}] = {extent} does not fold into at most "
                f"{_MAX_LANES} lanes"
            )
        if strides and strides[axis] != components:
            raise ValueError(
                f"typed_tensor_to_write: strides[{axis}] = {strides[axis]} is not compact "
                f"(expected {components})"
            )
        components *= extent
    row_stride = strides[0] if strides else components
    if row_stride < 0 or row_stride % components:
        raise ValueError(
            f"typed_tensor_to_write: row stride {row_stride} is not a non-negative multiple "
            f"of {components} components"
        )
    layout = (ctypes.c_int64 * 2)(rows, row_stride // components)
    result = DLTensor(
        data=tensor.data,
        device=DLDevice(tensor.device.device_type.value, tensor.device.device_id),
        ndim=1,
        dtype=DLDataType(tensor.dtype.code, tensor.dtype.bits, components),
        shape=ctypes.cast(layout, ctypes.POINTER(ctypes.c_int64)),
        strides=ctypes.cast(ctypes.byref(layout, 8), ctypes.POINTER(ctypes.c_int64)),
        byte_offset=tensor.byte_offset,
    )
    result._source = tensor
    result._layout_storage = layout
    # A tensor of sealed data stays read-only through the new description.
    result._read_only = getattr(tensor, "_read_only", False)
    backing = getattr(tensor, "_backing_nbytes", None)
    if backing is not None:
        result._backing_nbytes = backing
    return result
