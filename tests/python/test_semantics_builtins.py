"""Attribute semantics (roles) and the reserved built-in attributes: a semantic
fixes an attribute's layout, built-ins are derived from paths and cannot be written.
"""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from ovstage import AttributeSemantic, ErrorCode, OrdinalRange, WriteDesc
from readback import assert_rejected, latest, prim_paths_held, read_groups, values_of

AS = AttributeSemantic
ABC = ["/A", "/B", "/C"]
F32 = np.float32
U64 = np.uint64


@pytest.fixture
def abc(make_query) -> ovstage.Query:
    return make_query(ABC)


def _pairs(rows: int, start: int = 1) -> ovstage.DLTensor:
    """``rows`` uint64x2 elements (a token/path pair each), values start, start+1, ..."""
    data = np.arange(start, start + 2 * rows, dtype=U64)
    return ovstage.make_dltensor(data, dtype=ovstage.numpy_to_dldatatype(U64, 2), shape=(rows,))


def _semantic_of(stage, query, attribute, ordinal) -> set[int]:
    groups = read_groups(stage, query, [attribute], OrdinalRange.latest(ordinal))
    assert groups, f"no group for {attribute}"
    for group in groups:
        assert group.semantic == group.raw_semantic
    return {g.semantic for g in groups}


# ---------------------------------------------------------------- round trip (invariant 15)


ROLE_PAYLOADS = {
    AS.POINT: np.arange(9, dtype=F32).reshape(3, 3),
    AS.VECTOR: np.arange(9, dtype=np.float64).reshape(3, 3),
    AS.NORMAL: np.ones((3, 3), np.float16),
    AS.COLOR: np.arange(12, dtype=F32).reshape(3, 4),
    AS.QUATERNION: np.ones((3, 4), F32),
    AS.MATRIX: np.arange(48, dtype=np.float64).reshape(3, 4, 4),
    AS.TEXTURE_COORDINATE: np.ones((3, 2), F32),
    AS.TIME_CODE: np.array([1.5, 2.5, 3.5]),
    AS.FRAME: np.arange(48, dtype=np.float64).reshape(3, 4, 4),
}


@pytest.mark.parametrize("semantic", list(ROLE_PAYLOADS), ids=lambda s: s.name)
def test_role_is_stored_on_creation_and_reported(stage, abc, write_sealed, semantic) -> None:
    payload = ROLE_PAYLOADS[semantic]
    write_sealed(abc, "attr", 1, payload, semantic=semantic)
    groups = read_groups(stage, abc, ["attr"], OrdinalRange.latest(1))
    assert {g.semantic for g in groups} == {int(semantic)}
    assert {g.raw_semantic for g in groups} == {int(semantic)}
    assert AS(groups[0].semantic) is semantic
    expected = payload.reshape(3, -1).tolist() if payload.ndim > 1 else payload.tolist()
    assert values_of(groups, "attr") == dict(zip(ABC, expected, strict=True))


def test_semantic_property_matches_the_raw_field(stage, abc, write_sealed) -> None:
    write_sealed(abc, "p", 1, np.ones((3, 3), F32), semantic=AS.POINT)
    with stage.read_attributes(abc, ["p"], OrdinalRange.latest(1)) as read:
        read.wait()
        (group,) = list(read.groups())
        with group:
            assert group.semantic == group.raw.semantic == AS.POINT


def test_no_semantic_reads_back_none(stage, abc, write_sealed) -> None:
    write_sealed(abc, "plain", 1, np.ones(3, F32))
    assert _semantic_of(stage, abc, "plain", 1) == {AS.NONE}


def test_semantic_of_every_entry_of_a_batch_is_stored(stage, abc) -> None:
    stage.write_attributes(
        abc,
        [
            WriteDesc("p", np.ones((3, 3), F32), False, semantic=AS.POINT),
            WriteDesc("c", np.ones((3, 3), F32), False, semantic=AS.COLOR),
            WriteDesc("n", np.ones(3, F32), False),
        ],
        1,
    ).wait()
    stage.advance_write_floor(1).wait()
    groups = read_groups(stage, abc, ["p", "c", "n"], OrdinalRange.latest(1))
    assert {g.attribute: g.semantic for g in groups} == {"p": AS.POINT, "c": AS.COLOR, "n": 0}


# ---------------------------------------------------------------- immutable roles


def test_a_different_role_on_an_existing_column_is_rejected(stage, abc, write_sealed) -> None:
    write_sealed(abc, "p", 1, np.zeros((3, 3), F32), semantic=AS.POINT)
    op = stage.write_attribute(abc, "p", 2, np.ones((3, 3), F32), is_array=False, semantic=AS.COLOR)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "semantic")
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "p", 2) == {p: [0.0, 0.0, 0.0] for p in ABC}
    assert _semantic_of(stage, abc, "p", 2) == {AS.POINT}


def test_matrix_onto_a_frame_column_is_rejected(stage, abc, write_sealed) -> None:
    write_sealed(abc, "f", 1, np.zeros((3, 4, 4)), semantic=AS.FRAME)
    op = stage.write_attribute(abc, "f", 2, np.ones((3, 4, 4)), is_array=False, semantic=AS.MATRIX)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT)
    assert _semantic_of(stage, abc, "f", 1) == {AS.FRAME}


def test_none_never_changes_a_role(stage, abc, write_sealed) -> None:
    write_sealed(abc, "p", 1, np.zeros((3, 3), F32), semantic=AS.POINT)
    write_sealed(abc, "p", 2, np.ones((3, 3), F32), semantic=AS.NONE)
    assert latest(stage, abc, "p", 2) == {p: [1.0, 1.0, 1.0] for p in ABC}
    assert _semantic_of(stage, abc, "p", 2) == {AS.POINT}


def test_the_same_role_again_is_accepted(stage, abc, write_sealed) -> None:
    write_sealed(abc, "p", 1, np.zeros((3, 3), F32), semantic=AS.POINT)
    write_sealed(abc, "p", 2, np.full((3, 3), 2, F32), semantic=AS.POINT)
    assert latest(stage, abc, "p", 2) == {p: [2.0, 2.0, 2.0] for p in ABC}


def test_a_column_created_without_a_role_cannot_gain_one(stage, abc, write_sealed) -> None:
    write_sealed(abc, "plain", 1, np.zeros((3, 3), F32))
    op = stage.write_attribute(
        abc, "plain", 2, np.ones((3, 3), F32), is_array=False, semantic=AS.POINT
    )
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT)
    assert _semantic_of(stage, abc, "plain", 1) == {AS.NONE}


def test_role_may_change_after_delete(stage, abc, write_sealed) -> None:
    write_sealed(abc, "p", 1, np.zeros((3, 3), F32), semantic=AS.POINT)
    stage.delete_attributes(abc, ["p"], 2).wait()
    stage.advance_write_floor(2).wait()
    write_sealed(abc, "p", 3, np.ones((3, 3), F32), semantic=AS.COLOR)
    assert _semantic_of(stage, abc, "p", 3) == {AS.COLOR}


def test_semantic_guard_is_an_int32_range_check(stage, abc) -> None:
    for bad in (2**31, -(2**31) - 1):
        with pytest.raises(ValueError, match="semantic"):
            stage.write_attribute(abc, "x", 1, np.ones(3, F32), is_array=False, semantic=bad)
    with pytest.raises(TypeError, match="semantic"):
        stage.write_attribute(abc, "x", 1, np.ones(3, F32), is_array=False, semantic=1.0)


# ---------------------------------------------------------------- ID-semantic layouts


def _token_ids(paths, *names: str) -> np.ndarray:
    return np.array([paths.intern_token(n) for n in names], U64)


def test_token_ids_round_trip_through_the_dictionary(stage, abc, write_sealed, paths) -> None:
    ids = _token_ids(paths, "red", "green", "blue")
    ids[1] = 0  # id 0 is the empty token
    write_sealed(abc, "kind", 1, ids, semantic=AS.TOKEN_ID)
    values = latest(stage, abc, "kind", 1)
    assert values == {"/A": ids[0], "/B": 0, "/C": ids[2]}
    assert paths.token_to_string(values["/A"]) == "red"
    assert paths.token_to_string(values["/C"]) == "blue"
    assert _semantic_of(stage, abc, "kind", 1) == {AS.TOKEN_ID}


def _rows(*rows: list[int]) -> list[np.ndarray]:
    return [np.array(r, U64) for r in rows]


#: case -> (semantic, payload factory, is_array, expected {prim: value}).
VALID_ID_LAYOUTS = {
    "TOKEN_ID scalar": (AS.TOKEN_ID, lambda: np.array([1, 2, 3], U64), False,
                        {"/A": 1, "/B": 2, "/C": 3}),
    "TOKEN_ID array": (AS.TOKEN_ID, lambda: np.arange(1, 7, dtype=U64), True,
                       {"/A": [1, 2], "/B": [3, 4], "/C": [5, 6]}),
    "ASSET_PATH_ID (N,2)": (AS.ASSET_PATH_ID, lambda: np.arange(1, 7, dtype=U64).reshape(3, 2),
                            False, {"/A": [1, 2], "/B": [3, 4], "/C": [5, 6]}),
    "ASSET_PATH_ID array": (AS.ASSET_PATH_ID, lambda: _pairs(6), True,
                            {"/A": [1, 2, 3, 4], "/B": [5, 6, 7, 8], "/C": [9, 10, 11, 12]}),
    "PATH_EXPRESSION_STRING scalar": (AS.PATH_EXPRESSION_STRING, lambda: np.array([0, 2, 3], U64),
                                      False, {"/A": 0, "/B": 2, "/C": 3}),
    "PATH_EXPRESSION_STRING array": (AS.PATH_EXPRESSION_STRING, lambda: _rows([1], [], [2, 3]),
                                     True, {"/A": [1], "/B": [], "/C": [2, 3]}),
    "RELATIONSHIP_PATH_ID": (AS.RELATIONSHIP_PATH_ID, lambda: _rows([1, 2], [], [3]), True,
                             {"/A": [1, 2], "/B": [], "/C": [3]}),
    "RELATIONSHIP_PATH_ID fixed": (AS.RELATIONSHIP_PATH_ID, lambda: np.array([4, 5, 6], U64), False,
                                   {"/A": 4, "/B": 5, "/C": 6}),
    "CONNECTION_PATH_ID packed": (AS.CONNECTION_PATH_ID, lambda: _pairs(3), True,
                                  {"/A": [1, 2], "/B": [3, 4], "/C": [5, 6]}),
    "CONNECTION_PATH_ID rows": (AS.CONNECTION_PATH_ID,
                                lambda: [_pairs(1), _pairs(1, 5), _pairs(1, 7)],
                                True, {"/A": [1, 2], "/B": [5, 6], "/C": [7, 8]}),
    "CONNECTION_PATH_ID fixed": (AS.CONNECTION_PATH_ID,
                                 lambda: np.arange(1, 7, dtype=U64).reshape(3, 2),
                                 False, {"/A": [1, 2], "/B": [3, 4], "/C": [5, 6]}),
    "STRING": (AS.STRING, lambda: [np.frombuffer(s, np.uint8) for s in (b"hi", b"", b"yo")], True,
               {"/A": [104, 105], "/B": [], "/C": [121, 111]}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(VALID_ID_LAYOUTS))
def test_valid_id_layouts_round_trip(stage, abc, write_sealed, case) -> None:
    semantic, make, is_array, expected = VALID_ID_LAYOUTS[case]
    write_sealed(abc, "id", 1, make(), is_array=is_array, semantic=semantic)
    groups = read_groups(stage, abc, ["id"], OrdinalRange.latest(1))
    assert {g.semantic for g in groups} == {int(semantic)}
    assert {g.is_array for g in groups} == {is_array}
    assert values_of(groups, "id") == expected


INVALID_ID_LAYOUTS = {
    "TOKEN_ID int64": (AS.TOKEN_ID, lambda: np.arange(3, dtype=np.int64), False),
    "TOKEN_ID uint32": (AS.TOKEN_ID, lambda: np.arange(3, dtype=np.uint32), False),
    "TOKEN_ID two lanes": (AS.TOKEN_ID, lambda: np.zeros((3, 2), U64), False),
    "ASSET_PATH_ID one lane": (AS.ASSET_PATH_ID, lambda: np.zeros(3, U64), False),
    "ASSET_PATH_ID float": (AS.ASSET_PATH_ID, lambda: np.zeros((3, 2)), False),
    "PATH_EXPRESSION_STRING uint32": (AS.PATH_EXPRESSION_STRING, lambda: np.zeros(3, np.uint32),
                                      False),
    "RELATIONSHIP_PATH_ID two lanes": (AS.RELATIONSHIP_PATH_ID, lambda: np.zeros((3, 2), U64),
                                       False),
    "RELATIONSHIP_PATH_ID int64": (AS.RELATIONSHIP_PATH_ID, lambda: np.zeros(3, np.int64), True),
    "CONNECTION_PATH_ID one lane": (AS.CONNECTION_PATH_ID, lambda: np.zeros((3, 2), U64), True),
    "CONNECTION_PATH_ID fixed one lane": (AS.CONNECTION_PATH_ID, lambda: np.zeros(3, U64), False),
    "STRING fixed": (AS.STRING, lambda: np.zeros(3, np.uint8), False),
    "STRING int8": (AS.STRING, lambda: [np.zeros(2, np.int8)] * 3, True),
}  # fmt: skip


@pytest.mark.parametrize("case", list(INVALID_ID_LAYOUTS))
def test_wrong_id_layouts_are_invalid_argument(stage, abc, case) -> None:
    semantic, make, is_array = INVALID_ID_LAYOUTS[case]
    op = stage.write_attribute(abc, "id", 1, make(), is_array=is_array, semantic=semantic)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, "semantic")
    stage.advance_write_floor(1).wait()
    assert read_groups(stage, abc, ["id"], OrdinalRange.latest(1)) == []


def test_connection_rows_of_other_than_one_pair_fail_when_the_write_runs(stage, abc) -> None:
    # Accepted at enqueue; each prim takes exactly one (path, token) pair, checked when the
    # write executes: OP_FAILED, nothing written.
    op = stage.write_attribute(abc, "con", 1, [_pairs(2), _pairs(1, 5), _pairs(0)], is_array=True,
                               semantic=AS.CONNECTION_PATH_ID)  # fmt: skip
    assert op.ok
    with pytest.raises(ovstage.OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.OP_FAILED
    assert "exactly one connection element (prim_index=0, elements=2)" in info.value.message
    stage.advance_write_floor(1).wait()
    assert read_groups(stage, abc, ["con"], OrdinalRange.latest(1)) == []


def test_a_string_row_keeps_a_trailing_nul(stage, abc, write_sealed) -> None:
    rows = [np.frombuffer(b, np.uint8) for b in (b"hi\0", b"", b"\0")]
    write_sealed(abc, "label", 1, rows, is_array=True, semantic=AS.STRING)
    assert latest(stage, abc, "label", 1) == {"/A": [104, 105, 0], "/B": [], "/C": [0]}


def test_a_token_pair_without_a_semantic_is_a_plain_column(stage, abc, write_sealed) -> None:
    write_sealed(abc, "pair", 1, np.arange(6, dtype=U64).reshape(3, 2))
    groups = read_groups(stage, abc, ["pair"], OrdinalRange.latest(1))
    assert {g.semantic for g in groups} == {AS.NONE}
    assert values_of(groups, "pair") == {"/A": [0, 1], "/B": [2, 3], "/C": [4, 5]}


def test_strings_decode_row_by_row(stage, abc, write_sealed) -> None:
    texts = ["héllo", "", "wörld!"]
    rows = [np.frombuffer(t.encode(), np.uint8) for t in texts]
    write_sealed(abc, "label", 1, rows, is_array=True, semantic=AS.STRING)
    values = latest(stage, abc, "label", 1)
    assert {p: bytes(v).decode() for p, v in values.items()} == dict(zip(ABC, texts, strict=True))


# ---------------------------------------------------------------- recorded built-ins


def test_usd_prim_type_is_one_token_per_prim(stage, abc, write_sealed, paths) -> None:
    types = _token_ids(paths, "Xform", "Mesh", "Xform")
    write_sealed(abc, "usd-prim-type", 1, types)
    values = latest(stage, abc, "usd-prim-type", 1)
    assert {p: paths.token_to_string(v) for p, v in values.items()} == {
        "/A": "Xform",
        "/B": "Mesh",
        "/C": "Xform",
    }


def test_usd_schemas_rows_replace_and_an_empty_row_clears(stage, abc, write_sealed, paths) -> None:
    rows = [_token_ids(paths, "A", "B"), _token_ids(paths), _token_ids(paths, "C")]
    write_sealed(abc, "usd-schemas", 1, rows, is_array=True)
    write_sealed(abc, "usd-schemas", 2, [_token_ids(paths)], is_array=True, count=1)
    values = latest(stage, abc, "usd-schemas", 2)
    names = {p: [paths.token_to_string(t) for t in v] for p, v in values.items()}
    assert names == {"/A": [], "/B": [], "/C": ["C"]}


@pytest.mark.parametrize(
    ("name", "payload", "is_array"),
    [
        ("usd-prim-type", np.arange(1, 4, dtype=U64), True),
        ("usd-prim-type", np.arange(3, dtype=F32), False),
        ("usd-prim-type", np.arange(3, dtype=np.int64), False),
        ("usd-prim-type", np.zeros((3, 2), U64), False),
        ("usd-schemas", np.arange(1, 4, dtype=U64), False),
        ("usd-schemas", [np.ones(1, np.uint32)] * 3, True),
        ("usd-ancestor-types", np.arange(1, 4, dtype=U64), False),
    ],
    ids=[
        "type array",
        "type float",
        "type int64",
        "type 2 lanes",
        "schemas fixed",
        "schemas u32",
        "ancestors fixed",
    ],
)
def test_recorded_built_ins_reject_other_layouts(stage, abc, name, payload, is_array) -> None:
    op = stage.write_attribute(abc, name, 1, payload, is_array=is_array)
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, name)
    stage.advance_write_floor(1).wait()
    assert read_groups(stage, abc, [name], OrdinalRange.latest(1)) == []


@pytest.mark.parametrize("name", ["usd-prim-type", "usd-schemas", "usd-ancestor-types"])
def test_recorded_built_ins_take_semantic_none_only(stage, abc, paths, name) -> None:
    ids = _token_ids(paths, "X", "Y", "Z")
    is_array = name != "usd-prim-type"
    payload = [ids[i : i + 1] for i in range(3)] if is_array else ids
    op = stage.write_attribute(abc, name, 1, payload, is_array=is_array,
                               semantic=AS.TOKEN_ID)  # fmt: skip
    fragment = f"reserved attribute '{name}' requires its canonical kind, semantic NONE"
    assert_rejected(op, ErrorCode.INVALID_ARGUMENT, fragment)


def test_usd_ancestor_types_is_a_recorded_token_array(stage, abc, write_sealed, paths) -> None:
    rows = [_token_ids(paths, "Xformable", "Imageable"), _token_ids(paths), _token_ids(paths, "A")]
    write_sealed(abc, "usd-ancestor-types", 1, rows, is_array=True)
    groups = read_groups(stage, abc, ["usd-ancestor-types"], OrdinalRange.latest(1))
    assert {(g.is_array, g.semantic) for g in groups} == {(True, AS.NONE)}
    values = values_of(groups, "usd-ancestor-types")
    names = {p: [paths.token_to_string(t) for t in v] for p, v in values.items()}
    assert names == {"/A": ["Xformable", "Imageable"], "/B": [], "/C": ["A"]}


# ---------------------------------------------------------------- derived built-ins


TREE = ["/W", "/W/A", "/W/B", "/W/A/C", "/V"]


@pytest.fixture
def tree(stage, make_query, write_sealed) -> ovstage.Query:
    """Prims /W, /W/A, /W/B, /W/A/C, /V, each holding "t", sealed at 1."""
    query = make_query(TREE)
    write_sealed(query, "t", 1, np.arange(5, dtype=F32))
    return query


def test_usd_path_is_each_prims_path_id(stage, tree, paths) -> None:
    values = latest(stage, tree, "usd-path", 1)
    assert values == {p: paths.intern_path(p) for p in TREE}


def test_usd_parent_is_the_parent_path_id_and_top_level_prims_have_no_row(
    stage, tree, paths
) -> None:
    values = latest(stage, tree, "usd-parent", 1)
    assert values == {
        "/W/A": paths.intern_path("/W"),
        "/W/B": paths.intern_path("/W"),
        "/W/A/C": paths.intern_path("/W/A"),
    }


def test_usd_children_lists_held_children_sorted_by_id(stage, tree, paths) -> None:
    groups = read_groups(stage, tree, ["usd-children"], OrdinalRange.latest(1))
    assert {g.is_array for g in groups} == {True}
    values = values_of(groups, "usd-children")
    expected_w = sorted([paths.intern_path("/W/A"), paths.intern_path("/W/B")])
    assert values == {"/W": expected_w, "/W/A": [paths.intern_path("/W/A/C")]}


def test_derived_values_only_for_prims_the_stage_holds(stage, tree, make_query, paths) -> None:
    query = make_query(["/W", "/Nowhere", "/W/A/Ghost"])
    assert latest(stage, query, "usd-path", 1) == {"/W": paths.intern_path("/W")}
    assert latest(stage, query, "usd-parent", 1) == {}


def test_a_parent_not_held_by_the_stage_still_has_a_parent_row(
    stage, make_query, write_sealed, paths
) -> None:
    # Hierarchy comes from path components: /X/Y's parent is /X even if /X holds nothing.
    query = make_query(["/X/Y"])
    write_sealed(query, "t", 1, np.ones(1, F32))
    assert latest(stage, query, "usd-parent", 1) == {"/X/Y": paths.intern_path("/X")}
    assert latest(stage, make_query(["/X"]), "usd-children", 1) == {}


def test_derived_built_ins_are_not_floor_gated(stage, make_query, paths) -> None:
    query = make_query(["/U"])
    stage.write_attribute(query, "t", 1, np.ones(1, F32), is_array=False).wait()
    # Not sealed: "t" itself is refused, the derived usd-path is served.
    with (
        stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read,
        pytest.raises(ovstage.OvstageError) as info,
    ):
        read.wait()
    assert info.value.code == ErrorCode.WRITE_FLOOR_VIOLATION
    assert latest(stage, query, "usd-path", 1) == {"/U": paths.intern_path("/U")}


@pytest.mark.parametrize("name", ["usd-path", "usd-parent", "usd-children"])
def test_range_reads_of_derived_built_ins_return_zero_groups(stage, tree, name) -> None:
    assert read_groups(stage, tree, [name], OrdinalRange.between(0, 1)) == []
    assert read_groups(stage, tree, [name], OrdinalRange.between(1, 100)) == []


def test_derived_and_recorded_attributes_in_one_read(stage, tree, paths) -> None:
    groups = read_groups(stage, tree, ["t", "usd-path"], OrdinalRange.latest(1))
    assert values_of(groups, "t") == dict(zip(TREE, [0.0, 1.0, 2.0, 3.0, 4.0], strict=True))
    assert values_of(groups, "usd-path") == {p: paths.intern_path(p) for p in TREE}


def test_whole_prim_delete_leaves_the_derived_hierarchy(stage, tree, make_query, paths) -> None:
    stage.delete_attributes(make_query(["/W/B"]), [], 2).wait()
    stage.advance_write_floor(2).wait()
    assert prim_paths_held(stage, tree, 2) == sorted(p for p in TREE if p != "/W/B")
    children = latest(stage, tree, "usd-children", 2)
    assert children["/W"] == [paths.intern_path("/W/A")]


@pytest.mark.parametrize("name", ["usd-path", "usd-parent", "usd-children", "usd-active"])
def test_writing_a_derived_built_in_is_not_supported(stage, tree, name) -> None:
    op = stage.write_attribute(tree, name, 2, np.zeros(5, U64), is_array=False)
    assert_rejected(op, ErrorCode.NOT_SUPPORTED, name)
    batch = stage.write_attributes(
        tree,
        [WriteDesc("t", np.full(5, 9, F32), False), WriteDesc(name, np.zeros(5, U64), False)],
        2,
    )
    assert_rejected(batch, ErrorCode.NOT_SUPPORTED, name)
    stage.advance_write_floor(2).wait()
    assert latest(stage, tree, "t", 2) == dict(zip(TREE, [0.0, 1.0, 2.0, 3.0, 4.0], strict=True))


@pytest.mark.parametrize("name", ["usd-path", "usd-parent", "usd-children", "usd-active"])
def test_deleting_a_derived_built_in_is_not_supported(stage, tree, name, paths) -> None:
    assert_rejected(stage.delete_attributes(tree, [name], 2), ErrorCode.NOT_SUPPORTED, name)
    assert_rejected(stage.delete_attributes(tree, ["t", name], 2), ErrorCode.NOT_SUPPORTED)
    stage.advance_write_floor(2).wait()
    assert latest(stage, tree, "usd-path", 2) == {p: paths.intern_path(p) for p in TREE}
    assert len(latest(stage, tree, "t", 2)) == 5


@pytest.mark.parametrize(
    "ordinal_range", [OrdinalRange.latest(1), OrdinalRange.between(1, 1)], ids=["latest", "range"]
)
def test_reading_usd_active_is_not_supported(stage, tree, ordinal_range) -> None:
    read = stage.read_attributes(tree, ["t", "usd-active"], ordinal_range)
    with read:
        with pytest.raises(ovstage.OvstageError) as info:
            read.wait()
        assert info.value.code == ErrorCode.NOT_SUPPORTED
