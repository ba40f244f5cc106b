"""``write_attributes`` batch rules (0.3.0): entries are ``WriteDesc``; one attribute may appear
in several entries over disjoint prims when they agree on its column identity; one cell twice
is refused; an empty batch is accepted; the batch is admitted as a whole before its first entry
applies; each entry's ``cuda_event`` / ``cuda_stream`` is that entry's own sync."""

from __future__ import annotations

from typing import Any

import numpy as np
import ovstage
import pytest
from conftest import query_over
from ovstage import ErrorCode, OvstageError, WriteDesc
from readback import latest

F32 = np.float32


def refused(op: Any, code: ErrorCode, words: str) -> None:
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == code, info.value
    assert words in info.value.message


@pytest.mark.parametrize("entry", [{"attribute": "x"}, ("x", np.zeros(2, F32), False), None])
def test_entries_must_be_write_descs(stage: ovstage.Stage, entry: Any) -> None:
    with query_over(stage, ["/A", "/B"]) as q:
        with pytest.raises(TypeError, match=r"writes\[1\] must be a WriteDesc"):
            stage.write_attributes(q, [WriteDesc("y", np.zeros(2, F32), False), entry], 1)
        with pytest.raises(TypeError, match="writes must be a sequence of WriteDesc"):
            stage.write_attributes(q, WriteDesc("y", np.zeros(2, F32), False), 1)  # type: ignore[arg-type]
        stage.advance_write_floor(1).wait()
        assert latest(stage, q, "y", 1) == {}, "nothing was written"


def test_an_empty_batch_and_a_query_without_prims_are_accepted(stage: ovstage.Stage) -> None:
    with query_over(stage, ["/A"]) as q, query_over(stage, []) as empty:
        stage.write_attributes(q, [], 1).wait()
        stage.write_attributes(empty, [WriteDesc("x", np.zeros(0, F32), False)], 1).wait()
        stage.advance_write_floor(1).wait()
        assert latest(stage, q, "x", 1) == {}


def test_one_attribute_over_disjoint_prims(stage: ovstage.Stage) -> None:
    with query_over(stage, ["/A", "/B"]) as q:
        entries = [
            WriteDesc("x", np.array([1, 0], F32), False, mask=[0b01], count=2),
            WriteDesc("x", np.array([0, 2], F32), False, mask=[0b10], count=2),
        ]
        stage.write_attributes(q, entries, 1).wait()
        stage.advance_write_floor(1).wait()
        assert latest(stage, q, "x", 1) == {"/A": 1.0, "/B": 2.0}


def test_one_cell_twice_or_two_identities_are_refused(stage: ovstage.Stage) -> None:
    with query_over(stage, ["/A", "/B"]) as q:
        twice = [
            WriteDesc("y", np.array([1, 2], F32), False),
            WriteDesc("y", np.array([3], F32), False, count=1),
        ]
        refused(
            stage.write_attributes(q, twice, 1),
            ErrorCode.INVALID_ARGUMENT,
            "repeated concrete write target for prim '/A' and canonical attribute 'y'",
        )
        identities = [
            WriteDesc("z", np.array([1, 0], F32), False, mask=[0b01], count=2),
            WriteDesc("z", np.array([0, 2], np.int32), False, mask=[0b10], count=2),
        ]
        refused(
            stage.write_attributes(q, identities, 1),
            ErrorCode.INVALID_ARGUMENT,
            'descriptors for canonical attribute "z" declare incompatible column identities',
        )
        stage.advance_write_floor(1).wait()
        assert latest(stage, q, "y", 1) == {} and latest(stage, q, "z", 1) == {}


def test_the_batch_is_admitted_as_a_whole(stage: ovstage.Stage) -> None:
    with query_over(stage, ["/A"]) as q:
        stage.write_attribute(q, "late", 1, np.array([1], F32), is_array=False).wait()
        stage.advance_write_floor(3, ovstage.Scope.INCLUDE, ["late"]).wait()
        entries = [
            WriteDesc("early", np.array([5], F32), False),
            WriteDesc("late", np.array([6], F32), False),
        ]
        refused(stage.write_attributes(q, entries, 2), ErrorCode.WRITE_FLOOR_VIOLATION, "late")
        stage.write_attributes(q, entries[:1], 4).wait()
        stage.advance_write_floor(4).wait()
        assert latest(stage, q, "early", 4) == {"/A": 5.0}, "the refused batch wrote nothing"


def test_each_entry_has_its_own_cuda_sync(stage: ovstage.Stage) -> None:
    if ovstage.cuda_available():
        pytest.skip("a GPU is usable here; the fake-driver scenario checks the syncs are waited")
    with query_over(stage, ["/A"]) as q:
        entries = [
            WriteDesc("a", np.array([1], F32), False),
            WriteDesc("b", np.array([2], F32), False, cuda_stream=1),
        ]
        refused(
            stage.write_attributes(q, entries, 1),
            ErrorCode.NOT_SUPPORTED,
            "writes[1]: cuda_stream: CUDA synchronization needs a GPU",
        )
        with pytest.raises(ValueError, match=r"writes\[0\]: cuda_event"):
            stage.write_attributes(q, [WriteDesc("a", np.array([1], F32), False, cuda_event=-1)], 1)
