"""The hot paths of reads, writes and seals (python/ovstage/_fastpath.py) answer exactly what
the general paths answer, including when both are used on one handle."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import ovstage
import pytest
from conftest import MakeQuery
from ovstage import AttributeSemantic, ErrorCode, OrdinalRange, OvstageError, PrimMode

PRIMS = ["/f/a", "/f/b", "/f/c"]


def test_a_read_fetched_by_handle_and_by_object_hands_out_each_group_once(
    stage: ovstage.Stage, make_query: MakeQuery
) -> None:
    query = make_query(PRIMS)
    for name in ("x", "y"):
        stage.write_attribute(query, name, 1, np.ones(3, np.float32), is_array=False).wait()
    stage.advance_write_floor(1).wait()
    with stage.read_attributes(query, ["x", "y"], OrdinalRange.latest(1)) as rd:
        first = stage.fetch_read_next(rd.handle)  # by the int handle: the general path
        assert first is not None
        rest = list(rd.groups())  # by the Read object: the fast path, which counted 2
        assert [g.attribute for g in rest] != [first.attribute]
        assert len(rest) == 1
        assert rd.fetch_next() is None
        assert stage.fetch_read_next(rd.handle) is None
        for group in (first, *rest):
            group.release()
    with pytest.raises(OvstageError) as err:
        rd.fetch_next()
    assert err.value.code == ErrorCode.INVALID_HANDLE


def test_leaving_a_read_unfetched_releases_its_groups(
    stage: ovstage.Stage, make_query: MakeQuery
) -> None:
    query = make_query(PRIMS)
    stage.write_attribute(query, "x", 1, np.ones(3, np.float32), is_array=False).wait()
    stage.advance_write_floor(1).wait()
    before = stage._diagnostics()
    with stage.read_attributes(query, ["x"], OrdinalRange.latest(1)) as rd:
        assert rd.handle
    after = stage._diagnostics()
    for key in ("ops", "reads", "groups", "buffers"):
        assert after[key] == before[key], key


def test_a_semantic_write_takes_the_fast_path_to_the_same_column(
    stage: ovstage.Stage, make_query: MakeQuery
) -> None:
    query = make_query(PRIMS)
    values = np.arange(3 * 16, dtype=np.float32).reshape(3, 4, 4)
    sem = AttributeSemantic.MATRIX
    stage.write_attribute(query, "fast", 1, values, is_array=False, semantic=sem).wait()
    # An int prim_mode (not the member) takes the general path.
    stage.write_attribute(
        query, "general", 1, values, is_array=False, semantic=sem, prim_mode=int(PrimMode.UPSERT)
    ).wait()
    stage.advance_write_floor(1).wait()
    seen = {}
    for name in ("fast", "general"):
        with stage.read_attributes(query, [name], OrdinalRange.latest(1)) as rd:
            (group,) = list(rd.groups())
            with group:
                seen[name] = (group.semantic, group.array(0).copy())
    assert seen["fast"][0] == seen["general"][0] == sem
    np.testing.assert_array_equal(seen["fast"][1], values)
    np.testing.assert_array_equal(seen["general"][1], values)


def test_the_fast_seal_refuses_what_the_general_one_refuses(stage: ovstage.Stage) -> None:
    with pytest.raises(TypeError):
        stage.advance_write_floor("1")  # type: ignore[arg-type]
    with pytest.raises((OverflowError, ValueError)):
        stage.advance_write_floor(-1)
    stage.advance_write_floor(5).wait()
    assert stage.advance_write_floor(3).wait().ok  # floors never move down: a no-op
    stage.destroy()
    with pytest.raises(OvstageError) as err:
        stage.advance_write_floor(6)
    assert err.value.code == ErrorCode.INVALID_HANDLE


def test_the_hot_paths_keep_the_gil_and_waits_release_it(
    stage: ovstage.Stage, make_query: MakeQuery
) -> None:
    """The hot paths' native calls keep the GIL (setup.py GIL_HELD, pybind/API.md "The GIL"):
    a thread waiting for it makes no progress across writes, waits and a read's fetch, export
    and release, while a wait that blocks lets it run. The switch interval is made so long that
    the GIL changes hands only where a thread gives it up."""
    query = make_query(PRIMS)
    values = np.arange(3, dtype=np.float32)
    stage.write_attribute(query, "g", 1, values, is_array=False).wait()
    stage.advance_write_floor(1).wait()
    count = [0]
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            count[0] += 1
            time.sleep(0)  # gives up the GIL: the main thread takes it back at once

    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    spinner = threading.Thread(target=spin, daemon=True)
    try:
        spinner.start()
        deadline = time.monotonic() + 10
        while count[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert count[0] > 0, "the spinning thread never ran"
        before = count[0]
        for ordinal in range(2, 202):
            stage.write_attribute(query, "g", ordinal, values, is_array=False).wait()
        assert count[0] == before, "a write or its wait gave up the GIL"
        for _ in range(200):
            # The read's enqueue gives the GIL up (once per read, on purpose); its fetch,
            # export and releases do not.
            with stage.read_attributes(query, ["g"], OrdinalRange.latest(1)) as rd:
                before = count[0]
                for group in rd.groups():
                    with group:
                        view = np.from_dlpack(group.dlpack(0))
                        assert view.tolist() == values.tolist()
            assert count[0] == before, "a read's fetch, export or release gave up the GIL"
        time.sleep(0.01)  # a blocking call: the spinning thread runs meanwhile
        assert count[0] > before
    finally:
        stop.set()
        sys.setswitchinterval(interval)
        spinner.join(timeout=10)
    assert not spinner.is_alive()
