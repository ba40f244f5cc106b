"""Filter queries: ``Stage.query`` with ``Filter``/``Predicate``/``FilterOp``, attribute discovery,
``QueryResult``.

The scene is client-authored: ``usd-prim-type`` is written as one uint64 token id per prim,
``usd-schemas`` as uint64 token-id arrays. Matched prims are listed by reading the derived
``usd-path`` through the query (match order is implementation-defined, so lists are sorted).
Beyond the reference, IN/LT/LE/GT/GE work on one-lane numeric user attributes (values are
strings compared numerically) and IN/PREFIX/LT.. on TOKEN_ID attributes (by token string).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import ovstage
import pytest
from ovstage import AttributeSemantic, ErrorCode, Filter, FilterOp, OrdinalRange, OvstageError
from ovstage import Predicate as P
from ovstage._abi import OvxString, PredicateRaw
from readback import assert_rejected, latest

U64 = np.uint64

# path: (prim type, applied schemas)
SCENE = {
    "/World": ("Xform", []),
    "/World/Robot": ("Xform", ["PhysicsArticulationRootAPI"]),
    "/World/Robot/Base": ("Mesh", ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"]),
    "/World/Robot/Arm": ("Mesh", ["PhysicsRigidBodyAPI"]),
    "/World/Robot/Arm/Gripper": ("Mesh", ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"]),
    "/World/Table": ("Mesh", ["PhysicsCollisionAPI"]),
    "/World/Light": ("SphereLight", []),
    "/Worldwide": ("Xform", []),
}
ALL = sorted(SCENE)
MASS = {"/World/Robot/Base": 12.5, "/World/Robot/Arm": 3.0, "/World/Robot/Arm/Gripper": 0.75}
SCENE_ATTRS = ["mass", "usd-prim-type", "usd-schemas"]


def matched_paths(stage: ovstage.Stage, query: ovstage.Query, ordinal: int = 1) -> list[str]:
    """The query's prims (sorted), from the derived ``usd-path`` read through it."""
    dictionary = ovstage.PathDictionary(stage)
    ids = latest(stage, query, "usd-path", ordinal)
    for path, path_id in ids.items():
        assert dictionary.path_to_string(path_id) == path
    return sorted(ids)


def run(
    stage: ovstage.Stage,
    filter: Filter | None,
    attrs: Sequence[int | str] | None = None,
    ordinal: int = 1,
) -> tuple[list[str], list[str]]:
    """Evaluate a query: ``(matched prim paths, discovered attribute names)``, both sorted."""
    dictionary = ovstage.PathDictionary(stage)
    with stage.query(filter, attrs) as query:
        result = query.result()
        assert result.all_handle == query.handle
        paths = matched_paths(stage, query, ordinal)
        assert result.total_prim_count == len(paths)
        names = sorted(dictionary.token_to_string(t) for t in result.attributes)
        assert len(names) == len(result.attributes)
        return paths, names


def where(*predicates: P) -> Filter:
    return Filter(list(predicates))


@pytest.fixture
def scene(stage, paths, make_query, write_sealed) -> ovstage.Stage:
    """The SCENE prims with usd-prim-type, usd-schemas, and mass on the rigid bodies (ordinal 1,
    sealed)."""
    prims = make_query(list(SCENE))
    types = np.array([paths.intern_token(t) for t, _ in SCENE.values()], dtype=U64)
    schemas = [np.array([paths.intern_token(s) for s in ss], dtype=U64) for _, ss in SCENE.values()]
    stage.write_attribute(prims, "usd-prim-type", 1, types, is_array=False).wait()
    stage.write_attribute(prims, "usd-schemas", 1, schemas, is_array=True).wait()
    bodies = make_query(list(MASS))
    write_sealed(bodies, "mass", 1, np.array(list(MASS.values()), dtype=np.float32))
    return stage


# ---------------------------------------------------------------- the built-in support matrix


@pytest.mark.parametrize("filter", [None, Filter([])], ids=["None", "[]"])
def test_no_predicate_matches_every_held_prim(scene, filter) -> None:
    assert run(scene, filter) == (ALL, SCENE_ATTRS)


def test_usd_path_in_matches_the_listed_prims_only(scene) -> None:
    found, _ = run(scene, where(P("usd-path", FilterOp.IN, ["/World/Table", "/World/Nope"])))
    assert found == ["/World/Table"]


def test_usd_path_in_values_are_alternatives(scene) -> None:
    found, _ = run(scene, where(P("usd-path", FilterOp.IN, ["/World/Light", "/Worldwide"])))
    assert found == ["/World/Light", "/Worldwide"]


def test_usd_path_prefix_is_a_byte_prefix(scene) -> None:
    found, _ = run(scene, where(P("usd-path", FilterOp.PREFIX, ["/World"])))
    assert found == ALL  # "/World" also matches "/Worldwide"


def test_usd_path_prefix_with_a_trailing_slash_means_strictly_under(scene) -> None:
    found, _ = run(scene, where(P("usd-path", FilterOp.PREFIX, ["/World/"])))
    assert found == [p for p in ALL if p.startswith("/World/")]
    assert "/World" not in found
    assert "/Worldwide" not in found


def test_usd_path_prefix_of_a_group_matches_the_group_and_its_descendants(scene) -> None:
    found, _ = run(scene, where(P("usd-path", FilterOp.PREFIX, ["/World/Robot/Arm"])))
    assert found == ["/World/Robot/Arm", "/World/Robot/Arm/Gripper"]


def test_usd_path_prefix_values_are_alternatives(scene) -> None:
    found, _ = run(scene, where(P("usd-path", FilterOp.PREFIX, ["/World/Robot/Arm", "/World/T"])))
    assert found == ["/World/Robot/Arm", "/World/Robot/Arm/Gripper", "/World/Table"]


def test_usd_parent_in_matches_the_children_of_the_listed_prims(scene) -> None:
    found, _ = run(scene, where(P("usd-parent", FilterOp.IN, ["/World/Robot"])))
    assert found == ["/World/Robot/Arm", "/World/Robot/Base"]


def test_usd_parent_in_values_are_alternatives(scene) -> None:
    found, _ = run(scene, where(P("usd-parent", FilterOp.IN, ["/World/Robot", "/World/Robot/Arm"])))
    assert found == ["/World/Robot/Arm", "/World/Robot/Arm/Gripper", "/World/Robot/Base"]


def test_usd_children_contains_matches_the_parents_of_the_listed_prims(scene) -> None:
    found, _ = run(scene, where(P("usd-children", FilterOp.CONTAINS, ["/World/Robot/Arm/Gripper"])))
    assert found == ["/World/Robot/Arm"]


def test_usd_children_contains_values_are_alternatives(scene) -> None:
    found, _ = run(
        scene, where(P("usd-children", FilterOp.CONTAINS, ["/World/Robot", "/World/Robot/Base"]))
    )
    assert found == ["/World", "/World/Robot"]


def test_usd_prim_type_in_matches_by_type_name(scene) -> None:
    found, _ = run(scene, where(P("usd-prim-type", FilterOp.IN, ["Mesh"])))
    assert found == sorted(p for p, (t, _) in SCENE.items() if t == "Mesh")


def test_usd_prim_type_in_values_are_alternatives(scene) -> None:
    found, _ = run(scene, where(P("usd-prim-type", FilterOp.IN, ["SphereLight", "Xform"])))
    assert found == sorted(p for p, (t, _) in SCENE.items() if t != "Mesh")


def test_usd_prim_type_in_an_unknown_type_matches_nothing(scene) -> None:
    assert run(scene, where(P("usd-prim-type", FilterOp.IN, ["NoSuchType"]))) == ([], [])


def test_usd_schemas_contains_matches_applied_schemas(scene) -> None:
    found, _ = run(scene, where(P("usd-schemas", FilterOp.CONTAINS, ["PhysicsRigidBodyAPI"])))
    assert found == sorted(MASS)


def test_usd_schemas_contains_values_are_alternatives(scene) -> None:
    found, _ = run(
        scene,
        where(
            P(
                "usd-schemas",
                FilterOp.CONTAINS,
                ["PhysicsArticulationRootAPI", "PhysicsCollisionAPI"],
            )
        ),
    )
    assert found == [
        "/World/Robot",
        "/World/Robot/Arm/Gripper",
        "/World/Robot/Base",
        "/World/Table",
    ]


def test_has_matches_the_prims_carrying_the_attribute(scene) -> None:
    found, names = run(scene, where(P("mass", FilterOp.HAS)))
    assert found == sorted(MASS)
    assert names == SCENE_ATTRS


def test_has_ignores_its_values(scene) -> None:
    found, _ = run(scene, where(P("mass", FilterOp.HAS, ["whatever", "1"])))
    assert found == sorted(MASS)


def test_has_on_an_attribute_nobody_has_matches_nothing(scene) -> None:
    assert run(scene, where(P("never-written", FilterOp.HAS))) == ([], [])


def test_has_usd_path_matches_every_prim(scene) -> None:
    assert run(scene, where(P("usd-path", FilterOp.HAS)))[0] == ALL


def test_has_usd_parent_matches_every_prim_below_the_top_level(scene) -> None:
    found, _ = run(scene, where(P("usd-parent", FilterOp.HAS)))
    assert found == [p for p in ALL if p.count("/") > 1]


def test_has_usd_children_matches_the_prims_with_children(scene) -> None:
    found, _ = run(scene, where(P("usd-children", FilterOp.HAS)))
    assert found == ["/World", "/World/Robot", "/World/Robot/Arm"]


def test_predicates_are_anded(scene) -> None:
    found, _ = run(
        scene,
        where(
            P("usd-prim-type", FilterOp.IN, ["Mesh"]),
            P("usd-schemas", FilterOp.CONTAINS, ["PhysicsCollisionAPI"]),
            P("usd-path", FilterOp.PREFIX, ["/World/Robot/"]),
        ),
    )
    assert found == ["/World/Robot/Arm/Gripper", "/World/Robot/Base"]


def test_contradictory_predicates_match_nothing(scene) -> None:
    contradiction = where(
        P("usd-prim-type", FilterOp.IN, ["Xform"]), P("usd-prim-type", FilterOp.IN, ["Mesh"])
    )
    assert run(scene, contradiction) == ([], [])


def test_predicate_attribute_may_be_a_token(scene, paths) -> None:
    found, _ = run(scene, where(P(paths.intern_token("usd-path"), FilterOp.IN, ["/World"])))
    assert found == ["/World"]


def test_a_user_comparison_combines_with_built_ins(scene) -> None:
    found, _ = run(
        scene,
        where(
            P("mass", FilterOp.GT, ["1"]),
            P("usd-schemas", FilterOp.CONTAINS, ["PhysicsCollisionAPI"]),
        ),
    )
    assert found == ["/World/Robot/Base"]


# ---------------------------------------------------------------- rejections at enqueue


@pytest.mark.parametrize("op", list(FilterOp))
def test_usd_active_is_not_supported_at_enqueue(scene, op) -> None:
    values = [] if op == FilterOp.HAS else ["1"]
    query = scene.query(where(P("usd-active", op, values)))
    assert query.handle == 0
    assert_rejected(query.op, ErrorCode.NOT_SUPPORTED, "usd-active")
    with pytest.raises(OvstageError) as info:
        query.result()
    assert info.value.code == ErrorCode.NOT_SUPPORTED
    with query:  # nothing to release
        pass


def test_usd_active_anywhere_in_the_filter_rejects_the_query(scene) -> None:
    query = scene.query(where(P("usd-path", FilterOp.HAS), P("usd-active", FilterOp.IN, ["1"])))
    assert_rejected(query.op, ErrorCode.NOT_SUPPORTED, "usd-active")


UNSUPPORTED_BUILT_IN_PAIRS = [
    ("usd-path", op) for op in (FilterOp.CONTAINS, FilterOp.LT, FilterOp.LE, FilterOp.GE)
] + [
    ("usd-parent", op) for op in (FilterOp.CONTAINS, FilterOp.PREFIX, FilterOp.LT, FilterOp.GE)
] + [
    ("usd-children", op) for op in (FilterOp.IN, FilterOp.PREFIX, FilterOp.GT)
] + [
    ("usd-prim-type", FilterOp.CONTAINS)
] + [
    ("usd-schemas", op) for op in (FilterOp.IN, FilterOp.PREFIX, FilterOp.LE)
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "op"),
    UNSUPPORTED_BUILT_IN_PAIRS,
    ids=[f"{n}-{o.name}" for n, o in UNSUPPORTED_BUILT_IN_PAIRS],
)
def test_unsupported_built_in_operator_is_not_supported_at_enqueue(scene, name, op) -> None:
    query = scene.query(where(P(name, op, ["/World"])))
    assert query.handle == 0
    assert_rejected(query.op, ErrorCode.NOT_SUPPORTED, op.name, name)


def test_contains_on_a_user_attribute_is_not_supported_at_enqueue(scene) -> None:
    query = scene.query(where(P("mass", FilterOp.CONTAINS, ["3"])))
    assert_rejected(query.op, ErrorCode.NOT_SUPPORTED, "CONTAINS", "mass")


@pytest.mark.parametrize("op", [FilterOp.LT, FilterOp.LE, FilterOp.GT, FilterOp.GE])
@pytest.mark.parametrize("values", [[], ["1", "2"]], ids=["no value", "two values"])
def test_comparison_needs_exactly_one_value(scene, op, values) -> None:
    query = scene.query(where(P("mass", op, values)))
    assert_rejected(query.op, ErrorCode.INVALID_ARGUMENT, op.name, "exactly one value")


@pytest.mark.parametrize(
    ("name", "op"),
    [("usd-path", FilterOp.IN), ("usd-path", FilterOp.PREFIX), ("mass", FilterOp.IN)],
)
def test_in_and_prefix_need_at_least_one_value(scene, name, op) -> None:
    query = scene.query(where(P(name, op, [])))
    assert_rejected(query.op, ErrorCode.INVALID_ARGUMENT, op.name)


def test_a_value_with_nul_is_rejected_invalid_argument(scene) -> None:
    query = scene.query(where(P("usd-path", FilterOp.IN, ["/World\x00/Robot"])))
    assert query.handle == 0
    assert_rejected(query.op, ErrorCode.INVALID_ARGUMENT, "NUL")


@pytest.mark.parametrize(
    "args",
    [(where(P("", FilterOp.HAS)), None), (None, [""])],
    ids=["predicate attribute", "attrs"],
)
def test_an_empty_attribute_name_is_rejected_invalid_argument(scene, args) -> None:
    query = scene.query(*args)
    assert query.handle == 0
    assert_rejected(query.op, ErrorCode.INVALID_ARGUMENT, "non-empty")


@pytest.mark.parametrize(
    "args",
    [(where(P("a\x00b", FilterOp.HAS)), None), (None, ["a\x00b"])],
    ids=["predicate attribute", "attrs"],
)
def test_an_attribute_name_with_nul_is_rejected_invalid_argument(scene, args) -> None:
    query = scene.query(*args)
    assert query.handle == 0
    assert_rejected(query.op, ErrorCode.INVALID_ARGUMENT, "NUL")


@pytest.mark.parametrize(
    "args", [(where(P(0, FilterOp.HAS)), None), (None, [0])], ids=["predicate attribute", "attrs"]
)
def test_an_unknown_attribute_token_is_rejected_invalid_argument(scene, args) -> None:
    assert_rejected(scene.query(*args).op, ErrorCode.INVALID_ARGUMENT, "token 0")


# ---------------------------------------------------------------- Python-side guards


def test_filter_must_be_a_filter(scene) -> None:
    with pytest.raises(TypeError, match="filter"):
        scene.query([P("mass", FilterOp.HAS)])  # type: ignore[arg-type]


@pytest.mark.parametrize("attrs", ["mass", 7])
def test_attrs_must_be_a_sequence(scene, attrs) -> None:
    with pytest.raises(TypeError, match="attrs"):
        scene.query(None, attrs)


def test_attrs_entries_must_be_tokens_or_names(scene) -> None:
    with pytest.raises(TypeError, match=r"attrs\[0\]"):
        scene.query(None, [1.5])


def test_filter_entries_must_be_predicates() -> None:
    with pytest.raises(TypeError, match=r"predicates\[1\]"):
        Filter([P("mass", FilterOp.HAS), ("mass", FilterOp.HAS)]).to_c()  # type: ignore[list-item]


def test_predicate_values_must_not_be_a_single_string() -> None:
    with pytest.raises(TypeError, match="values"):
        Filter([P("usd-path", FilterOp.IN, "/World")]).to_c()


def test_predicate_op_must_be_a_declared_member() -> None:
    with pytest.raises(ValueError, match="op"):
        Filter([P("mass", 8, ["1"])]).to_c()


def test_predicate_attribute_must_be_a_token_or_name() -> None:
    with pytest.raises(TypeError, match="attribute"):
        Filter([P(1.5, FilterOp.HAS)]).to_c()  # type: ignore[arg-type]


def test_predicate_values_are_converted_to_strings() -> None:
    raw = Filter([P("mass", FilterOp.GT, [1.5]), P("mass", 6, (2,))]).to_c()
    assert raw.count == 2
    predicates = (PredicateRaw * 2).from_address(raw.predicates)
    assert [p.op for p in predicates] == [FilterOp.GT, FilterOp.GT]
    assert predicates[0].attribute.string.text() == "mass"
    values = [(OvxString * 1).from_address(p.values)[0].text() for p in predicates]
    assert values == ["1.5", "2"]


def test_query_after_destroy_raises_invalid_handle(stage) -> None:
    stage.destroy()
    with pytest.raises(OvstageError) as info:
        stage.query()
    assert info.value.code == ErrorCode.INVALID_HANDLE


# ---------------------------------------------------------------- numeric and token comparisons

TYPED_PRIMS = ["/T/A", "/T/B", "/T/C", "/T/D"]
TYPED = {
    "i32": np.array([-5, 0, 5, 10], np.int32),
    "u8": np.array([1, 2, 3, 250], np.uint8),
    "i64": np.array([-(2**40), 7, 2**40, 0], np.int64),
    "f64": np.array([0.5, 1.5, 2.5, 3.5], np.float64),
    "f32": np.array([-1.25, 0.0, 1.25, 2.5], np.float32),
    "f16": np.array([1, 2, 3, 4], np.float16),
    "flag": np.array([True, False, True, False]),
}
TOKENS = ["red", "green", "blue", "reddish"]


@pytest.fixture
def typed(stage, paths, make_query) -> ovstage.Stage:
    """TYPED_PRIMS with one column per TYPED entry, a TOKEN_ID column "color", a float32x3
    "vec", a ragged "rows" and a uint64 "id" (all at ordinal 1, sealed)."""
    prims = make_query(TYPED_PRIMS)
    token_ids = np.array([paths.intern_token(t) for t in TOKENS], dtype=U64)
    writes = [
        *(ovstage.WriteDesc(name, values, False) for name, values in TYPED.items()),
        ovstage.WriteDesc("color", token_ids, False, semantic=AttributeSemantic.TOKEN_ID),
        ovstage.WriteDesc("vec", np.arange(12, dtype=np.float32).reshape(4, 3), False),
        ovstage.WriteDesc("rows", [np.zeros(n, np.float32) for n in (1, 2, 0, 3)], True),
        ovstage.WriteDesc("id", np.arange(4, dtype=U64), False),
    ]
    stage.write_attributes(prims, writes, 1).wait()
    stage.advance_write_floor(1).wait()
    return stage


def prims_where(values: np.ndarray, keep) -> list[str]:
    return [p for p, v in zip(TYPED_PRIMS, values.tolist(), strict=True) if keep(v)]


COMPARISONS = [
    ("i32", FilterOp.GT, "0", lambda v: v > 0),
    ("i32", FilterOp.GE, "0", lambda v: v >= 0),
    ("i32", FilterOp.LT, "0", lambda v: v < 0),
    ("i32", FilterOp.LE, "-5", lambda v: v <= -5),
    ("i32", FilterOp.GT, "-1.5", lambda v: v > -1.5),
    ("i32", FilterOp.LT, "5.0001", lambda v: v < 5.0001),
    ("u8", FilterOp.GT, "2", lambda v: v > 2),
    ("u8", FilterOp.GT, "-1", lambda v: True),
    ("u8", FilterOp.LE, "250", lambda v: True),
    ("u8", FilterOp.GE, "251", lambda v: False),
    ("i64", FilterOp.GT, "1099511627775", lambda v: v > 2**40 - 1),
    ("i64", FilterOp.LT, "-1099511627775", lambda v: v < -(2**40) + 1),
    ("f64", FilterOp.LT, "2", lambda v: v < 2),
    ("f64", FilterOp.GE, "2.5", lambda v: v >= 2.5),
    ("f64", FilterOp.GT, "1e0", lambda v: v > 1),
    ("f32", FilterOp.LE, "0", lambda v: v <= 0),
    ("f32", FilterOp.GT, "1.25", lambda v: v > 1.25),
    ("f16", FilterOp.GT, "2", lambda v: v > 2),
    ("f16", FilterOp.LE, "3", lambda v: v <= 3),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "op", "value", "keep"),
    COMPARISONS,
    ids=[f"{n} {o.name} {v}" for n, o, v, _ in COMPARISONS],
)
def test_numeric_comparison_on_a_user_attribute(typed, name, op, value, keep) -> None:
    found, _ = run(typed, where(P(name, op, [value])))
    assert found == prims_where(TYPED[name], keep)


NUMERIC_IN = [
    ("i32", ["5", "10"], ["/T/C", "/T/D"]),
    ("i32", ["5", "6", "-5"], ["/T/A", "/T/C"]),
    ("i32", ["5.0"], ["/T/C"]),
    ("i32", ["4.5"], []),
    ("f64", ["1.5"], ["/T/B"]),
    ("f64", ["1.50", "3.5e0"], ["/T/B", "/T/D"]),
    ("u8", ["250"], ["/T/D"]),
    ("flag", ["1"], ["/T/A", "/T/C"]),
    ("flag", ["0"], ["/T/B", "/T/D"]),
    ("id", ["0", "3"], ["/T/A", "/T/D"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "values", "expected"), NUMERIC_IN, ids=[f"{n} IN {v}" for n, v, _ in NUMERIC_IN]
)
def test_numeric_in_compares_numerically(typed, name, values, expected) -> None:
    found, _ = run(typed, where(P(name, FilterOp.IN, values)))
    assert found == expected


TOKEN_FILTERS = [
    (FilterOp.IN, ["red"], ["/T/A"]),
    (FilterOp.IN, ["blue", "green", "purple"], ["/T/B", "/T/C"]),
    (FilterOp.PREFIX, ["red"], ["/T/A", "/T/D"]),
    (FilterOp.PREFIX, ["gr", "bl"], ["/T/B", "/T/C"]),
    (FilterOp.LT, ["h"], ["/T/B", "/T/C"]),
    (FilterOp.LE, ["green"], ["/T/B", "/T/C"]),
    (FilterOp.GT, ["green"], ["/T/A", "/T/D"]),
    (FilterOp.GE, ["red"], ["/T/A", "/T/D"]),
    (FilterOp.GT, ["red"], ["/T/D"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("op", "values", "expected"),
    TOKEN_FILTERS,
    ids=[f"{o.name} {v}" for o, v, _ in TOKEN_FILTERS],
)
def test_token_attribute_filters_compare_token_strings(typed, op, values, expected) -> None:
    found, _ = run(typed, where(P("color", op, values)))
    assert found == expected


PRIM_TYPE_COMPARISONS = [
    (FilterOp.PREFIX, ["Sphere", "Xf"], lambda t: t.startswith(("Sphere", "Xf"))),
    (FilterOp.LT, ["N"], lambda t: t < "N"),
    (FilterOp.GE, ["Xform"], lambda t: t >= "Xform"),
]


@pytest.mark.parametrize(
    ("op", "values", "keep"), PRIM_TYPE_COMPARISONS, ids=["PREFIX", "LT", "GE"]
)
def test_usd_prim_type_compares_as_a_token_attribute(scene, op, values, keep) -> None:
    """Beyond the reference: usd-prim-type holds token ids, so token comparisons apply."""
    found, _ = run(scene, where(P("usd-prim-type", op, values)))
    assert found == sorted(p for p, (t, _) in SCENE.items() if keep(t))


def test_comparison_on_an_attribute_nobody_has_matches_nothing(typed) -> None:
    assert run(typed, where(P("never-written", FilterOp.GT, ["0"]))) == ([], [])


def failed_query_message(stage: ovstage.Stage, filter: Filter) -> str:
    """The OP_FAILED message of a query accepted at enqueue that fails when it executes."""
    with stage.query(filter) as query:
        assert query.op.ok
        with pytest.raises(OvstageError) as waited:
            query.wait()
        assert waited.value.code == ErrorCode.OP_FAILED
        with pytest.raises(OvstageError) as fetched:
            query.result()
        assert fetched.value.code == ErrorCode.OP_FAILED
        assert waited.value.message in fetched.value.message
        return waited.value.message


@pytest.mark.parametrize(
    ("name", "value"), [("i32", "abc"), ("f64", "1.5x"), ("flag", "true"), ("u8", "")]
)
def test_a_non_numeric_value_on_a_numeric_attribute_fails_the_query(typed, name, value) -> None:
    message = failed_query_message(typed, where(P(name, FilterOp.GT, [value])))
    assert "not a number" in message
    assert name in message


@pytest.mark.parametrize(
    ("name", "layout"), [("vec", "float32x3"), ("rows", "is_array=true")], ids=["lanes", "array"]
)
def test_comparison_on_a_multi_lane_or_array_attribute_fails_the_query(typed, name, layout) -> None:
    message = failed_query_message(typed, where(P(name, FilterOp.LT, ["1"])))
    assert name in message
    assert layout in message


def test_prefix_on_a_numeric_attribute_fails_the_query(typed) -> None:
    message = failed_query_message(typed, where(P("i32", FilterOp.PREFIX, ["1"])))
    assert "PREFIX" in message
    assert "i32" in message


def test_prefix_on_a_numeric_attribute_explains_that_it_needs_tokens(typed) -> None:
    message = failed_query_message(typed, where(P("i32", FilterOp.PREFIX, ["1"])))
    assert "one-lane numeric" not in message


def test_a_failed_query_fails_writes_through_it(typed) -> None:
    with typed.query(where(P("i32", FilterOp.GT, ["abc"]))) as query:
        op = typed.write_attribute(query, "i32", 6, np.array([1], np.int32), is_array=False)
        with pytest.raises(OvstageError) as info:
            op.wait()
        assert info.value.code == ErrorCode.OP_FAILED
        assert "not a number" in info.value.message


def test_a_failed_query_fails_reads_through_it(typed) -> None:
    with (
        typed.query(where(P("i32", FilterOp.GT, ["abc"]))) as query,
        typed.read_attributes(query, ["i32"], OrdinalRange.latest(1)) as read,
    ):
        with pytest.raises(OvstageError) as info:
            read.wait()
        assert info.value.code == ErrorCode.OP_FAILED


# ---------------------------------------------------------------- attribute discovery


def test_unscoped_discovery_reports_exactly_the_written_attribute(stage, make_query) -> None:
    prims = make_query(["/D/A", "/D/B", "/D/C"])
    stage.write_attribute(prims, "temperature", 1, np.ones(3, np.float32), is_array=False).wait()
    for filter in (None, where(P("temperature", FilterOp.HAS))):
        found, names = run(stage, filter)
        assert found == ["/D/A", "/D/B", "/D/C"]
        assert names == ["temperature"]  # derived built-ins are never reported


def test_unscoped_discovery_reports_the_client_written_scene_columns(scene) -> None:
    _, names = run(scene, where(P("usd-path", FilterOp.IN, ["/World/Robot/Arm"])))
    assert names == SCENE_ATTRS
    _, names = run(scene, where(P("usd-path", FilterOp.IN, ["/World/Table"])))
    assert names == ["usd-prim-type", "usd-schemas"]


def test_discovery_covers_only_the_matched_prims(stage, make_query, write_sealed) -> None:
    write_sealed(make_query(["/D/A"]), "only_a", 1, np.ones(1, np.float32))
    write_sealed(make_query(["/D/B"]), "only_b", 2, np.ones(1, np.int32))
    assert run(stage, where(P("usd-path", FilterOp.IN, ["/D/A"])), ordinal=2)[1] == ["only_a"]
    assert run(stage, where(P("usd-path", FilterOp.IN, ["/D/B"])), ordinal=2)[1] == ["only_b"]
    assert run(stage, None, ordinal=2)[1] == ["only_a", "only_b"]


def test_discovery_reports_each_attribute_once(stage, make_query) -> None:
    prims = make_query(["/D/A", "/D/B"])
    stage.write_attribute(prims, "x", 1, np.ones(2, np.float32), is_array=False).wait()
    with stage.query() as query:
        result = query.result()
    assert len(result.attributes) == len(set(result.attributes)) == 1


def test_attrs_scope_discovery_to_the_listed_attributes(scene, paths) -> None:
    _, names = run(scene, None, ["mass", "usd-schemas"])
    assert names == ["mass", "usd-schemas"]
    _, names = run(scene, None, [paths.intern_token("usd-prim-type")])
    assert names == ["usd-prim-type"]


def test_attrs_do_not_change_the_matched_prims(scene) -> None:
    found, names = run(scene, where(P("usd-prim-type", FilterOp.IN, ["Mesh"])), ["mass"])
    assert found == sorted(p for p, (t, _) in SCENE.items() if t == "Mesh")
    assert names == ["mass", "usd-prim-type"], "0.3.0: the predicate's attribute is listed too"


def test_empty_attrs_report_no_attribute(scene) -> None:
    found, names = run(scene, None, [])
    assert found == ALL
    assert names == []


def test_a_query_matching_nothing_reports_nothing(scene) -> None:
    with scene.query(where(P("usd-path", FilterOp.IN, ["/Nowhere"]))) as query:
        result = query.result()
        assert result.total_prim_count == 0
        assert result.attributes == []
        assert result.all_handle == query.handle
        assert latest(scene, query, "mass", 1) == {}


# ---------------------------------------------------------------- QueryResult and handles


def test_query_result_echoes_the_query_handle(scene) -> None:
    with scene.query(where(P("mass", FilterOp.HAS))) as query:
        assert query.handle != 0
        assert query.op is not None
        assert query.op.ok
        first = query.result()
        assert isinstance(first, ovstage.QueryResult)
        assert first.all_handle == query.handle == int(query)
        assert first.total_prim_count == len(MASS)
        assert scene.fetch_query_result(query) == first
        assert scene.fetch_query_result(query.handle) == first
        assert scene.fetch_query_result(query, timeout=0) == first


def test_path_list_query_reports_the_list_length(stage, paths) -> None:
    listed = ["/L/A", "/L/B", "/L/A", "/L/Never"]
    with (
        paths.create_path_list_from_strings(listed) as plist,
        stage.query_from_path_list(plist) as query,
    ):
        assert query.op is None
        result = query.result()
        assert result.total_prim_count == len(listed)
        assert result.all_handle == query.handle
        assert result.attributes == []


def test_path_list_query_discovers_the_attributes_of_its_prims(stage, paths) -> None:
    with (
        paths.create_path_list_from_strings(["/L/A", "/L/B"]) as plist,
        stage.query_from_path_list(plist) as query,
    ):
        stage.write_attribute(query, "x", 1, np.ones(2, np.float32), is_array=False).wait()
        result = query.result()
        assert result.total_prim_count == 2
        assert [paths.token_to_string(t) for t in result.attributes] == ["x"]


def test_a_released_query_raises_invalid_handle(scene) -> None:
    query = scene.query()
    query.release().wait()
    assert query.released
    for use in (query.result, query.release, lambda: scene.fetch_query_result(query)):
        with pytest.raises(OvstageError) as info:
            use()
        assert info.value.code == ErrorCode.INVALID_HANDLE


def test_a_released_raw_query_handle_is_unknown(scene) -> None:
    query = scene.query()
    handle = query.handle
    scene.release_query(query).wait()
    with pytest.raises(OvstageError) as info:
        scene.fetch_query_result(handle)
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_the_with_block_releases_the_query(scene) -> None:
    with scene.query() as query:
        pass
    assert query.released
    with pytest.raises(OvstageError) as info:
        query.result()
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_an_unknown_query_handle_raises_invalid_handle(scene) -> None:
    with pytest.raises(OvstageError) as info:
        scene.fetch_query_result(987654321)
    assert info.value.code == ErrorCode.INVALID_HANDLE


# ---------------------------------------------------------------- committed state and ordering


def test_a_query_sees_committed_but_unsealed_prims(stage, make_query) -> None:
    prims = make_query(["/U/A", "/U/B", "/U/C"])
    stage.write_attribute(prims, "u", 1, np.ones(3, np.float32), is_array=False).wait()
    for filter in (
        None,
        where(P("u", FilterOp.HAS)),
        where(P("usd-path", FilterOp.PREFIX, ["/U/"])),
        where(P("u", FilterOp.GE, ["1"])),
    ):
        with stage.query(filter) as query:
            result = query.result()
            assert result.total_prim_count == 3
            assert result.attributes == [ovstage.PathDictionary(stage).intern_token("u")]


def test_a_query_sees_an_unsealed_newer_value(stage, make_query, write_sealed) -> None:
    prims = make_query(["/U/A", "/U/B"])
    write_sealed(prims, "u", 1, np.array([1, 2], np.int32))
    stage.write_attribute(prims, "u", 2, np.array([20, 30], np.int32), is_array=False).wait()
    with stage.query(where(P("u", FilterOp.GT, ["10"]))) as query:
        assert query.result().total_prim_count == 2
        # The snapshot at 1 is the sealed values (ours: the unsealed change at 2 comes after).
        assert latest(stage, query, "u", 1) == {"/U/A": 1, "/U/B": 2}
    stage.advance_write_floor(2).wait()
    with stage.query(where(P("u", FilterOp.GT, ["10"]))) as query:
        assert latest(stage, query, "u", 2) == {"/U/A": 20, "/U/B": 30}


def test_an_unsealed_attribute_delete_leaves_has_queries(stage, make_query, write_sealed) -> None:
    write_sealed(make_query(["/U/A", "/U/B", "/U/C"]), "u", 1, np.ones(3, np.float32))
    stage.delete_attributes(make_query(["/U/B"]), ["u"], 2).wait()
    found, names = run(stage, where(P("u", FilterOp.HAS)))
    assert found == ["/U/A", "/U/C"]
    assert names == ["u"]
    assert run(stage, where(P("u", FilterOp.GE, ["0"])))[0] == ["/U/A", "/U/C"]
    # The prim itself stays.
    assert run(stage, where(P("usd-path", FilterOp.IN, ["/U/B"])))[0] == ["/U/B"]


def test_a_deleted_attribute_leaves_discovery(stage, make_query, write_sealed) -> None:
    prims = make_query(["/U/A", "/U/B"])
    write_sealed(prims, "keep", 1, np.ones(2, np.float32))
    write_sealed(prims, "drop", 2, np.ones(2, np.float32))
    stage.delete_attributes(prims, ["drop"], 3).wait()
    assert run(stage, None)[1] == ["keep"]


def test_a_whole_prim_delete_leaves_queries(stage, make_query, write_sealed) -> None:
    write_sealed(make_query(["/U/A", "/U/B"]), "u", 1, np.ones(2, np.float32))
    write_sealed(make_query(["/U/B"]), "only_b", 2, np.ones(1, np.float32))
    stage.delete_attributes(make_query(["/U/B"]), [], 3).wait()
    assert run(stage, None) == (["/U/A"], ["u"])
    assert run(stage, where(P("usd-path", FilterOp.IN, ["/U/B"]))) == ([], [])
    assert run(stage, where(P("only_b", FilterOp.HAS))) == ([], [])


def test_a_new_prim_appears_in_later_queries(stage, make_query) -> None:
    stage.write_attribute(
        make_query(["/U/A"]), "u", 1, np.ones(1, np.float32), is_array=False
    ).wait()
    assert run(stage, None)[0] == ["/U/A"]
    stage.write_attribute(
        make_query(["/U/B"]), "u", 1, np.ones(1, np.float32), is_array=False
    ).wait()
    assert run(stage, None)[0] == ["/U/A", "/U/B"]


def test_the_handle_is_usable_at_once_by_writes_and_reads(scene) -> None:
    query = scene.query(where(P("mass", FilterOp.HAS)))
    try:
        # No wait in between: the write and the read are ordered after the query (and the
        # read after the floor advance).
        write = scene.write_attribute(query, "mass", 2, np.full(3, 9, np.float32), is_array=False)
        seal = scene.advance_write_floor(2)
        assert latest(scene, query, "mass", 2) == dict.fromkeys(MASS, 9.0)
        write.wait()
        seal.wait()
    finally:
        query.release().wait()


def test_a_query_keeps_the_prims_it_matched(stage, make_query, write_sealed) -> None:
    write_sealed(make_query(["/U/A", "/U/B"]), "u", 1, np.array([1, 2], np.int32))
    with stage.query(where(P("u", FilterOp.HAS))) as query:
        query.wait()
        write_sealed(make_query(["/U/C"]), "u", 2, np.array([3], np.int32))
        assert query.result().total_prim_count == 2
        assert latest(stage, query, "u", 2) == {"/U/A": 1, "/U/B": 2}
    assert run(stage, where(P("u", FilterOp.HAS)), ordinal=2)[0] == ["/U/A", "/U/B", "/U/C"]


def test_a_filter_query_addresses_a_write_to_the_matched_prims(scene) -> None:
    with scene.query(where(P("usd-prim-type", FilterOp.IN, ["Mesh"]))) as meshes:
        count = meshes.result().total_prim_count
        scene.write_attribute(meshes, "visible", 2, np.ones(count, np.bool_), is_array=False).wait()
    scene.advance_write_floor(2).wait()
    found, _ = run(scene, where(P("visible", FilterOp.HAS)), ordinal=2)
    assert found == sorted(p for p, (t, _) in SCENE.items() if t == "Mesh")
