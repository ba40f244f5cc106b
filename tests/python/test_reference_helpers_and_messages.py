"""Helpers and messages the reference library has (0.2.1 and 0.3.0): descriptor validation in
``dltensor_to_numpy``, ``ManagedDLTensor`` releasing its manager context once, read-only views,
``numpy_to_dldatatype(None)``, ``OrdinalRange.to_c()``, ``data_row_index`` without an index
map, and the wording of several engine errors."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import ovstage
import pytest
from ovstage import (
    AttributeSemantic,
    DLDataType,
    DLTensor,
    ManagedDLTensor,
    OrdinalRange,
    OvstageError,
    OvxError,
    dltensor_to_numpy,
    make_dltensor,
    numpy_to_dldatatype,
)
from ovstage._abi import OrdinalRangeRaw

# ---------------------------------------------------------------- dltensor_to_numpy


@pytest.mark.parametrize(
    ("lanes", "why"),
    [(0, "zero lanes"), (256, "above the transport limit"), (65535, "uint16 maximum"),
     (65536, "wraps to 0 in the uint16 field")],
)
def test_dltensor_to_numpy_rejects_lanes_outside_the_transport_range(lanes, why) -> None:
    tensor = make_dltensor(np.zeros(4, np.float32))
    tensor.dtype.lanes = lanes  # a re-described raw descriptor
    with pytest.raises(ValueError, match="lanes"):
        dltensor_to_numpy(tensor)


def test_dltensor_to_numpy_rejects_a_view_larger_than_its_backing_buffer() -> None:
    tensor = make_dltensor(np.zeros(4, np.float32))
    tensor.shape[0] = 5
    with pytest.raises(ValueError, match="backing buffer holds 16"):
        dltensor_to_numpy(tensor)
    tensor.shape[0] = 2
    tensor.dtype.lanes = 3  # 6 values in a 4-value buffer
    with pytest.raises(ValueError, match="backing buffer holds"):
        dltensor_to_numpy(tensor)
    tensor.dtype.lanes = 2
    assert dltensor_to_numpy(tensor).shape == (4,)


def test_a_consumed_dlpack_producer_bounds_later_redescriptions() -> None:
    producer = ManagedDLTensor(make_dltensor(np.arange(6, dtype=np.float32)), None)
    tensor = DLTensor.from_dlpack(producer)
    assert dltensor_to_numpy(tensor).tolist() == list(range(6))
    tensor.shape[0] = 7
    with pytest.raises(ValueError, match="backing buffer holds 24"):
        dltensor_to_numpy(tensor)


def test_a_read_only_empty_view_cannot_be_made_writable() -> None:
    view = dltensor_to_numpy(make_dltensor(np.zeros(0, np.float32)), readonly=True)
    assert view.shape == (0,) and not view.flags.writeable
    with pytest.raises(ValueError):
        view.flags.writeable = True
    assert dltensor_to_numpy(make_dltensor(np.zeros(0, np.float32))).flags.writeable


def test_numpy_to_dldatatype_of_none_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="None"):
        numpy_to_dldatatype(None)


def test_zero_bit_widths_name_both_widths() -> None:
    with pytest.raises(ValueError, match="positive source and requested bit widths"):
        make_dltensor(np.zeros(4, np.float32), dtype=DLDataType(2, 0, 1))


# ---------------------------------------------------------------- ManagedDLTensor


class _Context:
    """A manager context whose collection the test can observe."""


def _managed_with(callback) -> tuple[weakref.ref, list]:
    calls: list = []
    ctx = _Context()

    def deleter(c: object) -> None:
        calls.append(type(c))  # not c itself: the test watches c being collected
        del c
        callback()

    ManagedDLTensor(make_dltensor(np.zeros(2, np.float32)), ctx, deleter)
    return weakref.ref(ctx), calls


def _raise() -> None:
    raise RuntimeError("deleter failed")


def test_the_manager_context_is_released_once_when_the_deleter_raises(monkeypatch) -> None:
    unraisable: list = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_type))
    ctx, calls = _managed_with(_raise)
    gc.collect()
    assert len(calls) == 1
    assert ctx() is None, "the context is not kept alive by the failed deleter"
    assert unraisable == [RuntimeError], "the deleter's error is reported, not raised"
    gc.collect()
    assert len(calls) == 1


def test_the_manager_context_is_released_once_with_an_exception_pending(monkeypatch) -> None:
    unraisable: list = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_type))
    holder: dict = {}

    def body() -> None:
        holder["ctx"], holder["calls"] = _managed_with(_raise)
        raise KeyError("pending")

    with pytest.raises(KeyError, match="pending"):  # the pending exception is not replaced
        try:
            body()
        finally:
            gc.collect()
    assert len(holder["calls"]) == 1
    assert holder["ctx"]() is None
    assert unraisable == [RuntimeError]


# ---------------------------------------------------------------- small helpers


def test_ordinal_range_to_c_returns_the_struct() -> None:
    raw = OrdinalRange.between(2, 9).to_c()
    assert isinstance(raw, OrdinalRangeRaw)
    assert (raw.start_ordinal, raw.end_ordinal, raw.has_start_ordinal) == (2, 9, True)
    raw = OrdinalRange.latest(5).to_c()
    assert (raw.start_ordinal, raw.end_ordinal, raw.has_start_ordinal) == (0, 5, False)


def test_data_row_index_without_a_data_index_map_is_the_local_index(
    stage, make_query, write_sealed
) -> None:
    query = make_query(["/A", "/B"])
    write_sealed(query, "a", 1, np.array([1, 2], np.float32))
    with stage.read_attributes(query, ["a"], OrdinalRange.latest(1)) as read:
        (group,) = list(read.groups())
        with group:
            assert not group.has_data_index_map
            assert [group.data_row_index(k) for k in range(2)] == [0, 1]
            with pytest.raises(TypeError):
                group.data_row_index(0.5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- engine messages


def test_an_unknown_prim_path_handle_names_the_dictionary(paths) -> None:
    with pytest.raises(OvxError, match="Prim path handle was not found in this dictionary"):
        paths.path_to_string(1 << 40)
    with pytest.raises(OvxError, match="Prim path handle was not found in this dictionary"):
        paths.create_path_list([1 << 40])


def test_a_fold_to_an_empty_shape_names_the_canonical_folded_shape(stage, make_query) -> None:
    query = make_query(["/A", "/B"])
    op = stage.write_attribute(query, "a", 1, np.zeros((2, 0), np.float32), is_array=False)
    with pytest.raises(OvstageError, match="canonical folded shape"):
        op.wait()


def test_a_wrong_asset_path_id_payload_names_the_semantic(stage, make_query) -> None:
    query = make_query(["/A", "/B"])
    op = stage.write_attribute(
        query, "asset", 1, np.zeros(2, np.uint64), is_array=False,
        semantic=AttributeSemantic.ASSET_PATH_ID,
    )
    with pytest.raises(OvstageError, match="ASSET_PATH_ID"):
        op.wait()


# ---------------------------------------------------------------- path lists


def test_destroy_path_list_releases_one_reference_per_call(paths) -> None:
    plist = paths.create_path_list_from_strings(["/A"])
    paths.add_path_list_reference(plist)
    paths.destroy_path_list(plist)  # the added reference
    assert not plist.released
    assert paths.path_list_count(plist) == 1
    paths.destroy_path_list(plist)  # the owner's
    assert plist.released
    with pytest.raises(OvxError):
        paths.path_list_count(plist)


def test_a_path_list_outliving_its_destroyed_dictionary_is_released_silently() -> None:
    # A stage owns its dictionary: destroying the stage destroys the dictionary under the list.
    stage = ovstage.Stage()
    with ovstage.PathDictionary(stage) as dictionary:
        plist = dictionary.create_path_list_from_strings(["/A"])
    stage.destroy()
    # The autouse fixture fails the test on a ResourceWarning from the finalizer.
    del plist
    gc.collect()


def test_the_manager_context_outlives_exports_and_is_released_once(monkeypatch) -> None:
    unraisable: list = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_type))
    calls: list = []
    ctx = _Context()
    watch = weakref.ref(ctx)

    def deleter(c: object) -> None:
        calls.append(type(c))
        del c
        raise RuntimeError("deleter failed")

    managed = ManagedDLTensor(make_dltensor(np.arange(3, dtype=np.float32)), ctx, deleter)
    del ctx
    views = [np.from_dlpack(managed), np.from_dlpack(managed)]
    del managed
    gc.collect()
    assert calls == [] and watch() is not None, "exports keep the context alive"
    assert views[0].tolist() == [0, 1, 2]

    def drop_with_an_exception_pending() -> None:
        try:
            raise KeyError("pending")
        finally:
            views.clear()  # the consumer's deleters run while KeyError propagates
            gc.collect()

    with pytest.raises(KeyError, match="pending"):
        drop_with_an_exception_pending()
    gc.collect()
    assert calls == [_Context]
    assert watch() is None
    assert unraisable == [RuntimeError]
