"""Finalizers release first, then warn (a handle dropped unreleased is freed, then
a ResourceWarning names it).

Every owning wrapper (Query, Read, OrdinalQuery, Hierarchy, Map -- whose release is its
unmap --, ReadGroup, PathList) dropped unreleased while its stage is alive is released by its
finalizer, which then emits ``ResourceWarning("<Kind> <handle> was garbage-collected
unreleased; released by its finalizer")`` -- or prints that text to stderr when warnings are
escalated to errors (a finalizer must not raise).
"""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import ovstage
import ovstage._warn
import pytest
from ovstage import ErrorCode, HierarchyRelation, OrdinalRange, OvxError

PRIMS = ["/A", "/B"]


@dataclass
class Owned:
    """A wrapper under test, the id its warning names, and a probe telling whether the
    engine already considers it released."""

    obj: Any
    kind: str
    handle: int
    released: Callable[[], bool]


def rejected_invalid(op: ovstage.Operation) -> bool:
    return op.status == ErrorCode.INVALID_HANDLE


@pytest.fixture
def sealed(stage, make_query, write_sealed) -> ovstage.Query:
    query = make_query(PRIMS)
    write_sealed(query, "t", 1, np.array([1.0, 2.0], np.float32))
    return query


@pytest.fixture
def plist(paths) -> Iterator[ovstage.PathList]:
    with paths.create_path_list_from_strings(PRIMS) as handle:
        yield handle


def make_query_handle(stage, paths, sealed, plist) -> Owned:
    q = stage.query_from_path_list(plist)
    h = q.handle  # probes capture ids only: capturing the wrapper would keep it alive
    return Owned(q, "Query", h, lambda: rejected_invalid(stage.release_query(h)))


def make_read(stage, paths, sealed, plist) -> Owned:
    r = stage.read_attributes(sealed, ["t"], OrdinalRange.latest(1))
    h = r.handle
    return Owned(r, "Read", h, lambda: rejected_invalid(stage.release_read(h)))


def make_ordinal_query(stage, paths, sealed, plist) -> Owned:
    oq = stage.get_attribute_write_floor()
    h = oq.handle
    return Owned(oq, "OrdinalQuery", h, lambda: rejected_invalid(stage.release_ordinal_query(h)))


def make_hierarchy(stage, paths, sealed, plist) -> Owned:
    hier = stage.get_hierarchy_async(plist, 1, HierarchyRelation.PARENT)
    h = hier.handle
    return Owned(hier, "Hierarchy", h, lambda: rejected_invalid(stage.release_hierarchy(h)))


def make_map(stage, paths, sealed, plist) -> Owned:
    m = stage.map_attribute(sealed, "t", 2)
    h = m.handle
    return Owned(m, "Map", h, lambda: rejected_invalid(stage.unmap_attribute(h)))


def make_read_group(stage, paths, sealed, plist) -> Owned:
    with stage.read_attributes(sealed, ["t"], OrdinalRange.latest(1)) as read:
        group = read.fetch_next()
    assert group is not None
    live = stage._diagnostics()["groups"]
    return Owned(group, "ReadGroup", group.id, lambda: stage._diagnostics()["groups"] == live - 1)


def make_path_list(stage, paths, sealed, plist) -> Owned:
    leaked = paths.create_path_list_from_strings(["/Leaked"])
    handle = int(leaked)

    def freed() -> bool:
        try:
            paths.path_list_count(handle)
        except OvxError:
            return True
        return False

    return Owned(leaked, "PathList", handle, freed)


FACTORIES = {
    "Query": make_query_handle,
    "Read": make_read,
    "OrdinalQuery": make_ordinal_query,
    "Hierarchy": make_hierarchy,
    "Map": make_map,
    "ReadGroup": make_read_group,
    "PathList": make_path_list,
}


def expected_text(kind: str, handle: int) -> str:
    return f"{kind} {handle} was garbage-collected unreleased; released by its finalizer"


@pytest.mark.parametrize("kind", FACTORIES)
def test_finalizer_releases_before_it_warns(
    stage, paths, sealed, plist, monkeypatch, kind: str
) -> None:
    owned = FACTORIES[kind](stage, paths, sealed, plist)
    assert owned.handle != 0
    seen: list[tuple[str, bool]] = []
    probe, handle = owned.released, owned.handle
    monkeypatch.setattr(
        ovstage._warn, "warn_unreleased", lambda message: seen.append((message, probe()))
    )
    del owned
    gc.collect()
    assert seen == [(expected_text(kind, handle), True)], "released when the warning is emitted"
    assert probe()


@pytest.mark.parametrize("kind", FACTORIES)
def test_finalizer_emits_a_resource_warning(stage, paths, sealed, plist, kind: str) -> None:
    owned = FACTORIES[kind](stage, paths, sealed, plist)
    text = expected_text(kind, owned.handle)
    with pytest.warns(ResourceWarning, match=f"^{re.escape(text)}$"):
        del owned
        gc.collect()


@pytest.mark.parametrize("kind", FACTORIES)
def test_released_wrappers_do_not_warn(stage, paths, sealed, plist, kind: str) -> None:
    owned = FACTORIES[kind](stage, paths, sealed, plist)
    result = owned.obj.release()
    if isinstance(result, ovstage.Operation):
        result.wait()
    assert owned.released()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del owned
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_handles_of_a_destroyed_stage_are_dropped_silently() -> None:
    other = ovstage.Stage("destroyed-first")
    plist = ovstage.PathDictionary(other).create_path_list_from_strings(PRIMS)
    query = other.query_from_path_list(plist)
    group_stage_hierarchy = other.get_hierarchy_async(plist, 1, HierarchyRelation.PARENT)
    other.destroy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del query, group_stage_hierarchy, plist  # the list went with its stage's dictionary
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_escalated_warnings_fall_back_to_stderr() -> None:
    script = textwrap.dedent(
        """
        import gc
        import numpy as np
        import ovstage

        stage = ovstage.Stage("escalated")
        paths = ovstage.PathDictionary(stage)
        with paths.create_path_list_from_strings(["/A"]) as plist:
            q = stage.query_from_path_list(plist)
            stage.write_attribute(q, "t", 1, np.ones(1, np.float32), is_array=False).wait()
            stage.advance_write_floor(1).wait()
            with stage.read_attributes(q, ["t"], ovstage.OrdinalRange.latest(1)) as read:
                group = read.fetch_next()
            hierarchy = stage.get_hierarchy_async(plist, 1, ovstage.HierarchyRelation.PARENT)
            leaked = paths.create_path_list_from_strings(["/B"])
            ids = [q.handle, group.id, hierarchy.handle, int(leaked)]
            del q, group, hierarchy, leaked
            gc.collect()
        print(*ids)
        print(stage._diagnostics()["groups"])
        stage.destroy()
        """
    )
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    query, group, hierarchy, plist = (int(v) for v in result.stdout.split()[:4])
    assert result.stdout.split()[4] == "0", "the finalizer released the group"
    assert sorted(result.stderr.splitlines()) == sorted(
        f"ResourceWarning: {expected_text(kind, handle)}"
        for kind, handle in [
            ("Query", query),
            ("ReadGroup", group),
            ("Hierarchy", hierarchy),
            ("PathList", plist),
        ]
    )
