"""The history window (README "Where we differ"): ``OrdinalRange.latest(N)`` behind the floor
is the state at N while N is at or above ``get_oldest_preserved_ordinal``; ``StageConfig``
sets the window per stage, and ``history_ordinals=0`` answers as the reference."""

from __future__ import annotations

import contextlib

import numpy as np
import ovstage
import pytest
from conftest import query_over
from ovstage import ErrorCode, OrdinalRange, StageConfig
from readback import latest, oldest_preserved, read_error, read_groups, values_of

F32 = np.float32


@contextlib.contextmanager
def windowed(ordinals: int | None, budget: int | None = None):
    stage = ovstage.Stage(
        "window", config=StageConfig(history_ordinals=ordinals, history_bytes=budget)
    )
    try:
        with query_over(stage, ["/A", "/B"]) as query:
            yield stage, query
    finally:
        stage.destroy()


def _seal_write(stage, query, name, ordinal, values, **kw) -> None:
    stage.write_attribute(query, name, ordinal, np.array(values, F32), is_array=False, **kw).wait()
    stage.advance_write_floor(ordinal).wait()


def test_config_fields_are_checked_and_reported() -> None:
    with pytest.raises(TypeError, match="history_ordinals"):
        StageConfig(history_ordinals=True)
    with pytest.raises(ValueError, match="history_bytes"):
        StageConfig(history_bytes=-1)
    with pytest.raises(TypeError):
        StageConfig(history_ordinals=1.5)  # type: ignore[arg-type]
    with windowed(3, 1 << 20) as (stage, _):
        assert (stage.history_ordinals, stage.history_bytes) == (3, 1 << 20)
    plain = ovstage.Stage("plain")
    try:
        assert (plain.history_ordinals, plain.history_bytes) == (16, 256 << 20)
    finally:
        plain.destroy()


def test_each_stage_keeps_its_own_window() -> None:
    with windowed(0) as (parity, pq), windowed(None) as (ours, oq):
        for stage, query in ((parity, pq), (ours, oq)):
            _seal_write(stage, query, "t", 1, [1, 2])
            _seal_write(stage, query, "t", 2, [3, 4])
        assert read_error(parity, pq, ["t"], OrdinalRange.latest(1)) == ErrorCode.OUT_OF_RANGE
        assert latest(ours, oq, "t", 1) == {"/A": 1.0, "/B": 2.0}
        assert parity.config.history_ordinals == 0
        assert parity.history_ordinals == 0 and ours.history_ordinals == 16


def test_the_window_boundary_is_exact() -> None:
    with windowed(3) as (stage, query):
        for o in range(1, 11):
            _seal_write(stage, query, "t", o, [o, 10 * o])
        assert oldest_preserved(stage) == 7
        for n in range(7, 11):
            groups = read_groups(stage, query, ["t"], OrdinalRange.latest(n))
            assert values_of(groups, "t") == {"/A": float(n), "/B": float(10 * n)}
            assert [g.ordinal for g in groups] == [n]
        assert read_error(stage, query, ["t"], OrdinalRange.latest(6)) == ErrorCode.OUT_OF_RANGE
        stage.advance_write_floor(11).wait()  # no change: the window still moves on
        assert oldest_preserved(stage) == 8
        assert read_error(stage, query, ["t"], OrdinalRange.latest(7)) == ErrorCode.OUT_OF_RANGE


def test_deletes_and_creates_inside_the_window() -> None:
    with windowed(None) as (stage, query), query_over(stage, ["/A"]) as qa:
        _seal_write(stage, query, "t", 2, [1, 2])
        stage.delete_attributes(qa, ["t"], 4).wait()
        stage.write_attribute(qa, "t", 6, np.array([9], F32), is_array=False).wait()
        stage.advance_write_floor(6).wait()
        assert latest(stage, query, "t", 3) == {"/A": 1.0, "/B": 2.0}
        assert latest(stage, query, "t", 4) == {"/B": 2.0}
        assert latest(stage, query, "t", 6) == {"/A": 9.0, "/B": 2.0}
        assert latest(stage, query, "t", 1) == {}


def test_attributes_read_at_n_are_consistent() -> None:
    with windowed(None) as (stage, query):
        for o in range(1, 7):
            stage.write_attribute(query, "pos", o, np.array([o, o], F32), is_array=False).wait()
            stage.write_attribute(query, "vel", o, np.array([-o, -o], F32), is_array=False).wait()
            stage.advance_write_floor(o).wait()
        together = read_groups(stage, query, ["pos", "vel"], OrdinalRange.latest(3))
        assert values_of(together, "pos") == {"/A": 3.0, "/B": 3.0}
        assert values_of(together, "vel") == {"/A": -3.0, "/B": -3.0}
        assert latest(stage, query, "vel", 3) == values_of(together, "vel")


def test_an_export_of_an_old_version_outlives_the_window() -> None:
    with windowed(2) as (stage, query):
        _seal_write(stage, query, "t", 1, [1, 2])
        _seal_write(stage, query, "t", 2, [3, 4])
        with stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read:
            read.wait()
            group = read.fetch_next()
            view = group.array(0)
            group.release()
        for o in range(3, 8):
            _seal_write(stage, query, "t", o, [o, o])
        assert oldest_preserved(stage) >= 2
        assert view.tolist() == [1.0, 2.0]
