"""Write flavors: ``write_attributes`` batches, prim modes, sparse addressing and the fixed
canonical layout.

Every test reads the stage back: a write "works" only if its values are there, and a rejected
write works only if nothing changed.
"""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from ovstage import AttributeSemantic, ErrorCode, OrdinalRange, PrimMode, WriteDesc
from readback import assert_rejected, latest, prim_paths_held, read_groups, values_of

ABC = ["/A", "/B", "/C"]
ABCD = ["/A", "/B", "/C", "/D"]
F32 = np.float32


@pytest.fixture
def abc(stage, make_query) -> ovstage.Query:
    """/A, /B, /C with "x" = float32 [1, 2, 3] and "r" = int32 ragged [[1], [2, 2], [3, 3, 3]],
    sealed at 1."""
    query = make_query(ABC)
    rows = [np.full(n, n, np.int32) for n in (1, 2, 3)]
    stage.write_attribute(query, "x", 1, np.array([1, 2, 3], F32), is_array=False).wait()
    stage.write_attribute(query, "r", 1, rows, is_array=True).wait()
    stage.advance_write_floor(1).wait()
    return query


def _unchanged(stage, abc) -> None:
    assert latest(stage, abc, "x", 1) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    assert latest(stage, abc, "r", 1) == {"/A": [1], "/B": [2, 2], "/C": [3, 3, 3]}


# ---------------------------------------------------------------- batches


def test_batch_writes_every_entry_under_one_op(stage, make_query) -> None:
    query = make_query(ABC)
    op = stage.write_attributes(
        query,
        [
            WriteDesc("x", np.array([1, 2, 3], F32), False),
            WriteDesc("pos", np.arange(9, dtype=np.float64).reshape(3, 3), False),
            WriteDesc(
                "names",
                [np.array([7], np.uint8), np.array([], np.uint8)],
                True,
                index_map=[0, 1, 0],
            ),
        ],
        1,
    )
    assert op.ok and op.op_id != 0
    op.wait()
    stage.advance_write_floor(1).wait()
    groups = read_groups(stage, query, ["x", "pos", "names"], OrdinalRange.latest(1))
    assert values_of(groups, "x") == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    assert values_of(groups, "pos") == {"/A": [0, 1, 2], "/B": [3, 4, 5], "/C": [6, 7, 8]}
    assert values_of(groups, "names") == {"/A": [7], "/B": [], "/C": [7]}
    assert {g.ordinal for g in groups} == {1}


def test_batch_entries_may_each_be_sparse(stage, abc) -> None:
    stage.write_attributes(
        abc,
        [
            WriteDesc("x", np.array([0, 0, 30], F32), False, mask=[0b100], count=3),
            WriteDesc("r", [np.array([9, 9], np.int32)], True, index_map=[0, 0]),
            WriteDesc("y", np.array([5], np.int64), False, count=1),
        ],
        2,
    ).wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "x", 2) == {"/A": 1.0, "/B": 2.0, "/C": 30.0}
    assert latest(stage, abc, "r", 2) == {"/A": [9, 9], "/B": [9, 9], "/C": [3, 3, 3]}
    assert latest(stage, abc, "y", 2) == {"/A": 5}


def test_batch_attribute_by_token_and_by_name(stage, abc, paths) -> None:
    token = paths.intern_token("x")
    stage.write_attributes(
        abc,
        [WriteDesc(token, np.array([4, 5, 6], F32), False), WriteDesc("z", np.ones(3, F32), False)],
        2,
    ).wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "x", 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}
    assert latest(stage, abc, "z", 2) == {"/A": 1.0, "/B": 1.0, "/C": 1.0}


@pytest.mark.parametrize("second", ["x", "token"])
def test_batch_writing_a_cell_twice_is_rejected(stage, abc, paths, second) -> None:
    # 0.3.0: one attribute may appear twice, but not for the same prim.
    other = paths.intern_token("x") if second == "token" else "x"
    op = stage.write_attributes(
        abc,
        [WriteDesc("x", np.full(3, 9, F32), False), WriteDesc(other, np.full(3, 8, F32), False)],
        2,
    )
    assert_rejected(
        op,
        ErrorCode.INVALID_ARGUMENT,
        "repeated concrete write target for prim '/A' and canonical attribute 'x'",
        "writes[0]",
        "writes[1]",
    )
    stage.advance_write_floor(2).wait()
    _unchanged(stage, abc)


def test_batch_may_name_an_attribute_twice_over_disjoint_prims(stage, abc) -> None:
    stage.write_attributes(
        abc,
        [
            WriteDesc("x", np.array([10, 0, 0], F32), False, mask=[0b001], count=3),
            WriteDesc("x", np.array([0, 20, 0], F32), False, mask=[0b010], count=3),
        ],
        2,
    ).wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "x", 2) == {"/A": 10.0, "/B": 20.0, "/C": 3.0}


#: One malformed second entry per case; the valid first entry (x = 9) must not be written.
BAD_SECOND_ENTRY = {
    "row count": (WriteDesc("new", np.zeros(2, F32), False), ErrorCode.INVALID_ARGUMENT),
    "count above the query": (
        WriteDesc("new", np.zeros(4, F32), False, count=4),
        ErrorCode.INVALID_ARGUMENT,
    ),
    "index_map beyond the rows": (
        WriteDesc("new", np.zeros(2, F32), False, index_map=[0, 1, 2]),
        ErrorCode.INVALID_ARGUMENT,
    ),
    "ragged bytes not whole rows": (
        WriteDesc("new", np.zeros(7, F32), True),
        ErrorCode.INVALID_ARGUMENT,
    ),
    "schema change": (WriteDesc("r", np.zeros(3, np.int32), False), ErrorCode.INVALID_ARGUMENT),
    "TOKEN_ID layout": (
        WriteDesc("tok", np.zeros(3, np.int64), False, semantic=AttributeSemantic.TOKEN_ID),
        ErrorCode.INVALID_ARGUMENT,
    ),
    "derived built-in": (
        WriteDesc("usd-parent", np.zeros(3, np.uint64), False),
        ErrorCode.NOT_SUPPORTED,
    ),
    "usd-prim-type as an array": (
        WriteDesc("usd-prim-type", np.zeros(3, np.uint64), True),
        ErrorCode.INVALID_ARGUMENT,
    ),
}


@pytest.mark.parametrize("case", list(BAD_SECOND_ENTRY))
def test_a_bad_entry_rejects_the_whole_batch(stage, abc, case) -> None:
    bad, code = BAD_SECOND_ENTRY[case]
    op = stage.write_attributes(abc, [WriteDesc("x", np.full(3, 9, F32), False), bad], 2)
    assert_rejected(op, code)
    stage.advance_write_floor(2).wait()
    _unchanged(stage, abc)
    assert read_groups(stage, abc, ["new", "tok"], OrdinalRange.latest(2)) == []


#: Layout errors from the ID-semantic and built-in rules (checked separately below).
UNNAMED_IN_BATCH = ["TOKEN_ID layout", "usd-prim-type as an array"]


@pytest.mark.parametrize("case", [c for c in BAD_SECOND_ENTRY if c not in UNNAMED_IN_BATCH])
def test_a_bad_entry_error_names_the_entry(stage, abc, case) -> None:
    bad, code = BAD_SECOND_ENTRY[case]
    op = stage.write_attributes(abc, [WriteDesc("x", np.full(3, 9, F32), False), bad], 2)
    assert_rejected(op, code, "writes[1]")


@pytest.mark.parametrize("case", UNNAMED_IN_BATCH)
def test_layout_error_in_a_batch_names_the_entry(stage, abc, case) -> None:
    bad, code = BAD_SECOND_ENTRY[case]
    op = stage.write_attributes(abc, [WriteDesc("x", np.full(3, 9, F32), False), bad], 2)
    assert_rejected(op, code, "writes[1]")


def test_batch_at_or_below_the_floor_is_rejected(stage, abc) -> None:
    op = stage.write_attributes(abc, [WriteDesc("x", np.full(3, 9, F32), False)], 1)
    assert_rejected(op, ErrorCode.WRITE_FLOOR_VIOLATION)
    _unchanged(stage, abc)


def test_empty_batch_is_accepted(stage, abc) -> None:
    op = stage.write_attributes(abc, [], 2)  # 0.3.0: accepted, and writes nothing
    assert op.ok
    op.wait()
    stage.advance_write_floor(2).wait()
    _unchanged(stage, abc)


@pytest.mark.parametrize(
    "writes",
    [WriteDesc("x", np.zeros(3, F32), False), [("x", np.zeros(3, F32), False)], "x"],
    ids=["bare WriteDesc", "tuple entry", "string"],
)
def test_batch_entries_must_be_write_descs(stage, abc, writes) -> None:
    with pytest.raises(TypeError):
        stage.write_attributes(abc, writes, 2)


@pytest.mark.parametrize(
    ("desc", "error", "fragment"),
    [
        (WriteDesc("x", np.zeros(3, F32), 0), TypeError, "is_array"),
        (WriteDesc("x", np.zeros(3, F32), False, mask=[1]), ValueError, "count"),
        (WriteDesc("x", np.zeros(3, F32), False, count=0), ValueError, "count"),
        (WriteDesc("x", np.zeros(3, F32), False, index_map=[0], mask=[1], count=1), ValueError,
         "exclusive"),
        (WriteDesc(1.5, np.zeros(3, F32), False), TypeError, "attribute"),
        (WriteDesc("x", [], False), ValueError, "tensors"),
        (WriteDesc("x", np.zeros(3, F32), False, semantic=2**31), ValueError, "semantic"),
    ],
    ids=["is_array int", "mask no count", "count 0", "map and mask", "float attr", "no tensors",
         "semantic int32"],
)  # fmt: skip
def test_batch_entry_guards_raise_before_the_engine(stage, abc, desc, error, fragment) -> None:
    good = WriteDesc("x", np.full(3, 9, F32), False)
    with pytest.raises(error, match=fragment):
        stage.write_attributes(abc, [good, desc], 2)
    stage.advance_write_floor(2).wait()
    _unchanged(stage, abc)


# ---------------------------------------------------------------- prim modes (invariant 9)


def test_insert_creates_absent_prims_then_upsert_updates_them(stage, make_query) -> None:
    query = make_query(["/N1", "/N2"])
    stage.write_attribute(
        query, "v", 1, np.array([1, 2], np.int32), is_array=False, prim_mode=PrimMode.INSERT
    ).wait()
    stage.advance_write_floor(1).wait()
    assert latest(stage, query, "v", 1) == {"/N1": 1, "/N2": 2}
    stage.write_attribute(query, "v", 2, np.array([3, 4], np.int32), is_array=False).wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, query, "v", 2) == {"/N1": 3, "/N2": 4}


def test_insert_onto_any_existing_prim_writes_nothing(stage, abc, make_query) -> None:
    mixed = make_query(["/New", "/B"])
    op = stage.write_attribute(
        mixed, "w", 2, np.array([5, 6], F32), is_array=False, prim_mode=PrimMode.INSERT
    )
    assert_rejected(op, ErrorCode.PRIM_NOT_FOUND, "/B")
    stage.advance_write_floor(2).wait()
    assert latest(stage, mixed, "w", 2) == {}
    assert prim_paths_held(stage, mixed, 2) == ["/B"]  # /New was not created


def test_insert_onto_a_prim_with_other_attributes_only_is_rejected(stage, abc, make_query) -> None:
    # INSERT is about the prim, not the attribute: /A exists (it carries "x").
    only_a = make_query(["/A"])
    op = stage.write_attribute(
        only_a, "fresh", 2, np.array([1], F32), is_array=False, prim_mode=PrimMode.INSERT
    )
    assert_rejected(op, ErrorCode.PRIM_NOT_FOUND)
    stage.advance_write_floor(2).wait()
    assert latest(stage, only_a, "fresh", 2) == {}


def test_batch_insert_onto_an_existing_prim_writes_no_entry(stage, abc, make_query) -> None:
    mixed = make_query(["/New", "/A"])
    op = stage.write_attributes(
        mixed,
        [WriteDesc("p", np.ones(2, F32), False), WriteDesc("q", np.ones(2, np.int8), False)],
        2,
        prim_mode=PrimMode.INSERT,
    )
    assert_rejected(op, ErrorCode.PRIM_NOT_FOUND)
    stage.advance_write_floor(2).wait()
    assert read_groups(stage, mixed, ["p", "q"], OrdinalRange.latest(2)) == []
    assert prim_paths_held(stage, mixed, 2) == ["/A"]


def test_batch_insert_onto_new_prims_writes_every_entry(stage, make_query) -> None:
    query = make_query(["/N1", "/N2"])
    stage.write_attributes(
        query,
        [WriteDesc("p", np.array([1, 2], F32), False), WriteDesc("q", [np.ones(1, F32)] * 2, True)],
        1,
        prim_mode=PrimMode.INSERT,
    ).wait()
    stage.advance_write_floor(1).wait()
    assert latest(stage, query, "p", 1) == {"/N1": 1.0, "/N2": 2.0}
    assert latest(stage, query, "q", 1) == {"/N1": [1.0], "/N2": [1.0]}


def test_prim_mode_is_a_closed_enum(stage, abc) -> None:
    with pytest.raises(ValueError, match="prim_mode"):
        stage.write_attribute(abc, "x", 2, np.zeros(3, F32), is_array=False, prim_mode=2)
    with pytest.raises(ValueError, match="prim_mode"):
        stage.write_attributes(abc, [WriteDesc("x", np.zeros(3, F32), False)], 2, prim_mode=7)


# ---------------------------------------------------------------- index_map (invariant 10)


@pytest.fixture
def abcd(make_query, write_sealed) -> ovstage.Query:
    """/A../D with "v" = int32 [10, 20, 30, 40], sealed at 1."""
    query = make_query(ABCD)
    write_sealed(query, "v", 1, np.array([10, 20, 30, 40], np.int32))
    return query


def test_index_map_gathers_reorders_and_leaves_the_rest(stage, abcd, write_sealed) -> None:
    write_sealed(abcd, "v", 2, np.array([111, 222, 333], np.int32), index_map=[1, 2, 0])
    assert latest(stage, abcd, "v", 2) == {"/A": 222, "/B": 333, "/C": 111, "/D": 40}


def test_index_map_broadcasts_one_row(stage, abcd, write_sealed) -> None:
    write_sealed(abcd, "v", 2, np.array([7], np.int32), index_map=[0, 0, 0, 0])
    assert latest(stage, abcd, "v", 2) == {"/A": 7, "/B": 7, "/C": 7, "/D": 7}


def test_payload_may_have_more_rows_than_the_query(stage, abcd, write_sealed) -> None:
    payload = np.arange(100, 110, dtype=np.int32)
    write_sealed(abcd, "v", 2, payload, index_map=[9, 0], count=2)
    assert latest(stage, abcd, "v", 2) == {"/A": 109, "/B": 100, "/C": 30, "/D": 40}


def test_index_map_with_count_uses_the_leading_entries(stage, abcd, write_sealed) -> None:
    write_sealed(abcd, "v", 2, np.array([5, 6], np.int32), index_map=[1, 0, 1], count=2)
    assert latest(stage, abcd, "v", 2) == {"/A": 6, "/B": 5, "/C": 30, "/D": 40}


def test_index_map_entry_beyond_the_rows_is_invalid_argument(stage, abcd) -> None:
    op = stage.write_attribute(
        abcd, "v", 2, np.array([1, 2, 3], np.int32), is_array=False, index_map=[0, 3]
    )
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "index_map")
    stage.advance_write_floor(2).wait()
    assert latest(stage, abcd, "v", 2) == {"/A": 10, "/B": 20, "/C": 30, "/D": 40}


# ---------------------------------------------------------------- mask (invariant 11)


def test_mask_writes_only_the_selected_elements(stage, abcd, write_sealed) -> None:
    write_sealed(abcd, "v", 2, np.array([1, 2, 3, 4], np.int32), mask=[0b1000], count=4)
    assert latest(stage, abcd, "v", 2) == {"/A": 10, "/B": 20, "/C": 30, "/D": 4}
    write_sealed(abcd, "v", 3, np.array([5, 6, 7, 8], np.int32), mask=[0b0101], count=4)
    assert latest(stage, abcd, "v", 3) == {"/A": 5, "/B": 20, "/C": 7, "/D": 4}


def test_mask_bits_past_count_are_ignored(stage, abcd, write_sealed) -> None:
    write_sealed(abcd, "v", 2, np.array([1, 2], np.int32), mask=[0b1111], count=2)
    assert latest(stage, abcd, "v", 2) == {"/A": 1, "/B": 2, "/C": 30, "/D": 40}


def test_mask_words_are_lsb_first_across_word_boundaries(stage, make_query, write_sealed) -> None:
    names = [f"/P{i:02d}" for i in range(70)]
    query = make_query(names)
    write_sealed(query, "m", 1, np.zeros(70, np.int16))
    # Word 0 bit 63 -> element 63; word 1 bit 2 -> element 66.
    words = np.array([1 << 63, 1 << 2], np.uint64)
    write_sealed(query, "m", 2, np.arange(70, dtype=np.int16), mask=words, count=70)
    values = latest(stage, query, "m", 2)
    assert {p: v for p, v in values.items() if v} == {"/P63": 63, "/P66": 66}
    assert len(values) == 70


def test_mask_words_may_be_python_ints_above_2_63(stage, make_query, write_sealed) -> None:
    query = make_query([f"/P{i:02d}" for i in range(70)])
    write_sealed(query, "m", 1, np.zeros(70, np.int16))
    write_sealed(query, "m", 2, np.arange(70, dtype=np.int16), mask=[1 << 63, 1 << 2], count=70)
    values = latest(stage, query, "m", 2)
    assert {p: v for p, v in values.items() if v} == {"/P63": 63, "/P66": 66}


def test_mask_that_selects_nothing_changes_nothing(stage, abcd, write_sealed) -> None:
    write_sealed(abcd, "v", 2, np.array([1, 2, 3, 4], np.int32), mask=[0], count=4)
    assert latest(stage, abcd, "v", 2) == {"/A": 10, "/B": 20, "/C": 30, "/D": 40}


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"mask": [1]}, "count"),
        ({"mask": [1], "count": 0}, "count"),
        ({"index_map": [0], "count": 0}, "count"),
        ({"mask": [1], "index_map": [0, 0, 0, 0], "count": 4}, "mask"),
    ],
)
def test_mask_and_map_guards(stage, abcd, kwargs, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        stage.write_attribute(abcd, "v", 2, np.zeros(4, np.int32), is_array=False, **kwargs)
    stage.advance_write_floor(2).wait()
    assert latest(stage, abcd, "v", 2) == {"/A": 10, "/B": 20, "/C": 30, "/D": 40}


# ---------------------------------------------------------------- count (invariant 12)


def test_count_addresses_the_leading_prims_in_query_order(
    stage, abcd, make_query, write_sealed
) -> None:
    reversed_query = make_query(list(reversed(ABCD)))
    write_sealed(reversed_query, "v", 2, np.array([-4, -3], np.int32), count=2)
    assert latest(stage, abcd, "v", 2) == {"/A": 10, "/B": 20, "/C": -3, "/D": -4}


def test_no_count_means_the_whole_query(stage, abcd, write_sealed) -> None:
    write_sealed(abcd, "v", 2, np.array([1, 2, 3, 4], np.int32))
    assert latest(stage, abcd, "v", 2) == {"/A": 1, "/B": 2, "/C": 3, "/D": 4}


def test_count_above_the_query_is_invalid_argument(stage, abcd) -> None:
    op = stage.write_attribute(abcd, "v", 2, np.zeros(5, np.int32), is_array=False, count=5)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "count")
    stage.advance_write_floor(2).wait()
    assert latest(stage, abcd, "v", 2) == {"/A": 10, "/B": 20, "/C": 30, "/D": 40}


def test_count_with_a_mismatched_payload_is_invalid_argument(stage, abcd) -> None:
    op = stage.write_attribute(abcd, "v", 2, np.zeros(3, np.int32), is_array=False, count=2)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT)


# ---------------------------------------------------------------- fixed layout (invariant 13)


def test_trailing_dims_fold_into_lanes_and_read_back_canonical(stage, make_query, paths) -> None:
    query = make_query(["/A", "/B"])
    vec = np.arange(6, dtype=F32).reshape(2, 3)
    mat = np.arange(32, dtype=np.float64).reshape(2, 4, 4)
    stage.write_attributes(
        query, [WriteDesc("vec", vec, False), WriteDesc("mat", mat, False)], 1
    ).wait()
    stage.advance_write_floor(1).wait()
    lanes_of = {paths.intern_token("vec"): 3, paths.intern_token("mat"): 16}
    expected = {3: vec.tolist(), 16: mat.reshape(2, 16).tolist()}
    seen = []
    with stage.read_attributes(query, ["vec", "mat"], OrdinalRange.latest(1)) as read:
        read.wait()
        for group in read.groups():
            with group:
                lanes = lanes_of[group.attribute]
                tensor = group.tensor(0)  # typed: the stored tuple as an axis
                assert tensor.ndim == 2
                assert tensor.shape_tuple == (2, lanes)
                assert tensor.dtype.lanes == 1
                view = np.from_dlpack(group.dlpack(0))
                assert view.shape == (2, lanes)
                assert view.tolist() == expected[lanes]
                seen.append(lanes)
    assert sorted(seen) == [3, 16]


def test_flat_one_lane_payload_is_not_reinterpreted_as_rows(stage, make_query) -> None:
    query = make_query(["/A", "/B"])
    op = stage.write_attribute(query, "vec", 1, np.arange(6, dtype=F32), is_array=False)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT)
    stage.advance_write_floor(1).wait()
    assert latest(stage, query, "vec", 1) == {}


def test_fixed_write_with_several_tensors_is_invalid_argument(stage, make_query) -> None:
    query = make_query(["/A", "/B"])
    op = stage.write_attribute(query, "v", 1, [np.ones(2, F32), np.ones(2, F32)], is_array=False)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT)


# ---------------------------------------------------------------- bad input leaves the stage


MALFORMED = {
    "wrong lanes": ({"tensors": np.zeros((3, 2), F32)}, "schema"),
    "wrong dtype": ({"tensors": np.zeros(3, np.float64)}, "schema"),
    "row width not a whole element": (
        {"attribute": "r", "tensors": np.zeros(7, np.int32), "is_array": True},
        "tensors",
    ),
    "index_map out of range": ({"tensors": np.zeros(2, F32), "index_map": [0, 2]}, "index_map"),
    "count larger than the query": ({"tensors": np.zeros(4, F32), "count": 4}, "count"),
    "semantic layout": (
        {"attribute": "tok", "tensors": np.zeros(3, F32), "semantic": AttributeSemantic.TOKEN_ID},
        "semantic",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_write_names_the_argument_and_changes_nothing(stage, abc, case) -> None:
    kwargs, fragment = MALFORMED[case]
    args = {"attribute": "x", "is_array": False, **kwargs}
    tensors = args.pop("tensors")
    attribute = args.pop("attribute")
    op = stage.write_attribute(abc, attribute, 2, tensors, **args)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, fragment)
    stage.advance_write_floor(2).wait()
    _unchanged(stage, abc)
    assert latest(stage, abc, "tok", 2) == {}


# ---------------------------------------------------------------- CPU-ahead submission


def test_ordinals_submitted_ahead_drain_with_zero_timeout_polls(stage, abc) -> None:
    ops = [
        stage.write_attribute(abc, "x", o, np.full(3, o, F32), is_array=False) for o in range(2, 7)
    ]
    ops.append(stage.advance_write_floor(6))
    assert all(op.ok for op in ops)
    assert len({op.op_id for op in ops}) == len(ops)
    pending = list(ops)
    while pending:
        still = []
        for op in pending:
            try:
                op.wait(0)
            except ovstage.OvstageError as exc:
                assert exc.code == ErrorCode.TIMEOUT
                still.append(op)  # stays waitable after TIMEOUT
        pending = still
    for op in ops:
        assert op.done()
        with pytest.raises(ovstage.OvstageError) as info:
            op.wait(0)  # released by the successful wait
        assert info.value.code == ErrorCode.INVALID_HANDLE
    assert latest(stage, abc, "x", 6) == {"/A": 6.0, "/B": 6.0, "/C": 6.0}
