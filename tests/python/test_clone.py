"""Clone: ``Stage.clone`` / ``Stage.clone_async`` copy a prim's subtree (the prim, its held
descendants and their attribute values) to each target as one mutation at an ordinal (spec
§3.12, §5.5; invariant 20). The completion report (``CloneResult``, ``CloneOperation``,
``fetch_clone_result``) is tested in test_v03_clone.py.

Failures found while executing surface as ``OP_FAILED`` from ``wait()`` with the engine's
message ("does not exist", "already exists", the write floor, a merge conflict). Below an
absent target root, existing prims are merged into; a clone may have no target at all. Path
values inside the source subtree are rebased for RELATIONSHIP_PATH_ID and CONNECTION_PATH_ID
columns only. Clones widen existing columns: a read through a query built before the clone then
carries a data index map.
"""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from ovstage import AttributeSemantic, ErrorCode, Filter, FilterOp, OrdinalRange, OvstageError
from ovstage import Predicate as P
from readback import assert_rejected, latest, read_error, read_groups, values_of

U64 = np.uint64
F32 = np.float32

ROBOT = ["/World", "/World/A", "/World/A/Arm", "/World/A/Arm/Hand", "/World/Mat"]
MASS = dict(zip(ROBOT, [1.0, 2.0, 3.0, 4.0, 5.0], strict=True))
SUBTREE = ["/World/A", "/World/A/Arm", "/World/A/Arm/Hand"]


def under(target: str, path: str) -> str:
    """``path`` (inside /World/A) moved under ``target``."""
    return target + path[len("/World/A") :]


def held_paths(stage: ovstage.Stage, ordinal: int, prefix: str = "/") -> list[str]:
    """Every prim the stage holds whose path starts with ``prefix`` (sorted)."""
    with stage.query(Filter([P("usd-path", FilterOp.PREFIX, [prefix])])) as query:
        values = latest(stage, query, "usd-path", ordinal)
        assert query.result().total_prim_count == len(values)
        return sorted(values)


def values_at(stage: ovstage.Stage, prims: list[str], attribute: str, ordinal: int) -> dict:
    dictionary = ovstage.PathDictionary(stage)
    with (
        dictionary.create_path_list_from_strings(prims) as plist,
        stage.query_from_path_list(plist) as query,
    ):
        return latest(stage, query, attribute, ordinal)


def clone_failure(stage: ovstage.Stage, source: str, targets: list[str], ordinal: int) -> str:
    """The OP_FAILED message of a clone accepted at enqueue that fails when it executes."""
    op = stage.clone_async(source, targets, ordinal)
    assert op.ok
    assert op.op_id != 0
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.OP_FAILED
    return info.value.message


@pytest.fixture
def robot(stage, make_query, write_sealed) -> ovstage.Query:
    """ROBOT prims with "mass" (float32) and "size" (ragged int32 on the subtree), sealed at 1."""
    query = make_query(ROBOT)
    stage.write_attribute(
        query, "mass", 1, np.array(list(MASS.values()), F32), is_array=False
    ).wait()
    write_sealed(
        make_query(SUBTREE),
        "size",
        1,
        [np.arange(n, dtype=np.int32) for n in (1, 2, 3)],
        is_array=True,
    )
    return query


# ---------------------------------------------------------------- copying


def test_clone_copies_the_subtree_values_to_each_target(stage, robot) -> None:
    targets = ["/World/A_env0", "/World/A_env1"]
    assert stage.clone("/World/A", targets, 2) == ovstage.CloneResult(
        prims_cloned=6, target_count=2, source_prim_count=3, ordinal=2
    )
    stage.advance_write_floor(2).wait()
    for target in targets:
        clones = [under(target, p) for p in SUBTREE]
        assert values_at(stage, clones, "mass", 2) == {under(target, p): MASS[p] for p in SUBTREE}
        assert values_at(stage, clones, "size", 2) == {
            clones[0]: [0],
            clones[1]: [0, 1],
            clones[2]: [0, 1, 2],
        }


def test_clone_leaves_the_source_unchanged(stage, robot) -> None:
    stage.clone("/World/A", ["/World/B"], 2)
    stage.advance_write_floor(2).wait()
    assert latest(stage, robot, "mass", 2) == MASS


def test_clone_of_a_leaf_copies_just_that_prim(stage, robot) -> None:
    stage.clone("/World/A/Arm/Hand", ["/World/Hand2"], 2)
    stage.advance_write_floor(2).wait()
    assert held_paths(stage, 2, "/World/Hand2") == ["/World/Hand2"]
    assert values_at(stage, ["/World/Hand2"], "mass", 2) == {"/World/Hand2": 4.0}


def test_clone_creates_every_subtree_prim_under_each_target(stage, robot) -> None:
    stage.clone("/World/A", ["/World/A_env0", "/Envs/E1"], 2)
    stage.advance_write_floor(2).wait()
    assert held_paths(stage, 2) == sorted(
        [
            *ROBOT,
            *(under("/World/A_env0", p) for p in SUBTREE),
            *(under("/Envs/E1", p) for p in SUBTREE),
        ]
    )


def test_clone_async_returns_a_clone_operation(stage, robot) -> None:
    op = stage.clone_async("/World/A", ["/World/B"], 2)
    assert isinstance(op, ovstage.CloneOperation)
    assert isinstance(op, ovstage.Operation)
    assert op.ok
    assert op.op_id != 0
    assert op.wait() is op
    assert op.error_message() == ""


def test_clone_values_need_a_floor_advance_to_be_read(stage, robot) -> None:
    stage.clone("/World/A", ["/World/B"], 2)
    with (
        ovstage.PathDictionary(stage).create_path_list_from_strings(["/World/B"]) as plist,
        stage.query_from_path_list(plist) as query,
    ):
        assert read_error(stage, query, ["mass"], OrdinalRange.latest(2)) == (
            ErrorCode.WRITE_FLOOR_VIOLATION
        )
        stage.advance_write_floor(2).wait()
        assert latest(stage, query, "mass", 2) == {"/World/B": 2.0}


def test_clone_reads_the_committed_values_in_submission_order(stage, robot, make_query) -> None:
    hand = make_query(["/World/A/Arm/Hand"])
    stage.write_attribute(hand, "mass", 2, np.array([40], F32), is_array=False).wait()
    stage.clone("/World/A", ["/World/B"], 2)
    stage.write_attribute(hand, "mass", 2, np.array([400], F32), is_array=False).wait()
    stage.advance_write_floor(2).wait()
    assert values_at(stage, ["/World/B/Arm/Hand", "/World/A/Arm/Hand"], "mass", 2) == {
        "/World/B/Arm/Hand": 40.0,
        "/World/A/Arm/Hand": 400.0,
    }


def test_clones_are_independent_of_their_source(stage, robot, make_query) -> None:
    stage.clone("/World/A", ["/World/B"], 2)
    stage.write_attribute(
        make_query(["/World/B/Arm"]), "mass", 3, np.array([30], F32), is_array=False
    ).wait()
    stage.advance_write_floor(3).wait()
    assert values_at(stage, ["/World/A/Arm", "/World/B/Arm"], "mass", 3) == {
        "/World/A/Arm": 3.0,
        "/World/B/Arm": 30.0,
    }


def test_a_clone_can_be_cloned(stage, robot) -> None:
    stage.clone("/World/A", ["/World/B"], 2)
    stage.clone("/World/B", ["/World/C"], 3)
    stage.advance_write_floor(3).wait()
    assert values_at(stage, [under("/World/C", p) for p in SUBTREE], "mass", 3) == {
        under("/World/C", p): MASS[p] for p in SUBTREE
    }


def test_clone_keeps_the_semantic_and_layout(stage, make_query, paths) -> None:
    query = make_query(["/S/A"])
    writes = [
        ovstage.WriteDesc("color", np.array([[0.5, 0.25, 1.0]], F32), False,
                          semantic=AttributeSemantic.COLOR),
        ovstage.WriteDesc("kind", np.array([paths.intern_token("robot")], U64), False,
                          semantic=AttributeSemantic.TOKEN_ID),
    ]  # fmt: skip
    stage.write_attributes(query, writes, 1).wait()
    stage.clone("/S/A", ["/S/B"], 2)
    stage.advance_write_floor(2).wait()
    with (
        paths.create_path_list_from_strings(["/S/B"]) as plist,
        stage.query_from_path_list(plist) as clone,
    ):
        groups = read_groups(stage, clone, ["color", "kind"], OrdinalRange.latest(2))
    by_name = {g.attribute: g for g in groups}
    assert by_name["color"].values == {"/S/B": [0.5, 0.25, 1.0]}
    assert by_name["color"].dtypes == {"/S/B": (2, 32, 3)}
    assert by_name["color"].raw_semantic == AttributeSemantic.COLOR
    assert by_name["kind"].values == {"/S/B": paths.intern_token("robot")}
    assert by_name["kind"].raw_semantic == AttributeSemantic.TOKEN_ID


def test_clone_copies_descendants_below_a_missing_intermediate_prim(
    stage, make_query, write_sealed
) -> None:
    write_sealed(make_query(["/W/A", "/W/A/X/Y"]), "m", 1, np.array([1, 2], F32))
    stage.clone("/W/A", ["/T"], 2)
    stage.advance_write_floor(2).wait()
    assert held_paths(stage, 2, "/T") == ["/T", "/T/X/Y"]


# ---------------------------------------------------------------- failures while executing


def test_a_missing_source_fails_does_not_exist(stage, robot) -> None:
    message = clone_failure(stage, "/World/Nope", ["/World/B"], 2)
    assert "/World/Nope" in message
    assert "does not exist" in message
    stage.advance_write_floor(2).wait()
    assert held_paths(stage, 2) == sorted(ROBOT)


def test_blocking_clone_raises_the_failure(stage, robot) -> None:
    with pytest.raises(OvstageError) as info:
        stage.clone("/World/Nope", ["/World/B"], 2)
    assert info.value.code == ErrorCode.OP_FAILED
    assert "does not exist" in info.value.message


def test_a_source_that_only_has_held_descendants_does_not_exist(stage, robot) -> None:
    # "/" is no prim of the stage: only its descendants are held.
    assert "does not exist" in clone_failure(stage, "/Envs", ["/Other"], 2)
    stage.clone("/World/A", ["/Envs/E0"], 2)
    assert "does not exist" in clone_failure(stage, "/Envs", ["/Other"], 3)


def test_a_deleted_source_does_not_exist(stage, robot, make_query) -> None:
    stage.delete_attributes(make_query(["/World/Mat"]), [], 2).wait()
    assert "does not exist" in clone_failure(stage, "/World/Mat", ["/World/Mat2"], 3)


def test_an_existing_target_fails_and_nothing_is_cloned(stage, robot) -> None:
    message = clone_failure(stage, "/World/A", ["/World/B", "/World/Mat", "/World/C"], 2)
    assert "/World/Mat" in message
    assert "already exists" in message
    stage.advance_write_floor(2).wait()
    assert held_paths(stage, 2) == sorted(ROBOT)


def test_an_existing_prim_below_an_absent_target_is_merged_into(stage, robot, make_query) -> None:
    stage.write_attribute(
        make_query(["/World/B/Arm"]), "mass", 2, np.array([9], F32), is_array=False
    ).wait()
    stage.write_attribute(
        make_query(["/World/B/Arm"]), "own", 2, np.array([7], np.int32), is_array=False
    ).wait()
    stage.clone("/World/A", ["/World/B"], 2)
    stage.advance_write_floor(2).wait()
    assert held_paths(stage, 2, "/World/B") == [under("/World/B", p) for p in SUBTREE]
    assert values_at(stage, ["/World/B/Arm"], "mass", 2) == {"/World/B/Arm": 3.0}
    assert values_at(stage, ["/World/B/Arm"], "size", 2) == {"/World/B/Arm": [0, 1]}
    assert values_at(stage, ["/World/B/Arm"], "own", 2) == {"/World/B/Arm": 7}, "kept"


def test_a_merge_into_a_prim_of_another_type_fails_and_clones_nothing(
    stage, robot, make_query
) -> None:
    stage.write_attribute(
        make_query(["/World/B/Arm"]), "mass", 2, np.array([9], np.int32), is_array=False
    ).wait()
    message = clone_failure(stage, "/World/A", ["/World/B"], 2)
    assert "/World/B/Arm" in message
    assert "another type" in message
    stage.advance_write_floor(2).wait()
    assert held_paths(stage, 2, "/World/B") == ["/World/B/Arm"]


def test_a_clone_without_targets_only_checks_admission(stage, robot) -> None:
    stage.clone("/World/A", [], 2)
    assert "write floor" in clone_failure(stage, "/World/A", [], 1)
    stage.advance_write_floor(2).wait()
    assert held_paths(stage, 2) == sorted(ROBOT)


def test_a_deleted_prim_path_can_be_a_target(stage, robot, make_query) -> None:
    stage.delete_attributes(make_query(["/World/Mat"]), [], 2).wait()
    stage.clone("/World/A/Arm/Hand", ["/World/Mat"], 3)
    stage.advance_write_floor(3).wait()
    assert values_at(stage, ["/World/Mat"], "mass", 3) == {"/World/Mat": 4.0}


def test_a_second_clone_onto_the_same_target_fails(stage, robot) -> None:
    stage.clone("/World/A", ["/World/B"], 2)
    assert "already exists" in clone_failure(stage, "/World/A", ["/World/B"], 3)


@pytest.mark.parametrize("ordinal", [0, 1])
def test_clone_at_or_below_the_floor_fails_and_clones_nothing(stage, robot, ordinal) -> None:
    message = clone_failure(stage, "/World/A", ["/World/B"], ordinal)
    assert "write floor" in message
    assert f"ordinal {ordinal}" in message
    assert held_paths(stage, 1) == sorted(ROBOT)


def test_clone_floor_failure_names_write_floor_violation(stage, robot) -> None:
    assert "WRITE_FLOOR_VIOLATION" in clone_failure(stage, "/World/A", ["/World/B"], 1)


def test_clone_admission_uses_each_attributes_floor(stage, robot, paths) -> None:
    mass = paths.intern_token("mass")
    stage.advance_write_floor(5, ovstage.Scope.INCLUDE, [mass]).wait()
    # The subtree carries "mass" (floor 5) and "size" (floor 1): "mass" refuses ordinal 3.
    message = clone_failure(stage, "/World/A", ["/World/B"], 3)
    assert '"mass"' in message
    assert held_paths(stage, 1, "/World/B") == []
    stage.clone("/World/A", ["/World/B"], 6)
    stage.advance_write_floor(6).wait()
    assert values_at(stage, ["/World/B/Arm"], "size", 6) == {"/World/B/Arm": [0, 1]}


def test_clone_just_above_the_floor_is_admitted(stage, robot) -> None:
    stage.clone("/World/A", ["/World/B"], 2)


# ---------------------------------------------------------------- rejected at enqueue


BAD_CLONES = {
    "duplicate targets": ("/World/A", ["/World/B", "/World/B"], "duplicate target path '/World/B'"),
    "target is the source": ("/World/A", ["/World/A"], "inside the source subtree"),
    "target inside the source": ("/World/A", ["/World/A/Arm/Copy"], "inside the source subtree"),
    "relative target": ("/World/A", ["World/B"], "absolute"),
    "empty target": ("/World/A", [""], "non-empty"),
    "empty source": ("", ["/World/B"], "non-empty"),
    "relative source": ("World/A", ["/World/B"], "absolute"),
    "NUL in target": ("/World/A", ["/World/\x00B"], "NUL"),
    "NUL in source": ("/World\x00/A", ["/World/B"], "NUL"),
}


@pytest.mark.parametrize("case", list(BAD_CLONES))
def test_invalid_paths_are_rejected_at_enqueue(stage, robot, case) -> None:
    source, targets, fragment = BAD_CLONES[case]
    assert_rejected(stage.clone_async(source, targets, 2), ErrorCode.INVALID_ARGUMENT, fragment)
    with pytest.raises(OvstageError) as info:
        stage.clone(source, targets, 2)
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    stage.advance_write_floor(2).wait()
    assert held_paths(stage, 2) == sorted(ROBOT)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("/World/A", "/World/B", 2), TypeError),
        ((b"/World/A", ["/World/B"], 2), TypeError),
        (("/World/A", [b"/World/B"], 2), TypeError),
        (("/World/A", ["/World/B"], 2.0), TypeError),
        (("/World/A", ["/World/B"], -1), ValueError),
        (("/World/A", ["/World/B"], 2**64), ValueError),
    ],
    ids=["single str target", "bytes source", "bytes target", "float ordinal", "negative", "wide"],
)
def test_argument_guards_raise_before_any_native_call(stage, robot, args, error) -> None:
    with pytest.raises(error):
        stage.clone_async(*args)
    with pytest.raises(error):
        stage.clone(*args)


def test_clone_after_destroy_raises_invalid_handle(stage) -> None:
    stage.destroy()
    with pytest.raises(OvstageError) as info:
        stage.clone_async("/A", ["/B"], 1)
    assert info.value.code == ErrorCode.INVALID_HANDLE


# ---------------------------------------------------------------- path rebasing


@pytest.fixture
def linked(stage, paths, make_query) -> ovstage.PathDictionary:
    """/L/A/Arm with a relationship, a connection and a plain uint64 array of path ids, each
    naming one prim inside /L/A and one outside; sealed at 1."""
    path = paths.intern_path
    inside, outside = path("/L/A/Arm/Hand"), path("/L/Material")
    pair = ovstage.numpy_to_dldatatype(U64, 2)
    rgb, surface = paths.intern_token("outputs:rgb"), paths.intern_token("outputs:surface")
    connection = np.array([inside, rgb], U64)  # one (path, token) pair per prim
    writes = [
        ovstage.WriteDesc("rel", [np.array([inside, outside, path("/L/A")], U64)], True,
                          semantic=AttributeSemantic.RELATIONSHIP_PATH_ID),
        ovstage.WriteDesc("con", [ovstage.make_dltensor(connection, dtype=pair, shape=(1,))], True,
                          semantic=AttributeSemantic.CONNECTION_PATH_ID),
        ovstage.WriteDesc("con_out", np.array([[outside, surface]], U64), False,
                          semantic=AttributeSemantic.CONNECTION_PATH_ID),
        ovstage.WriteDesc("plain", [np.array([inside, outside], U64)], True),
        ovstage.WriteDesc("scalar", np.array([inside], U64), False),
    ]  # fmt: skip
    stage.write_attributes(make_query(["/L/A/Arm"]), writes, 1).wait()
    stage.write_attribute(make_query(["/L/A", "/L/A/Arm/Hand", "/L/Material"]), "m", 1,
                          np.ones(3, F32), is_array=False).wait()  # fmt: skip
    stage.advance_write_floor(1).wait()
    return paths


def clone_values(stage, paths, attribute: str) -> dict[str, list]:
    values = values_at(stage, ["/L/A/Arm", "/L/E0/Arm", "/L/E1/Arm"], attribute, 2)
    return {k: [paths.path_to_string(int(v)) for v in np.ravel(vs)] for k, vs in values.items()}


def test_relationship_targets_inside_the_source_are_rebased(stage, linked) -> None:
    stage.clone("/L/A", ["/L/E0", "/L/E1"], 2)
    stage.advance_write_floor(2).wait()
    assert clone_values(stage, linked, "rel") == {
        "/L/A/Arm": ["/L/A/Arm/Hand", "/L/Material", "/L/A"],
        "/L/E0/Arm": ["/L/E0/Arm/Hand", "/L/Material", "/L/E0"],
        "/L/E1/Arm": ["/L/E1/Arm/Hand", "/L/Material", "/L/E1"],
    }


def test_connection_paths_inside_the_source_are_rebased(stage, linked) -> None:
    stage.clone("/L/A", ["/L/E0", "/L/E1"], 2)
    stage.advance_write_floor(2).wait()
    raw = values_at(stage, ["/L/E0/Arm", "/L/E1/Arm"], "con", 2)
    out = values_at(stage, ["/L/E0/Arm", "/L/E1/Arm"], "con_out", 2)
    for target in ("/L/E0", "/L/E1"):
        path_id, token_id = raw[f"{target}/Arm"]
        assert linked.path_to_string(path_id) == f"{target}/Arm/Hand"
        assert linked.token_to_string(token_id) == "outputs:rgb"
        path_id, token_id = out[f"{target}/Arm"]
        assert linked.path_to_string(path_id) == "/L/Material", "outside paths are copied"
        assert linked.token_to_string(token_id) == "outputs:surface"


def test_path_ids_without_a_path_semantic_are_copied_unchanged(stage, linked) -> None:
    stage.clone("/L/A", ["/L/E0", "/L/E1"], 2)
    stage.advance_write_floor(2).wait()
    for attribute in ("plain", "scalar"):
        copied = clone_values(stage, linked, attribute)
        assert copied["/L/E0/Arm"] == copied["/L/E1/Arm"] == copied["/L/A/Arm"]
        assert copied["/L/E0/Arm"][0] == "/L/A/Arm/Hand"


def test_the_source_keeps_its_own_paths(stage, linked) -> None:
    stage.clone("/L/A", ["/L/E0"], 2)
    stage.advance_write_floor(2).wait()
    assert clone_values(stage, linked, "rel")["/L/A/Arm"] == [
        "/L/A/Arm/Hand",
        "/L/Material",
        "/L/A",
    ]


# ---------------------------------------------------------------- widening, hierarchy, queries


def test_a_read_through_an_older_query_carries_a_data_index_map(stage, robot, paths) -> None:
    stage.clone("/World/A", ["/World/A_env0", "/World/A_env1"], 2)
    stage.advance_write_floor(2).wait()
    with stage.read_attributes(robot, ["mass"], OrdinalRange.latest(2)) as read:
        read.wait()
        groups = list(read.groups())
        assert len(groups) == 1
        with groups[0] as group:
            assert group.prim_count == len(ROBOT)
            assert group.has_data_index_map
            assert group.data_count == len(ROBOT)
            rows = np.from_dlpack(group.dlpack(0))
            assert rows.shape[0] == len(ROBOT) + 2 * len(SUBTREE)  # the widened column
            listed = paths.get_path_strings(group.prim_list)
            resolved = {
                listed[group.prim_index(k)]: float(rows[group.data_row_index(k)])
                for k in range(group.prim_count)
            }
    assert resolved == MASS


def test_a_fresh_query_addresses_the_clones(stage, robot) -> None:
    stage.clone("/World/A", ["/World/A_env0", "/World/A_env1"], 2)
    stage.advance_write_floor(2).wait()
    expected = {under(t, p): MASS[p] for t in ("/World/A_env0", "/World/A_env1") for p in SUBTREE}
    assert values_at(stage, list(expected), "mass", 2) == expected


def test_usd_path_parent_and_children_reflect_the_clones(stage, robot, paths) -> None:
    stage.clone("/World/A", ["/World/A_env0", "/World/A_env1"], 2)
    stage.advance_write_floor(2).wait()
    prims = ["/World", "/World/A_env0", "/World/A_env0/Arm", "/World/A_env1/Arm/Hand"]
    ids = values_at(stage, prims, "usd-path", 2)
    assert {k: paths.path_to_string(v) for k, v in ids.items()} == {p: p for p in prims}
    parents = values_at(stage, prims, "usd-parent", 2)
    assert {k: paths.path_to_string(v) for k, v in parents.items()} == {
        "/World/A_env0": "/World",
        "/World/A_env0/Arm": "/World/A_env0",
        "/World/A_env1/Arm/Hand": "/World/A_env1/Arm",
    }
    children = values_at(stage, prims, "usd-children", 2)
    assert {k: sorted(paths.path_to_string(c) for c in v) for k, v in children.items()} == {
        "/World": ["/World/A", "/World/A_env0", "/World/A_env1", "/World/Mat"],
        "/World/A_env0": ["/World/A_env0/Arm"],
        "/World/A_env0/Arm": ["/World/A_env0/Arm/Hand"],
    }


def test_clones_become_queryable(stage, robot) -> None:
    stage.clone("/World/A", ["/World/A_env0", "/World/A_env1"], 2)
    # Committed, not yet sealed: queries already see the clones.
    with stage.query(Filter([P("mass", FilterOp.HAS)])) as query:
        assert query.result().total_prim_count == len(ROBOT) + 2 * len(SUBTREE)
    with stage.query(Filter([P("usd-path", FilterOp.PREFIX, ["/World/A_env"])])) as query:
        assert query.result().total_prim_count == 2 * len(SUBTREE)
    with stage.query(Filter([P("usd-parent", FilterOp.IN, ["/World/A_env1"])])) as query:
        assert query.result().total_prim_count == 1
    heavy_env0 = Filter(
        [P("mass", FilterOp.GE, ["3"]), P("usd-path", FilterOp.PREFIX, ["/World/A_env0/"])]
    )
    with stage.query(heavy_env0) as query:
        stage.advance_write_floor(2).wait()
        assert sorted(latest(stage, query, "mass", 2)) == [
            "/World/A_env0/Arm",
            "/World/A_env0/Arm/Hand",
        ]


def test_clones_report_their_attributes_in_discovery(stage, robot, paths) -> None:
    stage.clone("/World/A/Arm", ["/Copy"], 2)
    with stage.query(Filter([P("usd-path", FilterOp.IN, ["/Copy"])])) as query:
        names = sorted(paths.token_to_string(t) for t in query.result().attributes)
    assert names == ["mass", "size"]


def test_cloned_values_change_at_the_clone_ordinal(stage, robot) -> None:
    stage.clone("/World/A", ["/World/B"], 2)
    stage.advance_write_floor(2).wait()
    with stage.query() as everything:
        changed = read_groups(stage, everything, ["mass"], OrdinalRange.between(2, 2))
    assert values_of(changed, "mass") == {under("/World/B", p): MASS[p] for p in SUBTREE}


# ---------------------------------------------------------------- path lists (invariant 20)


def test_a_path_list_query_keeps_working_after_its_list_is_released(stage, paths) -> None:
    plist = paths.create_path_list_from_strings(["/P/A", "/P/B"])
    with stage.query_from_path_list(plist) as query:
        plist.release()
        stage.write_attribute(query, "x", 1, np.array([1, 2], F32), is_array=False).wait()
        stage.advance_write_floor(1).wait()
        assert latest(stage, query, "x", 1) == {"/P/A": 1.0, "/P/B": 2.0}
        assert query.result().total_prim_count == 2
