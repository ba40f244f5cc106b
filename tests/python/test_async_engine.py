"""The asynchronous engine seen from Python: test gates, pending ops, snapshots under concurrent
writes, many threads, ordinal-correct results under reordering, deferred copies, the write
fast path (issue 5)."""

from __future__ import annotations

import dataclasses
import gc
import random
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import ovstage
import pytest
from conftest import group_values, query_over
from ovstage import (
    ErrorCode,
    OrdinalRange,
    OvstageError,
    Scope,
    StageConfig,
    WriteDesc,
    _fastpath,
    gates,
)

ABC = ["/A", "/B", "/C"]


@pytest.fixture(autouse=True)
def _gates_reset() -> Iterator[None]:
    """Gates are process-wide: every test starts and ends with both released and zeroed."""
    gates.query_gate.reset()
    gates.write_gate.reset()
    yield
    gates.query_gate.reset()
    gates.write_gate.reset()


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


# ---------------------------------------------------------------- the gates module


def test_gates_is_importable_but_not_exported() -> None:
    import ovstage.gates as imported

    assert imported is ovstage.gates
    assert "gates" not in ovstage.__all__
    assert gates.available() is True
    for gate in (gates.query_gate, gates.write_gate):
        for name in ("enable", "wait_until_entered", "release", "reset", "fail_next"):
            assert callable(getattr(gate, name))
        assert gate.entered_count() == 0


def test_wait_until_entered_times_out_when_nothing_enters() -> None:
    with gates.scoped_write_gate() as gate:
        assert gate.wait_until_entered(timeout=1_000_000) is False
        assert gate.entered_count() == 0


def test_gate_arguments_are_validated() -> None:
    with pytest.raises(TypeError):
        gates.write_gate.wait_until_entered(timeout=0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        gates.write_gate.wait_until_entered(count=-1)


# ---------------------------------------------------------------- pending ops (§2.4, §5.4)


def test_wait_zero_on_a_held_op_raises_timeout_and_the_op_stays_waitable(stage, make_query) -> None:
    query = make_query(ABC)
    with gates.scoped_write_gate() as gate:
        op = stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False)
        assert op.ok, "the enqueue returns although the gate holds the op"
        assert gate.wait_until_entered()
        assert gate.entered_count() == 1
        for timeout in (0, 0, 20_000_000):
            with pytest.raises(OvstageError) as info:
                op.wait(timeout)
            assert info.value.code == ErrorCode.TIMEOUT
            assert op.done() is False
        gate.release()
        op.wait()
    assert op.done() is True


def test_wait_op_reports_the_lowest_pending_op_of_the_chain(stage, make_query) -> None:
    query = make_query(ABC)
    with gates.scoped_write_gate() as gate:
        first = stage.write_attribute(query, "t", 5, f32(1, 2, 3), is_array=False)
        assert gate.wait_until_entered()
        # Same ordinal: ordered after the held first write.
        second = stage.write_attribute(query, "t", 5, f32(4, 5, 6), is_array=False)
        # Another ordinal: independent of both (held by the gate itself).
        other = stage.write_attribute(query, "t", 6, f32(7, 8, 9), is_array=False)
        assert gate.wait_until_entered(count=2)
        assert stage.wait_op(second.op_id, 0) == (ErrorCode.TIMEOUT, [], first.op_id)
        assert stage.wait_op(first.op_id, 0) == (ErrorCode.TIMEOUT, [], first.op_id)
        assert stage.wait_op(other.op_id, 0) == (ErrorCode.TIMEOUT, [], other.op_id)
        gate.release()
        for op in (first, second, other):
            op.wait()


def test_fail_next_fails_the_op_with_op_failed_and_a_message(stage, make_query) -> None:
    query = make_query(ABC)
    gates.write_gate.fail_next()
    op = stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False)
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.OP_FAILED
    assert "fail_next" in info.value.message
    assert "fail_next" in op.error_message()
    assert gates.write_gate.entered_count() == 1

    gates.write_gate.fail_next()
    raw = stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False)
    code, error_ids, _ = stage.wait_op(raw.op_id)
    assert code == ErrorCode.OP_FAILED, "0.3.0: the waited op failed"
    assert error_ids == [raw.op_id]
    assert stage.release_op(raw.op_id) == ErrorCode.OK

    stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False).wait()


def test_fail_next_applies_to_a_held_op_when_released(stage, make_query) -> None:
    query = make_query(ABC)
    with gates.scoped_write_gate() as gate:
        op = stage.write_attribute(query, "t", 1, f32(1, 2, 3), is_array=False)
        assert gate.wait_until_entered()
        gate.fail_next()
        gate.release()
        with pytest.raises(OvstageError) as info:
            op.wait()
        assert info.value.code == ErrorCode.OP_FAILED


def test_fail_next_on_the_query_gate_fails_a_read(stage, make_query, write_sealed) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, f32(1, 2, 3))
    gates.query_gate.fail_next()
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read:
        with pytest.raises(OvstageError) as info:
            read.wait()
        assert info.value.code == ErrorCode.OP_FAILED
        with pytest.raises(OvstageError) as info:
            read.fetch_next()
        assert info.value.code == ErrorCode.OP_FAILED


def test_query_gate_holds_reads_but_not_writes(stage, make_query, write_sealed, paths) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, f32(1, 2, 3))
    with gates.scoped_query_gate() as gate:
        read = stage.read_attributes(query, ["t"], OrdinalRange.latest(1))
        assert gate.wait_until_entered()
        assert read.op.done() is False
        with pytest.raises(OvstageError) as info:
            read.fetch_next(timeout=0)
        assert info.value.code == ErrorCode.TIMEOUT
        stage.write_attribute(query, "t", 2, f32(4, 5, 6), is_array=False).wait()
        gate.release()
        with read:
            values = {}
            for group in read.groups():
                with group:
                    values.update(group_values(paths, group))
    assert values == {"/A": 1.0, "/B": 2.0, "/C": 3.0}


# ---------------------------------------------------------------- snapshots, no conflicts


def test_a_read_overlapping_a_pending_write_returns_the_sealed_values(
    stage, make_query, write_sealed, read_values
) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, f32(1, 2, 3))
    with gates.scoped_write_gate() as gate:
        pending = stage.write_attribute(query, "t", 2, f32(7, 8, 9), is_array=False)
        assert gate.wait_until_entered()
        # The reference fails this read with OP_FAILED; we serve the sealed state.
        assert read_values(query, "t", 2) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
        gate.release()
        pending.wait()
    # Applied but not sealed yet: the state at 2 is refused, the snapshot at 1 is the sealed
    # values.
    with pytest.raises(OvstageError) as refused:
        read_values(query, "t", 2)
    assert refused.value.code == ErrorCode.WRITE_FLOOR_VIOLATION
    assert read_values(query, "t", 1) == {"/A": 1.0, "/B": 2.0, "/C": 3.0}
    stage.advance_write_floor(2).wait()
    assert read_values(query, "t", 2) == {"/A": 7.0, "/B": 8.0, "/C": 9.0}


def test_writes_overlapping_a_live_read_group_succeed_and_the_group_keeps_its_snapshot(
    stage, make_query, write_sealed, read_values
) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, f32(1, 2, 3))
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(1)) as read:
        group = read.fetch_next()
        assert group is not None
        with group:
            view = group.array(0)
            exported = np.from_dlpack(group.dlpack(0))
            for ordinal in (2, 4):
                # The reference rejects these writes ("overlapping outstanding read").
                stage.write_attribute(
                    query, "t", ordinal, f32(ordinal, ordinal, ordinal), is_array=False
                ).wait()
                stage.advance_write_floor(ordinal).wait()
                # A masked write folds into the shared buffer: copy-on-write.
                stage.write_attribute(
                    query, "t", ordinal + 1, f32(0, 0, 0), is_array=False, count=3, mask=[0b010]
                ).wait()
            assert view.tolist() == [1.0, 2.0, 3.0]
            assert exported.tolist() == [1.0, 2.0, 3.0]
    assert read_values(query, "t", 4) == {"/A": 4.0, "/B": 4.0, "/C": 4.0}
    assert exported.tolist() == [1.0, 2.0, 3.0], "exports outlive the group"


def test_a_read_never_fails_with_op_failed_while_a_producer_runs_ahead(
    stage, make_query, write_sealed, read_values
) -> None:
    query = make_query(ABC)
    write_sealed(query, "t", 1, f32(1, 1, 1))
    ops = [stage.write_attribute(query, "t", o, f32(o, o, o), is_array=False) for o in range(2, 40)]
    for floor in range(1, 40, 3):
        stage.advance_write_floor(floor).wait()
        values = read_values(query, "t", floor)
        assert values == {"/A": floor, "/B": floor, "/C": floor}
    for op in ops:
        op.wait()


# ---------------------------------------------------------------- threads


def test_eight_threads_write_and_read_one_stage_concurrently(stage, make_query) -> None:
    query = make_query([f"/T/p{i}" for i in range(64)])
    attrs = ["w0", "w1", "w2", "w3"]
    for attr in attrs:
        stage.write_attribute(query, attr, 1, np.zeros(64, np.float32), is_array=False).wait()
    stage.advance_write_floor(1).wait()
    ordinals = 60
    errors: list[BaseException] = []
    seen_floors: dict[str, list[float]] = {attr: [] for attr in attrs}
    start = threading.Barrier(8)

    def writer(attr: str) -> None:
        token = ovstage.PathDictionary(stage).intern_token(attr)
        start.wait()
        for o in range(2, ordinals + 1):
            stage.write_attribute(query, attr, o, np.full(64, o, np.float32), is_array=False)
            stage.advance_write_floor(o, Scope.INCLUDE, [token]).wait()

    def reader(attr: str) -> None:
        start.wait()
        done = 0
        while done < 40:
            with stage.get_attribute_write_floor(attr) as floor_query:
                floor = floor_query.fetch()
            try:
                with stage.read_attributes(query, [attr], OrdinalRange.latest(floor)) as read:
                    read.wait()  # never OP_FAILED, never a floor violation: the floor is sealed
                    for group in read.groups():
                        with group:
                            data = group.array(0)
                            at_floor = float(floor) if floor > 1 else 0.0  # zeros at 1
                            assert data.tolist() == [at_floor] * 64, "the state at the floor"
                            seen_floors[attr].append(float(data[0]))
            except OvstageError as exc:
                # The writer sealed the next ordinal meanwhile: the state at floor is gone. An
                # enqueue that decides it at once says OUT_OF_RANGE; a read op that fails with it
                # when it runs makes wait() raise OP_FAILED carrying the op's message.
                gone = exc.code == ErrorCode.OUT_OF_RANGE or (
                    exc.code == ErrorCode.OP_FAILED and "is no longer held" in str(exc)
                )
                assert gone, exc
                continue
            done += 1

    def guarded(fn: Any, attr: str) -> None:
        try:
            fn(attr)
        except BaseException as exc:  # collected and re-raised by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(writer, a)) for a in attrs]
    threads += [threading.Thread(target=guarded, args=(reader, a)) for a in attrs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive()
    assert not errors, errors
    for attr in attrs:
        assert seen_floors[attr] == sorted(seen_floors[attr]), "reads never go back in time"
        with stage.read_attributes(query, [attr], OrdinalRange.latest(ordinals)) as read:
            for group in read.groups():
                with group:
                    assert group.array(0).tolist() == [float(ordinals)] * 64


@pytest.mark.parametrize("workers", [1, 2, None])
def test_shuffled_ordinals_from_many_threads_equal_serialized_execution(
    workers: int | None, paths
) -> None:
    prims, ordinals, threads = 12, 48, 4
    rng = random.Random(workers or 0)

    def payload(ordinal: int, seq: int) -> np.ndarray:
        return np.array([ordinal * 100 + seq * 10 + p for p in range(prims)], np.float32)

    even_mask = [sum(1 << p for p in range(0, prims, 2))]
    # Ordinal o belongs to thread o % threads, which submits its two writes in order: the full
    # write, then a masked write of the even prims. Each thread shuffles its ordinals.
    plans: list[list[int]] = [[] for _ in range(threads)]
    for o in range(1, ordinals + 1):
        plans[o % threads].append(o)
    for plan in plans:
        rng.shuffle(plan)

    # Serialized, in-order execution of the same writes.
    expected = np.zeros(prims, np.float32)
    for o in range(1, ordinals + 1):
        expected[:] = payload(o, 0)
        expected[0::2] = payload(o, 1)[0::2]

    config = StageConfig(workers=workers) if workers else None
    with (
        ovstage.Stage("shuffle", config=config) as stage,
        query_over(stage, [f"/S/p{i}" for i in range(prims)]) as query,
    ):
        barrier = threading.Barrier(threads)
        ops: list[ovstage.Operation] = []
        lock = threading.Lock()

        def submit(plan: list[int]) -> None:
            barrier.wait()
            for o in plan:
                a = stage.write_attribute(query, "v", o, payload(o, 0), is_array=False)
                b = stage.write_attribute(
                    query, "v", o, payload(o, 1), is_array=False, count=prims, mask=even_mask
                )
                with lock:
                    ops.extend((a, b))

        workers_threads = [threading.Thread(target=submit, args=(p,)) for p in plans]
        for t in workers_threads:
            t.start()
        for t in workers_threads:
            t.join(timeout=120)
            assert not t.is_alive()
        for op in ops:
            # Under the 0.3.0 default policy (NONDECREASING) a write below one submitted
            # before it is refused; the highest ordinal's writes always succeed, so the sealed
            # result is still that of in-order execution.
            try:
                op.wait()
            except OvstageError as exc:
                assert "ordinal conflict" in exc.message, exc.message
        stage.advance_write_floor(ordinals).wait()
        with stage.read_attributes(query, ["v"], OrdinalRange.latest(ordinals)) as read:
            groups = list(read.groups())
            assert len(groups) == 1
            with groups[0] as group:
                got = group_values(ovstage.PathDictionary(stage), group)
        assert [got[f"/S/p{i}"] for i in range(prims)] == expected.tolist()


@pytest.mark.parametrize("workers", [1, None])
def test_worker_count_does_not_change_results(workers: int | None) -> None:
    config = StageConfig(workers=workers) if workers else None
    with (
        ovstage.Stage("workers", config=config) as stage,
        query_over(stage, ABC) as query,
    ):
        ops = [
            stage.write_attribute(query, f"a{k}", o, f32(o, k, o + k), is_array=False)
            for o in range(1, 21)
            for k in range(4)
        ]
        stage.advance_write_floor(20).wait()
        for op in ops:
            op.wait()
        paths = ovstage.PathDictionary(stage)
        for k in range(4):
            with stage.read_attributes(query, [f"a{k}"], OrdinalRange.latest(20)) as read:
                for group in read.groups():
                    with group:
                        assert group_values(paths, group) == {
                            "/A": 20.0,
                            "/B": float(k),
                            "/C": float(20 + k),
                        }


# ---------------------------------------------------------------- deferred copies, fast path


def test_a_large_write_keeps_its_source_alive_until_the_op_completes(stage, make_query) -> None:
    rows = 4096
    query = make_query([f"/L/p{i}" for i in range(rows)])
    with gates.scoped_write_gate() as gate:
        source = np.arange(rows * 128, dtype=np.float32).reshape(rows, 128)  # 2 MiB: deferred
        op_id = stage.write_attribute(query, "big", 1, source, is_array=False).op_id
        assert gate.wait_until_entered()
        del source  # the Operation is gone too: only the stage's hold keeps the array alive
        gc.collect()
        gate.release()
        code, error_ids, _ = stage.wait_op(op_id)
        assert (code, error_ids) == (ErrorCode.OK, [])
        stage.release_op(op_id)
    assert stage._holds == {}
    stage.advance_write_floor(1).wait()
    with stage.read_attributes(query, ["big"], OrdinalRange.latest(1)) as read:
        for group in read.groups():
            with group:
                data = group.array(0).reshape(-1)
                assert data.tolist() == np.arange(rows * 128, dtype=np.float32).tolist()


def test_holds_are_pruned_when_their_ops_finish(stage, make_query) -> None:
    query = make_query([f"/H/p{i}" for i in range(2048)])
    source = np.ones((2048, 128), np.float32)  # 1 MiB
    ops = [stage.write_attribute(query, "h", o, source, is_array=False) for o in range(1, 21)]
    assert len(stage._holds) <= 20
    for op in ops:
        op.wait()
    assert stage._holds == {}


def _slow_path(array: np.ndarray) -> list[np.ndarray]:
    """The same payload as a one-element list: forces the general write path."""
    return [array]


@pytest.mark.parametrize(
    "values",
    [
        np.arange(3, dtype=np.float32),
        np.arange(6, dtype=np.int64).reshape(3, 2),
        np.arange(12, dtype=np.float64).reshape(3, 2, 2),
        np.array([True, False, True]),
        np.arange(3, dtype=np.float16),
        np.arange(6, dtype=np.uint8)[::2],  # not contiguous: the fast path falls back
        np.arange(3, dtype=">f4"),  # non-native byte order: general path
    ],
    ids=["f32", "i64x2", "f64x4", "bool", "f16", "strided", "big-endian"],
)
def test_the_fast_path_writes_what_the_general_path_writes(
    stage, make_query, read_values, values: np.ndarray
) -> None:
    query = make_query(ABC)

    def outcome(attr: str, tensors: Any) -> tuple[Any, ...]:
        try:
            op = stage.write_attribute(query, attr, 1, tensors, is_array=False)
        except Exception as exc:  # compared between the two paths below
            return ("raised", type(exc), str(exc))
        return (op.status, op.error_message())

    fast = outcome("fast", values)
    assert fast == outcome("slow", _slow_path(values))
    if fast[0] == ErrorCode.OK:
        stage.advance_write_floor(1).wait()
        assert read_values(query, "fast", 1) == read_values(query, "slow", 1)


@pytest.mark.parametrize(
    ("attribute", "ordinal", "shape"),
    [
        ("", 1, (3,)),  # empty name: rejected by the engine
        ("x\x00y", 1, (3,)),  # NUL in the name
        ("ok", 0, (3,)),  # ordinal at the floor
        ("ok", 1, (2,)),  # wrong row count
        (0, 1, (3,)),  # token 0
        ("usd-path", 1, (3,)),  # derived built-in
    ],
)
def test_the_fast_path_rejects_what_the_general_path_rejects(
    stage, make_query, attribute: Any, ordinal: int, shape: tuple[int, ...]
) -> None:
    query = make_query(ABC)
    values = np.zeros(shape, np.float32)
    fast = stage.write_attribute(query, attribute, ordinal, values, is_array=False)
    slow = stage.write_attribute(query, attribute, ordinal, _slow_path(values), is_array=False)
    assert not fast.ok
    assert (fast.status, fast.error_message()) == (slow.status, slow.error_message())


def test_the_fast_path_raises_what_the_general_path_raises(stage, make_query) -> None:
    query = make_query(ABC)
    query.release().wait()
    for tensors in (np.zeros(3, np.float32), _slow_path(np.zeros(3, np.float32))):
        with pytest.raises(OvstageError) as info:
            stage.write_attribute(query, "t", 1, tensors, is_array=False)
        assert info.value.code == ErrorCode.INVALID_HANDLE
    with pytest.raises(ValueError):
        stage.write_attribute(0, "t", -1, np.zeros(3, np.float32), is_array=False)
    with pytest.raises(TypeError):
        stage.write_attribute(0, 1.5, 1, np.zeros(3, np.float32), is_array=False)


def test_gopy_gc_hook_is_replaced() -> None:
    names = [getattr(cb, "__name__", "") for cb in gc.callbacks]
    assert "_gopy_gc_cb" not in names
    assert "_ovstage_full_gc" in names


def _batch_outcome(stage: Any, query: Any, entries: list[WriteDesc], ordinal: int) -> tuple:
    try:
        op = stage.write_attributes(query, entries, ordinal)
    except Exception as exc:  # compared between the two paths
        return ("raised", type(exc), str(exc))
    return (op.status, op.error_message())


def _general(entries: list[WriteDesc]) -> list[WriteDesc]:
    """The same batch with each payload as a one-element list: forces the general path."""
    return [dataclasses.replace(e, tensors=[e.tensors]) for e in entries]


@pytest.mark.parametrize(
    "entries",
    [
        [WriteDesc("a", np.arange(3, dtype=np.float32), False)],
        [
            WriteDesc("a", np.arange(3, dtype=np.float32), False),
            WriteDesc("b", np.arange(6, dtype=np.int64).reshape(3, 2), False),
            WriteDesc("c", np.array([True, False, True]), False),
        ],
        [  # one entry the fast path does not cover: the whole batch takes the general path
            WriteDesc("a", np.arange(3, dtype=np.float32), False),
            WriteDesc("b", np.arange(6, dtype=np.uint8)[::2], False),
        ],
        [
            WriteDesc("a", np.zeros(3, np.float32), False),
            WriteDesc("b", np.zeros(2, np.float32), False),
        ],
        [
            WriteDesc("a", np.zeros(3, np.float32), False),
            WriteDesc("a", np.ones(3, np.float32), False),
        ],
        [WriteDesc("", np.zeros(3, np.float32), False)],
        [WriteDesc("usd-path", np.zeros(3, np.float32), False)],
    ],
    ids=[
        "one",
        "three-dtypes",
        "strided-entry",
        "wrong-rows",
        "same-cells",
        "empty-name",
        "derived",
    ],
)
def test_the_batch_fast_path_does_what_the_general_path_does(entries: list[WriteDesc]) -> None:
    outcomes, values = [], []
    for batch in (entries, _general(entries)):  # one fresh stage each
        with ovstage.Stage("batch") as stage, query_over(stage, ABC) as query:
            outcomes.append(_batch_outcome(stage, query, batch, 1))
            if outcomes[-1][0] == ErrorCode.OK:
                stage.advance_write_floor(1).wait()
                paths = ovstage.PathDictionary(stage)
                for e in entries:
                    with stage.read_attributes(query, [e.attribute], OrdinalRange.latest(1)) as rd:
                        for group in rd.groups():
                            with group:
                                values.append(group_values(paths, group))
    assert outcomes[0] == outcomes[1]
    assert values[: len(values) // 2] == values[len(values) // 2 :]


def test_a_batch_of_numpy_arrays_takes_one_native_call(
    stage, make_query, read_values, monkeypatch
) -> None:
    calls = []
    real = _fastpath._write_numpy_batch
    monkeypatch.setattr(_fastpath, "_write_numpy_batch", lambda *a: calls.append(a) or real(*a))
    prims = [f"/H/p{i}" for i in range(2048)]
    query = make_query(prims)
    large = np.arange(2048 * 128, dtype=np.float32).reshape(2048, 128)  # 1 MiB: copied in the op
    op = stage.write_attributes(
        query, [WriteDesc("a", np.zeros(2048, np.float32), False), WriteDesc("m", large, False)], 1
    )
    assert len(calls) == 1
    op.wait()
    stage.advance_write_floor(1).wait()
    assert stage._holds == {}
    values = read_values(query, "m", 1)
    assert values[prims[0]] == large[0].tolist()
    assert values[prims[-1]] == large[-1].tolist()


def test_waiting_a_finished_op_is_one_native_call(stage, make_query, monkeypatch) -> None:
    from ovstage import _ops

    calls = []
    real = _ops._wait_release
    monkeypatch.setattr(_ops, "_wait_release", lambda *a: calls.append(a) or real(*a))
    query = make_query(ABC)
    op = stage.write_attribute(query, "w", 1, np.zeros(3, np.float32), is_array=False)
    assert op.wait() is op
    assert len(calls) == 1
    assert stage.release_op(op._op_id) == ErrorCode.INVALID_HANDLE, "the wait released the op"
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE
    # A failed op takes the full wait, which reports its failure.
    bad = stage.write_attribute(query, "w", 1, np.zeros((3, 2), np.float32), is_array=False)
    with pytest.raises(OvstageError):
        bad.wait()
