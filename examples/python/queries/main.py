"""Filter queries over a populated USD scene: prim types, applied schemas, hierarchy, values.

``scene.usda`` (beside this file) is a small robot cell. ``population.open_usd`` writes its
prims into the stage at ordinal 1: ``usd-prim-type`` (one token id per typed prim) and
``usd-schemas`` (the applied API schemas, on every populated prim) are recorded columns;
``usd-path``, ``usd-parent`` and ``usd-children`` are derived by the stage from the prims it
holds. A query is evaluated against committed state (no sealing needed) and its handle is
usable at once by reads and writes; the order of the matched prims is the stage's own, so this
example sorts what it prints. (examples/python/usd-to-ovstage writes the same reserved names
from the application's own traversal instead.)

Needs usd-core (``pip install 'ovstage-go[usd]'``).
"""

import textwrap
from pathlib import Path

import numpy as np
import ovstage
from ovstage import Filter, FilterOp, PopulationDomain, Predicate, population

SCENE = Path(__file__).resolve().with_name("scene.usda")


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
        f"{p.attribute} {FilterOp(p.op).name}" + (f" [{', '.join(p.values)}]" if p.values else "")
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
        # RENDERING brings the meshes and the light, PHYSICS the bodies with their mass.
        population.open_usd(stage, str(SCENE), 1, domains=PopulationDomain.ALL)

        # Queries see committed state: the population is not sealed yet.
        meshes = Filter([Predicate("usd-prim-type", FilterOp.IN, ["Mesh"])])
        with stage.query(meshes) as query:
            print(f"before sealing: {query.result().total_prim_count} Mesh prims")
        stage.advance_write_floor(1).wait()

        # Attribute discovery: what the matched prims carry (derived built-ins are not listed).
        with stage.query() as query:
            print(f"{query.result().total_prim_count} prims populated")
        table = Filter([Predicate("usd-path", FilterOp.IN, ["/World/Table"])])
        with stage.query(table) as query:
            names = sorted(paths.token_to_string(t) for t in query.result().attributes)
            # RENDERING publishes the Mesh schema's fallbacks too; PHYSICS adds the collider's
            # physics:collisionEnabled and usd-metadata:typeName; omni:* is the transform.
            print(f"/World/Table carries {len(names)} attributes:")
            for line in textwrap.wrap(", ".join(names), 96):
                print(f"  {line}")
        with stage.query(None, attrs=["physics:mass"]) as query:
            names = [paths.token_to_string(t) for t in query.result().attributes]
            print(f"discovery scoped to [physics:mass]: {', '.join(names)}")

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
        # A multiple-apply schema instance (CollectionAPI:lightLink) also lists its family.
        show(stage, Filter([Predicate("usd-schemas", FilterOp.CONTAINS, ["CollectionAPI"])]))
        # usd-ancestor-types: the types a prim's type derives from (its own excluded).
        show(stage, Filter([Predicate("usd-ancestor-types", FilterOp.CONTAINS, ["Boundable"])]))
        show(stage, Filter([Predicate("physics:mass", FilterOp.HAS)]))
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
        heavy = Filter([Predicate("physics:mass", FilterOp.GT, ["1"])])
        with stage.query(heavy) as query:
            masses = read_by_path(stage, query, "physics:mass", 1)
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
