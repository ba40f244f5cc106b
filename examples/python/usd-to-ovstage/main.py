"""A USD scene written into the stage by the user's own pxr traversal, without population.

``ovstage.population`` decides which prims and properties to read and how to type them. An
application that already walks its USD scene can instead pick the data itself and write it with
the stage's ordinary write API: read each attribute with pxr into numpy (``np.asarray`` of a
``Vt`` array needs no per-element loop), stack the values of all prims, and write each column
in one ``write_attribute`` call. This program builds a small scene in memory with pxr, writes
the prim types and schemas, the local transforms, mesh points, extents, display colors and a
custom attribute, seals them, runs the built-in queries over them and composes world
transforms with ``compute_hierarchy``.

Needs usd-core (``pip install 'ovstage-go[usd]'``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import ovstage
from ovstage import (
    AttributeSemantic,
    DLDataType,
    DLDataTypeCode,
    Filter,
    FilterOp,
    OrdinalRange,
    Predicate,
    make_dltensor,
)
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, Vt

ORDINAL = 1


def build_scene() -> Any:
    """A table with a box and a tetrahedron on it, a lamp, in an in-memory USD stage."""
    usd = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(usd, UsdGeom.Tokens.z)
    UsdGeom.Xform.Define(usd, "/World")
    table = UsdGeom.Xform.Define(usd, "/World/Table")
    table.AddTranslateOp().Set(Gf.Vec3d(1, 2, 0))
    box = UsdGeom.Mesh.Define(usd, "/World/Table/Box")
    box.AddTranslateOp().Set(Gf.Vec3d(0, 0, 1))
    corners = [(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]
    box.CreatePointsAttr(Vt.Vec3fArray(corners))
    box.CreateDisplayColorAttr(Vt.Vec3fArray([(0.8, 0.2, 0.2)]))
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
    tet = UsdGeom.Mesh.Define(usd, "/World/Table/Tet")
    tet.AddTranslateOp().Set(Gf.Vec3d(0.5, -0.5, 1))
    tet.AddRotateZOp().Set(90.0)
    tet.CreatePointsAttr(Vt.Vec3fArray([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]))
    tet.CreateDisplayColorAttr(Vt.Vec3fArray([(0.1, 0.6, 0.1), (0.1, 0.1, 0.6)]))
    UsdPhysics.RigidBodyAPI.Apply(tet.GetPrim())
    UsdPhysics.CollisionAPI.Apply(tet.GetPrim())
    lamp = UsdGeom.Xform.Define(usd, "/World/Lamp")
    lamp.AddTranslateOp().Set(Gf.Vec3d(0, 0, 3))
    for path, kelvin in (("/World/Table/Box", 300.0), ("/World/Table/Tet", 310.5)):
        usd.GetPrimAtPath(path).CreateAttribute("sim:temperature", Sdf.ValueTypeNames.Float).Set(
            kelvin
        )
    for mesh in (box, tet):
        mesh.CreateExtentAttr(UsdGeom.Boundable.ComputeExtentFromPlugins(mesh, Usd.TimeCode()))
    return usd


def lanes3_rows(arrays: list[np.ndarray]) -> list[Any]:
    """Ragged rows of 3-component values: one (k,) tensor of float32 x 3 per prim."""
    dtype = DLDataType(DLDataTypeCode.kDLFloat, 32, 3)
    return [make_dltensor(a, dtype=dtype, shape=(len(a),)) for a in arrays]


class Writer:
    """Writes one column at a time over the prims of one path list (copied by the stage)."""

    def __init__(self, stage: ovstage.Stage, paths: ovstage.PathDictionary) -> None:
        self.stage = stage
        self.paths = paths

    def write(self, prims: list[str], name: str, values: Any, **kwargs: Any) -> None:
        with (
            self.paths.create_path_list_from_strings(prims) as listed,
            self.stage.query_from_path_list(listed) as query,
        ):
            self.stage.write_attribute(query, name, ORDINAL, values, **kwargs).wait()


def write_scene(usd: Any, stage: ovstage.Stage) -> list[str]:
    """The user's traversal: one write per column, all prims of the column at once."""
    paths = ovstage.PathDictionary(stage)
    writer = Writer(stage, paths)
    prims = [p for p in usd.Traverse() if p.IsDefined()]
    every = [str(p.GetPath()) for p in prims]

    # Reserved names the built-in queries read: a token id per prim, a token-id array per prim.
    types = np.array([paths.intern_token(str(p.GetTypeName())) for p in prims], np.uint64)
    writer.write(every, "usd-prim-type", types, is_array=False)
    schemas = [
        np.array([paths.intern_token(s) for s in p.GetAppliedSchemas()], np.uint64) for p in prims
    ]
    writer.write(every, "usd-schemas", schemas, is_array=True)

    # Local transforms (row-major, USD row-vector convention) and the world matrices that
    # compute_hierarchy fills in later: one (N, 4, 4) float64 stack each.
    xformable = [UsdGeom.Xformable(p) for p in prims if p.IsA(UsdGeom.Xformable)]
    xpaths = [str(x.GetPath()) for x in xformable]
    local = np.stack([np.array(x.GetLocalTransformation(), np.float64) for x in xformable])
    resets = np.array([x.GetResetXformStack() for x in xformable], np.bool_)
    writer.write(xpaths, "omni:xform", local, is_array=False, semantic=AttributeSemantic.MATRIX)
    writer.write(xpaths, "omni:resetXformStack", resets, is_array=False)
    writer.write(
        xpaths, "omni:fabric:worldMatrix", local, is_array=False, semantic=AttributeSemantic.MATRIX
    )

    # Mesh data: ragged points and colors (float32 x 3 rows), extents as 6 doubles per prim.
    meshes = [UsdGeom.Mesh(p) for p in prims if p.IsA(UsdGeom.Mesh)]
    mpaths = [str(m.GetPath()) for m in meshes]
    points = [np.asarray(m.GetPointsAttr().Get(), np.float32) for m in meshes]
    colors = [np.asarray(m.GetDisplayColorAttr().Get(), np.float32) for m in meshes]
    extents = np.stack([np.asarray(m.GetExtentAttr().Get(), np.float64).reshape(6) for m in meshes])
    writer.write(
        mpaths, "points", lanes3_rows(points), is_array=True, semantic=AttributeSemantic.POINT
    )
    writer.write(
        mpaths,
        "primvars:displayColor",
        lanes3_rows(colors),
        is_array=True,
        semantic=AttributeSemantic.COLOR,
    )
    writer.write(mpaths, "extent", extents, is_array=False)

    # A custom attribute, on the prims that author it.
    hot = [p for p in prims if p.HasAttribute("sim:temperature")]
    kelvin = np.array([p.GetAttribute("sim:temperature").Get() for p in hot], np.float32)
    writer.write([str(p.GetPath()) for p in hot], "sim:temperature", kelvin, is_array=False)
    return every


def read_rows(stage: ovstage.Stage, query: ovstage.Query, name: str) -> dict[str, np.ndarray]:
    """``{prim path: value}`` of one column read through ``query`` (sealed at ORDINAL)."""
    paths = ovstage.PathDictionary(stage)
    found: dict[str, np.ndarray] = {}
    with stage.read_attributes(query, [name], OrdinalRange.latest(ORDINAL)) as read:
        for group in read.groups():
            with group:
                listed = paths.get_path_strings(group.prim_list)
                fixed = None if group.is_array else group.array(0)
                for k in range(group.prim_count):
                    row = group.data_row_index(k) if group.has_data_index_map else k
                    path = listed[group.prim_index(k)]
                    found[path] = np.array(group.array(row) if fixed is None else fixed[row])
    return found


def matched(stage: ovstage.Stage, filter: Filter) -> str:
    with stage.query(filter) as query:
        return " ".join(sorted(read_rows(stage, query, "usd-path")))


def main() -> None:
    usd = build_scene()
    with ovstage.Stage("usd-to-ovstage") as stage:
        every = write_scene(usd, stage)
        stage.advance_write_floor(ORDINAL).wait()
        print(f"wrote {len(every)} prims: {' '.join(every)}")

        meshes = Filter([Predicate("usd-prim-type", FilterOp.IN, ["Mesh"])])
        print(f"usd-prim-type IN [Mesh]: {matched(stage, meshes)}")
        bodies = Filter([Predicate("usd-schemas", FilterOp.CONTAINS, ["PhysicsRigidBodyAPI"])])
        print(f"usd-schemas CONTAINS [PhysicsRigidBodyAPI]: {matched(stage, bodies)}")
        under = Filter([Predicate("usd-parent", FilterOp.IN, ["/World/Table"])])
        print(f"usd-parent IN [/World/Table]: {matched(stage, under)}")

        with stage.query(meshes) as query:
            points = read_rows(stage, query, "points")
            colors = read_rows(stage, query, "primvars:displayColor")
            extents = read_rows(stage, query, "extent")
            kelvin = read_rows(stage, query, "sim:temperature")
        for path in sorted(points):
            low, high = extents[path][:3].tolist(), extents[path][3:].tolist()
            print(
                f"{path}: {len(points[path])} points x {points[path].shape[1]}, "
                f"{len(colors[path])} colors, extent {low}..{high}, "
                f"sim:temperature {kelvin[path].item()}"
            )

        # World transforms composed by the stage from the local ones, checked against pxr.
        stage.compute_hierarchy(ORDINAL, ORDINAL)
        with stage.query(Filter([Predicate("usd-path", FilterOp.PREFIX, ["/World/"])])) as query:
            world = read_rows(stage, query, "omni:fabric:worldMatrix")
        for path in sorted(world):
            expected = UsdGeom.Xformable(usd.GetPrimAtPath(path)).ComputeLocalToWorldTransform(
                Usd.TimeCode.Default()
            )
            same = np.allclose(world[path].reshape(4, 4), np.array(expected))
            origin = [round(v, 3) + 0.0 for v in world[path].reshape(4, 4)[3, :3].tolist()]
            print(f"{path} world origin {origin} (as pxr computes it: {same})")


if __name__ == "__main__":
    main()
