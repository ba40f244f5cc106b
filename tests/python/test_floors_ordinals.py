"""Write floors, scoped advances and ordinal queries: floors only rise, a
scoped advance raises only its attributes, an ordinal query reports the floor it asked for.

``latest(N)`` is the snapshot at N: an unsealed selected change at or before N fails the read
with ``WRITE_FLOOR_VIOLATION``, a sealed change after N with ``OUT_OF_RANGE``. Our documented
difference (README "Where we differ"): an *unsealed* change after N leaves the sealed state at N
readable (the reference fails with ``OUT_OF_RANGE``).
"""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, OrdinalRange, OvstageError, Scope, WriteDesc
from readback import (
    assert_rejected,
    floor_of,
    latest,
    oldest_preserved,
    read_error,
    read_groups,
    values_of,
)

ABC = ["/A", "/B", "/C"]
F32 = np.float32


@pytest.fixture
def abc(make_query) -> ovstage.Query:
    return make_query(ABC)


def _write(stage, query, attribute, ordinal, values) -> None:
    stage.write_attribute(query, attribute, ordinal, np.asarray(values, F32), is_array=False).wait()


@pytest.fixture
def known(stage, abc) -> ovstage.Query:
    """Attributes a, b, c known on /A../C, written at 1 and sealed with Scope.ALL."""
    stage.write_attributes(
        abc, [WriteDesc(name, np.full(3, i, F32), False) for i, name in enumerate("abc")], 1
    ).wait()
    stage.advance_write_floor(1).wait()
    return abc


def _floors(stage) -> dict[str, int]:
    return {name: floor_of(stage, name) for name in ("a", "b", "c")} | {"": floor_of(stage)}


# ---------------------------------------------------------------- sealing (invariant 2)


def test_fresh_stage_floors_and_frontier_are_zero(stage) -> None:
    assert floor_of(stage) == 0
    assert floor_of(stage, None) == 0
    assert floor_of(stage, "never-written") == 0
    assert oldest_preserved(stage) == 0


def test_read_of_an_unsealed_write_fails_then_succeeds_after_sealing(stage, abc) -> None:
    _write(stage, abc, "t", 1, [1, 2, 3])
    assert floor_of(stage) == 0
    assert read_error(stage, abc, ["t"], OrdinalRange.latest(1)) == ErrorCode.WRITE_FLOOR_VIOLATION
    stage.advance_write_floor(1).wait()
    groups = read_groups(stage, abc, ["t"], OrdinalRange.latest(1))
    assert len(groups) == 1
    assert groups[0].values == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    assert groups[0].ordinal == 1


def test_a_snapshot_counts_the_changes_up_to_its_end(stage, abc) -> None:
    _write(stage, abc, "t", 5, [1, 2, 3])
    for end in (5, 99):
        assert (
            read_error(stage, abc, ["t"], OrdinalRange.latest(end))
            == ErrorCode.WRITE_FLOOR_VIOLATION
        )
    # Ours: at 4 the attribute did not exist yet (the reference: OUT_OF_RANGE).
    assert latest(stage, abc, "t", 4) == {}
    stage.advance_write_floor(5).wait()
    for end in (5, 99):
        assert latest(stage, abc, "t", end) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    for end in (0, 4):  # a sealed change after the end: the history window serves the state
        assert latest(stage, abc, "t", end) == {}


@pytest.mark.parity
def test_parity_a_snapshot_before_any_change_is_out_of_range(stage, abc) -> None:
    _write(stage, abc, "t", 5, [1, 2, 3])
    for end in (0, 4):  # the reference: a change after the end, sealed or not
        assert read_error(stage, abc, ["t"], OrdinalRange.latest(end)) == ErrorCode.OUT_OF_RANGE
    stage.advance_write_floor(5).wait()
    for end in (0, 4):
        assert read_error(stage, abc, ["t"], OrdinalRange.latest(end)) == ErrorCode.OUT_OF_RANGE
    assert latest(stage, abc, "t", 5) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}


@pytest.mark.parity
def test_parity_keeps_only_the_current_payload(stage, abc) -> None:
    _write(stage, abc, "t", 1, [1, 2, 3])
    stage.advance_write_floor(1).wait()
    _write(stage, abc, "t", 2, [4, 5, 6])
    stage.advance_write_floor(2).wait()
    assert read_error(stage, abc, ["t"], OrdinalRange.latest(1)) == ErrorCode.OUT_OF_RANGE
    _write(stage, abc, "t", 3, [7, 8, 9])
    assert read_error(stage, abc, ["t"], OrdinalRange.latest(2)) == ErrorCode.OUT_OF_RANGE


def test_latest_read_serves_the_sealed_state_at_its_end(stage, abc) -> None:
    _write(stage, abc, "t", 1, [1, 2, 3])
    stage.advance_write_floor(1).wait()
    _write(stage, abc, "t", 2, [4, 5, 6])
    stage.advance_write_floor(2).wait()
    # The history window: the state at 1 is still served after 2 was sealed.
    assert latest(stage, abc, "t", 1) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    assert latest(stage, abc, "t", 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}
    # Our policy: an unsealed newer change leaves the state at 2 readable.
    _write(stage, abc, "t", 3, [7, 8, 9])
    assert latest(stage, abc, "t", 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}
    assert read_error(stage, abc, ["t"], OrdinalRange.latest(3)) == ErrorCode.WRITE_FLOOR_VIOLATION
    stage.advance_write_floor(3).wait()
    assert latest(stage, abc, "t", 3) == {"/A": 7.0, "/B": 8.0, "/C": 9.0}


def test_a_prim_without_a_sealed_value_vetoes_the_read(stage, abc, make_query) -> None:
    _write(stage, make_query(["/A", "/B"]), "t", 1, [1, 2])
    stage.advance_write_floor(1).wait()
    _write(stage, make_query(["/C"]), "t", 2, [3])
    assert read_error(stage, abc, ["t"], OrdinalRange.latest(2)) == ErrorCode.WRITE_FLOOR_VIOLATION
    assert latest(stage, make_query(["/A", "/B"]), "t", 2) == {"/A": 1.0, "/B": 2.0}


# ---------------------------------------------------------------- admission (invariant 3)


def test_ordinal_zero_is_rejected_on_a_fresh_stage(stage, abc) -> None:
    op = stage.write_attribute(abc, "t", 0, np.ones(3, F32), is_array=False)
    assert_rejected(op, ErrorCode.WRITE_FLOOR_VIOLATION)
    stage.advance_write_floor(1).wait()
    assert latest(stage, abc, "t", 1) == {}


@pytest.mark.parametrize("ordinal", [0, 4, 5])
def test_writes_and_deletes_at_or_below_the_floor_are_rejected(stage, known, ordinal) -> None:
    stage.advance_write_floor(5).wait()
    op = stage.write_attribute(known, "a", ordinal, np.full(3, 9, F32), is_array=False)
    assert_rejected(op, ErrorCode.WRITE_FLOOR_VIOLATION, "floor")
    assert_rejected(stage.delete_attributes(known, ["a"], ordinal), ErrorCode.WRITE_FLOOR_VIOLATION)
    assert_rejected(stage.delete_attributes(known, [], ordinal), ErrorCode.WRITE_FLOOR_VIOLATION)
    assert latest(stage, known, "a", 5) == {"/A": 0.0, "/B": 0.0, "/C": 0.0}


def test_ordinal_just_above_the_floor_is_accepted(stage, known) -> None:
    stage.advance_write_floor(5).wait()
    _write(stage, known, "a", 6, [6, 6, 6])
    stage.advance_write_floor(6).wait()
    assert latest(stage, known, "a", 6) == {"/A": 6.0, "/B": 6.0, "/C": 6.0}


# ---------------------------------------------------------------- monotonic (invariant 4)


def test_floors_never_move_down_and_advances_never_fail(stage, known) -> None:
    stage.advance_write_floor(5).wait()
    for scope, attributes in ((Scope.ALL, None), (Scope.INCLUDE, ["a"]), (Scope.EXCLUDE, ["b"])):
        op = stage.advance_write_floor(3, scope=scope, attributes=attributes)
        assert op.ok
        op.wait()
        assert _floors(stage) == {"a": 5, "b": 5, "c": 5, "": 5}
    # Advancing to the same ordinal again is a no-op too.
    stage.advance_write_floor(5).wait()
    assert floor_of(stage) == 5


def test_advance_from_a_fresh_stage_sets_the_global_floor(stage) -> None:
    stage.advance_write_floor(3).wait()
    assert floor_of(stage) == 3
    assert floor_of(stage, "unknown") == 3


# ---------------------------------------------------------------- scoped floors (invariant 5)


def test_include_raises_only_the_listed_attributes(stage, known) -> None:
    stage.advance_write_floor(5, scope=Scope.INCLUDE, attributes=["a"]).wait()
    assert _floors(stage) == {"a": 5, "b": 1, "c": 1, "": 1}
    # b and c still accept ordinals 2..5; a does not.
    assert_rejected(
        stage.write_attribute(known, "a", 4, np.ones(3, F32), is_array=False),
        ErrorCode.WRITE_FLOOR_VIOLATION,
    )
    _write(stage, known, "b", 4, [4, 4, 4])
    assert (
        read_error(stage, known, ["b"], OrdinalRange.latest(4)) == ErrorCode.WRITE_FLOOR_VIOLATION
    )
    assert latest(stage, known, "b", 3) == {"/A": 1.0, "/B": 1.0, "/C": 1.0}  # 4 not sealed


def test_include_seals_data_for_reading(stage, known) -> None:
    stage.write_attributes(
        known,
        [WriteDesc("a", np.full(3, 7, F32), False), WriteDesc("b", np.full(3, 7, F32), False)],
        3,
    ).wait()
    stage.advance_write_floor(3, scope=Scope.INCLUDE, attributes=["a"]).wait()
    groups = read_groups(stage, known, ["a"], OrdinalRange.latest(3))
    groups += read_groups(stage, known, ["b"], OrdinalRange.latest(2))  # b's change at 3: unsealed
    assert values_of(groups, "a") == {"/A": 7.0, "/B": 7.0, "/C": 7.0}
    assert values_of(groups, "b") == {"/A": 1.0, "/B": 1.0, "/C": 1.0}
    assert {g.attribute: g.floor for g in groups} == {"a": 3, "b": 1}
    # One attribute's unsealed change fails the whole read.
    assert (
        read_error(stage, known, ["a", "b"], OrdinalRange.latest(3))
        == ErrorCode.WRITE_FLOOR_VIOLATION
    )
    # A range read selecting b's unsealed change fails; a's sealed one is served.
    assert read_groups(stage, known, ["a"], OrdinalRange.between(3, 3))[0].values == {
        "/A": 7.0,
        "/B": 7.0,
        "/C": 7.0,
    }
    assert (
        read_error(stage, known, ["b"], OrdinalRange.between(3, 3))
        == ErrorCode.WRITE_FLOOR_VIOLATION
    )


def test_exclude_raises_every_known_attribute_but_the_listed(stage, known) -> None:
    stage.advance_write_floor(7, scope=Scope.EXCLUDE, attributes=["b"]).wait()
    assert _floors(stage) == {"a": 7, "b": 1, "c": 7, "": 1}
    _write(stage, known, "b", 2, [2, 2, 2])
    stage.advance_write_floor(7, scope=Scope.INCLUDE, attributes=["b"]).wait()
    assert _floors(stage) == {"a": 7, "b": 7, "c": 7, "": 7}
    assert latest(stage, known, "b", 7) == {"/A": 2.0, "/B": 2.0, "/C": 2.0}


def _scenario(scope: Scope, attributes) -> dict[str, int]:
    with ovstage.Stage("scoped") as stage:
        dictionary = ovstage.PathDictionary(stage)
        with (
            dictionary.create_path_list_from_strings(ABC) as plist,
            stage.query_from_path_list(plist) as query,
        ):
            stage.write_attributes(
                query, [WriteDesc(n, np.ones(3, F32), False) for n in "ab"], 1
            ).wait()
            stage.advance_write_floor(4, scope=scope, attributes=attributes).wait()
            late = stage.write_attribute(query, "late", 3, np.ones(3, F32), is_array=False)
            floors = _floors(stage) | {"late accepted at 3": int(late.ok)}
            if late.ok:
                late.wait()
            floors["late"] = floor_of(stage, "late")
            return floors


def test_exclude_with_an_empty_list_is_exactly_all() -> None:
    everything = _scenario(Scope.ALL, None)
    assert _scenario(Scope.EXCLUDE, []) == everything
    assert everything["a"] == everything["b"] == everything[""] == 4
    assert everything["late accepted at 3"] == 0  # a new attribute starts at the global floor


def test_global_floor_is_the_minimum_over_known_attributes(stage, known) -> None:
    stage.advance_write_floor(9, scope=Scope.INCLUDE, attributes=["a", "b"]).wait()
    assert floor_of(stage) == 1
    stage.advance_write_floor(4, scope=Scope.INCLUDE, attributes=["c"]).wait()
    assert floor_of(stage) == 4
    assert floor_of(stage, None) == floor_of(stage) == 4


def test_scoped_attributes_may_be_tokens_or_names(stage, known, paths) -> None:
    stage.advance_write_floor(
        6, scope=Scope.INCLUDE, attributes=[paths.intern_token("a"), "c"]
    ).wait()
    assert _floors(stage) == {"a": 6, "b": 1, "c": 6, "": 1}
    assert floor_of(stage, paths.intern_token("a")) == 6


def test_include_of_an_unknown_attribute_never_fails(stage, known) -> None:
    op = stage.advance_write_floor(5, scope=Scope.INCLUDE, attributes=["ghost"])
    assert op.ok
    op.wait()
    assert _floors(stage) == {"a": 1, "b": 1, "c": 1, "": 1}


def test_read_group_meta_reports_the_attribute_floor(stage, known) -> None:
    stage.advance_write_floor(5, scope=Scope.INCLUDE, attributes=["c"]).wait()
    groups = read_groups(stage, known, ["a", "c"], OrdinalRange.latest(5))
    assert {g.attribute: g.floor for g in groups} == {"a": 1, "c": 5}


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"scope": 3}, ValueError),
        ({"scope": -1}, ValueError),
        ({"scope": 1.0}, TypeError),
        ({"scope": Scope.INCLUDE, "attributes": "a"}, TypeError),
        ({"scope": Scope.INCLUDE, "attributes": [1.5]}, TypeError),
        ({"scope": Scope.INCLUDE, "attributes": [-1]}, ValueError),
    ],
)
def test_advance_guards(stage, known, kwargs, error) -> None:
    with pytest.raises(error):
        stage.advance_write_floor(9, **kwargs)
    assert _floors(stage) == {"a": 1, "b": 1, "c": 1, "": 1}


@pytest.mark.parametrize(
    ("ordinal", "error"), [(-1, ValueError), (2**64, ValueError), (2.0, TypeError)]
)
def test_advance_ordinal_guards(stage, ordinal, error) -> None:
    with pytest.raises(error, match="ordinal"):
        stage.advance_write_floor(ordinal)
    assert floor_of(stage) == 0


# ---------------------------------------------------------------- ordinal queries


def test_ordinal_query_wrapper(stage, known) -> None:
    stage.advance_write_floor(4).wait()
    oq = stage.get_attribute_write_floor("a")
    assert isinstance(oq, ovstage.OrdinalQuery)
    assert oq.handle != 0 and int(oq) == oq.handle
    oq.wait()
    assert oq.fetch() == 4
    assert oq.fetch(timeout=0) == 4  # repeatable
    assert stage.fetch_ordinal(oq) == 4
    assert stage.fetch_ordinal(oq.handle) == 4
    release = stage.release_ordinal_query(oq)
    assert release.ok
    release.wait()
    assert oq.released
    with pytest.raises(OvstageError) as info:
        oq.fetch()
    assert info.value.code == ErrorCode.INVALID_HANDLE
    with pytest.raises(OvstageError) as info:
        stage.fetch_ordinal(oq.handle)
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_ordinal_query_context_manager_releases(stage) -> None:
    with stage.get_oldest_preserved_ordinal() as oq:
        assert oq.fetch() == 0
    assert oq.released


def test_floor_query_is_ordered_after_a_pending_advance(stage, known) -> None:
    stage.advance_write_floor(8)  # not waited
    assert floor_of(stage) == 8


def test_floor_query_attribute_guard(stage) -> None:
    with pytest.raises(TypeError, match="attribute"):
        stage.get_attribute_write_floor(1.5)
    with pytest.raises(ValueError):
        stage.get_attribute_write_floor(-1)


# ---------------------------------------------------------------- retention frontier


@pytest.mark.parity  # no history window: the frontier is the change records'
def test_frontier_moves_once_a_column_coalesces_its_records(stage, make_query) -> None:
    query = make_query(["/A"])
    for ordinal in range(1, 1025):
        stage.write_attribute(query, "t", ordinal, np.array([ordinal], F32), is_array=False)
    stage.advance_write_floor(1024).wait()
    assert oldest_preserved(stage) == 0  # 1024 change records: still exact
    # Every change is retained: a range read of the first one fails OUT_OF_RANGE (it changed
    # again later), a range read of the last one is served.
    assert read_error(stage, query, ["t"], OrdinalRange.between(1, 1)) == ErrorCode.OUT_OF_RANGE
    for ordinal in range(1025, 1031):
        stage.write_attribute(query, "t", ordinal, np.array([ordinal], F32), is_array=False)
    stage.advance_write_floor(1030).wait()
    frontier = oldest_preserved(stage)
    assert frontier == 1030 - 1024 + 1
    # At or above the frontier membership is exact.
    assert read_groups(stage, query, ["t"], OrdinalRange.between(frontier, 1030))[0].values == {
        "/A": 1030.0
    }
    assert read_groups(stage, query, ["t"], OrdinalRange.between(1030, 1030))[0].values == {
        "/A": 1030.0
    }
    assert (
        read_error(stage, query, ["t"], OrdinalRange.between(frontier, frontier))
        == ErrorCode.OUT_OF_RANGE
    )
    assert latest(stage, query, "t", 1030) == {"/A": 1030.0}
