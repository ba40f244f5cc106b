"""DLPack structures and tensor helpers.

Pure Python (ctypes + numpy): these tests need neither the native extension nor a stage.
"""

from __future__ import annotations

import ctypes
import gc
import weakref
from typing import Any

import numpy as np
import pytest
from ovstage._dlpack import (
    DLPACK_FLAG_BITMASK_IS_COPIED,
    DLPACK_FLAG_BITMASK_READ_ONLY,
    DLDataType,
    DLDataTypeCode,
    DLDevice,
    DLDeviceType,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackVersion,
    DLTensor,
    ManagedDLTensor,
    dltensor_to_numpy,
    make_dltensor,
    numpy_to_dldatatype,
)

INT, UINT, FLOAT, BFLOAT, BOOL = (
    DLDataTypeCode.kDLInt,
    DLDataTypeCode.kDLUInt,
    DLDataTypeCode.kDLFloat,
    DLDataTypeCode.kDLBfloat,
    DLDataTypeCode.kDLBool,
)
CPU, CUDA = DLDeviceType.kDLCPU, DLDeviceType.kDLCUDA

_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p
)(("PyCapsule_New", ctypes.pythonapi))


def _dt(dtype: DLDataType) -> tuple[int, int, int]:
    return (dtype.code, dtype.bits, dtype.lanes)


def _addr(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _collect() -> None:
    for _ in range(3):
        gc.collect()


class Wrapped:
    """A non-numpy DLPack producer that forwards to a numpy array."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.capsules: list[object] = []

    def __dlpack__(self, **kwargs: Any) -> object:
        capsule = self.array.__dlpack__(**kwargs)
        self.capsules.append(capsule)
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.array.__dlpack_device__()


class HandMadeProducer:
    """A producer whose managed tensor is built in ctypes, with a counting deleter.

    The data pointer is never dereferenced by the code under test, so it can pretend to
    live on a CUDA device.
    """

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: DLDataType,
        device: tuple[int, int] = (CPU, 0),
    ) -> None:
        self.deleted: list[int] = []
        self.calls: list[dict[str, Any]] = []
        self.device = device
        self._deleter = _DELETER(lambda addr: self.deleted.append(addr))
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._data = ctypes.create_string_buffer(64)
        self.managed = DLManagedTensor(
            dl_tensor=DLTensor(
                data=ctypes.addressof(self._data),
                device=DLDevice(*device),
                ndim=len(shape),
                dtype=dtype,
                shape=self._shape,
                strides=None,
                byte_offset=0,
            ),
            deleter=ctypes.cast(self._deleter, ctypes.c_void_p).value,
        )

    def __dlpack__(self, **kwargs: Any) -> object:
        self.calls.append(kwargs)
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


# ---------------------------------------------------------------- ABI


def test_struct_layouts_match_the_dlpack_abi() -> None:
    assert ctypes.sizeof(DLDevice) == 8
    assert ctypes.sizeof(DLDataType) == 4
    assert ctypes.sizeof(DLTensor) == 48
    assert [getattr(DLTensor, f).offset for f, _ in DLTensor._fields_] == [
        0, 8, 16, 20, 24, 32, 40
    ]  # fmt: skip
    assert ctypes.sizeof(DLManagedTensor) == 64
    assert ctypes.sizeof(DLPackVersion) == 8
    assert ctypes.sizeof(DLManagedTensorVersioned) == 80
    assert DLManagedTensorVersioned.flags.offset == 24
    assert DLManagedTensorVersioned.dl_tensor.offset == 32
    assert (DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_IS_COPIED) == (1, 2)


def _constants(cls: type) -> dict[str, int]:
    return {k: v for k, v in vars(cls).items() if k.startswith("kDL")}


def test_enum_values() -> None:
    # 0.3.0: ctypes integer types whose class attributes are the plain int constants.
    assert issubclass(DLDeviceType, ctypes.c_int)
    assert issubclass(DLDataTypeCode, ctypes.c_uint8)
    assert all(type(v) is int for v in _constants(DLDeviceType).values())
    assert _constants(DLDeviceType) == {
        "kDLCPU": 1, "kDLCUDA": 2, "kDLCUDAHost": 3, "kDLOpenCL": 4, "kDLVulkan": 7,
        "kDLMetal": 8, "kDLVPI": 9, "kDLROCM": 10, "kDLROCMHost": 11, "kDLExtDev": 12,
        "kDLCUDAManaged": 13, "kDLOneAPI": 14, "kDLWebGPU": 15, "kDLHexagon": 16,
        "kDLMAIA": 17, "kDLTrn": 18,
    }  # fmt: skip
    assert list(_constants(DLDataTypeCode).items()) == [
        ("kDLInt", 0), ("kDLUInt", 1), ("kDLFloat", 2), ("kDLOpaqueHandle", 3),
        ("kDLBfloat", 4), ("kDLComplex", 5), ("kDLBool", 6),
    ]  # fmt: skip


# ---------------------------------------------------------------- dtypes


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        (np.float16, (FLOAT, 16)),
        ("float16", (FLOAT, 16)),
        ("e", (FLOAT, 16)),
        (np.float32, (FLOAT, 32)),
        ("f4", (FLOAT, 32)),
        (np.dtype("float32"), (FLOAT, 32)),
        (float, (FLOAT, 64)),
        ("float64", (FLOAT, 64)),
        ("<f8", (FLOAT, 64)),
        (np.int8, (INT, 8)),
        ("int16", (INT, 16)),
        ("i4", (INT, 32)),
        (np.int64, (INT, 64)),
        (np.uint8, (UINT, 8)),
        ("uint16", (UINT, 16)),
        ("u4", (UINT, 32)),
        (np.uint64, (UINT, 64)),
        (bool, (BOOL, 8)),
        (np.bool_, (BOOL, 8)),
        ("?", (BOOL, 8)),
    ],
)
def test_numpy_to_dldatatype_spellings(spelling: Any, expected: tuple[int, int]) -> None:
    assert _dt(numpy_to_dldatatype(spelling)) == (*expected, 1)


def test_numpy_to_dldatatype_lanes() -> None:
    assert _dt(numpy_to_dldatatype(np.float32, lanes=3)) == (FLOAT, 32, 3)
    assert _dt(numpy_to_dldatatype("f8", 16)) == (FLOAT, 64, 16)
    assert _dt(numpy_to_dldatatype(np.uint64, np.int32(255))) == (UINT, 64, 255)
    for bad in (0, 256, -1):
        with pytest.raises(ValueError, match="lanes"):
            numpy_to_dldatatype(np.float32, bad)
    with pytest.raises(TypeError, match="lanes"):
        numpy_to_dldatatype(np.float32, 3.0)


@pytest.mark.parametrize(
    "bad",
    [np.complex64, "complex128", "U3", object, "datetime64[s]", ">f4", "V8",
     "not-a-dtype", np.dtype([("a", "f4")])],
)  # fmt: skip
def test_numpy_to_dldatatype_rejects_others(bad: Any) -> None:
    with pytest.raises(ValueError):
        numpy_to_dldatatype(bad)


# ---------------------------------------------------------------- make_dltensor


def test_make_dltensor_float32_aliases_the_array() -> None:
    array = np.arange(5, dtype=np.float32)
    tensor = make_dltensor(array)
    assert tensor.data == _addr(array)
    assert tensor.shape_tuple == (5,)
    assert tensor.ndim == 1
    assert _dt(tensor.dtype) == (FLOAT, 32, 1)
    assert (tensor.device.device_type, tensor.device.device_id) == (CPU, 0)
    assert tensor.byte_offset == 0
    assert not tensor.strides and tensor.strides_tuple is None


def test_make_dltensor_n_by_3() -> None:
    array = np.arange(12, dtype=np.float64).reshape(4, 3)
    tensor = make_dltensor(array)
    assert tensor.shape_tuple == (4, 3)
    assert _dt(tensor.dtype) == (FLOAT, 64, 1)
    assert tensor.data == _addr(array)
    np.testing.assert_array_equal(dltensor_to_numpy(tensor), array.ravel())


def test_make_dltensor_bool_and_float16() -> None:
    flags = np.array([True, False, True])
    tensor = make_dltensor(flags)
    assert _dt(tensor.dtype) == (BOOL, 8, 1)
    view = dltensor_to_numpy(tensor)
    assert view.dtype == np.bool_
    np.testing.assert_array_equal(view, flags)

    halves = np.array([0.5, -2.0, 65504.0], dtype=np.float16)
    tensor = make_dltensor(halves)
    assert _dt(tensor.dtype) == (FLOAT, 16, 1)
    view = dltensor_to_numpy(tensor)
    assert view.dtype == np.float16
    np.testing.assert_array_equal(view, halves)


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(20, dtype=np.int32)[::2],
        lambda: np.arange(10, dtype=np.int32)[::-1],
        lambda: np.arange(12, dtype=np.int32).reshape(3, 4).T,
        lambda: np.arange(24, dtype=np.int32).reshape(4, 6)[:, 1:4],
    ],
    ids=["step2", "negative", "transposed", "column-slice"],
)
def test_make_dltensor_copies_non_contiguous_arrays(make: Any) -> None:
    array = make()
    assert not array.flags.c_contiguous
    tensor = make_dltensor(array)
    assert tensor.data != _addr(array)
    assert tensor.shape_tuple == array.shape
    assert tensor.strides_tuple is None
    np.testing.assert_array_equal(dltensor_to_numpy(tensor), array.ravel())


def test_make_dltensor_keeps_the_array_alive() -> None:
    array = np.arange(1000, dtype=np.int64)
    ref = weakref.ref(array)
    tensor = make_dltensor(array)
    del array
    _collect()
    assert ref() is not None
    assert tensor.data == ref().ctypes.data  # zero-copy: the tensor aliases the array
    np.testing.assert_array_equal(dltensor_to_numpy(tensor), np.arange(1000))
    del tensor
    _collect()
    assert ref() is None


def test_make_dltensor_lists_and_scalars() -> None:
    tensor = make_dltensor([[1, 2, 3], [4, 5, 6]])
    assert tensor.shape_tuple == (2, 3)
    assert _dt(tensor.dtype) == (INT, 64, 1)
    tensor = make_dltensor(np.float32(2.5))
    assert tensor.shape_tuple == (1,)
    assert dltensor_to_numpy(tensor).tolist() == [2.5]


def test_make_dltensor_dtype_and_shape_overrides() -> None:
    flat = np.arange(12, dtype=np.float32)
    tensor = make_dltensor(flat, dtype=DLDataType(FLOAT, 32, 3), shape=[4])
    assert tensor.shape_tuple == (4,)
    assert _dt(tensor.dtype) == (FLOAT, 32, 3)
    assert tensor.data == _addr(flat)
    np.testing.assert_array_equal(dltensor_to_numpy(tensor), flat)

    matrices = np.zeros((2, 4, 4))
    tensor = make_dltensor(matrices, dtype=numpy_to_dldatatype("f8", 16), shape=(2,))
    assert (tensor.shape_tuple, _dt(tensor.dtype)) == ((2,), (FLOAT, 64, 16))

    raw = np.arange(6, dtype=np.uint8)
    tensor = make_dltensor(raw, dtype=np.uint16, shape=[3])  # numpy dtype override
    assert (tensor.shape_tuple, _dt(tensor.dtype)) == ((3,), (UINT, 16, 1))
    with pytest.raises(ValueError, match="bytes"):
        make_dltensor(raw, dtype=np.uint16)  # 6 uint16 would overrun the array


def test_make_dltensor_ndim_and_strides_overrides() -> None:
    array = np.arange(12, dtype=np.int32)
    tensor = make_dltensor(array, shape=[3, 4, 99], ndim=2)
    assert tensor.shape_tuple == (3, 4)
    tensor = make_dltensor(array, shape=[6], strides=[2])
    assert tensor.strides_tuple == (2,)
    assert tensor.shape_tuple == (6,)
    tensor = make_dltensor(array, shape=[3, 4], strides=[4, 1, 7], device_type=CPU, device_id=0)
    assert tensor.strides_tuple == (4, 1)


def test_make_dltensor_override_errors() -> None:
    array = np.arange(12, dtype=np.float32)
    with pytest.raises(ValueError, match="ndim"):
        make_dltensor(array, shape=[12], ndim=2)
    with pytest.raises(ValueError, match="strides"):
        make_dltensor(array, shape=[3, 4], strides=[4])
    for lanes in (0, 256):
        with pytest.raises(ValueError, match="lanes"):
            make_dltensor(array, dtype=DLDataType(FLOAT, 32, lanes), shape=[4])
    with pytest.raises(ValueError, match="bytes"):
        make_dltensor(array, shape=[13])
    with pytest.raises(ValueError, match="bytes"):
        make_dltensor(array, dtype=DLDataType(FLOAT, 32, 3), shape=[5])
    with pytest.raises(ValueError, match="bytes"):
        make_dltensor(array, shape=[7], strides=[2])
    with pytest.raises(ValueError):
        make_dltensor(array, shape=[3], strides=[-1])
    with pytest.raises(ValueError, match="shape"):
        make_dltensor(array, shape=[-1])
    with pytest.raises(TypeError, match="shape"):
        make_dltensor(array, shape=[4.0])


def test_make_dltensor_rejects_unsupported_inputs() -> None:
    with pytest.raises(TypeError, match="array"):
        make_dltensor(object())
    with pytest.raises(TypeError, match="array"):
        make_dltensor("abc")
    with pytest.raises(TypeError, match="array"):
        make_dltensor(np.array([1, "x", None], dtype=object))
    with pytest.raises(ValueError):
        make_dltensor(np.zeros(3, dtype=np.complex64))


# ---------------------------------------------------------------- DLPack producers


def test_from_dlpack_numpy_keeps_values_and_runs_the_deleter_on_gc() -> None:
    array = np.arange(6, dtype=np.float64).reshape(2, 3) * 1.5
    expected = array.copy()
    ref = weakref.ref(array)
    tensor = DLTensor.from_dlpack(array)
    assert tensor.data == _addr(array)
    assert tensor.shape_tuple == (2, 3)
    assert _dt(tensor.dtype) == (FLOAT, 64, 1)
    del array
    _collect()
    assert ref() is not None  # the managed tensor still holds the producer
    np.testing.assert_array_equal(dltensor_to_numpy(tensor), expected.ravel())
    del tensor
    _collect()
    assert ref() is None  # numpy's deleter dropped its reference


def test_from_dlpack_copies_strides_and_renames_the_capsule() -> None:
    producer = Wrapped(np.arange(10, dtype=np.int16)[::2])
    tensor = DLTensor.from_dlpack(producer)
    assert tensor.shape_tuple == (5,)
    assert tensor.strides_tuple == (2,)
    assert 'used_dltensor"' in repr(producer.capsules[0])
    assert tensor._keepalive is producer


def test_from_dlpack_deleter_runs_exactly_once() -> None:
    producer = HandMadeProducer((4, 2), DLDataType(FLOAT, 32, 1))
    tensor = DLTensor.from_dlpack(producer)
    assert producer.calls == [{}]  # CPU producers get no stream argument
    assert tensor.shape_tuple == (4, 2)
    assert tensor.data == ctypes.addressof(producer._data)
    assert producer.deleted == []
    del tensor
    _collect()
    assert producer.deleted == [ctypes.addressof(producer.managed)]
    _collect()
    assert len(producer.deleted) == 1


def test_from_dlpack_passes_stream_to_cuda_producers_only() -> None:
    producer = HandMadeProducer((3,), DLDataType(FLOAT, 32, 1), device=(CUDA, 1))
    tensor = DLTensor.from_dlpack(producer, stream=7)
    assert producer.calls == [{"stream": 7}]
    assert (tensor.device.device_type, tensor.device.device_id) == (CUDA, 1)
    with pytest.raises(NotImplementedError):
        dltensor_to_numpy(tensor)
    cpu = HandMadeProducer((3,), DLDataType(FLOAT, 32, 1))
    DLTensor.from_dlpack(cpu, stream=7)
    assert cpu.calls == [{}]


def test_from_dlpack_rejects_bad_lanes_without_consuming() -> None:
    producer = HandMadeProducer((3,), DLDataType(FLOAT, 32, 0))
    with pytest.raises(ValueError, match="lanes"):
        DLTensor.from_dlpack(producer)
    _collect()
    assert producer.deleted == []  # not consumed: the deleter is not ours to run


def test_make_dltensor_ingests_producers_zero_copy() -> None:
    array = np.arange(12, dtype=np.float32).reshape(4, 3)
    tensor = make_dltensor(Wrapped(array))
    assert tensor.data == _addr(array)
    assert tensor.shape_tuple == (4, 3)
    np.testing.assert_array_equal(dltensor_to_numpy(tensor), array.ravel())


def test_make_dltensor_folds_trailing_dims_into_lanes() -> None:
    array = np.arange(12, dtype=np.float32).reshape(4, 3)
    float3 = DLDataType(FLOAT, 32, 3)
    tensor = make_dltensor(Wrapped(array), dtype=float3)
    assert (tensor.shape_tuple, _dt(tensor.dtype)) == ((4,), (FLOAT, 32, 3))
    assert tensor.data == _addr(array)
    np.testing.assert_array_equal(dltensor_to_numpy(tensor), array.ravel())
    tensor = make_dltensor(Wrapped(array), dtype=float3, shape=[4])
    assert tensor.shape_tuple == (4,)
    tensor = make_dltensor(Wrapped(array), dtype=float3, ndim=1)
    assert tensor.shape_tuple == (4,)

    matrices = np.zeros((2, 4, 4))
    tensor = make_dltensor(Wrapped(matrices), dtype=DLDataType(FLOAT, 64, 16))
    assert (tensor.shape_tuple, tensor.dtype.lanes) == ((2,), 16)

    one = np.arange(3, dtype=np.float32)
    tensor = make_dltensor(Wrapped(one), dtype=float3)
    assert tensor.shape_tuple == (1,)  # a fold consuming every axis

    same = make_dltensor(Wrapped(array), dtype=DLDataType(FLOAT, 32, 1))
    assert same.shape_tuple == (4, 3)


def test_make_dltensor_fold_of_a_multi_lane_source() -> None:
    source = HandMadeProducer((2, 4), DLDataType(FLOAT, 32, 4))
    tensor = make_dltensor(source, dtype=DLDataType(FLOAT, 32, 16))
    assert (tensor.shape_tuple, tensor.dtype.lanes) == ((2,), 16)


def test_make_dltensor_keeps_the_producer_alive() -> None:
    producer = HandMadeProducer((4, 2), DLDataType(FLOAT, 32, 1))
    tensor = make_dltensor(producer, dtype=DLDataType(FLOAT, 32, 2))
    _collect()
    assert producer.deleted == []
    del tensor
    _collect()
    assert len(producer.deleted) == 1


@pytest.mark.parametrize(
    "overrides",
    [
        {"shape": [4]},  # no dtype
        {"dtype": DLDataType(FLOAT, 64, 3)},  # bits differ
        {"dtype": DLDataType(INT, 32, 3)},  # code differs
        {"dtype": DLDataType(FLOAT, 32, 2)},  # no trailing dims give 2
        {"dtype": DLDataType(FLOAT, 32, 3), "shape": [2, 2]},  # not a prefix
        {"dtype": DLDataType(FLOAT, 32, 3), "shape": [4, 1]},
        {"dtype": DLDataType(FLOAT, 32, 12), "shape": [4]},
        {"dtype": DLDataType(FLOAT, 32, 3), "strides": [2]},
        {"dtype": DLDataType(FLOAT, 32, 3), "ndim": 2},
        {"device_type": CUDA},
    ],
)
def test_make_dltensor_rejects_other_producer_overrides(overrides: Any) -> None:
    array = np.arange(12, dtype=np.float32).reshape(4, 3)
    with pytest.raises(ValueError):
        make_dltensor(Wrapped(array), **overrides)


def test_make_dltensor_fold_needs_a_compact_source() -> None:
    strided = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    with pytest.raises(ValueError, match="compact"):
        make_dltensor(Wrapped(strided), dtype=DLDataType(FLOAT, 32, 3))
    tensor = make_dltensor(Wrapped(strided))  # no override: ingested as is
    assert tensor.strides_tuple == (6, 2)


def test_make_dltensor_fold_needs_byte_aligned_elements() -> None:
    producer = HandMadeProducer((4, 2), DLDataType(BOOL, 1, 1))
    with pytest.raises(ValueError, match="byte"):
        make_dltensor(producer, dtype=DLDataType(BOOL, 1, 2))


# ---------------------------------------------------------------- to numpy


@pytest.mark.parametrize(
    "dtype",
    ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64", "bool"],
)  # fmt: skip
def test_dltensor_to_numpy_round_trip(dtype: str) -> None:
    array = (np.arange(10) % 3).astype(dtype)
    view = dltensor_to_numpy(make_dltensor(array))
    assert view.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(view, array)


def test_dltensor_to_numpy_is_flat_with_lanes_folded_in() -> None:
    array = np.arange(24, dtype=np.float32)
    tensor = make_dltensor(array, dtype=DLDataType(FLOAT, 32, 3), shape=[2, 4])
    view = dltensor_to_numpy(tensor)
    assert view.shape == (24,)
    np.testing.assert_array_equal(view, array)


def test_dltensor_to_numpy_writes_through_and_readonly() -> None:
    array = np.zeros(4, dtype=np.int32)
    tensor = make_dltensor(array)
    view = dltensor_to_numpy(tensor)
    assert view.flags.writeable
    view[2] = 7
    assert array[2] == 7
    frozen = dltensor_to_numpy(tensor, readonly=True)
    assert not frozen.flags.writeable
    with pytest.raises(ValueError):
        frozen[0] = 1
    with pytest.raises(ValueError):
        frozen.flags.writeable = True


def test_dltensor_to_numpy_keeps_the_tensor_alive() -> None:
    array = np.arange(100, dtype=np.int64)
    ref = weakref.ref(array)
    view = dltensor_to_numpy(make_dltensor(array))
    del array
    _collect()
    assert ref() is not None
    assert view.sum() == 4950
    del view
    _collect()
    assert ref() is None


def test_dltensor_to_numpy_edge_cases() -> None:
    empty = dltensor_to_numpy(make_dltensor(np.zeros((0, 3), dtype=np.float32)))
    assert empty.shape == (0,) and empty.dtype == np.float32
    gpu = DLTensor(device=DLDevice(CUDA, 0), ndim=0, dtype=DLDataType(FLOAT, 32, 1))
    with pytest.raises(NotImplementedError):
        dltensor_to_numpy(gpu)
    strided = make_dltensor(np.arange(12, dtype=np.int32), shape=[6], strides=[2])
    with pytest.raises(ValueError, match="compact"):
        dltensor_to_numpy(strided)
    bf16 = make_dltensor(np.arange(3, dtype=np.uint16), dtype=DLDataType(BFLOAT, 16, 1))
    assert dltensor_to_numpy(bf16).dtype == np.uint16
    with pytest.raises(TypeError):
        dltensor_to_numpy(np.arange(3))  # type: ignore[arg-type]


# ---------------------------------------------------------------- ManagedDLTensor


def test_managed_plain_properties_and_numpy() -> None:
    array = np.arange(12, dtype=np.float32)
    tensor = make_dltensor(array, dtype=DLDataType(FLOAT, 32, 3), shape=[4])
    managed = ManagedDLTensor(tensor, array)
    assert managed.shape == (4,)
    assert managed.ndim == 1
    assert _dt(managed.dtype) == (FLOAT, 32, 3)
    assert managed.data == _addr(array)
    assert managed.device == (CPU, 0)
    assert managed.__dlpack_device__() == (CPU, 0)
    assert managed.raw_dltensor is tensor
    view = managed.numpy()
    assert view.shape == (4, 3)  # lanes exported as one trailing axis
    np.testing.assert_array_equal(view, array.reshape(4, 3))
    assert not view.flags.writeable  # readonly=True by default


def test_managed_plain_writable_export_aliases_memory() -> None:
    array = np.zeros((3, 2), dtype=np.int64)
    managed = ManagedDLTensor(make_dltensor(array), array, readonly=False)
    view = np.from_dlpack(managed)
    assert view.flags.writeable
    view[1, 1] = 5
    assert array[1, 1] == 5


def test_managed_plain_capsule_kinds() -> None:
    array = np.arange(3, dtype=np.uint8)
    managed = ManagedDLTensor(make_dltensor(array), array)
    assert '"dltensor"' in repr(managed.__dlpack__())
    assert '"dltensor"' in repr(managed.__dlpack__(max_version=(0, 8)))
    assert '"dltensor_versioned"' in repr(managed.__dlpack__(max_version=(1, 0)))
    assert '"dltensor_versioned"' in repr(managed.__dlpack__(max_version=(1, 3)))


def test_managed_dlpack_argument_checks() -> None:
    array = np.arange(3, dtype=np.uint8)
    managed = ManagedDLTensor(make_dltensor(array), array)
    with pytest.raises(BufferError):
        managed.__dlpack__(copy=True)
    managed.__dlpack__(copy=False)
    managed.__dlpack__(dl_device=(CPU, 0))
    with pytest.raises(BufferError):
        managed.__dlpack__(dl_device=(CUDA, 0))
    for malformed in ((1,), "cpu", (1.0, 0), 3):
        with pytest.raises(TypeError):
            managed.__dlpack__(dl_device=malformed)
    with pytest.raises(TypeError):
        managed.__dlpack__(max_version="1.0")
    with pytest.raises(TypeError):
        ManagedDLTensor(array, array)  # type: ignore[arg-type]


def test_managed_plain_deleter_callback_runs_after_exports_are_gone() -> None:
    seen: list[object] = []
    array = np.arange(6, dtype=np.float64)
    managed = ManagedDLTensor(make_dltensor(array), array, deleter_callback=seen.append)
    view = managed.numpy()
    del managed
    _collect()
    assert seen == []  # the exported view still holds the export
    np.testing.assert_array_equal(view, np.arange(6))
    del view
    _collect()
    assert len(seen) == 1 and seen[0] is array


class FakeExporter:
    """Stands in for the native exporter: builds managed tensors in ctypes memory."""

    def __init__(self, template: DLManagedTensorVersioned) -> None:
        self.template = template
        self.freed: list[int] = []
        self.deleted: list[int] = []
        self.made: dict[int, ctypes.Structure] = {}
        self._deleter = _DELETER(self._on_delete)

    def _on_delete(self, addr: int) -> None:
        self.deleted.append(addr)
        self.made.pop(addr)

    def to_capsule_pointer(self, addr: int, versioned: bool) -> int:
        assert addr == ctypes.addressof(self.template)
        deleter = ctypes.cast(self._deleter, ctypes.c_void_p).value
        src = self.template.dl_tensor
        dl = DLTensor(
            data=src.data,
            device=src.device,
            ndim=2,
            dtype=DLDataType(src.dtype.code, src.dtype.bits, 1),
            shape=self._expanded_shape,
            strides=None,
            byte_offset=0,
        )
        managed: ctypes.Structure
        if versioned:
            managed = DLManagedTensorVersioned(
                version=DLPackVersion(1, 0),
                deleter=deleter,
                flags=self.template.flags,
                dl_tensor=dl,
            )
        else:
            managed = DLManagedTensor(dl_tensor=dl, deleter=deleter)
        self.made[ctypes.addressof(managed)] = managed
        return ctypes.addressof(managed)

    def free(self, addr: int) -> None:
        self.freed.append(addr)

    def capsule_destructor(self) -> int:
        return 0


def test_managed_native_form() -> None:
    data = np.arange(12, dtype=np.float32)
    shape = (ctypes.c_int64 * 1)(4)
    template = DLManagedTensorVersioned(
        version=DLPackVersion(1, 0),
        flags=DLPACK_FLAG_BITMASK_READ_ONLY,
        dl_tensor=DLTensor(
            data=_addr(data),
            device=DLDevice(CPU, 0),
            ndim=1,
            dtype=DLDataType(FLOAT, 32, 3),
            shape=shape,
        ),
    )
    exporter = FakeExporter(template)
    exporter._expanded_shape = (ctypes.c_int64 * 2)(4, 3)
    addr = ctypes.addressof(template)
    managed = ManagedDLTensor._from_native(addr, True, exporter)
    assert managed.shape == (4,)
    assert _dt(managed.dtype) == (FLOAT, 32, 3)
    assert managed.data == _addr(data)
    assert managed.device == (CPU, 0)

    view = managed.numpy()
    assert view.shape == (4, 3)
    assert not view.flags.writeable
    np.testing.assert_array_equal(view, data.reshape(4, 3))
    assert '"dltensor"' in repr(managed.__dlpack__())  # unconsumed: never deleted
    assert len(exporter.made) == 2

    del view
    _collect()
    assert len(exporter.deleted) == 1
    assert exporter.freed == []
    del managed
    _collect()
    assert exporter.freed == [addr]
