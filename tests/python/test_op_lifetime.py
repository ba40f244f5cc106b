"""Op and source lifetime (README.md, "Where we differ": large payloads, op ids of dropped
Operations).

* A write's source stays alive until the op no longer reads it, whatever the caller releases
  or drops (``release_op``, the ``Operation``, the array itself, a garbage collection).
* An op whose ``Operation`` is collected unwaited is detached: the stage forgets it once it
  completes, so a producer that never waits keeps a bounded op table. A raw id (``op.op_id``
  was read) stays tracked until ``release_op`` or ``wait()``.
* Handle wrappers do not leave the op ids of their reserving enqueue or of their own release
  behind.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Callable, Iterator

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, HierarchyRelation, OrdinalRange, WriteDesc, gates
from ovstage._fastpath import DEFER_COPY_BYTES

LANES = 64
#: Longest wait of a test (ns): a test whose op never completes fails instead of hanging.
WAIT_NS = 30_000_000_000
#: Rows of LANES float32 making a payload just over the deferred-copy size.
ROWS = DEFER_COPY_BYTES // (4 * LANES) + 8


@pytest.fixture
def wide(make_query) -> ovstage.Query:
    """A query over ROWS prims (one LANES-wide float32 row each)."""
    return make_query([f"/Wide/p{i}" for i in range(ROWS)])


def source(seed: int) -> np.ndarray:
    """A payload of more than DEFER_COPY_BYTES whose values depend on ``seed``."""
    return np.arange(ROWS * LANES, dtype=np.float32).reshape(ROWS, LANES) + seed


def sealed_values(stage: ovstage.Stage, query: ovstage.Query, attr: str, ordinal: int):
    """The sealed (ROWS, LANES) values of ``attr`` (fixed or ragged rows)."""
    stage.advance_write_floor(ordinal).wait(WAIT_NS)
    with stage.read_attributes(query, [attr], OrdinalRange.latest(ordinal)) as read:
        groups = list(read.groups())
        assert len(groups) == 1
        with groups[0] as group:
            if not group.is_array:
                return group.array().reshape(ROWS, LANES).copy()
            indexed = group.has_data_index_map
            rows = [group.data_row_index(k) if indexed else k for k in range(group.prim_count)]
            return np.stack([group.array(r) for r in rows])


def settles(stage: ovstage.Stage, done: Callable[[dict[str, int]], bool]) -> bool:
    """Whether the stage's diagnostics satisfy ``done`` within WAIT_NS: for ops nobody can
    wait for any more (dropped Operations of releases and floor advances)."""
    deadline = time.monotonic_ns() + WAIT_NS
    while not done(stage._diagnostics()):
        if time.monotonic_ns() > deadline:
            return False
        time.sleep(0.001)
    return True


def write_fast(stage, query, attr, ordinal, values):
    return stage.write_attribute(query, attr, ordinal, values, is_array=False)


def write_general(stage, query, attr, ordinal, values):
    # A list of one tensor takes the general (make_dltensor) path.
    return stage.write_attribute(query, attr, ordinal, [values], is_array=False)


def write_ragged_rows(stage, query, attr, ordinal, values):
    # One tensor per row (views of ``values``, which they keep alive).
    return stage.write_attribute(query, attr, ordinal, list(values), is_array=True)


def write_batch(stage, query, attr, ordinal, values):
    small = np.zeros(ROWS, np.float32)
    writes = [WriteDesc(attr, values, False), WriteDesc(attr + "_small", small, False)]
    return stage.write_attributes(query, writes, ordinal)


WRITERS: dict[str, Callable[..., ovstage.Operation]] = {
    "fast-path": write_fast,
    "general-path": write_general,
    "write_attributes": write_batch,
    "ragged-rows": write_ragged_rows,
}


@pytest.fixture
def held_writes() -> Iterator[gates.Gate]:
    with gates.scoped_write_gate() as gate:
        yield gate


@pytest.mark.parametrize("writer", WRITERS.values(), ids=WRITERS.keys())
@pytest.mark.parametrize("let_go", ["release_op", "drop-Operation", "raw-id"])
def test_a_pending_large_write_keeps_its_source(
    stage: ovstage.Stage, wide, held_writes: gates.Gate, writer, let_go: str
) -> None:
    """Regression (issue 10 defect 0): ``release_op`` of a pending large write dropped the
    stage's hold on the source; the op then copied freed memory and sealed zeros."""
    values = source(1)
    ref = weakref.ref(values)
    op = writer(stage, wide, "x", 1, values)
    assert op.ok, op.error_message()
    assert held_writes.wait_until_entered()
    if let_go in ("release_op", "raw-id"):
        op_id = op.op_id
    if let_go == "release_op":
        # 0.3.0 refuses to release a pending op; it stays tracked (and its source held).
        assert stage.release_op(op_id) == ErrorCode.OP_FAILED
    del op, values
    gc.collect()
    assert ref() is not None, "the source of a pending write was freed"
    held_writes.release()
    expected = source(1)
    np.testing.assert_array_equal(sealed_values(stage, wide, "x", 1), expected)
    if let_go in ("release_op", "raw-id"):
        assert stage.wait_op(op_id)[0] == ErrorCode.OK
        assert stage.release_op(op_id) == ErrorCode.OK
    # Once the op is done, the next large write lets go of the finished one's source.
    stage.write_attribute(wide, "y", 2, source(2), is_array=False).wait(WAIT_NS)
    gc.collect()
    assert ref() is None, "the source outlived its write"


def test_a_waited_large_write_lets_go_of_its_source(stage: ovstage.Stage, wide) -> None:
    values = source(4)
    ref = weakref.ref(values)
    stage.write_attribute(wide, "x", 1, values, is_array=False).wait(WAIT_NS)
    del values
    gc.collect()
    assert ref() is None, "a waited write's source outlived the wait"
    assert not stage._holds


def test_holds_stay_bounded_under_large_fire_and_forget_writes(stage: ovstage.Stage, wide) -> None:
    refs = []
    for ordinal in range(1, 33):
        values = source(ordinal)
        refs.append(weakref.ref(values))
        stage.write_attribute(wide, "x", ordinal, values, is_array=False)  # dropped unwaited
        del values
    stage.advance_write_floor(32).wait(WAIT_NS)
    last = source(0)
    # The next large write takes the engine's report of the finished ones.
    stage.write_attribute(wide, "y", 33, last, is_array=False).wait(WAIT_NS)
    gc.collect()
    assert [i for i, r in enumerate(refs) if r() is not None] == []
    assert len(stage._holds) <= 1
    np.testing.assert_array_equal(sealed_values(stage, wide, "x", 32), source(32))
    assert stage._diagnostics()["ops"] == 0


def test_a_report_taken_before_the_hold_is_recorded_is_not_lost(
    stage: ovstage.Stage, wide, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another thread may take the engine's report of a finished write between this thread's
    enqueue and its hold: the hold must not then stay until destroy()."""
    hold = stage._hold

    def racing_hold(op_id: int, source: object) -> None:
        assert stage.wait_op(op_id)[0] == ErrorCode.OK  # the write finished ...
        stage._take_sources_done()  # ... and "another thread" took its report
        hold(op_id, source)

    monkeypatch.setattr(stage, "_hold", racing_hold)
    values = source(3)
    ref = weakref.ref(values)
    op = stage.write_attribute(wide, "x", 1, values, is_array=False)
    del values
    op.wait(WAIT_NS)
    gc.collect()
    assert ref() is None, "the finished write's source is still held"
    assert not stage._holds and not stage._reported_early


def test_large_writes_from_threads_leave_no_holds(stage: ovstage.Stage, wide) -> None:
    """Threads race their holds against each other's reports of finished writes."""
    refs: list[weakref.ref[np.ndarray]] = []

    def produce(attr: str) -> None:
        for ordinal in range(1, 9):
            values = source(ordinal)
            refs.append(weakref.ref(values))
            stage.write_attribute(wide, attr, ordinal, values, is_array=False)  # dropped

    threads = [threading.Thread(target=produce, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    stage.advance_write_floor(8).wait(WAIT_NS)
    stage.write_attribute(wide, "last", 9, source(0), is_array=False).wait(WAIT_NS)
    gc.collect()
    assert len(refs) == 32
    assert [r for r in refs if r() is not None] == []
    assert not stage._holds and not stage._reported_early
    assert stage._diagnostics()["ops"] == 0


@pytest.mark.parametrize("sparsity", ["index_map", "mask"])
def test_index_map_and_mask_are_read_at_enqueue(
    stage: ovstage.Stage, make_query, sparsity: str
) -> None:
    """The op runs later, but changing the caller's index_map or mask after the enqueue does
    not change what it writes."""
    query = make_query(["/A", "/B", "/C", "/D"])
    stage.write_attribute(query, "t", 1, np.zeros(4, np.float32), is_array=False).wait(WAIT_NS)
    values = np.array([10, 20, 30, 40], np.float32)
    with gates.scoped_write_gate() as gate:
        if sparsity == "index_map":
            words = np.array([3, 2, 1, 0], np.uint32)
            op = stage.write_attribute(query, "t", 2, values, is_array=False, index_map=words)
            expected = [40, 30, 20, 10]
            changed = np.array([0, 0, 0, 0], np.uint32)
        else:
            words = np.array([0b0101], np.uint64)
            op = stage.write_attribute(query, "t", 2, values, is_array=False, mask=words, count=4)
            expected = [10, 0, 30, 0]
            changed = np.array([0b1010], np.uint64)
        assert op.ok, op.error_message()
        assert gate.wait_until_entered()
        words[:] = changed
        gate.release()
        op.wait(WAIT_NS)
    stage.advance_write_floor(2).wait(WAIT_NS)
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(2)) as read:
        (group,) = list(read.groups())
        with group:
            assert group.array().tolist() == expected


def test_fire_and_forget_writes_leave_no_tracked_ops(stage: ovstage.Stage, make_query) -> None:
    """Regression (issue 10 defect 4): 20,000 writes whose Operation is dropped unwaited kept
    20,000 op ids tracked until destroy()."""
    query = make_query(["/A", "/B", "/C"])
    values = np.zeros(3, np.float32)
    count = 20_000
    for ordinal in range(1, count + 1):
        values[0] = ordinal
        stage.write_attribute(query, "t", ordinal, values, is_array=False)
        if ordinal % 64 == 0:
            stage.advance_write_floor(ordinal)  # dropped too
    stage.advance_write_floor(count).wait(WAIT_NS)  # every write has completed once this has
    gc.collect()
    assert settles(stage, lambda d: d["ops"] == 0), stage._diagnostics()
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(count)) as read:
        for group in read.groups():
            with group:
                assert group.array()[0] == count


def test_a_dropped_pending_op_is_forgotten_when_it_completes(
    stage: ovstage.Stage, make_query, held_writes: gates.Gate
) -> None:
    query = make_query(["/A"])
    stage.write_attribute(query, "t", 1, np.ones(1, np.float32), is_array=False)
    assert held_writes.wait_until_entered()
    gc.collect()
    assert stage._diagnostics()["ops"] == 1, "a pending op stays tracked while it runs"
    held_writes.release()
    stage.advance_write_floor(1).wait(WAIT_NS)
    assert stage._diagnostics()["ops"] == 0


def test_raw_ids_stay_tracked_until_released(stage: ovstage.Stage, make_query) -> None:
    """Reading ``op_id`` makes the id the caller's: the Operation's collection leaves it."""
    query = make_query(["/A"])
    op_id = stage.write_attribute(query, "t", 1, np.ones(1, np.float32), is_array=False).op_id
    gc.collect()
    stage.advance_write_floor(1).wait(WAIT_NS)
    assert stage._diagnostics()["ops"] == 1
    assert stage.wait_op(op_id) == (ErrorCode.OK, [], 0)
    assert stage._diagnostics()["ops"] == 1, "a raw wait_op does not release"
    assert stage.release_op(op_id) == ErrorCode.OK
    assert stage._diagnostics()["ops"] == 0


def test_an_operation_built_from_an_id_does_not_detach_it(stage: ovstage.Stage, make_query) -> None:
    query = make_query(["/A"])
    op_id = stage.write_attribute(query, "t", 1, np.ones(1, np.float32), is_array=False).op_id
    ovstage.Operation(stage, ErrorCode.OK, op_id)  # collected at once
    gc.collect()
    stage.advance_write_floor(1).wait(WAIT_NS)
    assert stage.wait_op(op_id)[0] == ErrorCode.OK
    assert stage.release_op(op_id) == ErrorCode.OK


def test_a_timed_out_wait_then_a_drop_detaches(
    stage: ovstage.Stage, make_query, held_writes: gates.Gate
) -> None:
    query = make_query(["/A"])
    op = stage.write_attribute(query, "t", 1, np.ones(1, np.float32), is_array=False)
    assert held_writes.wait_until_entered()
    try:
        op.wait(0)
    except ovstage.OvstageError as err:  # (a kept traceback would keep the Operation alive)
        assert err.code == ErrorCode.TIMEOUT
    else:
        pytest.fail("a held write finished")
    del op
    gc.collect()
    held_writes.release()
    stage.advance_write_floor(1).wait(WAIT_NS)
    assert stage._diagnostics()["ops"] == 0


def test_collected_read_handles_leave_no_op_ids(
    stage: ovstage.Stage, make_query, write_sealed
) -> None:
    """Regression (issue 10 defect 4): a Read released by its finalizer left the op id of its
    own release (and of its reserving enqueue) tracked."""
    query = make_query(["/A", "/B"])
    write_sealed(query, "t", 1, np.arange(2, dtype=np.float32))
    with pytest.warns(ResourceWarning, match="garbage-collected unreleased"):
        for _ in range(3):
            read = stage.read_attributes(query, ["t"], OrdinalRange.latest(1))
            for group in read.groups():
                group.release()
            del read, group
            gc.collect()
    assert settles(stage, lambda d: (d["ops"], d["reads"]) == (0, 0)), stage._diagnostics()


def test_dropped_release_operations_leave_no_op_ids(stage: ovstage.Stage, make_query) -> None:
    query = make_query(["/A"])
    stage.write_attribute(query, "t", 1, np.ones(1, np.float32), is_array=False).wait(WAIT_NS)
    stage.advance_write_floor(1).wait(WAIT_NS)
    for _ in range(10):
        read = stage.read_attributes(query, ["t"], OrdinalRange.latest(1))
        for group in read.groups():
            group.release()
        read.release()  # the release's Operation is dropped unwaited
        floor = stage.get_attribute_write_floor("t")
        assert floor.fetch() == 1
        floor.release()
    del read, floor
    gc.collect()
    assert settles(stage, lambda d: (d["ops"], d["reads"], d["ordinal_queries"]) == (0, 0, 0))


def test_a_released_hierarchy_handle_leaves_no_op_ids(
    stage: ovstage.Stage, make_query, paths
) -> None:
    """Regression: releasing a Hierarchy did not forget the op that reserved it (other handle
    wrappers did), so ``with stage.get_hierarchy_async(...) as h: h.result()`` kept it."""
    query = make_query(["/W", "/W/A"])
    stage.write_attribute(query, "t", 1, np.zeros(2, np.float32), is_array=False).wait(WAIT_NS)
    with paths.create_path_list_from_strings(["/W/A"]) as plist:
        handles = []
        for _ in range(5):
            with stage.get_hierarchy_async(plist, 1, HierarchyRelation.PARENT) as handle:
                assert handle.result().item_paths(0) == ("/W",)
            handles.append(handle)  # still referenced: only the release can forget its op
        assert stage._diagnostics()["ops"] == 0
