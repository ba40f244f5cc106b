"""Export what a simulation changed back to USD, one layer of sparse opinions.

The scene is populated into a stage at ordinal 1. A few simulated steps then move a ball and
heat it (each step writes at its own ordinal and seals it). A reusable export destination
receives first the whole custom state, then, step by step, only what changed since the last
export (``since_ordinal``), including an attribute the simulation deleted; the destination is
saved once and the written layer printed. Opening that layer over the original scene (as a
stronger sublayer) gives the simulated state.

Needs usd-core (``pip install 'ovstage-go[usd]'``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import ovstage
from ovstage import population as pop
from pxr import Sdf, Usd, UsdGeom

SCENE = """#usda 1.0
(
    defaultPrim = "World"
)
def Xform "World"
{
    def Sphere "Ball"
    {
        double radius = 0.5
        float sim:temperature = 290
        float sim:charge = 1
    }
    def Cube "Floor"
    {
        float sim:temperature = 280
    }
}
"""

#: Export the custom ``sim:`` attributes, with the type population read them with.
SIM_RULES = [
    {
        "source_attribute_name": "sim:*",
        "source_attribute_name_match": pop.OVSTAGE_POPULATION_EXPORT_NAME_MATCH_GLOB,
        "flags": pop.OVSTAGE_POPULATION_EXPORT_RULE_INFER_CUSTOM_TYPE,
    }
]
CHANGED = pop.OVSTAGE_POPULATION_EXPORT_SELECTION_CHANGED_PROPERTIES_SINCE_ORDINAL


def write(stage: ovstage.Stage, path: str, name: str, value: np.ndarray, ordinal: int) -> None:
    """One prim's value of one column at ``ordinal``."""
    dictionary = ovstage.PathDictionary(stage)
    with dictionary.create_path_list_from_strings([path]) as path_list:
        query = stage.query_from_path_list(path_list)
        semantic = ovstage.AttributeSemantic.MATRIX if name == "omni:xform" else 0
        stage.write_attribute(query, name, ordinal, value, is_array=False, semantic=semantic).wait()
        stage.release_query(query).wait()


def delete(stage: ovstage.Stage, path: str, name: str, ordinal: int) -> None:
    dictionary = ovstage.PathDictionary(stage)
    with dictionary.create_path_list_from_strings([path]) as path_list:
        query = stage.query_from_path_list(path_list)
        stage.delete_attributes(query, [name], ordinal).wait()
        stage.release_query(query).wait()


def step(stage: ovstage.Stage, ordinal: int) -> None:
    """One simulated step: the ball falls by 1 and warms by 5; the floor is left alone."""
    transform = np.eye(4)
    transform[3, 2] = 10.0 - ordinal
    write(stage, "/World/Ball", "omni:xform", transform.reshape(1, 16), ordinal)
    heat = np.array([290.0 + 5.0 * ordinal], dtype=np.float32)
    write(stage, "/World/Ball", "sim:temperature", heat, ordinal)
    if ordinal == 3:
        delete(stage, "/World/Ball", "sim:charge", ordinal)  # the charge is spent
    stage.advance_write_floor(ordinal).wait()


def main() -> None:
    out = Path(tempfile.mkdtemp()) / "simulated.usda"
    with ovstage.Stage("usd-export") as stage:
        pop.open_usd_from_string(stage, SCENE, 1)
        stage.advance_write_floor(1).wait()
        with pop.create_export_destination(stage, out) as destination:
            report = destination.export(1, attribute_rules=SIM_RULES)
            print(f"ordinal 1: full export, {report['attributes_exported']} attributes")
            exported = 1
            for ordinal in (2, 3, 4):
                step(stage, ordinal)
                report = destination.export(
                    ordinal, since_ordinal=exported, selection=CHANGED, attribute_rules=SIM_RULES
                )
                exported = ordinal
                print(
                    f"ordinal {ordinal}: changed since {ordinal - 1}: "
                    f"{report['attributes_exported']} attribute, "
                    f"{report['transforms_exported']} transform"
                )
            destination.save()
    layer = Sdf.Layer.FindOrOpen(str(out))
    print("--- the written layer ---")
    print(layer.ExportToString().strip())
    # The layer over the original scene: the simulated state as USD composes it.
    scene = Sdf.Layer.CreateAnonymous("scene.usda")
    scene.ImportFromString(SCENE)
    root = Sdf.Layer.CreateAnonymous("composed.usda")
    root.subLayerPaths = [layer.identifier, scene.identifier]
    composed = Usd.Stage.Open(root)
    ball = composed.GetPrimAtPath("/World/Ball")
    origin = UsdGeom.Xformable(ball).ComputeLocalToWorldTransform(0).ExtractTranslation()
    print("--- composed over the scene ---")
    print(f"Ball at {tuple(origin)}, {ball.GetAttribute('sim:temperature').Get()} K")
    print(f"Ball sim:charge: {ball.GetAttribute('sim:charge').Get()} (deleted at ordinal 3)")
    print(f"Floor {composed.GetAttributeAtPath('/World/Floor.sim:temperature').Get()} K")


if __name__ == "__main__":
    main()
