"""``ovstage.population``'s entry points and op rules, on scenes written for these tests.

Each test populates a fresh stage and reads the result back through the stage API
(sealing first: a latest read needs the ordinal sealed). The mapping and selection rules are
tested in their own modules; these tests use plain numeric attributes and the reserved names.
"""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, OrdinalRange, OvstageError, PopulationDomain
from ovstage import population as pop
from readback import prim_paths_held, read_groups, values_of

pytest.importorskip("pxr", reason="usd-core is not installed")

SCENE = """#usda 1.0
(
    timeCodesPerSecond = 10
)
def Xform "World"
{
    def Xform "Box" (
        prepend apiSchemas = ["MaterialBindingAPI"]
    )
    {
        double mass = 2.5
        double speed.timeSamples = {
            0: 1.0,
            10: 3.0,
        }
        int count = 7
        float3 size = (1, 2, 3)
    }
    def "Group"
    {
        int count = 1
    }
}
"""

OTHER = """#usda 1.0
def Xform "World"
{
    def Xform "Box"
    {
        double mass = 9.0
    }
    def Xform "Ball"
    {
        double mass = 1.0
    }
}
"""

REFERENCED = """#usda 1.0
(
    defaultPrim = "Part"
)
def Xform "Part"
{
    double mass = 4.0
    def Xform "Bolt"
    {
        int count = 3
    }
}
"""

MS = 1_000_000


def seal(stage: ovstage.Stage, ordinal: int) -> None:
    stage.advance_write_floor(ordinal).wait()


def values(stage: ovstage.Stage, attribute: str, ordinal: int) -> dict[str, Any]:
    """``{prim path: value}`` of ``attribute`` on every prim, sealed and read at ``ordinal``."""
    seal(stage, ordinal)
    with stage.query() as query:
        return values_of(
            read_groups(stage, query, [attribute], OrdinalRange.latest(ordinal)), attribute
        )


def prims(stage: ovstage.Stage, ordinal: int) -> list[str]:
    seal(stage, ordinal)
    with stage.query() as query:
        return prim_paths_held(stage, query, ordinal)


def changed(stage: ovstage.Stage, attribute: str, start: int, end: int) -> list[str]:
    """The prims whose ``attribute`` changed in ``[start, end]`` (sorted)."""
    seal(stage, end)
    with stage.query() as query:
        groups = read_groups(stage, query, [attribute], OrdinalRange.between(start, end))
    return sorted(p for g in groups for p in g.prims)


def token(stage: ovstage.Stage, name: str) -> int:
    return ovstage.PathDictionary(stage).intern_token(name)


def stage_content(stage: ovstage.Stage, ordinal: int) -> dict[str, dict[str, Any]]:
    """Every value of the test attributes, to compare a stage before and after a refusal."""
    return {a: values(stage, a, ordinal) for a in ("mass", "count", "size", "usd-prim-type")}


class Gate:
    """A progress callback that holds the population worker until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, done: int, total: int) -> None:
        self.entered.set()
        assert self.release.wait(30), "the test never released the gate"

    def hold(self, stage: ovstage.Stage, ordinal: int) -> pop.Operation:
        """Enqueue an open that blocks the worker, and wait until it does."""
        op = pop.open_usd_from_string_async(stage, SCENE, ordinal, progress=self)
        assert self.entered.wait(30)
        return op


# -- availability, time --------------------------------------------------------------------


def test_available_with_usd_core() -> None:
    assert pop.available() is True
    assert pop.descs_available() is True
    assert pop.export_available() is True


def test_default_time_is_nan() -> None:
    assert math.isnan(pop.DEFAULT_TIME)
    assert pop.is_default_time(pop.DEFAULT_TIME)
    assert pop.is_default_time(float("nan"))
    assert not pop.is_default_time(0.0)


# -- opens -------------------------------------------------------------------------------------


def test_open_from_string_populates_values_and_reserved_names(stage) -> None:
    assert pop.open_usd_from_string(stage, SCENE, 1) is None
    assert prims(stage, 1) == ["/World", "/World/Box", "/World/Group"]
    assert values(stage, "mass", 1) == {"/World/Box": 2.5}
    assert values(stage, "count", 1) == {"/World/Box": 7, "/World/Group": 1}
    assert values(stage, "size", 1) == {"/World/Box": [1.0, 2.0, 3.0]}
    xform = token(stage, "Xform")
    # usd-prim-type only on typed prims; usd-schemas on every populated prim
    assert values(stage, "usd-prim-type", 1) == {"/World": xform, "/World/Box": xform}
    assert values(stage, "usd-schemas", 1) == {
        "/World": [],
        "/World/Box": [token(stage, "MaterialBindingAPI")],
        "/World/Group": [],
    }


def test_open_file_populates(stage, tmp_path: Path) -> None:
    scene = tmp_path / "scene.usda"
    scene.write_text(SCENE)
    assert pop.open_usd(stage, scene, 1) is None  # a PathLike is accepted
    assert values(stage, "mass", 1) == {"/World/Box": 2.5}


def test_open_time_is_seconds_and_nan_is_the_default_time(stage) -> None:
    # timeCodesPerSecond 10: 0.5 s is time code 5, half-way between the samples
    pop.open_usd_from_string(stage, SCENE, 1, 0.5)
    assert values(stage, "speed", 1) == {"/World/Box": 2.0}
    with ovstage.Stage("default-time") as other:
        pop.open_usd_from_string(other, SCENE, 1, pop.DEFAULT_TIME)
        # no default value is authored: the default time has no value to populate
        assert values(other, "speed", 1) == {}
        assert values(other, "mass", 1) == {"/World/Box": 2.5}


def test_open_with_domains_none_populates_nothing(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1, 0.0, PopulationDomain.NONE)
    assert prims(stage, 1) == []


def test_opens_merge_never_removing_what_an_earlier_open_wrote(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    pop.open_usd_from_string(stage, OTHER, 2)
    assert prims(stage, 2) == ["/World", "/World/Ball", "/World/Box", "/World/Group"]
    assert values(stage, "mass", 2) == {"/World/Box": 9.0, "/World/Ball": 1.0}
    # attributes only the first scene supplied stay, and so does a prim missing from the second
    assert values(stage, "count", 2) == {"/World/Box": 7, "/World/Group": 1}


def test_open_with_desc_takes_one_desc_or_a_sequence(stage, tmp_path: Path) -> None:
    desc = pop.Desc(domains=PopulationDomain.RENDERING)
    pop.open_usd_from_string_with_desc(stage, SCENE, 1, 0.0, desc)
    assert values(stage, "mass", 1) == {"/World/Box": 2.5}
    scene = tmp_path / "other.usda"
    scene.write_text(OTHER)
    pop.open_usd_with_desc(stage, str(scene), 2, 0.0, [desc, pop.Desc()])
    assert values(stage, "mass", 2) == {"/World/Box": 9.0, "/World/Ball": 1.0}
    with pytest.raises(TypeError, match="descs"):
        pop.open_usd_from_string_with_desc_async(stage, SCENE, 3, 0.0, "RENDERING")
    with pytest.raises(TypeError, match="descs"):
        pop.open_usd_from_string_with_desc_async(stage, SCENE, 3, 0.0, [desc, 1])


# -- repopulate ------------------------------------------------------------------------------


def test_repopulate_rereads_the_source_and_overrides_direct_writes(stage, make_query) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    box = make_query(["/World/Box"])
    stage.write_attribute(box, "mass", 2, np.array([100.0]), is_array=False).wait()
    assert values(stage, "mass", 2) == {"/World/Box": 100.0}
    pop.repopulate_usd_with_desc(stage, 3, 0.0, pop.Desc(domains=PopulationDomain.RENDERING))
    assert values(stage, "mass", 3) == {"/World/Box": 2.5}
    assert changed(stage, "mass", 3, 3) == ["/World/Box"]


def test_repopulate_descs_replace_the_scope(stage, make_query) -> None:
    pop.open_usd_from_string(stage, SCENE, 1, 0.0)
    pop.repopulate_usd_with_desc(stage, 2, 0.0, [pop.Desc(domains=PopulationDomain.NONE)])
    # nothing deleted: what the first scope populated stays
    assert values(stage, "speed", 2) == {"/World/Box": 1.0}
    box = make_query(["/World/Box"])
    stage.write_attribute(box, "speed", 3, np.array([50.0]), is_array=False).wait()
    # the empty scope re-samples nothing
    pop.update_from_usd_time(stage, 4, 1.0)
    assert values(stage, "speed", 4) == {"/World/Box": 50.0}


def test_repopulate_needs_a_populated_stage(stage) -> None:
    with pytest.raises(OvstageError) as info:
        pop.repopulate_usd_with_desc_async(stage, 1, 0.0, [pop.Desc()])
    assert info.value.code == ErrorCode.NOT_FOUND
    assert "never populated" in pop.last_error()


# -- time ------------------------------------------------------------------------------------


def test_update_from_usd_time_resamples_into_the_ordinal(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1, 0.0)
    assert values(stage, "speed", 1) == {"/World/Box": 1.0}
    pop.update_from_usd_time(stage, 2, 1.0)
    assert values(stage, "speed", 2) == {"/World/Box": 3.0}
    # only time-varying properties are rewritten
    assert changed(stage, "speed", 2, 2) == ["/World/Box"]
    assert changed(stage, "mass", 2, 2) == []


def test_update_with_the_same_time_rewrites_direct_writes(stage, make_query) -> None:
    pop.open_usd_from_string(stage, SCENE, 1, 0.0)
    box = make_query(["/World/Box"])
    stage.write_attribute(box, "speed", 2, np.array([42.0]), is_array=False).wait()
    pop.update_from_usd_time(stage, 3, 0.0)
    assert values(stage, "speed", 3) == {"/World/Box": 1.0}
    assert changed(stage, "speed", 3, 3) == ["/World/Box"]


# -- changes and references ------------------------------------------------------------------


def test_apply_usd_changes_without_edits_is_a_no_op(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    pop.apply_usd_changes(stage, 2)
    assert changed(stage, "mass", 2, 2) == []
    assert changed(stage, "usd-prim-type", 2, 2) == []


def test_reference_at_a_new_path_defines_the_prim(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    handle = pop.add_usd_reference_from_string(stage, REFERENCED, "/World/Extra/Part")
    assert isinstance(handle, int) and handle > 0
    # the source changed; the stage only sees it once the changes are applied
    assert "/World/Extra/Part" not in prims(stage, 1)
    pop.apply_usd_changes(stage, 2)
    assert values(stage, "mass", 2) == {"/World/Box": 2.5, "/World/Extra/Part": 4.0}
    assert values(stage, "count", 2)["/World/Extra/Part/Bolt"] == 3
    # only the new subtree is republished
    assert changed(stage, "count", 2, 2) == ["/World/Extra/Part/Bolt"]
    pop.remove_usd(stage, handle)
    pop.apply_usd_changes(stage, 3)
    assert prims(stage, 3) == ["/World", "/World/Box", "/World/Group"]


def test_reference_on_an_existing_prim_republishes_its_subtree(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    handle = pop.add_usd_reference_from_string(stage, REFERENCED, "/World/Group")
    pop.apply_usd_changes(stage, 2)
    # the referenced prim's opinions are weaker than the local ones: count stays 1
    assert values(stage, "count", 2)["/World/Group"] == 1
    assert values(stage, "mass", 2)["/World/Group"] == 4.0
    assert values(stage, "count", 2)["/World/Group/Bolt"] == 3
    # republished means rewritten, unchanged values included; /World/Box is not under it
    assert changed(stage, "count", 2, 2) == ["/World/Group", "/World/Group/Bolt"]
    pop.remove_usd(stage, handle)
    pop.apply_usd_changes(stage, 3)
    assert "/World/Group/Bolt" not in prims(stage, 3)
    assert "/World/Group" in prims(stage, 3)
    assert "/World/Group" not in values(stage, "mass", 3)
    assert values(stage, "count", 3)["/World/Group"] == 1


def test_reference_at_root_merges_the_layer_and_keeps_the_stage_metadata(
    stage, tmp_path: Path
) -> None:
    pop.open_usd_from_string(stage, SCENE, 1, 0.5)
    layer = tmp_path / "extra.usda"
    layer.write_text(
        "#usda 1.0\n(\n    timeCodesPerSecond = 1\n)\n"
        'def Xform "Extra"\n{\n    double mass = 8.0\n}\n'
    )
    handle = pop.add_usd_reference(stage, layer, "/")
    pop.apply_usd_changes(stage, 2)
    assert values(stage, "mass", 2) == {"/World/Box": 2.5, "/Extra": 8.0}
    # the whole stage is republished, at the stage's own timeCodesPerSecond (10, not the
    # layer's 1): 0.5 s is still time code 5
    assert changed(stage, "speed", 2, 2) == ["/World/Box"]
    assert values(stage, "speed", 2) == {"/World/Box": 2.0}
    pop.remove_usd(stage, handle)
    pop.apply_usd_changes(stage, 3)
    assert "/Extra" not in prims(stage, 3)


def test_reference_needs_a_populated_stage_and_a_prim_path(stage) -> None:
    with pytest.raises(OvstageError) as info:
        pop.add_usd_reference_from_string_async(stage, REFERENCED, "/A")
    assert info.value.code == ErrorCode.NOT_FOUND
    pop.open_usd_from_string(stage, SCENE, 1)
    for target in ("World", "/World.mass", "/World{v=a}"):
        with pytest.raises(OvstageError) as info:
            pop.add_usd_reference_from_string_async(stage, REFERENCED, target)
        assert info.value.code == ErrorCode.INVALID_ARGUMENT
        assert "target_path" in info.value.message


def test_removing_a_handle_twice_fails_when_it_runs(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    handle = pop.add_usd_reference_from_string(stage, REFERENCED, "/World/Part")
    pop.remove_usd(stage, handle)
    with pytest.raises(OvstageError) as info:
        pop.remove_usd(stage, handle)
    assert info.value.code == ErrorCode.OP_FAILED
    assert f"reference handle {handle}" in info.value.message
    with pytest.raises(OvstageError) as never:
        pop.remove_usd_async(stage, handle + 100)
    assert never.value.code == ErrorCode.INVALID_ARGUMENT


def test_reset_keeps_content_until_changes_are_applied(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    pop.reset_usd(stage)
    assert prims(stage, 1) == ["/World", "/World/Box", "/World/Group"]
    pop.apply_usd_changes(stage, 2)
    assert prims(stage, 2) == []
    # the recipe to replace content: reset, apply, then open at a newer ordinal
    pop.open_usd_from_string(stage, OTHER, 3)
    assert prims(stage, 3) == ["/World", "/World/Ball", "/World/Box"]
    assert values(stage, "count", 3) == {}


def test_apply_after_an_open_publishes_nothing_of_the_open(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    pop.open_usd_from_string(stage, OTHER, 2)
    pop.apply_usd_changes(stage, 3)
    # the second open replaced the source, but content of the first one stays
    assert prims(stage, 3) == ["/World", "/World/Ball", "/World/Box", "/World/Group"]


# -- ops: waits, failures, timeouts, progress -------------------------------------------------


def test_async_ops_return_operations_with_their_payloads(stage) -> None:
    op = pop.open_usd_from_string_async(stage, SCENE, 1)
    assert isinstance(op, pop.Operation)
    assert op.ok and op.op_id > 0 and op.error_message() == ""
    assert op.wait() is True
    ref = pop.add_usd_reference_from_string_async(stage, REFERENCED, "/World/Part")
    handle = ref.wait()
    assert isinstance(handle, int) and handle == ref.value
    assert pop.remove_usd_async(stage, handle).wait() is True
    # a second wait of a finished op returns its payload again
    assert ref.wait() == handle


def test_wait_covers_earlier_ops_and_reports_each_failure_once(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    handle = pop.add_usd_reference_from_string(stage, REFERENCED, "/World/Part")
    first = pop.remove_usd_async(stage, handle)
    second = pop.remove_usd_async(stage, handle)  # accepted; fails when it runs
    last = pop.apply_usd_changes_async(stage, 2)
    assert second.op_id < last.op_id
    with pytest.raises(OvstageError) as info:
        last.wait()  # covers the failed op
    assert info.value.code == ErrorCode.OP_FAILED
    assert f"population op {second.op_id}" in info.value.message
    assert f"reference handle {handle}" in pop.last_error()
    assert second.error_message().startswith("remove_usd_async: reference handle")
    # reported once: the failed op's own wait, and the later ones, succeed
    assert second.wait() is True
    assert first.wait() is True
    assert last.wait() is True


def test_wait_timeout_returns_none_and_the_op_stays_waitable(stage) -> None:
    gate = Gate()
    held = gate.hold(stage, 1)
    later = pop.apply_usd_changes_async(stage, 2)
    assert held.wait(10 * MS) is None
    assert later.wait(0) is None
    gate.release.set()
    assert later.wait() is True
    assert held.wait() is True
    assert values(stage, "mass", 2) == {"/World/Box": 2.5}


def test_an_ordinal_sealed_before_the_op_runs_fails_it_with_nothing_written(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1, 0.0)
    gate = Gate()
    held = gate.hold(stage, 2)
    update = pop.update_from_usd_time_async(stage, 3, 1.0)  # accepted: the floor is 1
    stage.advance_write_floor(5)
    gate.release.set()
    with pytest.raises(OvstageError) as info:
        update.wait()
    assert info.value.code == ErrorCode.OP_FAILED
    assert "at or below the write floor 5" in info.value.message
    assert held.wait() is True
    assert values(stage, "speed", 5) == {"/World/Box": 1.0}


def test_progress_reports_prims_read_then_done(stage) -> None:
    seen: list[tuple[int, int]] = []
    pop.open_usd_from_string(stage, SCENE, 1, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (3, 3)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert all(t == 3 for _, t in seen)
    seen.clear()
    pop.repopulate_usd_with_desc(
        stage, 2, 0.0, pop.Desc(domains=1), progress=lambda *a: seen.append(a)
    )
    assert seen[-1] == (3, 3)


def test_progress_logs_at_info(stage, caplog) -> None:
    with caplog.at_level("INFO", logger="ovstage.population"):
        pop.open_usd_from_string(stage, SCENE, 1)
    texts = [r.getMessage() for r in caplog.records if r.name == "ovstage.population"]
    assert any("populating 3 prims at ordinal 1" in t for t in texts), texts
    assert any(t.startswith("open_usd_from_string: wrote") for t in texts), texts


def test_a_failing_progress_callback_fails_the_op_before_any_write(stage) -> None:
    def broken(done: int, total: int) -> None:
        raise RuntimeError("stop here")

    baseline = stage._diagnostics()["columns"]
    with pytest.raises(OvstageError) as info:
        pop.open_usd_from_string(stage, SCENE, 1, progress=broken)
    assert "RuntimeError: stop here" in info.value.message
    assert stage._diagnostics()["columns"] == baseline
    # nothing ran: the same ordinal can be used again
    pop.open_usd_from_string(stage, SCENE, 1)
    assert values(stage, "mass", 1) == {"/World/Box": 2.5}


def test_a_callback_raising_system_exit_fails_the_op_not_the_worker(stage) -> None:
    def leave(done: int, total: int) -> None:
        raise SystemExit(3)

    op = pop.open_usd_from_string_async(stage, SCENE, 1, progress=leave)
    with pytest.raises(OvstageError) as info:
        op.wait(30_000 * MS)  # returns None (no raise) if the op never finishes
    assert "SystemExit" in info.value.message
    pop.open_usd_from_string(stage, SCENE, 1)  # the worker still runs ops
    assert values(stage, "mass", 1) == {"/World/Box": 2.5}


def test_a_progress_callback_cannot_wait_for_later_ops(stage) -> None:
    def waits(done: int, total: int) -> None:
        pop.apply_usd_changes(stage, 5)  # queued behind the running open

    with pytest.raises(OvstageError) as info:
        pop.open_usd_from_string(stage, SCENE, 1, progress=waits)
    assert "cannot be waited on the stage's population worker" in info.value.message


def test_operation_constructor_and_unknown_ids(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    rejected = pop.Operation(stage, ErrorCode.NOT_FOUND, 0, name="x")
    assert not rejected.ok
    with pytest.raises(OvstageError) as info:
        rejected.wait()
    assert info.value.code == ErrorCode.NOT_FOUND
    unknown = pop.Operation(stage, ErrorCode.OK, 10_000, value=5, keepalive=object(), name="y")
    with pytest.raises(OvstageError) as info:
        unknown.wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE
    with ovstage.Stage("never") as other:
        with pytest.raises(OvstageError) as info:
            pop.Operation(other, ErrorCode.OK, 1).wait()
        assert info.value.code == ErrorCode.NOT_FOUND


# -- bad input: a clear error naming the argument, the stage unchanged --------------------------


@pytest.fixture
def populated(stage) -> ovstage.Stage:
    pop.open_usd_from_string(stage, SCENE, 1)
    seal(stage, 1)
    return stage


def test_missing_file_is_refused_naming_path(populated, tmp_path: Path) -> None:
    before = stage_content(populated, 1)
    with pytest.raises(OvstageError) as info:
        pop.open_usd_async(populated, tmp_path / "missing.usda", 2)
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert info.value.message.startswith("path:") and "does not exist" in info.value.message
    assert pop.last_error() == info.value.message
    with pytest.raises(OvstageError, match="ref_file_path"):
        pop.add_usd_reference_async(populated, tmp_path / "missing.usda", "/World/X")
    assert stage_content(populated, 1) == before


def test_malformed_usda_is_refused_naming_the_argument(populated) -> None:
    before = stage_content(populated, 1)
    bad = '#usda 1.0\ndef Xform "A" {\n    double x = \n}\n'
    with pytest.raises(OvstageError) as info:
        pop.open_usd_from_string_async(populated, bad, 2)
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert info.value.message.startswith("usda: not valid usda")
    with pytest.raises(OvstageError, match="ref_str: not valid usda"):
        pop.add_usd_reference_from_string_async(populated, bad, "/World/X")
    assert stage_content(populated, 1) == before


def test_malformed_file_fails_the_op_naming_path(populated, tmp_path: Path) -> None:
    before = stage_content(populated, 1)
    bad = tmp_path / "bad.usda"
    bad.write_text('#usda 1.0\ndef Xform "A" {\n')
    with pytest.raises(OvstageError) as info:
        pop.open_usd(populated, bad, 2)
    assert "path: cannot read" in info.value.message
    assert stage_content(populated, 1) == before


def test_ordinal_at_or_below_the_floor_is_refused(populated) -> None:
    before = stage_content(populated, 1)
    calls = [
        lambda: pop.open_usd_from_string_async(populated, OTHER, 1),
        lambda: pop.open_usd_from_string_with_desc_async(populated, OTHER, 0, 0.0, [pop.Desc()]),
        lambda: pop.repopulate_usd_with_desc_async(populated, 1, 0.0, [pop.Desc()]),
        lambda: pop.update_from_usd_time_async(populated, 1, 0.0),
        lambda: pop.apply_usd_changes_async(populated, 1),
    ]
    for call in calls:
        with pytest.raises(OvstageError) as info:
            call()
        assert info.value.code == ErrorCode.WRITE_FLOOR_VIOLATION
        assert "write floor 1" in info.value.message
    # a blocking form names itself
    with pytest.raises(OvstageError) as info:
        pop.apply_usd_changes(populated, 1)
    assert info.value.message.startswith("population.apply_usd_changes: ordinal 1")
    assert stage_content(populated, 1) == before


def test_bad_argument_types_and_ranges(populated) -> None:
    before = stage_content(populated, 1)
    with pytest.raises(TypeError, match="stage"):
        pop.open_usd_from_string_async(object(), SCENE, 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ordinal"):
        pop.open_usd_from_string_async(populated, SCENE, "2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ordinal"):
        pop.open_usd_from_string_async(populated, SCENE, -1)
    with pytest.raises(TypeError, match="time"):
        pop.update_from_usd_time_async(populated, 2, "now")  # type: ignore[arg-type]
    for domains in (-1, 1 << 32):
        with pytest.raises(ValueError, match="domains"):
            pop.open_usd_from_string_async(populated, SCENE, 2, 0.0, domains)
    with pytest.raises(TypeError, match="usda"):
        pop.open_usd_from_string_async(populated, b"#usda 1.0", 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="progress"):
        pop.open_usd_from_string_async(populated, SCENE, 2, progress=3)  # type: ignore[arg-type]
    assert stage_content(populated, 1) == before


def test_ops_needing_a_populated_stage_are_refused_not_found(stage) -> None:
    calls = [
        lambda: pop.reset_usd_async(stage),
        lambda: pop.apply_usd_changes_async(stage, 1),
        lambda: pop.update_from_usd_time_async(stage, 1, 0.0),
        lambda: pop.remove_usd_async(stage, 1),
        lambda: pop.add_usd_reference_from_string_async(stage, REFERENCED, "/P"),
    ]
    for call in calls:
        with pytest.raises(OvstageError) as info:
            call()
        assert info.value.code == ErrorCode.NOT_FOUND
    assert prims(stage, 1) == []


def test_calls_on_a_destroyed_stage_are_refused() -> None:
    stage = ovstage.Stage("gone")
    pop.open_usd_from_string(stage, SCENE, 1)
    stage.destroy()
    with pytest.raises(OvstageError) as info:
        pop.open_usd_from_string_async(stage, SCENE, 2)
    assert info.value.code == ErrorCode.INVALID_HANDLE
    with pytest.raises(OvstageError) as info:
        pop.apply_usd_changes_async(stage, 2)
    assert info.value.code == ErrorCode.INVALID_HANDLE


# -- the worker's lifetime, handles -----------------------------------------------------------


def _population_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ovstage-population")]


def test_destroy_stops_the_worker_and_fails_queued_ops() -> None:
    before = len(_population_threads())
    stage = ovstage.Stage("stopped")
    gate = Gate()
    held = gate.hold(stage, 1)
    queued = pop.apply_usd_changes_async(stage, 2)
    assert len(_population_threads()) == before + 1
    destroyer = threading.Thread(target=stage.destroy)
    destroyer.start()
    gate.release.set()
    destroyer.join(30)
    assert not destroyer.is_alive()
    assert len(_population_threads()) == before
    for op in (held, queued):
        with pytest.raises(OvstageError) as info:
            op.wait()
        assert info.value.code == ErrorCode.INVALID_HANDLE


def test_a_stage_dropped_without_destroy_stops_its_worker() -> None:
    before = len(_population_threads())
    stage = ovstage.Stage("dropped")
    pop.open_usd_from_string(stage, SCENE, 1)
    del stage
    import gc

    gc.collect()
    deadline = time.monotonic() + 10
    while len(_population_threads()) > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(_population_threads()) == before


def test_population_releases_every_handle_it_creates(stage) -> None:
    baseline = stage._diagnostics()
    pop.open_usd_from_string(stage, SCENE, 1)
    handle = pop.add_usd_reference_from_string(stage, REFERENCED, "/World/Part")
    pop.apply_usd_changes(stage, 2)
    pop.update_from_usd_time(stage, 3, 1.0)
    pop.remove_usd(stage, handle)
    pop.apply_usd_changes(stage, 4)
    after = stage._diagnostics()
    for key in ("queries", "reads", "groups", "ordinal_queries", "maps", "path_lists"):
        assert after[key] == baseline[key], (key, baseline, after)


# -- schema plugins ------------------------------------------------------------------------------


def test_register_usd_schemas_checks_every_entry_first(tmp_path: Path) -> None:
    assert pop.register_usd_schemas([]) is None
    with pytest.raises(OvstageError) as info:
        pop.register_usd_schemas(["", str(tmp_path)])
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert "paths[0]" in info.value.message
    with pytest.raises(OvstageError) as info:
        pop.register_usd_schemas(tmp_path / "nowhere")
    assert info.value.code == ErrorCode.NOT_FOUND
    assert "paths[0]" in info.value.message
    with pytest.raises(OvstageError) as info:
        pop.register_usd_schemas([str(tmp_path)])  # a directory without plugInfo.json
    assert info.value.code == ErrorCode.NOT_FOUND
    with pytest.raises(TypeError, match="paths"):
        pop.register_usd_schemas(3)  # type: ignore[arg-type]


def test_register_usd_schemas_before_and_after_the_first_open(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "plugInfo.json").write_text('{"Plugins": []}')
    script = (
        "import ovstage\n"
        "from ovstage import population as pop\n"
        f"pop.register_usd_schemas([{str(plugin)!r}])\n"
        "with ovstage.Stage('s') as s:\n"
        "    pop.open_usd_from_string(s, '#usda 1.0\\n', 1)\n"
        "try:\n"
        f"    pop.register_usd_schemas({str(plugin / 'plugInfo.json')!r})\n"
        "except ovstage.OvstageError as exc:\n"
        "    print(ovstage.ErrorCode(exc.code).name)\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "OP_FAILED\n"


# -- what population shares with the other modules ----------------------------------------------

INSTANCED = """#usda 1.0
def Xform "World"
{
    def Xform "A" (
        instanceable = true
        prepend references = </Proto>
    )
    {
    }
    def Xform "B" (
        instanceable = true
        prepend references = </Proto>
    )
    {
    }
}
class Xform "Proto"
{
    def Xform "Leaf"
    {
        double mass = 1.0
    }
}
"""


def test_instancing_answers_for_the_populated_instance_roots(stage) -> None:
    from ovstage import instancing

    pop.open_usd_from_string(stage, INSTANCED, 1)
    roots = instancing.get_prototype_roots(stage)
    assert len(roots) == 1
    assert instancing.get_instance_roots(stage, roots[0]) == ["/World/A", "/World/B"]
    assert instancing.get_prototype_root(stage, "/World/A") == roots[0]
    instance = token(stage, "XformInstance")
    assert values(stage, "usd-prim-type", 1)["/World/A"] == instance


def test_a_redeclared_type_replaces_the_column(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    seal(stage, 1)
    with stage.query() as query:
        (group,) = read_groups(stage, query, ["mass"], OrdinalRange.latest(1))
    assert group.dtypes["/World/Box"] == (2, 64, 1)
    # a stronger layer declares mass as float: the column is replaced, not refused
    retyped = (
        '#usda 1.0\nover "World"\n{\n    over "Box"\n    {\n        float mass = 0.5\n    }\n}\n'
    )
    pop.add_usd_reference_from_string(stage, retyped, "/")
    pop.apply_usd_changes(stage, 2)
    seal(stage, 2)
    with stage.query() as query:
        (group,) = read_groups(stage, query, ["mass"], OrdinalRange.latest(2))
    assert group.values == {"/World/Box": 0.5}
    assert group.dtypes["/World/Box"] == (2, 32, 1)


# -- an open replaces the op stream ------------------------------------------------------------


def test_an_open_replaces_the_op_stream(stage) -> None:
    first = pop.open_usd_from_string_async(stage, SCENE, 1)
    change = pop.apply_usd_changes_async(stage, 2)
    second = pop.open_usd_from_string_async(stage, OTHER, 3)
    assert second.wait() is True
    for old in (first, change):
        with pytest.raises(OvstageError) as info:
            old.wait()
        assert info.value.code == ErrorCode.INVALID_HANDLE
        assert "does not belong to this stage's current population stream" in info.value.message
        assert "a later open replaced its stream" in info.value.message
    # the ops of the replaced stream still ran, before the open that replaced it
    assert values(stage, "mass", 3) == {"/World/Box": 9.0, "/World/Ball": 1.0}
    assert values(stage, "count", 3) == {"/World/Box": 7, "/World/Group": 1}
    # ids keep increasing: an id the current stream never issued is refused as well
    with pytest.raises(OvstageError) as info:
        pop.Operation(stage, ErrorCode.OK, second.op_id + 1).wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE
    assert "a later open" not in info.value.message


def test_a_failure_of_a_replaced_stream_is_reported_by_no_wait(stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1, 0.0)
    gate = Gate()
    held = gate.hold(stage, 2)
    update = pop.update_from_usd_time_async(stage, 3, 1.0)  # fails once it runs: floor 5
    stage.advance_write_floor(5)
    reopen = pop.open_usd_from_string_async(stage, OTHER, 6)
    gate.release.set()
    assert reopen.wait() is True, "the replaced stream's failure is not this wait's"
    with pytest.raises(OvstageError) as info:
        update.wait()
    assert info.value.code == ErrorCode.INVALID_HANDLE
    assert "at or below the write floor 5" in update.error_message()
    with pytest.raises(OvstageError):
        held.wait()


def test_ops_other_than_opens_keep_the_stream(stage) -> None:
    opened = pop.open_usd_from_string_async(stage, SCENE, 1)
    later = [
        pop.reset_usd_async(stage),
        pop.apply_usd_changes_async(stage, 2),
        pop.repopulate_usd_with_desc_async(stage, 3, 0.0, pop.Desc(domains=PopulationDomain.ALL)),
    ]
    for op in [*later, opened]:
        assert op.wait() is True
