"""What the RENDERING domain changes in a population, as the contract states it: the world
matrix is left to it (population creates ``omni:fabric:worldMatrix`` only without RENDERING),
and re-sampling the time also publishes pending structural USD edits when RENDERING is on."""

from __future__ import annotations

import numpy as np
import ovstage
import pytest
from ovstage import Filter, FilterOp, OrdinalRange, PopulationDomain, Predicate
from ovstage import population as pop
from readback import read_groups, values_of

pytest.importorskip("pxr", reason="usd-core is not installed")

SCENE = """#usda 1.0
(
    timeCodesPerSecond = 10
)
def Xform "World"
{
    double3 xformOp:translate = (1, 0, 0)
    uniform token[] xformOpOrder = ["xformOp:translate"]
    def Xform "Box"
    {
        double3 xformOp:translate = (0, 2, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
        double speed.timeSamples = {
            0: 1.0,
            10: 3.0,
        }
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
}
"""

WORLD = "omni:fabric:worldMatrix"
RENDERING = pop.Desc(domains=PopulationDomain.RENDERING)
EVERY_PRIM = pop.Desc(
    selectors=[pop.Selector(pop.PrimPredicate.all(), pop.PropertyPredicate.all())]
)


def attributes_of(stage: ovstage.Stage, path: str) -> list[str]:
    names = ovstage.PathDictionary(stage)
    with stage.query(Filter([Predicate("usd-path", FilterOp.IN, [path])])) as query:
        return sorted(names.token_to_string(t) for t in query.result().attributes)


def values(stage: ovstage.Stage, attribute: str, ordinal: int) -> dict[str, object]:
    stage.advance_write_floor(ordinal).wait()
    with stage.query() as query:
        groups = read_groups(stage, query, [attribute], OrdinalRange.latest(ordinal))
    return values_of(groups, attribute)


def translation(x: float, y: float, z: float) -> list[float]:
    matrix = np.eye(4)
    matrix[3, :3] = (x, y, z)
    return matrix.reshape(16).tolist()


def test_rendering_leaves_the_world_matrix_alone(stage) -> None:
    pop.open_usd_from_string_with_desc(stage, SCENE, 1, pop.DEFAULT_TIME, RENDERING)
    assert "omni:fabric:localMatrix" in attributes_of(stage, "/World/Box")
    assert WORLD not in attributes_of(stage, "/World/Box")


def test_without_rendering_population_creates_the_world_matrix(stage) -> None:
    pop.open_usd_from_string_with_desc(stage, SCENE, 1, pop.DEFAULT_TIME, EVERY_PRIM)
    assert WORLD in attributes_of(stage, "/World/Box")
    # created from the local transform; the floor advance that seals it composes the chain
    world = values(stage, WORLD, 1)
    assert world["/World"] == translation(1, 0, 0)
    assert world["/World/Box"] == translation(1, 2, 0)


@pytest.mark.parametrize(
    ("desc", "published"), [(RENDERING, True), (EVERY_PRIM, False)], ids=["rendering", "selector"]
)
def test_resampling_publishes_pending_edits_only_with_rendering(stage, desc, published) -> None:
    pop.open_usd_from_string_with_desc(stage, SCENE, 1, 0.0, desc)
    pop.add_usd_reference_from_string(stage, REFERENCED, "/World/Part")
    pop.update_from_usd_time(stage, 2, 1.0)
    assert values(stage, "speed", 2) == {"/World/Box": 3.0}
    assert values(stage, "mass", 2) == ({"/World/Part": 4.0} if published else {})
    pop.apply_usd_changes(stage, 3)  # publishes what is still pending (nothing with RENDERING)
    assert values(stage, "mass", 3) == {"/World/Part": 4.0}
