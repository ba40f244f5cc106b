"""The derived transform of populated prims under its public and storage names.

``omni:xform`` and ``omni:resetXformStack`` are the public names of the columns the stage
stores as ``omni:fabric:localMatrix`` and ``omni:fabric:resetXformStack``: discovery reports
the storage names, and reads, writes and floors through either name address one column.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, Filter, FilterOp, OrdinalRange, OvstageError, Predicate
from ovstage import population as pop
from readback import floor_of, read_groups, values_of

pytest.importorskip("pxr", reason="usd-core is not installed")

SCENE = """#usda 1.0
def Xform "World"
{
    double3 xformOp:translate = (1, 2, 3)
    uniform token[] xformOpOrder = ["xformOp:translate"]
    def Xform "Child"
    {
        double3 xformOp:translate = (0, 0, 5)
        uniform token[] xformOpOrder = ["!resetXformStack!", "xformOp:translate"]
    }
}
"""

LOCAL = "omni:fabric:localMatrix"
RESET = "omni:fabric:resetXformStack"
PUBLIC = {"omni:xform": LOCAL, "omni:resetXformStack": RESET}


def translation(x: float, y: float, z: float) -> list[float]:
    matrix = np.eye(4)
    matrix[3, :3] = (x, y, z)  # row-vector convention: translation in elements 12..14
    return matrix.reshape(16).tolist()


def discovered(stage: ovstage.Stage, attrs: Sequence[str] | None = None) -> list[str]:
    paths = ovstage.PathDictionary(stage)
    world = Filter([Predicate("usd-path", FilterOp.IN, ["/World/Child"])])
    with stage.query(world, attrs) as query:
        return sorted(paths.token_to_string(t) for t in query.result().attributes)


def read(stage: ovstage.Stage, name: str, ordinal: int) -> dict[str, list[float]]:
    with stage.query() as query:
        groups = read_groups(stage, query, [name], OrdinalRange.latest(ordinal))
    return {p: np.asarray(v).reshape(-1).tolist() for p, v in values_of(groups, name).items()}


@pytest.fixture
def populated(stage: ovstage.Stage) -> ovstage.Stage:
    pop.open_usd_from_string(stage, SCENE, 1)
    stage.advance_write_floor(1).wait()
    return stage


def test_discovery_reports_the_storage_names(populated: ovstage.Stage) -> None:
    names = discovered(populated)
    assert {LOCAL, RESET} <= set(names)
    assert not set(PUBLIC) & set(names), "the public names are aliases, not columns"
    # discovery scoped to the public names reports the columns they address
    assert discovered(populated, list(PUBLIC)) == sorted(PUBLIC.values())


def test_reads_by_either_name_agree(populated: ovstage.Stage) -> None:
    world, child = translation(1, 2, 3), translation(0, 0, 5)
    for public, storage in PUBLIC.items():
        assert read(populated, public, 1) == read(populated, storage, 1)
    assert read(populated, "omni:xform", 1) == {"/World": world, "/World/Child": child}
    assert read(populated, RESET, 1) == {"/World": [False], "/World/Child": [True]}


def test_a_write_through_one_name_is_read_through_the_other(populated: ovstage.Stage) -> None:
    paths = ovstage.PathDictionary(populated)
    with paths.create_path_list_from_strings(["/World"]) as path_list:
        query = populated.query_from_path_list(path_list)
        moved = np.asarray([translation(7, 8, 9)], dtype=np.float64)
        populated.write_attribute(query, "omni:xform", 2, moved, is_array=False, semantic=10).wait()
        populated.release_query(query).wait()
    populated.advance_write_floor(2).wait()
    assert read(populated, LOCAL, 2)["/World"] == translation(7, 8, 9)


def test_floors_are_shared(populated: ovstage.Stage) -> None:
    xform = ovstage.PathDictionary(populated).intern_token("omni:xform")
    populated.advance_write_floor(4, ovstage.Scope.INCLUDE, [xform]).wait()
    assert floor_of(populated, LOCAL) == floor_of(populated, "omni:xform") == 4
    # a repopulation writes the transform through the public name: refused at the shared floor
    rendering = pop.Desc(domains=ovstage.PopulationDomain.RENDERING)
    with pytest.raises(OvstageError) as info:
        pop.repopulate_usd_with_desc(populated, 3, pop.DEFAULT_TIME, rendering)
    assert info.value.code == ErrorCode.OP_FAILED  # found when the op ran
    assert "write floor 4" in info.value.message
    assert read(populated, LOCAL, 4)["/World"] == translation(1, 2, 3), "nothing was written"
