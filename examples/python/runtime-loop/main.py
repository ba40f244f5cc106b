"""Runtime loop: populate a generated USD scene, then run a simulation that writes transforms.

The program generates a scene with pxr (a ground plane and a grid of rigid-body cubes under
a shifted ``/World/Bodies`` xform), populates it with the PHYSICS domain at ordinal 1 and
then steps a small simulation: each step computes the new body positions with numpy, writes
every body's local transform ``omni:xform`` in one batched write at the step's ordinal,
advances the write floor (sealing the step; the stage then recomposes the world matrices
``omni:fabric:worldMatrix`` from the local ones) and reads the state back.

Opening the scene reports progress through the ``progress`` callback; with ``tqdm``
installed it is drawn as a progress bar on a terminal (nothing is drawn when stderr is not
a terminal, so the printed output stays the same).

Needs usd-core (``pip install 'ovstage-go[usd]'``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import ovstage
from ovstage import AttributeSemantic, OrdinalRange, PopulationDomain, population
from pxr import Gf, Usd, UsdGeom, UsdPhysics

GRID = 32  # GRID x GRID bodies
BODIES_OFFSET = (10.0, 0.0, 0.0)  # translation of /World/Bodies
STEPS = 40
DT = 1.0 / 30.0
GRAVITY = -9.81
RESTITUTION = 0.5
HALF_SIZE = 0.25  # cubes rest when their centre is this high above the ground
WATCHED = (0, 1, GRID * GRID - 1)  # bodies whose state is printed


def body_paths() -> list[str]:
    return [f"/World/Bodies/Body_{i:04d}" for i in range(GRID * GRID)]


def start_heights() -> np.ndarray:
    """Drop height of each body: five staggered rows of heights."""
    return 1.0 + 0.5 * (np.arange(GRID * GRID) % 5)


def generate_scene(path: Path) -> None:
    """Write the scene to ``path`` with pxr."""
    usd = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(usd, UsdGeom.Tokens.z)
    UsdGeom.Xform.Define(usd, "/World")
    ground = UsdGeom.Mesh.Define(usd, "/World/Ground")
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    bodies = UsdGeom.Xform.Define(usd, "/World/Bodies")
    bodies.AddTranslateOp().Set(Gf.Vec3d(*BODIES_OFFSET))
    heights = start_heights()
    for i, body in enumerate(body_paths()):
        cube = UsdGeom.Cube.Define(usd, body)
        cube.CreateSizeAttr(2 * HALF_SIZE)
        cube.AddTranslateOp().Set(Gf.Vec3d(i % GRID, i // GRID, heights[i]))
        UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    usd.GetRootLayer().Save()


class Progress:
    """A ``progress(done, total)`` callback: remembers the last report and, with tqdm
    installed, draws it as a bar on stderr when stderr is a terminal."""

    def __init__(self, label: str) -> None:
        self.last = (0, 0)
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = None
        else:
            self.bar = tqdm(desc=label, unit="prim", disable=None, file=sys.stderr)

    def __call__(self, done: int, total: int) -> None:
        self.last = (done, total)
        if self.bar is not None:
            self.bar.total = total
            self.bar.n = done
            self.bar.refresh()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def translations(stage: ovstage.Stage, query: ovstage.Query, name: str, ordinal: int) -> np.ndarray:
    """The translation (row 3) of each body's MATRIX value of ``name``, in body_paths() order."""
    dictionary = ovstage.PathDictionary(stage)
    where = {path: i for i, path in enumerate(body_paths())}
    rows = np.full((len(where), 3), np.nan)
    with stage.read_attributes(query, [name], OrdinalRange.latest(ordinal)) as read:
        for group in read.groups():
            with group:
                listed = dictionary.get_path_strings(group.prim_list)
                matrices = group.array(0).reshape(-1, 4, 4)
                for k in range(group.prim_count):
                    row = group.data_row_index(k) if group.has_data_index_map else k
                    rows[where[listed[group.prim_index(k)]]] = matrices[row, 3, :3]
    return rows


def matrices_of(positions: np.ndarray) -> np.ndarray:
    """(N, 4, 4) float64 local transforms: identity rotation, translation in row 3."""
    stacked: np.ndarray = np.broadcast_to(np.eye(4), (len(positions), 4, 4)).copy()
    stacked[:, 3, :3] = positions
    return stacked


def step(positions: np.ndarray, velocities: np.ndarray) -> None:
    """One explicit Euler step with a bouncing contact on the ground (in place)."""
    velocities[:, 2] += GRAVITY * DT
    positions[:, 2] += velocities[:, 2] * DT
    below = positions[:, 2] < HALF_SIZE
    positions[below, 2] = HALF_SIZE
    velocities[below, 2] *= -RESTITUTION


def show(label: str, local: np.ndarray, world: np.ndarray) -> None:
    state = " ".join(f"#{i} z={local[i, 2]:.3f} world x={world[i, 0]:.1f}" for i in WATCHED)
    print(f"{label}: {state}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, ovstage.Stage("runtime-loop") as stage:
        scene = Path(tmp) / "bodies.usda"
        generate_scene(scene)
        with Progress("populating") as progress:
            population.open_usd(
                stage, str(scene), 1, domains=PopulationDomain.PHYSICS, progress=progress
            )
        print(f"progress reported up to {progress.last[0]}/{progress.last[1]} prims")
        stage.advance_write_floor(1).wait()

        paths = ovstage.PathDictionary(stage)
        with (
            paths.create_path_list_from_strings(body_paths()) as listed,
            stage.query_from_path_list(listed) as bodies,
        ):
            positions = translations(stage, bodies, "omni:xform", 1)
            world = translations(stage, bodies, "omni:fabric:worldMatrix", 1)
            print(f"populated {len(positions)} bodies at ordinal 1")
            show("ordinal 1", positions, world)

            velocities = np.zeros_like(positions)
            for ordinal in range(2, STEPS + 2):
                step(positions, velocities)
                stage.write_attribute(
                    bodies,
                    "omni:xform",
                    ordinal,
                    matrices_of(positions),
                    is_array=False,
                    semantic=AttributeSemantic.MATRIX,
                ).wait()
                stage.advance_write_floor(ordinal).wait()  # seal; world matrices follow
                if ordinal % 10 == 1:
                    local = translations(stage, bodies, "omni:xform", ordinal)
                    world = translations(stage, bodies, "omni:fabric:worldMatrix", ordinal)
                    show(f"ordinal {ordinal}", local, world)

            last = STEPS + 1
            local = translations(stage, bodies, "omni:xform", last)
            world = translations(stage, bodies, "omni:fabric:worldMatrix", last)
            print(f"read back as simulated: {np.array_equal(local, positions)}")
            offset = np.array(BODIES_OFFSET)
            print(f"world = local + /World/Bodies offset: {np.allclose(world, local + offset)}")
            resting = int(np.sum(np.isclose(local[:, 2], HALF_SIZE)))
            print(f"bodies touching the ground at ordinal {last}: {resting}")


if __name__ == "__main__":
    main()
