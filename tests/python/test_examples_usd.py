"""The examples that read USD scenes (examples/python), run as scripts with this interpreter.

They need usd-core; each one prints a deterministic report that is asserted line by line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'ovstage-go[usd]')")

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "python"


def run_example(script: Path) -> subprocess.CompletedProcess[str]:
    """One run of an example, leaked handles escalated to errors."""
    return subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(script)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )


def output_of(script: Path) -> list[str]:
    result = run_example(script)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout.splitlines()


def test_usd_to_ovstage_example_output() -> None:
    assert output_of(EXAMPLES / "usd-to-ovstage" / "main.py") == [
        "wrote 5 prims: /World /World/Table /World/Table/Box /World/Table/Tet /World/Lamp",
        "usd-prim-type IN [Mesh]: /World/Table/Box /World/Table/Tet",
        "usd-schemas CONTAINS [PhysicsRigidBodyAPI]: /World/Table/Box /World/Table/Tet",
        "usd-parent IN [/World/Table]: /World/Table/Box /World/Table/Tet",
        # Ragged points and colors keep their 3 components per element.
        "/World/Table/Box: 8 points x 3, 1 colors, extent [0.0, 0.0, 0.0]..[1.0, 1.0, 1.0], "
        "sim:temperature 300.0",
        "/World/Table/Tet: 4 points x 3, 2 colors, extent [0.0, 0.0, 0.0]..[1.0, 1.0, 1.0], "
        "sim:temperature 310.5",
        # compute_hierarchy composes the written local transforms as pxr does.
        "/World/Lamp world origin [0.0, 0.0, 3.0] (as pxr computes it: True)",
        "/World/Table world origin [1.0, 2.0, 0.0] (as pxr computes it: True)",
        "/World/Table/Box world origin [1.0, 2.0, 1.0] (as pxr computes it: True)",
        "/World/Table/Tet world origin [1.5, 1.5, 1.0] (as pxr computes it: True)",
    ]


def test_queries_example_output() -> None:
    """The built-in predicate matrix over the populated scene.usda."""
    assert output_of(EXAMPLES / "queries" / "main.py") == [
        # Committed (not yet sealed) population is visible to queries.
        "before sealing: 5 Mesh prims",
        "9 prims populated",
        # RENDERING: the authored attributes and the Mesh schema's fallbacks; PHYSICS (a
        # collider): physics:collisionEnabled, usd-metadata:typeName; the derived transform,
        # reported under its storage names (omni:xform / omni:resetXformStack are aliases).
        "/World/Table carries 23 attributes:",
        "  cornerIndices, cornerSharpnesses, creaseIndices, creaseLengths, creaseSharpnesses, "
        "doubleSided,",
        "  faceVaryingLinearInterpolation, holeIndices, interpolateBoundary, "
        "omni:fabric:localMatrix,",
        "  omni:fabric:resetXformStack, orientation, physics:collisionEnabled, purpose, "
        "subdivisionScheme,",
        "  triangleSubdivisionRule, usd-ancestor-types, usd-metadata:typeName, usd-prim-type, "
        "usd-schemas,",
        "  visibility, xformOp:translate, xformOpOrder",
        "discovery scoped to [physics:mass]: physics:mass",
        "usd-prim-type IN [Mesh]: /World/Robot/Arm /World/Robot/Arm/Gripper /World/Robot/Base "
        "/World/Table /Worldwide/Sign",
        # Byte prefix: /Worldwide matches "/World".
        "usd-path PREFIX [/World]: /World /World/Light /World/Robot /World/Robot/Arm "
        "/World/Robot/Arm/Gripper /World/Robot/Base /World/Table /Worldwide /Worldwide/Sign",
        "usd-path PREFIX [/World/]: /World/Light /World/Robot /World/Robot/Arm "
        "/World/Robot/Arm/Gripper /World/Robot/Base /World/Table",
        "usd-parent IN [/World/Robot]: /World/Robot/Arm /World/Robot/Base",
        "usd-children CONTAINS [/World/Robot/Arm/Gripper]: /World/Robot/Arm",
        "usd-schemas CONTAINS [PhysicsRigidBodyAPI]: "
        "/World/Robot/Arm /World/Robot/Arm/Gripper /World/Robot/Base",
        # The light's CollectionAPI:lightLink / :shadowLink instances list their family.
        "usd-schemas CONTAINS [CollectionAPI]: /World/Light",
        # Mesh and SphereLight derive from Boundable, Xform does not.
        "usd-ancestor-types CONTAINS [Boundable]: /World/Light /World/Robot/Arm "
        "/World/Robot/Arm/Gripper /World/Robot/Base /World/Table /Worldwide/Sign",
        "physics:mass HAS: /World/Robot/Arm /World/Robot/Arm/Gripper /World/Robot/Base",
        "usd-prim-type IN [Mesh] AND usd-schemas CONTAINS [PhysicsCollisionAPI]: "
        "/World/Robot/Arm/Gripper /World/Robot/Base /World/Table",
        "usd-prim-type IN [SphereLight, Xform]: /World /World/Light /World/Robot /Worldwide",
        "physics:mass GT [1]: /World/Robot/Arm=3.0 /World/Robot/Base=12.5",
        "usd-active: NOT_SUPPORTED",
    ]


def test_usd_time_samples_example_output() -> None:
    """Time samples re-sampled into ordinals; each poll reads what changed since the last."""
    assert output_of(EXAMPLES / "time-and-ordinals" / "usd_time_samples.py") == [
        "consumer at t=0.0s: changes in [1, 1]",
        "  /World/Ball xformOp:translate = [0.0, 0.0, 2.0]",
        "  /World/Box sim:speed = 3.0",
        "  /World/Fan sim:speed = 0.0",
        # Ordinals 2 and 3 read together: the latest value of each key; the box never again.
        "consumer at t=0.2s: changes in [2, 3]",
        "  /World/Ball xformOp:translate = [0.0, 0.0, 0.5]",
        "  /World/Fan sim:speed = 10.0",
        # The fan's speed is held at 10 after 0.2 s, yet re-sampling writes it again.
        "consumer at t=0.3s: changes in [4, 4]",
        "  /World/Ball xformOp:translate = [0.0, 0.0, 1.0]",
        "  /World/Fan sim:speed = 10.0",
        "consumer at t=0.4s: changes in [5, 5]",
        "  /World/Ball xformOp:translate = [0.0, 0.0, 1.25]",
        "  /World/Fan sim:speed = 10.0",
        "ordinal -> time: 1=0.0s, 2=0.1s, 3=0.2s, 4=0.3s, 5=0.4s",
    ]


def test_runtime_loop_example_output() -> None:
    """Populated transforms, simulated steps written back, world matrices recomposed."""
    assert output_of(EXAMPLES / "runtime-loop" / "main.py") == [
        # The progress callback ends at (total, total): 1024 bodies, the ground, 2 ancestors.
        "progress reported up to 1027/1027 prims",
        "populated 1024 bodies at ordinal 1",
        # Local z from each body's translate op; world x adds /World/Bodies' offset of 10.
        "ordinal 1: #0 z=1.000 world x=10.0 #1 z=1.500 world x=11.0 #1023 z=2.500 world x=41.0",
        "ordinal 11: #0 z=0.400 world x=10.0 #1 z=0.901 world x=11.0 #1023 z=1.901 world x=41.0",
        "ordinal 21: #0 z=0.381 world x=10.0 #1 z=0.495 world x=11.0 #1023 z=0.250 world x=41.0",
        "ordinal 31: #0 z=0.250 world x=10.0 #1 z=0.250 world x=11.0 #1023 z=0.741 world x=41.0",
        "ordinal 41: #0 z=0.250 world x=10.0 #1 z=0.250 world x=11.0 #1023 z=0.250 world x=41.0",
        "read back as simulated: True",
        "world = local + /World/Bodies offset: True",
        "bodies touching the ground at ordinal 41: 615",
    ]
