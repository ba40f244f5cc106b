"""Filter queries over client-authored prims: prim types, applied schemas, hierarchy, values.

The client writes the reserved attributes itself: ``usd-prim-type`` holds one token id per
prim, ``usd-schemas`` an array of token ids. ``usd-path``, ``usd-parent`` and ``usd-children``
are derived by the stage from the prims it holds. A query is evaluated against committed state
(no sealing needed) and its handle is usable at once by reads and writes; the order of the
matched prims is the stage's own, so this example sorts what it prints.
"""

import numpy as np
import ovstage
from ovstage import Filter, FilterOp, Predicate

# path: (prim type, applied API schemas, mass or None)
SCENE = {
    "/World": ("Xform", [], None),
    "/World/Robot": ("Xform", ["PhysicsArticulationRootAPI"], None),
    "/World/Robot/Base": ("Mesh", ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"], 12.5),
    "/World/Robot/Arm": ("Mesh", ["PhysicsRigidBodyAPI"], 3.0),
    "/World/Robot/Arm/Gripper": ("Mesh", ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"], 0.75),
    "/World/Table": ("Mesh", ["PhysicsCollisionAPI"], None),
    "/World/Light": ("SphereLight", [], None),
    "/Worldwide": ("Xform", [], None),
}


def author_scene(stage: ovstage.Stage, paths: ovstage.PathDictionary) -> None:
    """Write usd-prim-type and usd-schemas on every prim, mass on the rigid bodies (ordinal 1)."""
    with (
        paths.create_path_list_from_strings(list(SCENE)) as prims,
        stage.query_from_path_list(prims) as everything,
    ):
        types = np.array([paths.intern_token(t) for t, _, _ in SCENE.values()], dtype=np.uint64)
        schemas = [
            np.array([paths.intern_token(s) for s in applied], dtype=np.uint64)
            for _, applied, _ in SCENE.values()
        ]
        stage.write_attribute(everything, "usd-prim-type", 1, types, is_array=False).wait()
        stage.write_attribute(everything, "usd-schemas", 1, schemas, is_array=True).wait()
    bodies = {path: mass for path, (_, _, mass) in SCENE.items() if mass is not None}
    with (
        paths.create_path_list_from_strings(list(bodies)) as prims,
        stage.query_from_path_list(prims) as rigid,
    ):
        masses = np.array(list(bodies.values()), dtype=np.float32)
        stage.write_attribute(rigid, "mass", 1, masses, is_array=False).wait()


def read_by_path(
    stage: ovstage.Stage, query: ovstage.Query, attribute: str, ordinal: int
) -> dict[str, object]:
    """``{prim path: value}`` of a fixed-size attribute read through ``query``."""
    paths = ovstage.PathDictionary(stage)
    values: dict[str, object] = {}
    with stage.read_attributes(query, [attribute], ovstage.OrdinalRange.latest(ordinal)) as read:
        read.wait()
        for group in read.groups():
            with group:
                rows = np.from_dlpack(group.dlpack(0))
                listed = paths.get_path_strings(group.prim_list)
                for k in range(group.prim_count):
                    row = group.data_row_index(k) if group.has_data_index_map else k
                    values[listed[group.prim_index(k)]] = rows[row].item()
    return values


def describe(filter: Filter) -> str:
    return " AND ".join(
        f"{p.attribute} {p.op.name}" + (f" [{', '.join(p.values)}]" if p.values else "")
        for p in filter.predicates
    )


def show(stage: ovstage.Stage, filter: Filter) -> None:
    """Print the prims a filter matches (read through the query's derived usd-path)."""
    with stage.query(filter) as query:
        result = query.result()
        matched = sorted(read_by_path(stage, query, "usd-path", 1))
        assert result.total_prim_count == len(matched)
    print(f"{describe(filter)}: {' '.join(matched) or '(none)'}")


def main() -> None:
    with ovstage.Stage("queries") as stage:
        paths = ovstage.PathDictionary(stage)
        author_scene(stage, paths)

        # Queries see committed state: the writes above are not sealed yet.
        meshes = Filter([Predicate("usd-prim-type", FilterOp.IN, ["Mesh"])])
        with stage.query(meshes) as query:
            print(f"before sealing: {query.result().total_prim_count} Mesh prims")
        stage.advance_write_floor(1).wait()

        # Attribute discovery: what the matched prims carry (derived built-ins are not listed).
        with stage.query() as query:
            result = query.result()
            names = sorted(paths.token_to_string(t) for t in result.attributes)
            print(f"{result.total_prim_count} prims carry {', '.join(names)}")
        table = Filter([Predicate("usd-path", FilterOp.IN, ["/World/Table"])])
        with stage.query(table) as query:
            names = sorted(paths.token_to_string(t) for t in query.result().attributes)
            print(f"/World/Table carries {', '.join(names)}")
        with stage.query(None, attrs=["mass"]) as query:
            names = [paths.token_to_string(t) for t in query.result().attributes]
            print(f"discovery scoped to [mass]: {', '.join(names)}")

        show(stage, meshes)
        # PREFIX is a byte prefix: "/World" also matches "/Worldwide"; "/World/" means under.
        show(stage, Filter([Predicate("usd-path", FilterOp.PREFIX, ["/World"])]))
        show(stage, Filter([Predicate("usd-path", FilterOp.PREFIX, ["/World/"])]))
        show(stage, Filter([Predicate("usd-parent", FilterOp.IN, ["/World/Robot"])]))
        show(
            stage,
            Filter([Predicate("usd-children", FilterOp.CONTAINS, ["/World/Robot/Arm/Gripper"])]),
        )
        show(stage, Filter([Predicate("usd-schemas", FilterOp.CONTAINS, ["PhysicsRigidBodyAPI"])]))
        show(stage, Filter([Predicate("mass", FilterOp.HAS)]))
        # Predicates are ANDed; the values of one predicate are alternatives (OR).
        show(
            stage,
            Filter(
                [
                    Predicate("usd-prim-type", FilterOp.IN, ["Mesh"]),
                    Predicate("usd-schemas", FilterOp.CONTAINS, ["PhysicsCollisionAPI"]),
                ]
            ),
        )
        show(stage, Filter([Predicate("usd-prim-type", FilterOp.IN, ["SphereLight", "Xform"])]))

        # Beyond the reference: numeric comparisons on user attributes (values are strings).
        heavy = Filter([Predicate("mass", FilterOp.GT, ["1"])])
        with stage.query(heavy) as query:
            masses = read_by_path(stage, query, "mass", 1)
        listed = " ".join(f"{path}={mass}" for path, mass in sorted(masses.items()))
        print(f"{describe(heavy)}: {listed}")

        # usd-active is not supported: the query is rejected when enqueued.
        inactive = stage.query(Filter([Predicate("usd-active", FilterOp.IN, ["0"])]))
        try:
            inactive.wait()
        except ovstage.OvstageError as exc:
            print(f"usd-active: {ovstage.ErrorCode(exc.code).name}")


if __name__ == "__main__":
    main()
