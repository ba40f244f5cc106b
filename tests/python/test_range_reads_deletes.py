"""Range reads, snapshot reads, read groups over part of a column, and deletes/tombstones
under the 0.3.0 read admission (latest(N) is the snapshot at N).
"""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, Filter, FilterOp, OrdinalRange, Predicate, PrimMode, WriteDesc
from readback import (
    assert_rejected,
    latest,
    prim_paths_held,
    read_error,
    read_groups,
    tombstones_of,
    values_of,
)

ABC = ["/A", "/B", "/C"]
F32 = np.float32


@pytest.fixture
def abc(make_query) -> ovstage.Query:
    return make_query(ABC)


def _seal_write(stage, query, attribute, ordinal, values, **kwargs) -> None:
    stage.write_attribute(
        query, attribute, ordinal, np.asarray(values, F32), is_array=False, **kwargs
    ).wait()
    stage.advance_write_floor(ordinal).wait()


@pytest.fixture
def history(stage, abc) -> ovstage.Query:
    """t: [1,2,3] at 1 on A,B,C; [4,5] at 2 on A,B (count=2); u: [7,8,9] at 3. All sealed."""
    _seal_write(stage, abc, "t", 1, [1, 2, 3])
    _seal_write(stage, abc, "t", 2, [4, 5], count=2)
    _seal_write(stage, abc, "u", 3, [7, 8, 9])
    return abc


# ---------------------------------------------------------------- membership (invariant 7)


def test_range_returns_keys_with_a_change_inside(stage, history) -> None:
    groups = read_groups(stage, history, ["t"], OrdinalRange.between(2, 2))
    assert values_of(groups, "t") == {"/A": 4.0, "/B": 5.0}
    assert tombstones_of(groups, "t") == []


def test_range_spanning_every_change_returns_latest_values(stage, history) -> None:
    groups = read_groups(stage, history, ["t", "u"], OrdinalRange.between(1, 3))
    assert values_of(groups, "t") == {"/A": 4.0, "/B": 5.0, "/C": 3.0}
    assert values_of(groups, "u") == {"/A": 7.0, "/B": 8.0, "/C": 9.0}


def test_keys_changed_only_outside_the_range_are_not_returned(stage, history) -> None:
    assert read_groups(stage, history, ["t"], OrdinalRange.between(3, 3)) == []
    assert read_groups(stage, history, ["u"], OrdinalRange.between(1, 2)) == []
    groups = read_groups(stage, history, ["t", "u"], OrdinalRange.between(3, 3))
    assert values_of(groups, "t") == {}
    assert values_of(groups, "u") == {"/A": 7.0, "/B": 8.0, "/C": 9.0}


def test_range_selecting_nothing_returns_zero_groups(stage, history) -> None:
    assert read_groups(stage, history, ["t", "u"], OrdinalRange.between(50, 60)) == []
    assert read_groups(stage, history, ["t"], OrdinalRange.between(0, 0)) == []


def test_attribute_no_queried_prim_carries_returns_zero_groups(stage, history) -> None:
    assert read_groups(stage, history, ["nobody"], OrdinalRange.between(1, 3)) == []
    assert read_groups(stage, history, ["nobody"], OrdinalRange.latest(3)) == []


@pytest.mark.parity  # no history window: only current payloads are kept
def test_key_that_changed_again_after_the_end_is_out_of_range(stage, history) -> None:
    # /A and /B changed at 1 and again at 2.
    assert read_error(stage, history, ["t"], OrdinalRange.between(1, 1)) == ErrorCode.OUT_OF_RANGE


def test_range_before_a_sealed_change_is_the_state_at_its_end(stage, history) -> None:
    # The history window: /A and /B changed at 1 and again at 2; [1, 1] selects the three keys
    # changed at 1 in their state at 1.
    groups = read_groups(stage, history, ["t"], OrdinalRange.between(1, 1))
    assert values_of(groups, "t") == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    assert [g.ordinal for g in groups] == [1]
    groups = read_groups(stage, history, ["t", "u"], OrdinalRange.between(1, 2))
    assert values_of(groups, "t") == {"/A": 4.0, "/B": 5.0, "/C": 3.0}
    assert values_of(groups, "u") == {}


def test_an_unsealed_later_change_leaves_the_range_readable(stage, history) -> None:
    # Ours (README "Where we differ"): the change at 4 is not sealed, so the sealed state is the
    # state at 3 (the reference: OUT_OF_RANGE). Once 4 is sealed the history window keeps it.
    stage.write_attribute(history, "u", 4, np.zeros(3, F32), is_array=False).wait()
    groups = read_groups(stage, history, ["u"], OrdinalRange.between(3, 3))
    assert values_of(groups, "u") == {"/A": 7.0, "/B": 8.0, "/C": 9.0}
    assert [g.ordinal for g in groups] == [3]
    stage.advance_write_floor(4).wait()
    groups = read_groups(stage, history, ["u"], OrdinalRange.between(3, 3))
    assert values_of(groups, "u") == {"/A": 7.0, "/B": 8.0, "/C": 9.0}
    assert [g.ordinal for g in groups] == [3]


@pytest.mark.parity
def test_advancing_the_floor_does_not_cure_out_of_range(stage, history) -> None:
    stage.advance_write_floor(100).wait()
    assert read_error(stage, history, ["t"], OrdinalRange.between(1, 1)) == ErrorCode.OUT_OF_RANGE


@pytest.mark.parity
def test_one_failing_key_fails_the_whole_read(stage, history) -> None:
    # /C's t (changed only at 1) is fine on its own; /A's and /B's changed again at 2.
    code = read_error(stage, history, ["t", "u"], OrdinalRange.between(1, 1))
    assert code == ErrorCode.OUT_OF_RANGE


def test_keys_outside_the_query_never_veto(stage, history, make_query) -> None:
    # /C changed only at 1, so [1,1] over /C alone is served; /A, /B (outside) changed at 2.
    groups = read_groups(stage, make_query(["/C"]), ["t"], OrdinalRange.between(1, 1))
    assert values_of(groups, "t") == {"/C": 3.0}


@pytest.mark.parity
def test_a_snapshot_before_a_sealed_change_is_out_of_range(stage, history) -> None:
    # Parity (no history window): latest(N) is the state at N; only current payloads are
    # kept, so a sealed change after N on a queried key makes it unavailable.
    for end in (0, 1):
        assert read_error(stage, history, ["t"], OrdinalRange.latest(end)) == ErrorCode.OUT_OF_RANGE
    assert read_error(stage, history, ["t", "u"], OrdinalRange.latest(2)) == ErrorCode.OUT_OF_RANGE
    assert latest(stage, history, "t", 2) == {"/A": 4.0, "/B": 5.0, "/C": 3.0}
    for end in (3, 2**64 - 1):
        groups = read_groups(stage, history, ["t", "u"], OrdinalRange.latest(end))
        assert values_of(groups, "t") == {"/A": 4.0, "/B": 5.0, "/C": 3.0}


def test_a_snapshot_before_a_sealed_change_is_the_state_at_n(stage, history) -> None:
    # The history window serves every N since nothing was dropped: t and u at N together.
    assert latest(stage, history, "t", 0) == {}
    assert latest(stage, history, "t", 1) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    groups = read_groups(stage, history, ["t", "u"], OrdinalRange.latest(2))
    assert values_of(groups, "t") == {"/A": 4.0, "/B": 5.0, "/C": 3.0}
    assert values_of(groups, "u") == {}
    groups = read_groups(stage, history, ["t", "u"], OrdinalRange.latest(3))
    assert values_of(groups, "u") == {"/A": 7.0, "/B": 8.0, "/C": 9.0}


def test_in_range_change_above_the_floor_is_a_write_floor_violation(stage, history) -> None:
    stage.write_attribute(history, "u", 4, np.zeros(3, F32), is_array=False).wait()
    code = read_error(stage, history, ["u"], OrdinalRange.between(4, 4))
    assert code == ErrorCode.WRITE_FLOOR_VIOLATION
    code = read_error(stage, history, ["u"], OrdinalRange.between(3, 9))
    assert code == ErrorCode.WRITE_FLOOR_VIOLATION
    stage.advance_write_floor(4).wait()
    groups = read_groups(stage, history, ["u"], OrdinalRange.between(4, 4))
    assert values_of(groups, "u") == {"/A": 0.0, "/B": 0.0, "/C": 0.0}


def test_start_after_end_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="start_ordinal"):
        OrdinalRange.between(5, 4)
    with pytest.raises(ValueError):
        OrdinalRange(4, 5)
    between, latest = OrdinalRange.between(4, 4).to_c(), OrdinalRange.latest(4).to_c()
    assert isinstance(between, ovstage._abi.OrdinalRangeRaw)
    assert (between.start_ordinal, between.end_ordinal, between.has_start_ordinal) == (4, 4, True)
    assert (latest.start_ordinal, latest.end_ordinal, latest.has_start_ordinal) == (0, 4, False)


@pytest.mark.parametrize(("start", "end"), [(-1, 2), (1, 2**64), (1.0, 2)])
def test_range_bounds_are_uint64(start, end) -> None:
    with pytest.raises((TypeError, ValueError)):
        OrdinalRange.between(start, end)


@pytest.mark.parity
def test_out_of_range_surfaces_at_fetch_too(stage, history) -> None:
    with stage.read_attributes(history, ["t"], OrdinalRange.between(1, 1)) as read:
        with pytest.raises(ovstage.OvstageError) as info:
            read.fetch_next()
        assert info.value.code == ErrorCode.OUT_OF_RANGE


# ---------------------------------------------------------------- groups over part of a column


def test_reordered_subset_query_uses_index_maps(stage, history, make_query) -> None:
    subset = make_query(["/C", "/A"])
    for ordinal_range in (OrdinalRange.latest(3), OrdinalRange.between(1, 3)):
        groups = read_groups(stage, subset, ["t"], ordinal_range)
        assert values_of(groups, "t") == {"/C": 3.0, "/A": 4.0}


def test_query_with_extra_prims_lacking_the_attribute(stage, history, make_query) -> None:
    wide = make_query(["/X", "/B", "/Y", "/C", "/Z"])
    groups = read_groups(stage, wide, ["t", "u"], OrdinalRange.latest(3))
    assert values_of(groups, "t") == {"/B": 5.0, "/C": 3.0}
    assert values_of(groups, "u") == {"/B": 8.0, "/C": 9.0}
    for group in groups:
        assert group.has_prim_index_map or group.prims == ["/B", "/C"]


def test_several_attributes_in_one_read_each_get_their_groups(stage, history) -> None:
    groups = read_groups(stage, history, ["u", "t"], OrdinalRange.latest(3))
    assert {g.attribute for g in groups} == {"t", "u"}
    assert values_of(groups, "u") == {"/A": 7.0, "/B": 8.0, "/C": 9.0}


def test_meta_layout_generation_is_stable_on_value_updates(stage, abc, make_query) -> None:
    two = make_query(["/A", "/B"])
    _seal_write(stage, two, "g", 1, [1, 2])
    (first,) = read_groups(stage, two, ["g"], OrdinalRange.latest(1))
    _seal_write(stage, two, "g", 2, [3, 4])
    (second,) = read_groups(stage, two, ["g"], OrdinalRange.latest(2))
    assert second.values == {"/A": 3.0, "/B": 4.0}
    assert second.layout_generation == first.layout_generation
    _seal_write(stage, abc, "g", 3, [5, 6, 7])  # adds /C to the column
    (third,) = read_groups(stage, two, ["g"], OrdinalRange.latest(3))
    assert third.values == {"/A": 5.0, "/B": 6.0}
    assert third.layout_generation > second.layout_generation
    assert (first.floor, second.floor, third.floor) == (1, 2, 3)


# ---------------------------------------------------------------- attribute deletes (invariant 8)


def test_delete_then_seal_removes_the_keys_from_latest_reads(stage, history, make_query) -> None:
    stage.delete_attributes(make_query(["/B"]), ["t"], 4).wait()
    # Not sealed yet: the state at 4 is refused, the one at 3 is the old sealed values.
    assert (
        read_error(stage, history, ["t"], OrdinalRange.latest(4)) == ErrorCode.WRITE_FLOOR_VIOLATION
    )
    assert latest(stage, history, "t", 3) == {"/A": 4.0, "/B": 5.0, "/C": 3.0}
    stage.advance_write_floor(4).wait()
    groups = read_groups(stage, history, ["t", "u"], OrdinalRange.latest(4))
    assert not any(g.is_delete for g in groups)  # latest reads carry no tombstone groups
    assert values_of(groups, "t") == {"/A": 4.0, "/C": 3.0}
    assert values_of(groups, "u") == {"/A": 7.0, "/B": 8.0, "/C": 9.0}


def test_range_read_covering_a_delete_yields_a_tombstone_group(
    stage, history, make_query, paths
) -> None:
    stage.delete_attributes(make_query(["/B"]), ["t"], 4).wait()
    stage.advance_write_floor(4).wait()
    with stage.read_attributes(history, ["t"], OrdinalRange.between(4, 4)) as read:
        read.wait()
        groups = list(read.groups())
        assert len(groups) == 1
        with groups[0] as group:
            assert group.is_delete is True
            assert group.tensor_count == 0
            assert group.data_count == 0
            assert not group.raw.data.tensors
            assert group.prim_count == 1
            assert paths.get_path_strings(group.prim_list)[group.prim_index(0)] == "/B"
            assert group.attribute == paths.intern_token("t")
            with pytest.raises(IndexError):
                group.tensor(0)


def test_range_over_values_and_deletes_returns_both(stage, history, make_query) -> None:
    stage.delete_attributes(make_query(["/B"]), ["t"], 4).wait()
    stage.advance_write_floor(4).wait()
    groups = read_groups(stage, history, ["t"], OrdinalRange.between(2, 4))
    assert values_of(groups, "t") == {"/A": 4.0}
    assert tombstones_of(groups, "t") == ["/B"]


def test_delete_of_several_attributes(stage, history) -> None:
    stage.delete_attributes(history, ["t", "u"], 4).wait()
    stage.advance_write_floor(4).wait()
    assert read_groups(stage, history, ["t", "u"], OrdinalRange.latest(4)) == []
    groups = read_groups(stage, history, ["t", "u"], OrdinalRange.between(4, 4))
    assert tombstones_of(groups, "t") == ABC
    assert tombstones_of(groups, "u") == ABC
    assert all(g.tensor_count == 0 for g in groups)
    assert prim_paths_held(stage, history, 4) == ABC  # the prims remain


@pytest.mark.parity
def test_deleted_then_rewritten_key_is_out_of_range_for_the_delete(
    stage, history, make_query
) -> None:
    b = make_query(["/B"])
    stage.delete_attributes(b, ["t"], 4).wait()
    _seal_write(stage, b, "t", 5, [50])
    assert read_error(stage, history, ["t"], OrdinalRange.between(4, 4)) == ErrorCode.OUT_OF_RANGE
    groups = read_groups(stage, b, ["t"], OrdinalRange.between(4, 5))
    assert values_of(groups, "t") == {"/B": 50.0}
    assert latest(stage, history, "t", 5) == {"/A": 4.0, "/B": 50.0, "/C": 3.0}


def test_deleted_then_rewritten_key_is_a_tombstone_at_the_delete(
    stage, history, make_query
) -> None:
    # The history window: [4, 4] ends before /B's re-creation at 5, so /B is a tombstone there.
    b = make_query(["/B"])
    stage.delete_attributes(b, ["t"], 4).wait()
    _seal_write(stage, b, "t", 5, [50])
    groups = read_groups(stage, history, ["t"], OrdinalRange.between(4, 4))
    assert tombstones_of(groups, "t") == ["/B"]
    assert values_of(groups, "t") == {}
    assert latest(stage, history, "t", 4) == {"/A": 4.0, "/C": 3.0}
    assert values_of(read_groups(stage, b, ["t"], OrdinalRange.between(4, 5)), "t") == {"/B": 50.0}


def test_unsealed_delete_in_range_is_a_write_floor_violation(stage, history) -> None:
    stage.delete_attributes(history, ["u"], 4).wait()
    code = read_error(stage, history, ["u"], OrdinalRange.between(4, 4))
    assert code == ErrorCode.WRITE_FLOOR_VIOLATION


def test_delete_by_token(stage, history, paths) -> None:
    stage.delete_attributes(history, [paths.intern_token("u")], 4).wait()
    stage.advance_write_floor(4).wait()
    assert latest(stage, history, "u", 4) == {}
    assert latest(stage, history, "t", 4) == {"/A": 4.0, "/B": 5.0, "/C": 3.0}


def test_delete_of_an_attribute_no_prim_carries_changes_nothing(stage, history) -> None:
    stage.delete_attributes(history, ["nothing"], 4).wait()
    stage.advance_write_floor(4).wait()
    assert read_groups(stage, history, ["nothing"], OrdinalRange.between(1, 4)) == []
    assert latest(stage, history, "t", 4) == {"/A": 4.0, "/B": 5.0, "/C": 3.0}


def test_same_ordinal_delete_and_write_apply_in_submission_order(stage, history) -> None:
    stage.delete_attributes(history, ["u"], 4)
    stage.write_attribute(history, "u", 4, np.full(3, 6, F32), is_array=False)
    stage.advance_write_floor(4).wait()
    assert latest(stage, history, "u", 4) == {"/A": 6.0, "/B": 6.0, "/C": 6.0}
    stage.write_attribute(history, "u", 5, np.full(3, 1, F32), is_array=False)
    stage.delete_attributes(history, ["u"], 5)
    stage.advance_write_floor(5).wait()
    assert latest(stage, history, "u", 5) == {}


@pytest.mark.parametrize("attributes", ["t", None, 3.5, [1.5]])
def test_delete_guards(stage, history, attributes) -> None:
    with pytest.raises(TypeError):
        stage.delete_attributes(history, attributes, 4)
    stage.advance_write_floor(4).wait()
    assert latest(stage, history, "t", 4) == {"/A": 4.0, "/B": 5.0, "/C": 3.0}


# ---------------------------------------------------------------- HAS counts (invariant 8)


def _count(stage, predicates=()) -> int:
    with stage.query(Filter(list(predicates))) as query:
        return query.result().total_prim_count


def _has(stage, attribute: str) -> int:
    return _count(stage, [Predicate(attribute, FilterOp.HAS)])


def test_deletes_drop_has_counts(stage, history, make_query) -> None:
    assert (_has(stage, "t"), _has(stage, "u"), _count(stage)) == (3, 3, 3)
    stage.delete_attributes(make_query(["/B"]), ["t"], 4).wait()
    assert (_has(stage, "t"), _has(stage, "u"), _count(stage)) == (2, 3, 3)
    stage.delete_attributes(make_query(["/C"]), [], 5).wait()
    assert (_has(stage, "t"), _has(stage, "u"), _count(stage)) == (1, 2, 2)
    stage.advance_write_floor(5).wait()
    assert latest(stage, history, "t", 5) == {"/A": 4.0}
    assert latest(stage, history, "u", 5) == {"/A": 7.0, "/B": 8.0}


# ---------------------------------------------------------------- whole-prim deletes


def test_whole_prim_delete_removes_every_attribute_and_the_prim(stage, history, make_query) -> None:
    stage.delete_attributes(make_query(["/C"]), [], 4).wait()
    # Before sealing, the state at 3 still has the prim's old values.
    assert latest(stage, history, "u", 3) == {"/A": 7.0, "/B": 8.0, "/C": 9.0}
    stage.advance_write_floor(4).wait()
    groups = read_groups(stage, history, ["t", "u"], OrdinalRange.latest(4))
    assert values_of(groups, "t") == {"/A": 4.0, "/B": 5.0}
    assert values_of(groups, "u") == {"/A": 7.0, "/B": 8.0}
    assert prim_paths_held(stage, history, 4) == ["/A", "/B"]
    groups = read_groups(stage, history, ["t", "u"], OrdinalRange.between(4, 4))
    assert tombstones_of(groups, "t") == ["/C"]
    assert tombstones_of(groups, "u") == ["/C"]
    assert values_of(groups, "t") == {}


def test_insert_works_again_on_a_deleted_prim(stage, history, make_query) -> None:
    c = make_query(["/C"])
    assert_rejected(
        stage.write_attribute(
            c, "v", 4, np.ones(1, F32), is_array=False, prim_mode=PrimMode.INSERT
        ),
        ErrorCode.PRIM_NOT_FOUND,
    )
    stage.delete_attributes(c, [], 4).wait()
    stage.advance_write_floor(4).wait()
    stage.write_attributes(
        c, [WriteDesc("v", np.array([42], F32), False)], 5, prim_mode=PrimMode.INSERT
    ).wait()
    stage.advance_write_floor(5).wait()
    groups = read_groups(stage, history, ["t", "u", "v"], OrdinalRange.latest(5))
    assert values_of(groups, "v") == {"/C": 42.0}
    assert values_of(groups, "t") == {"/A": 4.0, "/B": 5.0}  # /C came back without its old t
    assert values_of(groups, "u") == {"/A": 7.0, "/B": 8.0}
    assert prim_paths_held(stage, history, 5) == ABC


def test_whole_prim_delete_of_a_prim_the_stage_does_not_hold(stage, history, make_query) -> None:
    stage.delete_attributes(make_query(["/Nope"]), [], 4).wait()
    stage.advance_write_floor(4).wait()
    assert prim_paths_held(stage, history, 4) == ABC
    assert latest(stage, history, "t", 4) == {"/A": 4.0, "/B": 5.0, "/C": 3.0}
