"""Ordinal admission policies (0.3.0): ``OrdinalAdmissionPolicy``, the
``StageConfig.runtime_default_ordinal_admission_policy`` entry and its process-scope rules, and
the refusals each policy makes, surfaced with their statuses.

An ordinal conflict is reported by the op when it runs (``OP_FAILED``, the message naming the
conflict) or, where the engine can already tell, at enqueue (``WRITE_FLOOR_VIOLATION``): the
tests accept either channel, as the reference's own conformance notes ask.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import numpy as np
import ovstage
import pytest
from conftest import query_over
from ovstage import (
    ErrorCode,
    OrdinalAdmissionPolicy,
    OvstageError,
    StageConfig,
    WriteDesc,
)
from ovstage._config import config_from_c
from readback import latest

CONFLICT = {ErrorCode.OP_FAILED, ErrorCode.WRITE_FLOOR_VIOLATION}
F32 = np.float32


def configured(policy: Any) -> StageConfig:
    return StageConfig(runtime_default_ordinal_admission_policy=policy)


@pytest.fixture
def fresh_process() -> Iterator[None]:
    """No stage of an earlier test keeps the process lifetime (and its policy) alive."""
    gc.collect()
    yield
    gc.collect()


def write(stage: ovstage.Stage, query: ovstage.Query, attr: str, ordinal: int, value: float) -> Any:
    return stage.write_attribute(query, attr, ordinal, np.array([value], F32), is_array=False)


def refusal(op: Any) -> OvstageError:
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code in CONFLICT, info.value
    return info.value


def test_the_enum_and_the_config_entry() -> None:
    assert [(m.name, m.value) for m in OrdinalAdmissionPolicy] == [
        ("DEFAULT", 0),
        ("FLOOR_ONLY", 1),
        ("NONDECREASING", 2),
        ("STRICTLY_INCREASING", 3),
    ]
    assert "OrdinalAdmissionPolicy" in ovstage.__all__
    assert StageConfig().runtime_default_ordinal_admission_policy is None
    assert configured(OrdinalAdmissionPolicy.DEFAULT).policy_override() is None
    assert configured(3).policy_override() == OrdinalAdmissionPolicy.STRICTLY_INCREASING


@pytest.mark.parametrize(
    ("policy", "error", "words"),
    [
        (4, ValueError, "DEFAULT=0, FLOOR_ONLY=1, NONDECREASING=2, STRICTLY_INCREASING=3"),
        (-1, ValueError, "STRICTLY_INCREASING=3"),
        ("FLOOR_ONLY", TypeError, "must be an integer"),
        (True, TypeError, "bool"),
        (2.0, TypeError, "must be an integer"),
    ],
)
def test_bad_policies_are_refused_naming_the_entry(
    policy: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match="runtime_default_ordinal_admission_policy") as info:
        configured(policy)
    assert words in str(info.value)


def test_the_default_is_nondecreasing(stage: ovstage.Stage) -> None:
    assert stage.ordinal_admission_policy == OrdinalAdmissionPolicy.NONDECREASING
    with query_over(stage, ["/A"]) as q:
        write(stage, q, "x", 5, 5.0).wait()
        err = refusal(write(stage, q, "x", 3, 3.0))
        assert "ordinal conflict" in err.message
        write(stage, q, "x", 5, 55.0).wait()  # equal is allowed
        write(stage, q, "x2", 2, 2.0).wait()  # another cell may use an older ordinal
        stage.advance_write_floor(5).wait()
        assert latest(stage, q, "x", 5) == {"/A": 55.0}
        assert latest(stage, q, "x2", 5) == {"/A": 2.0}


def test_deletes_and_batches_are_governed(stage: ovstage.Stage) -> None:
    with query_over(stage, ["/A"]) as q:
        write(stage, q, "x", 5, 5.0).wait()
        refusal(stage.delete_attributes(q, ["x"], 4))
        refusal(stage.delete_attributes(q, [], 4))  # a whole-prim delete checks every cell
        # The whole batch is admitted before its first entry applies: y is not written.
        batch = [
            WriteDesc("y", np.array([1], F32), False),
            WriteDesc("x", np.array([3], F32), False),
        ]
        refusal(stage.write_attributes(q, batch, 3))
        stage.advance_write_floor(5).wait()
        assert latest(stage, q, "x", 5) == {"/A": 5.0}
        assert latest(stage, q, "y", 5) == {}


@pytest.mark.usefixtures("fresh_process")
def test_strictly_increasing_refuses_the_same_ordinal() -> None:
    with ovstage.Stage(
        "strict", config=configured(OrdinalAdmissionPolicy.STRICTLY_INCREASING)
    ) as s:
        assert s.ordinal_admission_policy == OrdinalAdmissionPolicy.STRICTLY_INCREASING
        with query_over(s, ["/A"]) as q:
            write(s, q, "x", 5, 5.0).wait()
            refusal(write(s, q, "x", 5, 6.0))
            write(s, q, "x", 6, 6.0).wait()
            s.advance_write_floor(6).wait()
            assert latest(s, q, "x", 6) == {"/A": 6.0}


@pytest.mark.usefixtures("fresh_process")
def test_floor_only_admits_older_ordinals_and_keeps_the_newest_value() -> None:
    with ovstage.Stage("legacy", config=configured(OrdinalAdmissionPolicy.FLOOR_ONLY)) as s:
        assert s.ordinal_admission_policy == OrdinalAdmissionPolicy.FLOOR_ONLY
        with query_over(s, ["/A"]) as q:
            write(s, q, "x", 5, 5.0).wait()
            write(s, q, "x", 3, 3.0).wait()  # only the floors are checked
            s.advance_write_floor(5).wait()
            # Ours: last writer by ordinal (README "Where we differ").
            assert latest(s, q, "x", 5) == {"/A": 5.0}
            refusal(write(s, q, "x", 4, 4.0))  # at or below the floor


@pytest.mark.usefixtures("fresh_process")
def test_the_policy_is_process_scoped() -> None:
    floor_only = configured(OrdinalAdmissionPolicy.FLOOR_ONLY)
    first = ovstage.Stage("first", config=floor_only)
    try:
        # Later stages inherit the active policy (no config, DEFAULT, or the same value).
        for config in (None, StageConfig(), configured(0), floor_only, StageConfig(workers=1)):
            with ovstage.Stage("inherits", config=config) as other:
                assert other.ordinal_admission_policy == OrdinalAdmissionPolicy.FLOOR_ONLY
        with pytest.raises(OvstageError) as info:
            ovstage.Stage("conflict", config=configured(OrdinalAdmissionPolicy.NONDECREASING))
        assert info.value.code == ErrorCode.INVALID_ARGUMENT
        assert "conflicts with active process state" in info.value.message
    finally:
        first.destroy()
    # Every reference is gone: a new lifetime picks its own policy.
    plain = ovstage.Stage("plain")
    try:
        assert plain.ordinal_admission_policy == OrdinalAdmissionPolicy.NONDECREASING
        # A live stage without a config holds the lifetime too.
        with pytest.raises(OvstageError) as info:
            ovstage.Stage("conflict", config=floor_only)
        assert info.value.code == ErrorCode.INVALID_ARGUMENT
    finally:
        plain.destroy()
    with ovstage.Stage("again", config=floor_only) as again:
        assert again.ordinal_admission_policy == OrdinalAdmissionPolicy.FLOOR_ONLY


def test_the_policy_entry_crosses_the_boundary_and_reads_back() -> None:
    """``StageConfig.to_c`` writes the policy as UINT64 entry 1 (an unset one adds nothing),
    ``config_from_c`` reads it back, and ``Stage.config`` shows the lifetime's entry."""
    entries = configured(OrdinalAdmissionPolicy.FLOOR_ONLY).to_c()
    assert entries.entry_count == 1
    assert (entries.entries[0].key_type, entries.entries[0].key) == (2, 1)
    assert entries.entries[0].value.uint_value == OrdinalAdmissionPolicy.FLOOR_ONLY
    assert configured(0).to_c().entries[0].value.uint_value == 0
    assert StageConfig().to_c().entry_count == 0
    back = config_from_c(entries, None)
    assert back == configured(OrdinalAdmissionPolicy.FLOOR_ONLY)
    assert type(back.runtime_default_ordinal_admission_policy) is OrdinalAdmissionPolicy
    strict = configured(OrdinalAdmissionPolicy.STRICTLY_INCREASING)
    with ovstage.Stage("strict", config=strict) as first:
        assert first.config == strict
        assert first.ordinal_admission_policy == OrdinalAdmissionPolicy.STRICTLY_INCREASING
        with ovstage.Stage("inherits") as other:
            assert other.config == strict, "the entries that started the lifetime"
            assert other.ordinal_admission_policy == OrdinalAdmissionPolicy.STRICTLY_INCREASING
    with ovstage.Stage("fresh") as fresh:
        assert fresh.config == StageConfig()
        assert fresh.ordinal_admission_policy == OrdinalAdmissionPolicy.NONDECREASING
