"""Map sessions in 0.3.0: setup, commit and terminal failures, as they surface in Python.

A successful setup changes nothing on the stage; every commit re-validates; a commit that
fails while executing makes the session terminal (no group of it commits any more, and the
final ``unmap`` returns that failure, writes nothing and consumes the handle). The
``cuda_event``/``cuda_stream`` of an unmap reach the engine: on a host session a non-zero one
is accepted and fails the commit when it executes. The first parameter of the Stage-level
calls is named ``mapping``. ``Map.__exit__`` unmaps and waits, raising on the normal path and
swallowing when the block is left on an exception.
"""

from __future__ import annotations

import gc
import inspect
import threading
import time

import numpy as np
import ovstage
import pytest
from ovstage import (
    DLDataType,
    DLDataTypeCode,
    ErrorCode,
    Filter,
    FilterOp,
    OvstageError,
    gates,
)
from ovstage import Predicate as P
from readback import latest

F32 = np.float32
ABC = ["/A", "/B", "/C"]
FLOAT32 = DLDataType(DLDataTypeCode.kDLFloat, 32, 1)
SYNCS = [{"cuda_stream": 1}, {"cuda_event": 0x1234}, {"cuda_stream": 2, "cuda_event": 7}]
ORIGINAL = {"/A": 1.0, "/B": 2.0, "/C": 3.0}


@pytest.fixture
def abc(stage, make_query, write_sealed) -> ovstage.Query:
    """/A, /B, /C with "mass" = 1, 2, 3 (float32), sealed at 1."""
    query = make_query(ABC)
    write_sealed(query, "mass", 1, np.array([1, 2, 3], F32))
    return query


def op_failure(op: ovstage.Operation) -> str:
    """The OP_FAILED message of an op accepted at enqueue that fails when it executes."""
    assert op.ok, op.error_message()
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == ErrorCode.OP_FAILED
    return info.value.message


def sealed_mass(stage: ovstage.Stage, query: ovstage.Query, ordinal: int) -> dict:
    stage.advance_write_floor(ordinal).wait()
    return latest(stage, query, "mass", ordinal)


# ---------------------------------------------------------------- the parameter names


@pytest.mark.parametrize("name", ["fetch_map_next", "unmap_group", "unmap_attribute"])
def test_the_first_parameter_is_named_mapping(name) -> None:
    params = list(inspect.signature(getattr(ovstage.Stage, name)).parameters)
    assert params[1] == "mapping"


def test_mapping_is_accepted_by_keyword(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = stage.fetch_map_next(mapping=mapped)
    group.array(0)[:] = [4, 5, 6]
    stage.unmap_group(mapping=mapped, group=group).wait()
    stage.unmap_attribute(mapping=mapped).wait()
    assert sealed_mass(stage, abc, 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}


@pytest.mark.parametrize(
    ("mapping", "error"), [("1", TypeError), (1.5, TypeError), (-1, ValueError), (None, TypeError)]
)
def test_a_bad_mapping_raises_naming_it(stage, abc, mapping, error) -> None:
    for call in (
        lambda: stage.fetch_map_next(mapping),
        lambda: stage.unmap_attribute(mapping),
    ):
        with pytest.raises(error, match="mapping"):
            call()


# ---------------------------------------------------------------- setup has no stage effect


def test_setup_creates_no_prim_until_the_commit(stage, make_query) -> None:
    query = make_query(["/N"])
    mapped = stage.map_attribute(query, "fresh", 2, dtype=FLOAT32)
    mapped.wait()
    group = mapped.fetch_next()
    with stage.query(Filter([P("usd-path", FilterOp.IN, ["/N"])])) as found:
        assert found.result().total_prim_count == 0, "setup must not create /N"
    group.array(0)[:] = [7]
    mapped.unmap().wait()
    with stage.query(Filter([P("usd-path", FilterOp.IN, ["/N"])])) as found:
        assert found.result().total_prim_count == 1
    stage.advance_write_floor(2).wait()
    assert latest(stage, query, "fresh", 2) == {"/N": 7.0}


# ---------------------------------------------------------------- write_done_sync


@pytest.mark.parametrize("sync", SYNCS, ids=str)
def test_a_sync_on_a_host_commit_fails_it_and_makes_the_session_terminal(stage, abc, sync) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = mapped.fetch_next()
    group.array(0)[:] = [70, 80, 90]
    commit = mapped.unmap_group(group, **sync)
    assert group.released, "an accepted commit consumes the group"
    message = op_failure(commit)
    assert "CUDA completion sync is only supported for GPU mapped tensors" in message
    # Terminal: the final unmap returns the same failure and writes nothing.
    final = mapped.unmap()
    assert mapped.released
    assert "CUDA completion sync is only supported" in op_failure(final)
    assert sealed_mass(stage, abc, 2) == ORIGINAL


@pytest.mark.parametrize("sync", SYNCS, ids=str)
def test_a_final_unmap_with_data_and_a_sync_fails_and_consumes_the_handle(stage, abc, sync) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    mapped.fetch_next().array(0)[:] = [70, 80, 90]
    assert "CUDA completion sync" in op_failure(mapped.unmap(**sync))
    assert mapped.released
    with pytest.raises(OvstageError) as info:
        stage.unmap_attribute(mapped.handle).wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE
    assert sealed_mass(stage, abc, 2) == ORIGINAL


def test_a_final_unmap_with_nothing_left_ignores_the_sync(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = mapped.fetch_next()
    group.array(0)[:] = [4, 5, 6]
    mapped.unmap_group(group).wait()
    mapped.unmap(cuda_event=5, cuda_stream=1).wait()
    assert sealed_mass(stage, abc, 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"cuda_event": "5"}, TypeError),
        ({"cuda_event": 1.0}, TypeError),
        ({"cuda_event": -1}, ValueError),
        ({"cuda_stream": 2**64}, ValueError),
        ({"cuda_stream": b"\x01"}, TypeError),
    ],
    ids=str,
)
def test_a_bad_sync_raises_naming_it_and_changes_nothing(stage, abc, kwargs, error) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = mapped.fetch_next()
    name = next(iter(kwargs))
    with pytest.raises(error, match=name):
        mapped.unmap_group(group, **kwargs)
    assert not group.released
    with pytest.raises(error, match=name):
        mapped.unmap(**kwargs)
    assert not mapped.released
    group.array(0)[:] = [4, 5, 6]
    mapped.unmap_group(group).wait()  # still usable
    mapped.unmap().wait()
    assert sealed_mass(stage, abc, 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}


def test_a_rejected_commit_leaves_the_group_usable(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = mapped.fetch_next()
    other = stage.map_attribute(abc, "mass", 3)
    other_group = other.fetch_next()
    # The group belongs to another session: rejected at enqueue, the group stays usable.
    rejected = stage.unmap_group(other, group)
    assert not rejected.ok
    assert rejected.status == ErrorCode.INVALID_HANDLE
    assert not group.released
    group.array(0)[:] = [4, 5, 6]
    mapped.unmap_group(group).wait()
    mapped.unmap().wait()
    other_group.array(0)[:] = [7, 8, 9]
    other.unmap().wait()
    assert sealed_mass(stage, abc, 3) == {"/A": 7.0, "/B": 8.0, "/C": 9.0}


# ---------------------------------------------------------------- commits re-validate


def test_a_floor_passing_the_session_makes_the_commit_fail_and_the_session_terminal(
    stage, abc
) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = mapped.fetch_next()
    group.array(0)[:] = [70, 80, 90]
    stage.advance_write_floor(2).wait()
    message = op_failure(mapped.unmap_group(group))
    assert "write floor" in message
    final = mapped.unmap()
    with pytest.raises(OvstageError) as info:
        final.wait()
    assert info.value.code == ErrorCode.OP_FAILED
    assert "write floor" in info.value.message
    assert latest(stage, abc, "mass", 2) == ORIGINAL


def test_an_insert_session_fails_its_commit_when_the_prims_appeared_meanwhile(
    stage, make_query
) -> None:
    query = make_query(["/New"])
    mapped = stage.map_attribute(query, "mass", 3, prim_mode=ovstage.PrimMode.INSERT, dtype=FLOAT32)
    group = mapped.fetch_next()
    # The setup succeeded (no prim yet); a write creates the prim before the commit.
    stage.write_attribute(query, "other", 2, np.array([1], F32), is_array=False).wait()
    group.array(0)[:] = [5]
    assert op_failure(mapped.unmap_group(group))
    with pytest.raises(OvstageError):
        mapped.unmap().wait()
    stage.advance_write_floor(3).wait()
    with stage.query(Filter([P("mass", FilterOp.HAS)])) as found:
        assert found.result().total_prim_count == 0


# ---------------------------------------------------------------- Map.__exit__


def test_exit_on_the_normal_path_raises_the_commit_failure(stage, abc) -> None:
    with pytest.raises(OvstageError) as info, stage.map_attribute(abc, "mass", 2) as mapped:
        mapped.fetch_next().array(0)[:] = [70, 80, 90]
        stage.advance_write_floor(2).wait()
    assert info.value.code == ErrorCode.OP_FAILED
    assert "write floor" in info.value.message
    assert mapped.released


def test_exit_on_an_exception_waits_for_the_commit_and_swallows_its_failure(stage, abc) -> None:
    with pytest.raises(KeyError, match="body"), stage.map_attribute(abc, "mass", 2) as mapped:
        mapped.fetch_next().array(0)[:] = [70, 80, 90]
        stage.advance_write_floor(2).wait()
        raise KeyError("body")
    assert mapped.released


def release_later(gate: gates.Gate, seconds: float) -> tuple[threading.Timer, list[bool]]:
    """A timer that releases ``gate`` after ``seconds``; its list says whether it ran."""
    ran: list[bool] = []

    def release() -> None:
        ran.append(True)
        gate.release()

    timer = threading.Timer(seconds, release)
    timer.daemon = True
    timer.start()
    return timer, ran


def test_exit_on_an_exception_waits_for_the_held_commit(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    group = mapped.fetch_next()
    group.array(0)[:] = [4, 5, 6]
    with gates.scoped_write_gate() as gate:
        timer, ran = release_later(gate, 0.3)
        try:
            with pytest.raises(KeyError, match="body"), mapped:
                raise KeyError("body")
            assert ran, "__exit__ returned before the held commit was let through"
            assert mapped.released
        finally:
            timer.join(10)
    assert sealed_mass(stage, abc, 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}


def test_exit_on_keyboard_interrupt_only_polls_the_commit(stage, abc) -> None:
    mapped = stage.map_attribute(abc, "mass", 2)
    mapped.fetch_next().array(0)[:] = [4, 5, 6]
    with gates.scoped_write_gate() as gate:
        timer, ran = release_later(gate, 5.0)  # the watchdog: the commit is let through later
        try:
            start = time.monotonic()
            with pytest.raises(KeyboardInterrupt), mapped:
                raise KeyboardInterrupt
            assert time.monotonic() - start < 4, "__exit__ waited for the held commit"
            assert not ran
            assert mapped.released
        finally:
            gate.release()
            timer.cancel()
            timer.join(10)
    assert sealed_mass(stage, abc, 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}


def test_exit_skips_a_rejected_setup(stage, abc) -> None:
    with stage.map_attribute(abc, "mass", 1) as mapped:  # at the floor: rejected, handle 0
        assert mapped.handle == 0
        with pytest.raises(OvstageError) as info:
            mapped.wait()
        assert info.value.code == ErrorCode.WRITE_FLOOR_VIOLATION
    assert latest(stage, abc, "mass", 1) == ORIGINAL


# ---------------------------------------------------------------- reserved names


@pytest.mark.parametrize("name", ["usd-path", "usd-parent", "usd-children", "usd-active"])
def test_mapping_a_derived_built_in_is_not_supported(stage, abc, name) -> None:
    mapped = stage.map_attribute(abc, name, 2, dtype=DLDataType(DLDataTypeCode.kDLUInt, 64, 1))
    assert mapped.op.status == ErrorCode.NOT_SUPPORTED
    assert f"built-in attribute '{name}' is derived on demand" in mapped.op.error_message()
    assert mapped.handle == 0


@pytest.mark.parametrize(
    ("name", "dtype", "sizes"),
    [
        ("usd-prim-type", FLOAT32, None),
        ("usd-prim-type", DLDataType(DLDataTypeCode.kDLUInt, 64, 1), [1, 1, 1]),
        ("usd-schemas", DLDataType(DLDataTypeCode.kDLUInt, 64, 1), None),
        ("usd-ancestor-types", DLDataType(DLDataTypeCode.kDLUInt, 32, 1), [1, 1, 1]),
    ],
    ids=["prim type as float", "prim type as array", "schemas fixed", "ancestor types u32"],
)
def test_mapping_a_recorded_built_in_needs_its_canonical_kind(stage, abc, name, dtype, sizes):
    mapped = stage.map_attribute(abc, name, 2, dtype=dtype, element_sizes=sizes)
    assert mapped.op.status == ErrorCode.INVALID_ARGUMENT
    assert f"reserved attribute '{name}' requires its canonical kind" in mapped.op.error_message()
    with stage.query(Filter([P(name, FilterOp.HAS)])) as found:
        assert found.result().total_prim_count == 0


def test_mapping_the_prim_type_in_its_canonical_kind_commits(stage, abc, paths) -> None:
    token = paths.intern_token("Xform")
    mapped = stage.map_attribute(
        abc, "usd-prim-type", 2, dtype=DLDataType(DLDataTypeCode.kDLUInt, 64, 1)
    )
    mapped.fetch_next().array(0)[:] = [token] * 3
    mapped.unmap().wait()
    stage.advance_write_floor(2).wait()
    assert latest(stage, abc, "usd-prim-type", 2) == dict.fromkeys(ABC, token)


# ---------------------------------------------------------------- lifetime


def test_a_group_keeps_its_session_alive(stage, abc) -> None:
    group = stage.map_attribute(abc, "mass", 2).fetch_next()
    gc.collect()  # the Map is unreachable but for its group: it must not unmap yet
    assert not group.released
    group.array(0)[:] = [4, 5, 6]
    with pytest.warns(ResourceWarning, match="garbage-collected unreleased"):
        del group
        gc.collect()  # now the session goes, and its finalizer commits what the group holds
    assert sealed_mass(stage, abc, 2) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}
