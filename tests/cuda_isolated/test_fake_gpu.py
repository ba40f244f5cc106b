"""GPU columns end to end on the fake CUDA driver (``core/cuda/testdata/fakecuda.c``).

The fake implements the driver entry points on host memory and checks how they are used
(current context, device vs host addresses, frees). "Device memory" is therefore readable
from Python here, which lets these tests check values, zero-copy exports, stream waits and
frees without a GPU. They prove ovstage's side of the contract, not NVIDIA's driver:
``tests/gpu/run_gpu_checks.py`` runs the real thing on a GPU machine.

Runs with ``OVSTAGE_CUDA_LIBRARY`` pointing at the fake and ``FAKECUDA_DEVICES=2``.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import DLDevice, DLDeviceType, DLTensor, ErrorCode, OvstageError
from ovstage._dlpack import (
    DLManagedTensor,
    DLManagedTensorVersioned,
    _capsule_get_pointer,
    _capsule_new,
    _capsule_set_name,
    numpy_to_dldatatype,
)
from ovstage._lib import native

SCENARIO = "fake_gpu"

CUDA = DLDeviceType.kDLCUDA
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class FakeDriver:
    """ctypes access to the fake driver's test helpers (same library instance as ovstage's)."""

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        lib.fakecuda_alloc.restype = ctypes.c_void_p
        lib.fakecuda_alloc.argtypes = [ctypes.c_int, ctypes.c_size_t]
        lib.fakecuda_free.argtypes = [ctypes.c_void_p]
        lib.fakecuda_new_stream.restype = ctypes.c_void_p
        lib.fakecuda_new_event.restype = ctypes.c_void_p
        lib.fakecuda_event_records.restype = ctypes.c_int64
        lib.fakecuda_event_records.argtypes = [ctypes.c_void_p]
        lib.fakecuda_destroy_event.argtypes = [ctypes.c_int, ctypes.c_void_p]
        lib.fakecuda_stat.restype = ctypes.c_int64
        lib.fakecuda_stat.argtypes = [ctypes.c_char_p]
        lib.fakecuda_last_misuse.restype = ctypes.c_char_p
        lib.fakecuda_trace.restype = ctypes.c_char_p
        lib.fakecuda_trace.argtypes = [ctypes.c_int]
        self.lib = lib

    def stat(self, name: str) -> int:
        return int(self.lib.fakecuda_stat(name.encode()))

    def trace(self) -> str:
        """Calls since the previous trace() (then cleared)."""
        return self.lib.fakecuda_trace(1).decode()

    def upload(self, values: np.ndarray, device: int = 0) -> int:
        """Copy values into new fake device memory; returns the device address."""
        values = np.ascontiguousarray(values)
        ptr = self.lib.fakecuda_alloc(device, max(values.nbytes, 1))
        assert ptr
        ctypes.memmove(ptr, values.ctypes.data, values.nbytes)
        return int(ptr)

    def free(self, ptr: int) -> None:
        assert self.lib.fakecuda_free(ptr) == 0

    def new_stream(self, device: int = 0) -> int:
        return int(self.lib.fakecuda_new_stream(device))

    def new_event(self, device: int = 0) -> int:
        return int(self.lib.fakecuda_new_event(device))

    def event_records(self, event: int) -> int:
        """How many times ``event`` was recorded."""
        return int(self.lib.fakecuda_event_records(event))

    def destroy_event(self, device: int, event: int) -> None:
        assert self.lib.fakecuda_destroy_event(device, event) == 0


def read_device(ptr: int, dtype: Any, count: int) -> list[Any]:
    """Values at a fake device address (host memory in disguise)."""
    nbytes = np.dtype(dtype).itemsize * count
    return np.frombuffer(ctypes.string_at(ptr, nbytes), dtype=dtype).tolist()


class CudaArray:
    """A DLPack producer over fake device memory, like a torch/cupy CUDA tensor."""

    def __init__(
        self,
        fake: FakeDriver,
        values: np.ndarray,
        device: int = 0,
        view: tuple[tuple[int, ...], tuple[int, ...]] | None = None,
    ) -> None:
        """``values`` uploaded; the tensor is all of them, or ``view`` (shape, strides in
        elements) over them."""
        self.fake = fake
        self.ptr = fake.upload(values, device)
        self.device = device
        self.streams: list[Any] = []
        self.deleted = 0
        shape, strides = view or (values.shape, None)
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self._deleter = _DELETER(self._on_delete)
        self.managed = DLManagedTensor(
            dl_tensor=DLTensor(
                data=self.ptr,
                device=DLDevice(CUDA, device),
                ndim=len(shape),
                dtype=numpy_to_dldatatype(values.dtype),
                shape=self._shape,
                strides=self._strides,
                byte_offset=0,
            ),
            deleter=ctypes.cast(self._deleter, ctypes.c_void_p).value,
        )

    def _on_delete(self, _addr: int) -> None:
        self.deleted += 1

    def __dlpack__(self, stream: Any = None, **_: Any) -> object:
        self.streams.append(stream)
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (CUDA, self.device)

    def close(self) -> None:
        self.fake.free(self.ptr)


@pytest.fixture(scope="module")
def fake() -> FakeDriver:
    assert ovstage.cuda_available(), ovstage.cuda_unavailable_reason()
    return FakeDriver(os.environ["OVSTAGE_CUDA_LIBRARY"])


@pytest.fixture(autouse=True)
def _driver_discipline(fake: FakeDriver) -> Iterator[None]:
    """Every test: no driver misuse, no unbalanced context push, no device buffer leaked."""
    misuse = fake.stat("misuse")
    live = native.CudaLiveBuffers()
    yield
    gc.collect()
    last = fake.lib.fakecuda_last_misuse().decode()
    assert fake.stat("misuse") == misuse, f"fake driver misuse: {last}"
    assert fake.stat("depth") == 0
    assert native.CudaLiveBuffers() == live, "device buffers leaked"


@pytest.fixture
def stage() -> Iterator[ovstage.Stage]:
    s = ovstage.Stage("fake-gpu")
    yield s
    gc.collect()
    s.destroy()


@pytest.fixture
def query(stage: ovstage.Stage) -> Iterator[ovstage.Query]:
    d = ovstage.PathDictionary(stage)
    with (
        d.create_path_list_from_strings(["/A", "/B", "/C"]) as plist,
        stage.query_from_path_list(plist) as q,
    ):
        yield q


def latest_group(stage: ovstage.Stage, query: ovstage.Query, ordinal: int) -> ovstage.ReadGroup:
    """The single group of a latest read of "t" (the caller releases it)."""
    with stage.read_attributes(query, ["t"], ovstage.OrdinalRange.latest(ordinal)) as read:
        group = read.fetch_next()
        assert group is not None
        return group


def expect_error(op: ovstage.Operation, code: ErrorCode, *fragments: str) -> None:
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == code, info.value.message
    for fragment in fragments:
        assert fragment in info.value.message


def consume(capsule: object, versioned: bool) -> tuple[int, Any]:
    """Take the managed tensor out of a capsule, as a consumer does: (address, struct)."""
    name = b"dltensor_versioned" if versioned else b"dltensor"
    addr = _capsule_get_pointer(capsule, name)
    _capsule_set_name(capsule, b"used_" + name)
    struct = DLManagedTensorVersioned if versioned else DLManagedTensor
    return addr, struct.from_address(addr)


def run_deleter(managed: Any, addr: int) -> None:
    _DELETER(managed.deleter)(addr)


# ---------------------------------------------------------------- availability


def test_driver_is_loaded_and_reports_devices() -> None:
    status = ovstage.cuda_status()
    assert status == ovstage._cuda.CudaStatus(True, 2, 12080, "")
    assert ovstage.cuda_unavailable_reason() == ""


# ---------------------------------------------------------------- placement


def test_cuda_tensor_write_stays_on_its_device(stage, query, fake) -> None:
    src = CudaArray(fake, np.array([1, 2, 3], np.float32), device=1)
    fake.trace()
    stage.write_attribute(query, "t", 1, src, is_array=False).wait()
    calls = fake.trace()
    assert "dtod" in calls and "htod" not in calls and "dtoh" not in calls, calls
    assert src.streams == [None], "producers are asked for the legacy default stream"
    assert src.deleted == 1, "the consumed source is released once the write is done"
    src.close()  # the payload was copied at enqueue
    stage.advance_write_floor(1).wait()
    assert "htod" not in fake.trace() and "dtoh" not in fake.trace()

    with latest_group(stage, query, 1) as group:
        tensor = group.tensor(0)
        assert (tensor.device.device_type, tensor.device.device_id) == (CUDA, 1)
        assert read_device(tensor.data, np.float32, 3) == [1.0, 2.0, 3.0]
        assert group.raw.data.cuda_sync.wait_event != 0, "device groups carry a ready event"
        export = group.dlpack(0)
        assert export.device == (CUDA, 1)
        assert export.__dlpack_device__() == (CUDA, 1)
        with pytest.raises(NotImplementedError, match="tensor 0 is on cuda:1"):
            group.array()
        with pytest.raises(NotImplementedError):
            export.numpy()  # numpy cannot take a CUDA capsule
        capsule = export.__dlpack__(stream=-1, max_version=(1, 0))
        addr, managed = consume(capsule, versioned=True)
        assert managed.dl_tensor.data == tensor.data, "zero-copy: the column's own memory"
        assert (managed.dl_tensor.device.device_type, managed.dl_tensor.device.device_id) == (
            CUDA,
            1,
        )
        assert managed.flags & 1, "read-only"
        run_deleter(managed, addr)


@pytest.mark.parametrize(
    ("view", "expected"),
    [(((3,), (2,)), [0, 2, 4]), (((3, 2), (1, 3)), [0, 3, 1, 4, 2, 5])],
    ids=["every-other", "transposed"],
)
def test_a_strided_cuda_source_is_copied_piece_by_piece_on_the_device(
    stage, query, fake, view: tuple[tuple[int, ...], tuple[int, ...]], expected: list[float]
) -> None:
    """One device copy per contiguous piece (core/placement.go), never through the host."""
    src = CudaArray(fake, np.arange(6, dtype=np.float32), view=view)
    fake.trace()
    dtod = fake.stat("dtod")
    stage.write_attribute(query, "t", 1, src, is_array=False).wait()
    calls = fake.trace()
    assert "htod" not in calls and "dtoh" not in calls, calls
    assert fake.stat("dtod") == dtod + len(expected), "one copy per value of these views"
    src.close()
    stage.advance_write_floor(1).wait()
    with latest_group(stage, query, 1) as group:
        tensor = group.tensor(0)
        assert tensor.shape_tuple == view[0]
        assert read_device(tensor.data, np.float32, len(expected)) == expected


def test_explicit_device_option(stage, query, fake) -> None:
    fake.trace()
    stage.write_attribute(
        query, "t", 1, np.array([4, 5, 6], np.float32), is_array=False, device="cuda:1"
    ).wait()
    assert "htod" in fake.trace()
    stage.advance_write_floor(1).wait()
    with latest_group(stage, query, 1) as group:
        tensor = group.tensor(0)
        assert (tensor.device.device_type, tensor.device.device_id) == (CUDA, 1)
        assert read_device(tensor.data, np.float32, 3) == [4.0, 5.0, 6.0]


@pytest.mark.parametrize(
    "source",
    [
        np.array([6, 5, 4], np.float32)[::-1],  # negative stride
        np.broadcast_to(np.float32(7), (3,)),  # zero stride
    ],
    ids=["negative-stride", "zero-stride"],
)
def test_a_strided_host_source_is_packed_then_placed(stage, query, fake, source) -> None:
    # Ours packs any host strides before staging to the device (the reference refuses a zero
    # or negative host stride in a placed write with NOT_SUPPORTED).
    placement = ovstage.Placement(CUDA, 1)
    stage.write_attribute(query, "t", 1, source, is_array=False, placement=placement).wait()
    stage.advance_write_floor(1).wait()
    with latest_group(stage, query, 1) as group:
        tensor = group.tensor(0)
        assert (tensor.device.device_type, tensor.device.device_id) == (CUDA, 1)
        assert read_device(tensor.data, np.float32, 3) == source.tolist()


def test_a_write_placed_elsewhere_refreshes_that_copy(stage, query, fake) -> None:
    """0.3.0: a placement picks which copy becomes current; it never binds the column."""
    stage.write_attribute(query, "t", 1, np.array([1, 2, 3], np.float32), is_array=False).wait()
    src = CudaArray(fake, np.array([7, 8, 9], np.float32))
    try:
        # an unplaced CUDA source goes where it lives: the cuda:0 copy becomes current
        stage.write_attribute(query, "t", 2, src, is_array=False).wait()
        stage.advance_write_floor(2).wait()
        with latest_group(stage, query, 2) as group:
            tensor = group.tensor(0)
            assert (tensor.device.device_type, tensor.device.device_id) == (CUDA, 0)
            assert read_device(tensor.data, np.float32, 3) == [7.0, 8.0, 9.0]
        # a partial host write placed on cuda:1 keeps the other rows
        stage.write_attribute(
            query,
            "t",
            3,
            np.array([70], np.float32),
            is_array=False,
            count=1,
            placement=ovstage.Placement(CUDA, 1),
        ).wait()
        stage.advance_write_floor(3).wait()
        with latest_group(stage, query, 3) as group:
            tensor = group.tensor(0)
            assert (tensor.device.device_type, tensor.device.device_id) == (CUDA, 1)
            assert read_device(tensor.data, np.float32, 3) == [70.0, 8.0, 9.0]
        # device="cpu" (the shorthand) copies the CUDA payload to the host copy
        fake.trace()
        stage.write_attribute(query, "t", 4, src, is_array=False, device="cpu").wait()
        assert "dtoh" in fake.trace()
        stage.advance_write_floor(4).wait()
        with latest_group(stage, query, 4) as group:
            assert group.array().tolist() == [7.0, 8.0, 9.0]
            assert group.raw.data.cuda_sync.wait_event == 0
    finally:
        src.close()


def placed_group(
    stage: ovstage.Stage, query: ovstage.Query, ordinal: int, placement: ovstage.Placement
) -> ovstage.ReadGroup:
    with stage.read_attributes(
        query, ["t"], ovstage.OrdinalRange.latest(ordinal), placement=placement
    ) as read:
        group = read.fetch_next()
        assert group is not None
        return group


def test_placed_reads_serve_or_copy(stage, query, fake) -> None:
    src = CudaArray(fake, np.array([1, 2, 3], np.float32), device=1)
    try:
        stage.write_attribute(query, "t", 1, src, is_array=False).wait()
    finally:
        src.close()
    stage.advance_write_floor(1).wait()
    with latest_group(stage, query, 1) as current:
        own = current.tensor(0).data
        fake.trace()
        with placed_group(stage, query, 1, ovstage.Placement(CUDA, 1)) as group:
            assert group.tensor(0).data == own, "current on cuda:1: served without a copy"
        assert (
            "dto" not in fake.trace() and "htod" not in fake.trace() and "peer" not in fake.trace()
        )
        with placed_group(stage, query, 1, ovstage.Placement(1)) as group:
            assert group.tensor(0).device.device_type == DLDeviceType.kDLCPU
            assert group.array().tolist() == [1.0, 2.0, 3.0], "a host copy: numpy works"
        with placed_group(
            stage, query, 1, ovstage.Placement.from_dlpack_device((CUDA, 0))
        ) as group:
            tensor = group.tensor(0)
            assert (tensor.device.device_type, tensor.device.device_id) == (CUDA, 0)
            assert tensor.data != own
            assert read_device(tensor.data, np.float32, 3) == [1.0, 2.0, 3.0]
        assert "peer" in fake.trace()
    with latest_group(stage, query, 1) as group:
        assert group.tensor(0).device.device_id == 1, "reads never move the column"


def test_availability_event_is_recorded_once_per_op(stage, query, fake) -> None:
    event = fake.new_event(1)
    on1 = ovstage.Placement(CUDA, 1, availability_event=event)
    values = np.array([1, 2, 3], np.float32)
    stage.write_attribute(query, "t", 1, values, is_array=False, placement=on1).wait()
    assert fake.event_records(event) == 1
    stage.write_attributes(query, [ovstage.WriteDesc("u", values, False)], 1, placement=on1).wait()
    assert fake.event_records(event) == 2
    # rejected at enqueue: the event is not touched
    expect_error(
        stage.write_attribute(query, "t", 1, values[:0], is_array=False, placement=on1),
        ErrorCode.INVALID_ARGUMENT,
    )
    assert fake.event_records(event) == 2
    stage.advance_write_floor(1).wait()
    with placed_group(stage, query, 1, on1):
        assert fake.event_records(event) == 3, "recorded before the group is handed out"
    with stage.map_attribute(query, "t", 2, placement=on1) as mapped:
        group = next(iter(mapped.groups()))
        assert group.tensor(0).device.device_type == CUDA
        assert group.dlpack(0).__dlpack_device__() == (CUDA, 1), "exported as device memory"
        assert read_device(group.tensor(0).data, np.float32, 3) == [1.0, 2.0, 3.0]
        ctypes.memmove(group.tensor(0).data, np.array([4, 5, 6], np.float32).ctypes.data, 12)
        mapped.unmap_group(group, cuda_stream=1).wait()
        assert fake.event_records(event) == 4, "one record per commit"
    assert fake.event_records(event) == 5, "the final unmap is a commit too"
    stage.advance_write_floor(2).wait()
    with latest_group(stage, query, 2) as group:
        assert group.tensor(0).device.device_id == 1
        assert read_device(group.tensor(0).data, np.float32, 3) == [4.0, 5.0, 6.0]
    # (a record CUDA refuses: core/availability_test.go, where the fake's misuse count is expected)


def test_an_op_that_never_ran_records_its_event_once(stage, query, fake) -> None:
    # An accepted placed op records its event even when it never runs: here the write gate's
    # fail_next fails it before it starts. A map setup records only in that case.
    event = fake.new_event(1)
    on1 = ovstage.Placement(CUDA, 1, availability_event=event)
    values = np.array([1, 2, 3], np.float32)
    gates = ovstage.gates
    gates.write_gate.reset()
    try:
        gates.write_gate.fail_next()
        write = stage.write_attribute(query, "t", 1, values, is_array=False, placement=on1)
        expect_error(write, ErrorCode.OP_FAILED, "fail_next")
        assert fake.event_records(event) == 1
        stage.write_attribute(query, "t", 1, values, is_array=False).wait()
        gates.write_gate.fail_next()
        mapped = stage.map_attribute(query, "t", 2, placement=on1)
        with pytest.raises(ovstage.OvstageError) as info:
            mapped.wait()
        assert info.value.code == ErrorCode.OP_FAILED
        assert fake.event_records(event) == 2, "a setup cancelled before it ran records once"
    finally:
        gates.write_gate.reset()


def test_array_maps_cannot_stage_on_cuda(stage, query, fake) -> None:
    mapped = stage.map_attribute(
        query,
        "r",
        1,
        dtype=ovstage.DLDataType(2, 32, 1),
        element_sizes=[1, 2, 3],
        placement=ovstage.Placement(CUDA, 0),
    )
    assert mapped.handle == 0
    expect_error(
        mapped.op,
        ErrorCode.NOT_SUPPORTED,
        "array attributes (element_sizes) cannot be mapped on a CUDA device",
    )


def test_bad_device_ids_are_invalid_argument(stage, query, fake) -> None:
    src = CudaArray(fake, np.array([1, 2, 3], np.float32), device=1)
    try:
        raw = ovstage.make_dltensor(src)
        raw.device.device_id = 7
        expect_error(
            stage.write_attribute(query, "t", 1, raw, is_array=False),
            ErrorCode.INVALID_ARGUMENT,
            "CUDA device 7 does not exist (this machine has 2: 0..1)",
        )
        raw.device.device_id = 0
        expect_error(
            stage.write_attribute(query, "t", 1, raw, is_array=False),
            ErrorCode.INVALID_ARGUMENT,
            "tensors[0]: the tensor says cuda:0 but its data is memory of cuda:1",
        )
        expect_error(
            stage.write_attribute(
                query, "t", 1, np.zeros(3, np.float32), is_array=False, device="cuda:5"
            ),
            ErrorCode.INVALID_ARGUMENT,
            "CUDA device 5 does not exist",
        )
        del raw
    finally:
        src.close()


def test_cuda_event_and_stream_are_waited_for_first(stage, query, fake) -> None:
    src = CudaArray(fake, np.array([1, 2, 3], np.float32))
    stream, event = fake.new_stream(), fake.new_event()
    try:
        fake.trace()
        stage.write_attribute(
            query, "t", 1, src, is_array=False, cuda_event=event, cuda_stream=stream
        ).wait()
        calls = fake.trace().split(";")
        assert calls[0] == f"event_sync {event:#x}", calls
        assert calls[1] == f"stream_sync {stream:#x}", calls
        assert calls[2].startswith("dtod"), calls
    finally:
        src.close()


def test_partial_writes_on_a_device_column(stage, query, fake) -> None:
    full = CudaArray(fake, np.array([1, 2, 3], np.float32))
    part = CudaArray(fake, np.array([10, 20], np.float32))
    try:
        stage.write_attribute(query, "t", 1, full, is_array=False).wait()
        stage.advance_write_floor(1).wait()
        held = latest_group(stage, query, 1)
        stage.write_attribute(query, "t", 2, part, is_array=False, index_map=[1, 0], count=2).wait()
        stage.advance_write_floor(2).wait()
        with held, latest_group(stage, query, 2) as group:
            assert read_device(group.tensor(0).data, np.float32, 3) == [20.0, 10.0, 3.0]
            assert read_device(held.tensor(0).data, np.float32, 3) == [1.0, 2.0, 3.0]
    finally:
        full.close()
        part.close()


# ---------------------------------------------------------------- __dlpack__(stream=...)


def test_dlpack_stream_argument_makes_that_stream_wait(stage, query, fake) -> None:
    src = CudaArray(fake, np.array([1, 2, 3], np.float32))
    consumer = fake.new_stream()
    try:
        stage.write_attribute(query, "t", 1, src, is_array=False).wait()
        stage.advance_write_floor(1).wait()
        with latest_group(stage, query, 1) as group:
            ready = group.raw.data.cuda_sync.wait_event
            export = group.dlpack(0)
            cases = [(None, 1), (1, 1), (2, 2), (consumer, consumer)]
            for stream, expected in cases:
                fake.trace()
                capsule = export.__dlpack__(stream=stream)
                assert fake.trace() == f"wait {expected:#x} {ready:#x};", stream
                addr, managed = consume(capsule, versioned=False)
                run_deleter(managed, addr)
            fake.trace()
            capsule = export.__dlpack__(stream=-1)
            assert fake.trace() == "", "-1: no synchronization"
            del capsule  # unconsumed: the capsule destructor runs the deleter
            with pytest.raises(ValueError, match="stream 0 is ambiguous"):
                export.__dlpack__(stream=0)
            with pytest.raises(TypeError):
                export.__dlpack__(stream="default")
    finally:
        src.close()


# ---------------------------------------------------------------- lifetime


def test_export_outlives_group_and_stage_and_frees_on_any_thread(fake) -> None:
    stage = ovstage.Stage("lifetime")
    src = CudaArray(fake, np.array([5, 6, 7], np.float32))
    d = ovstage.PathDictionary(stage)
    with (
        d.create_path_list_from_strings(["/A", "/B", "/C"]) as plist,
        stage.query_from_path_list(plist) as query,
    ):
        stage.write_attribute(query, "t", 1, src, is_array=False).wait()
        stage.advance_write_floor(1).wait()
        group = latest_group(stage, query, 1)
        export = group.dlpack(0)
        capsule = export.__dlpack__(stream=-1, max_version=(1, 0))
        addr, managed = consume(capsule, versioned=True)
        group.release()
    src.close()
    del export, capsule
    frees = fake.stat("free")
    stage.destroy()
    gc.collect()
    assert fake.stat("free") == frees, "the consumer's tensor still holds the column memory"
    assert read_device(managed.dl_tensor.data, np.float32, 3) == [5.0, 6.0, 7.0]

    # The consumer drops its tensor on another thread: the free makes the context current
    # there (the fake counts a free without a current context as misuse).
    worker = threading.Thread(target=run_deleter, args=(managed, addr), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert fake.stat("free") == frees + 1


def test_writable_export_of_a_device_read_group_is_a_private_device_copy(
    stage, query, fake
) -> None:
    """Sealed data never changes: ``dlpack(readonly=False)`` copies the tensor on its device
    (no host round trip), and the consumer's stream waits for that copy."""
    src = CudaArray(fake, np.array([1, 2, 3], np.float32))
    consumer = fake.new_stream()
    try:
        stage.write_attribute(query, "t", 1, src, is_array=False).wait()
        stage.advance_write_floor(1).wait()
        with latest_group(stage, query, 1) as group:
            sealed = group.tensor(0).data
            dtod, htod, dtoh = fake.stat("dtod"), fake.stat("htod"), fake.stat("dtoh")
            export = group.dlpack(0, readonly=False)
            assert (fake.stat("dtod"), fake.stat("htod"), fake.stat("dtoh")) == (
                dtod + 1,
                htod,
                dtoh,
            )
            assert export.device == (CUDA, 0) and export.data != sealed
            assert read_device(export.data, np.float32, 3) == [1.0, 2.0, 3.0]
            ctypes.memset(export.data, 0, 12)  # an in-place consumer
            assert read_device(sealed, np.float32, 3) == [1.0, 2.0, 3.0]
            fake.trace()
            capsule = export.__dlpack__(stream=consumer, max_version=(1, 0))
            assert fake.trace().startswith(f"wait {consumer:#x} "), "waits for the copy"
            addr, managed = consume(capsule, versioned=True)
            assert managed.flags == 2  # IS_COPIED, not READ_ONLY
            run_deleter(managed, addr)
            del export
        with latest_group(stage, query, 1) as group:
            assert read_device(group.tensor(0).data, np.float32, 3) == [1.0, 2.0, 3.0]
    finally:
        src.close()


# ---------------------------------------------------------------- other write/read paths


def test_ragged_rows_on_the_device(stage, query, fake) -> None:
    rows = [
        np.array([1, 2], np.float32),
        np.array([3], np.float32),
        np.array([4, 5, 6], np.float32),
    ]
    sources = [CudaArray(fake, r) for r in rows]
    try:
        fake.trace()
        stage.write_attribute(query, "t", 1, sources, is_array=True).wait()
        assert "htod" not in fake.trace()
        stage.advance_write_floor(1).wait()
        with latest_group(stage, query, 1) as group:
            assert group.is_array and group.tensor_count == 3
            for i, expected in enumerate(rows):
                tensor = group.tensor(i)
                assert (tensor.device.device_type, tensor.device.device_id) == (CUDA, 0)
                assert read_device(tensor.data, np.float32, len(expected)) == expected.tolist()
            with pytest.raises(NotImplementedError):
                group.array(1)
    finally:
        for s in sources:
            s.close()


def test_batch_entries_are_placed_by_their_sources(stage, query, fake) -> None:
    src = CudaArray(fake, np.array([1, 2, 3], np.float32), device=1)
    try:
        stage.write_attributes(
            query,
            [
                ovstage.WriteDesc("t", src, False),
                ovstage.WriteDesc("h", np.array([4, 5, 6], np.float32), False),
            ],
            1,
        ).wait()
        # Each entry's sync is waited for before that entry's payload is read.
        stream, event = fake.new_stream(), fake.new_event()
        fake.trace()
        stage.write_attributes(
            query,
            [
                ovstage.WriteDesc("t", src, False, cuda_stream=stream),
                ovstage.WriteDesc("u", src, False, cuda_event=event),
            ],
            2,
        ).wait()
        calls = fake.trace().split(";")
        copies = [i for i, c in enumerate(calls) if c.startswith("dtod")]
        assert len(copies) == 2, calls
        assert calls.index(f"stream_sync {stream:#x}") < copies[0], calls
        assert copies[0] < calls.index(f"event_sync {event:#x}") < copies[1], calls
        stage.advance_write_floor(1).wait()
        with latest_group(stage, query, 1) as group:
            assert group.tensor(0).device.device_id == 1
            assert group.tensor(0).device.device_type == CUDA
        with stage.read_attributes(query, ["h"], ovstage.OrdinalRange.latest(1)) as read:
            host = read.fetch_next()
            assert host is not None
            with host:
                assert host.array().tolist() == [4.0, 5.0, 6.0]
    finally:
        src.close()


def test_maps_of_a_device_column_stage_in_host_memory(stage, query, fake) -> None:
    src = CudaArray(fake, np.array([1, 2, 3], np.float32))
    try:
        stage.write_attribute(query, "t", 1, src, is_array=False).wait()
        stage.advance_write_floor(1).wait()
        with stage.map_attribute(query, "t", 2) as mapped:
            groups = list(mapped.groups())
            assert len(groups) == 1
            values = groups[0].array(0)  # host memory, prefilled from the device
            assert values.tolist() == [1.0, 2.0, 3.0]
            values[:] = [7, 8, 9]
        stage.advance_write_floor(2).wait()
        with latest_group(stage, query, 2) as group:
            tensor = group.tensor(0)
            assert tensor.device.device_type == CUDA, "the commit was uploaded to the column"
            assert read_device(tensor.data, np.float32, 3) == [7.0, 8.0, 9.0]
        # A write-done sync on this host-memory session fails the commit when it executes,
        # and the session is terminal: the final unmap reports the same failure.
        mapped = stage.map_attribute(query, "t", 3)
        group = next(iter(mapped.groups()))
        expect_error(
            mapped.unmap_group(group, cuda_event=5),
            ErrorCode.OP_FAILED,
            "CUDA completion sync is only supported for GPU mapped tensors",
        )
        expect_error(mapped.unmap(), ErrorCode.OP_FAILED, "CUDA completion sync")
    finally:
        src.close()


def test_clone_and_value_filters_read_device_columns(stage, query, fake) -> None:
    src = CudaArray(fake, np.array([1, 2, 3], np.float32))
    try:
        stage.write_attribute(query, "t", 1, src, is_array=False).wait()
        stage.advance_write_floor(1).wait()
        stage.clone("/B", ["/D"], 2)
        stage.advance_write_floor(2).wait()
        d = ovstage.PathDictionary(stage)
        with (
            d.create_path_list_from_strings(["/D"]) as plist,
            stage.query_from_path_list(plist) as cloned,
            latest_group(stage, cloned, 2) as group,
        ):
            tensor = group.tensor(0)
            assert tensor.device.device_type == CUDA
            row = group.data_row_index(0) if group.has_data_index_map else 0
            assert read_device(tensor.data + 4 * row, np.float32, 1) == [2.0]
        flt = ovstage.Filter([ovstage.Predicate("t", ovstage.FilterOp.GT, ["1.5"])])
        with stage.query(flt) as matched:
            assert matched.result().total_prim_count == 3  # /B, /C and the clone /D
    finally:
        src.close()


def test_compute_hierarchy_over_device_columns(fake) -> None:
    """The CPU hierarchy model reads GPU transforms through a host copy and its world-matrix
    output is uploaded into the GPU column when sealed."""
    xform, world = "omni:xform", "omni:fabric:worldMatrix"
    prims = ["/W", "/W/A"]
    local = np.eye(4)
    local[3, :3] = (1, 2, 3)
    with ovstage.Stage("hier") as stage:
        d = ovstage.PathDictionary(stage)
        with (
            d.create_path_list_from_strings(prims) as plist,
            stage.query_from_path_list(plist) as query,
        ):
            data = np.stack([local.reshape(16), local.reshape(16)])
            stage.write_attribute(query, xform, 1, data, is_array=False, device="cuda:0").wait()
            stage.write_attribute(
                query, world, 1, np.zeros((2, 16)), is_array=False, device="cuda:0"
            ).wait()
            stage.advance_write_floor(1).wait()
            stage.compute_hierarchy(1, 2)
            stage.advance_write_floor(2).wait()
            with stage.read_attributes(query, [world], ovstage.OrdinalRange.latest(2)) as read:
                group = read.fetch_next()
                assert group is not None
                with group:
                    tensor = group.tensor(0)
                    assert tensor.device.device_type == CUDA
                    got = np.array(read_device(tensor.data, np.float64, 32)).reshape(2, 4, 4)
    np.testing.assert_array_equal(got[0][3, :3], [1, 2, 3])
    np.testing.assert_array_equal(got[1][3, :3], [2, 4, 6], "child world = local @ parent world")
