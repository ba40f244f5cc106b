"""Typed read/map tensor layout (0.3.0): group tensors have scalar lanes and component axes
rebuilt from the stored tuple width and the semantic; ``array()``, ``tensor()`` and ``dlpack()``
show that shape; ``typed_tensor_to_write`` turns a typed tensor back into a write's lane layout;
fixed writes take both the lane form and the compact typed form (README "Typed tensors")."""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from ovstage import (
    AttributeSemantic as AS,
)
from ovstage import (
    DLDataType,
    DLDataTypeCode,
    DLTensor,
    OrdinalRange,
    make_dltensor,
    typed_tensor_to_write,
)

AB = ["/A", "/B"]
F32, F64 = np.float32, np.float64


@pytest.fixture
def ab(make_query) -> ovstage.Query:
    return make_query(AB)


def _group_layout(stage, query, attribute, ordinal):
    """(ndim, shape, strides, lanes) of each tensor of the one group of a latest read, and
    the tensors' values as typed numpy copies."""
    with stage.read_attributes(query, [attribute], OrdinalRange.latest(ordinal)) as read:
        (group,) = list(read.groups())
        with group:
            layouts, values = [], []
            for i in range(group.tensor_count):
                t = group.tensor(i)
                layouts.append((t.ndim, t.shape_tuple, t.strides_tuple, t.dtype.lanes))
                values.append(group.array(i).copy())
            return layouts, values


# name: (lanes, dtype, semantic, expected per-row shape after the row axis, strides)
FIXED_CASES = {
    "float": (1, F32, AS.NONE, (), (1,)),
    "point3f": (3, F32, AS.NONE, (3,), (3, 1)),
    "matrix4d": (16, F64, AS.MATRIX, (4, 4), (16, 4, 1)),
    "matrix3d": (9, F64, AS.MATRIX, (3, 3), (9, 3, 1)),
    "matrix2d": (4, F64, AS.MATRIX, (2, 2), (4, 2, 1)),
    "generic 16-wide tuple": (16, F64, AS.NONE, (16,), (16, 1)),
    "FRAME is not a matrix": (16, F64, AS.FRAME, (16,), (16, 1)),
    "MATRIX of 6 lanes": (6, F64, AS.MATRIX, (6,), (6, 1)),
    "QUATERNION float4": (4, F32, AS.QUATERNION, (4,), (4, 1)),
    "TIME_CODE double": (1, F64, AS.TIME_CODE, (), (1,)),
}


@pytest.mark.parametrize("case", FIXED_CASES)
def test_fixed_columns_read_in_their_typed_shape(stage, ab, write_sealed, case) -> None:
    lanes, dtype, semantic, components, strides = FIXED_CASES[case]
    values = np.arange(2 * lanes, dtype=dtype).reshape((2, lanes) if lanes > 1 else (2,))
    write_sealed(ab, "a", 1, values, semantic=semantic)
    layouts, arrays = _group_layout(stage, ab, "a", 1)
    shape = (2, *components)
    assert layouts == [(len(shape), shape, strides, 1)]
    assert arrays[0].shape == shape
    np.testing.assert_array_equal(arrays[0].reshape(-1), values.reshape(-1))


def test_dlpack_and_array_show_the_typed_shape(stage, ab, write_sealed) -> None:
    matrices = np.stack([np.eye(4), 2 * np.eye(4)])
    write_sealed(ab, "xform", 1, matrices, semantic=AS.MATRIX)
    with stage.read_attributes(ab, ["xform"], OrdinalRange.latest(1)) as read:
        (group,) = list(read.groups())
        with group:
            exported = np.from_dlpack(group.dlpack(0))
            assert exported.shape == (2, 4, 4)
            np.testing.assert_array_equal(exported, matrices)
            assert group.dlpack(0).shape == (2, 4, 4)
            view = group.array(0)
            assert view.shape == (2, 4, 4)
            assert not view.flags.writeable
            with pytest.raises(ValueError):
                view.flags.writeable = True
            np.testing.assert_array_equal(view.reshape(-1), matrices.reshape(-1))


def test_asset_path_ids_read_as_pairs(stage, ab, write_sealed) -> None:
    ids = np.array([[1, 2], [3, 4]], np.uint64)
    write_sealed(ab, "asset", 1, ids, semantic=AS.ASSET_PATH_ID)
    layouts, arrays = _group_layout(stage, ab, "asset", 1)
    assert layouts == [(2, (2, 2), (2, 1), 1)]
    assert arrays[0].tolist() == ids.tolist()


def test_ragged_rows_have_component_axes(stage, ab, write_sealed) -> None:
    points = [np.arange(6, dtype=F32).reshape(2, 3), np.arange(3, dtype=F32).reshape(1, 3)]
    write_sealed(ab, "pts", 1, [make_dltensor(p, dtype=DLDataType(2, 32, 3), shape=(len(p),))
                                for p in points], is_array=True)
    layouts, arrays = _group_layout(stage, ab, "pts", 1)
    assert layouts == [(2, (2, 3), (3, 1), 1), (2, (1, 3), (3, 1), 1)]
    assert [a.tolist() for a in arrays] == [p.tolist() for p in points]


def test_ragged_scalar_and_matrix_rows(stage, ab, write_sealed) -> None:
    write_sealed(ab, "w", 1, [np.ones(3, F32), np.ones(1, F32)], is_array=True)
    layouts, _ = _group_layout(stage, ab, "w", 1)
    assert [layout[1] for layout in layouts] == [(3,), (1,)]
    rows = [np.stack([np.eye(4)] * 2), np.eye(4)[None]]
    write_sealed(ab, "m", 2, [make_dltensor(r, dtype=DLDataType(2, 64, 16), shape=(len(r),))
                              for r in rows], is_array=True, semantic=AS.MATRIX)
    layouts, arrays = _group_layout(stage, ab, "m", 2)
    assert layouts == [(3, (2, 4, 4), (16, 4, 1), 1), (3, (1, 4, 4), (16, 4, 1), 1)]
    np.testing.assert_array_equal(arrays[0], rows[0])


def test_string_rows_are_byte_counts(stage, ab, write_sealed) -> None:
    rows = [np.frombuffer(b"hello", np.uint8), np.zeros(0, np.uint8)]
    write_sealed(ab, "s", 1, rows, is_array=True, semantic=AS.STRING)
    layouts, arrays = _group_layout(stage, ab, "s", 1)
    assert [layout[1] for layout in layouts] == [(5,), (0,)]
    assert bytes(arrays[0]) == b"hello"


def test_map_groups_use_the_same_shapes(stage, ab, write_sealed) -> None:
    stage.write_attribute(ab, "mass", 1, np.array([1, 2], F32), is_array=False).wait()
    write_sealed(ab, "xf", 1, np.stack([np.eye(4, dtype=F32)] * 2), semantic=AS.MATRIX)
    with stage.map_attribute(ab, "mass", 2) as mapped:
        group = mapped.fetch_next()
        t = group.tensor(0)
        assert (t.shape_tuple, t.strides_tuple, t.dtype.lanes) == ((2,), (1,), 1)
    with stage.map_attribute(ab, "xf", 2) as mapped:
        group = mapped.fetch_next()
        t = group.tensor(0)
        assert (t.shape_tuple, t.strides_tuple, t.dtype.lanes) == ((2, 4, 4), (16, 4, 1), 1)
        view = group.array(0)
        assert view.shape == (2, 4, 4) and view.flags.writeable
        view[1] = 3 * np.eye(4)  # map payloads are written in their typed shape
    with stage.map_attribute(ab, "vel", 2, dtype=DLDataType(2, 32, 3)) as mapped:
        group = mapped.fetch_next()
        assert group.tensor(0).shape_tuple == (2, 3)
        assert np.from_dlpack(group.dlpack(0)).shape == (2, 3)
        group.array(0)[:] = [[1, 2, 3], [4, 5, 6]]
    stage.advance_write_floor(2).wait()
    _, arrays = _group_layout(stage, ab, "xf", 2)
    np.testing.assert_array_equal(arrays[0][1], 3 * np.eye(4))
    _, arrays = _group_layout(stage, ab, "vel", 2)
    assert arrays[0].tolist() == [[1, 2, 3], [4, 5, 6]]


def test_tombstone_groups_have_no_tensors(stage, ab, write_sealed) -> None:
    write_sealed(ab, "a", 1, np.ones((2, 3), F32))
    stage.delete_attributes(ab, ["a"], 2).wait()
    stage.advance_write_floor(2).wait()
    with stage.read_attributes(ab, ["a"], OrdinalRange.between(2, 2)) as read:
        groups = list(read.groups())
        try:
            deletes = [g for g in groups if g.is_delete]
            assert deletes, "the delete reads as a tombstone group"
            assert all(g.tensor_count == 0 and g.data_count == 0 for g in deletes)
        finally:
            for g in groups:
                g.release()


# ---------------------------------------------------------------- writes take both forms


def test_fixed_writes_take_the_lane_form_and_the_typed_form(stage, ab, write_sealed) -> None:
    matrices = np.arange(32, dtype=F64).reshape(2, 4, 4)
    write_sealed(ab, "typed", 1, matrices, semantic=AS.MATRIX)
    lanes = make_dltensor(matrices.reshape(-1), dtype=DLDataType(2, 64, 16), shape=(2,))
    write_sealed(ab, "lanes", 2, lanes, semantic=AS.MATRIX)
    _, typed = _group_layout(stage, ab, "typed", 2)
    _, flat = _group_layout(stage, ab, "lanes", 2)
    np.testing.assert_array_equal(typed[0], matrices)
    np.testing.assert_array_equal(flat[0], matrices)


def test_a_read_tensor_writes_back_as_is_for_a_fixed_column(stage, ab, write_sealed) -> None:
    write_sealed(ab, "p", 1, np.arange(6, dtype=F32).reshape(2, 3))
    with stage.read_attributes(ab, ["p"], OrdinalRange.latest(1)) as read:
        (group,) = list(read.groups())
        with group:
            copy = group.array(0).copy()
    write_sealed(ab, "p", 2, make_dltensor(copy))  # (2, 3) lanes 1 folds into lanes 3
    _, arrays = _group_layout(stage, ab, "p", 2)
    assert arrays[0].tolist() == copy.tolist()


def test_typed_tensor_to_write_round_trips_a_ragged_column(stage, ab, write_sealed) -> None:
    points = [np.arange(6, dtype=F32).reshape(2, 3), np.arange(3, dtype=F32).reshape(1, 3)]
    write_sealed(ab, "pts", 1, [make_dltensor(p, dtype=DLDataType(2, 32, 3), shape=(len(p),))
                                for p in points], is_array=True)
    with stage.read_attributes(ab, ["pts"], OrdinalRange.latest(1)) as read:
        (group,) = list(read.groups())
        with group:
            copies = [make_dltensor(group.array(i).copy()) for i in range(2)]
    back = [typed_tensor_to_write(t) for t in copies]
    assert [(t.shape_tuple, t.dtype.lanes) for t in back] == [((2,), 3), ((1,), 3)]
    write_sealed(ab, "pts", 2, back, is_array=True)
    layouts, arrays = _group_layout(stage, ab, "pts", 2)
    assert [layout[1] for layout in layouts] == [(2, 3), (1, 3)]
    assert [a.tolist() for a in arrays] == [p.tolist() for p in points]


# ---------------------------------------------------------------- typed_tensor_to_write


def _described(shape, strides=None, lanes=1, bits=32) -> DLTensor:
    """A DLTensor over a zeroed 4 KiB buffer with the given description."""
    backing = np.zeros(1024, np.float32)
    return make_dltensor(backing, dtype=DLDataType(2, bits, lanes), shape=shape, strides=strides)


@pytest.mark.parametrize(
    ("shape", "strides", "lanes", "layout"),
    [
        ((2, 3), None, 3, (2, 1)),
        ((2, 3), (3, 1), 3, (2, 1)),
        ((2, 4, 4), (16, 4, 1), 16, (2, 1)),
        ((2, 3, 3), None, 9, (2, 1)),
        ((3,), None, 1, (3, 1)),
        ((3,), (1,), 1, (3, 1)),
        ((4, 3), (0, 1), 3, (4, 0)),  # a broadcast row stays a broadcast
        ((2, 3), (6, 1), 3, (2, 2)),  # an outer slice keeps its row stride in lanes
        ((0, 3), None, 3, (0, 1)),
    ],
)
def test_typed_tensor_to_write_folds_component_axes(shape, strides, lanes, layout) -> None:
    source = _described(shape, strides)
    out = typed_tensor_to_write(source)
    assert (out.ndim, out.dtype.lanes, out.dtype.code, out.dtype.bits) == (1, lanes, 2, 32)
    assert (out.shape[0], out.strides[0]) == layout
    assert (out.data, out.byte_offset) == (source.data, source.byte_offset)
    assert out._source is source
    assert list(out._layout_storage) == list(layout)


def _with_row_stride(tensor: DLTensor, stride: int) -> DLTensor:
    tensor.strides[0] = stride  # what make_dltensor refuses to describe
    return tensor


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: _described((2,), lanes=3), "lanes must be 1"),
        (lambda: _described((1, 1, 1, 1)), "ndim"),
        (lambda: _described((2, 16, 16)), "at most 255"),
        (lambda: _described((2, 0)), "at most 255"),
        (lambda: _described((2, 3), (3, 2)), "not compact"),
        (lambda: _described((2, 3), (4, 1)), "multiple"),
        (lambda: _with_row_stride(_described((2, 3), (3, 1)), -3), "multiple"),
    ],
)
def test_typed_tensor_to_write_rejects_what_does_not_fold(make, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        typed_tensor_to_write(make())


def test_typed_tensor_to_write_rejects_bad_descriptors() -> None:
    with pytest.raises(TypeError):
        typed_tensor_to_write(np.zeros(3))  # type: ignore[arg-type]
    empty = DLTensor(ndim=0, dtype=DLDataType(DLDataTypeCode.kDLFloat, 32, 1))
    with pytest.raises(ValueError, match="NULL"):
        typed_tensor_to_write(empty)
    zero_d = _described((2,))
    zero_d.ndim = 0
    with pytest.raises(ValueError, match="ndim"):
        typed_tensor_to_write(zero_d)
    negative = _described((2,))
    negative.shape[0] = -1
    with pytest.raises(ValueError, match="non-negative"):
        typed_tensor_to_write(negative)
