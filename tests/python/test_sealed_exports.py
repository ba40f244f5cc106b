"""Sealed data never changes: no export of a read group lets a consumer write into it.

``ReadGroup.dlpack(readonly=False)`` (what an in-place torch op would use) used to hand out a
writable view of the sealed column, and so did decoding ``ReadGroup.tensor(i)`` or a consumed
read-only export with ``dltensor_to_numpy``: every later read saw values no write produced.
A writable export of read data is now a private copy; read-only views refuse writes. Map
groups stay writable views of their staging.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import DLTensor, OrdinalRange, dltensor_to_numpy
from ovstage._dlpack import (
    DLPACK_FLAG_BITMASK_IS_COPIED,
    DLPACK_FLAG_BITMASK_READ_ONLY,
    DLManagedTensorVersioned,
    _capsule_get_pointer,
)

ABC = ["/A", "/B", "/C"]
SCALARS = np.array([1.0, 2.0, 3.0], np.float32)
VECTORS = np.arange(9, dtype=np.float32).reshape(3, 3) + 10
RAGGED = [
    np.array([1.0, 2.0], np.float32),
    np.array([3.0, 4.0, 5.0], np.float32),
    np.zeros(0, np.float32),
]


def _written(view: np.ndarray) -> np.ndarray:
    """Write into a writable decode of a group's tensor, as an in-place consumer does."""
    assert view.flags.writeable
    view[...] = -7
    return view


def _from_dlpack_writable(group: ovstage.ReadGroup, i: int) -> np.ndarray:
    return _written(np.from_dlpack(group.dlpack(i, readonly=False)))


def _raw_tensor_decoded(group: ovstage.ReadGroup, i: int) -> np.ndarray:
    return _written(dltensor_to_numpy(group.tensor(i)))


def _legacy_capsule_decoded(group: ovstage.ReadGroup, i: int) -> np.ndarray:
    return _written(dltensor_to_numpy(DLTensor.from_dlpack(group.dlpack(i))))


def _export_raw_decoded(group: ovstage.ReadGroup, i: int) -> np.ndarray:
    return _written(dltensor_to_numpy(group.dlpack(i).raw_dltensor))


WRITABLE: list[tuple[str, Callable[[ovstage.ReadGroup, int], np.ndarray]]] = [
    ("dlpack-readonly-false", _from_dlpack_writable),
    ("tensor-dltensor_to_numpy", _raw_tensor_decoded),
    ("legacy-capsule-dltensor_to_numpy", _legacy_capsule_decoded),
    ("raw_dltensor-dltensor_to_numpy", _export_raw_decoded),
]


def _sealed(stage: ovstage.Stage, query: ovstage.Query, attribute: str) -> list[list[float]]:
    """The sealed tensors of ``attribute`` (copies), read again from the stage."""
    with stage.read_attributes(query, [attribute], OrdinalRange.latest(1)) as read:
        out = []
        for group in read.groups():
            with group:
                out.extend(group.array(i).tolist() for i in range(group.tensor_count))
        return out


@pytest.mark.parametrize(
    ("values", "is_array"), [(SCALARS, False), (VECTORS, False), (RAGGED, True)]
)
@pytest.mark.parametrize(("path", "write"), WRITABLE, ids=[w[0] for w in WRITABLE])
def test_writing_a_writable_export_leaves_the_sealed_data_unchanged(
    stage, make_query, write_sealed, path: str, write: Any, values: Any, is_array: bool
) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, values, is_array=is_array)
    before = _sealed(stage, query, "t")
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read:
        for group in read.groups():
            with group:
                for i in range(group.tensor_count):
                    expected = group.array(i).copy()
                    copy = write(group, i)
                    assert copy.size == 0 or (copy == -7).all()
                    assert group.array(i).tolist() == expected.tolist()
    assert _sealed(stage, query, "t") == before


def test_read_only_views_of_a_read_group_refuse_writes(group_of_t) -> None:
    for view in (
        group_of_t.array(0),
        np.from_dlpack(group_of_t.dlpack(0)),
        dltensor_to_numpy(group_of_t.tensor(0), readonly=True),
    ):
        assert not view.flags.writeable
        with pytest.raises(ValueError, match="WRITEABLE"):
            view.setflags(write=True)


def _capsule_flags(export: ovstage.ManagedDLTensor) -> int:
    capsule = export.__dlpack__(max_version=(1, 0))
    addr = _capsule_get_pointer(capsule, b"dltensor_versioned")
    return int(DLManagedTensorVersioned.from_address(addr).flags)


def test_export_flags_say_read_only_view_or_private_copy(group_of_t) -> None:
    view, copy = group_of_t.dlpack(0), group_of_t.dlpack(0, readonly=False)
    assert _capsule_flags(view) == DLPACK_FLAG_BITMASK_READ_ONLY
    assert _capsule_flags(copy) == DLPACK_FLAG_BITMASK_IS_COPIED
    assert view.data == group_of_t.tensor(0).data  # zero-copy
    assert copy.data != view.data
    assert (copy.shape, copy.dtype) == (view.shape, view.dtype)


def test_a_map_group_exports_its_staging_writable(stage, make_query, write_sealed) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, SCALARS)
    with stage.map_attribute(query, "t", 2) as session:
        group = session.fetch_next()
        export = group.dlpack(0)
        assert _capsule_flags(export) == 0
        np.from_dlpack(export)[1] = 20  # a view of the staging
        session.unmap().wait()
    stage.advance_write_floor(2).wait()
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(2)) as read:
        for g in read.groups():
            with g:
                assert g.array(0).tolist() == [1.0, 20.0, 3.0]


@pytest.fixture
def group_of_t(stage, make_query, write_sealed) -> Any:
    query = make_query(ABC)
    write_sealed(query, "t", 1, SCALARS)
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read:
        group = read.fetch_next()
        with group:
            yield group


def test_legacy_capsules_of_read_only_exports_are_still_zero_copy(group_of_t) -> None:
    """A pre-1.0 consumer gets the view itself (it cannot be told the data is read-only)."""
    tensor = DLTensor.from_dlpack(group_of_t.dlpack(0))
    assert tensor.data == group_of_t.tensor(0).data
    assert ctypes.c_float.from_address(tensor.data).value == 1.0
