"""Population selection: domains, prim and property predicates, several descs, ancestors,
built-ins and instance roots, evaluated on USD stages written for these tests."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pxr", reason="usd-core is not installed")

from ovstage import ErrorCode, OvstageError, PopulationDomain
from ovstage.population import Desc, PrimPredicate, PropertyPredicate, Selector
from ovstage.population._selection import (
    PrimScope,
    Scope,
    builtins_of,
    resolve_scope,
)
from pxr import Usd, UsdPhysics

P, Q = PrimPredicate, PropertyPredicate
RENDERING, PHYSICS = PopulationDomain.RENDERING, PopulationDomain.PHYSICS

#: A scene with geometry, materials, a light, a camera, physics content, typeless prims, a
#: prim of an unknown type, a class and an over (neither is populated).
SCENE = """#usda 1.0
(
    metersPerUnit = 0.01
    upAxis = "Z"
)

def Xform "World" (
    kind = "assembly"
)
{
    def Mesh "Body" (
        prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "PhysicsMassAPI"]
        customData = {
            bool flag = false
        }
    )
    {
        point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]
        int[] faceVertexCounts = [3]
        int[] faceVertexIndices = [0, 1, 2]
        float physics:mass = 2
        custom float sim:temperature = 300 (
            customData = {
                int unit = 0
            }
        )
        uniform token purpose = "proxy"
        custom matrix4d omni:xform = ((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1))
        rel material:binding = </World/Looks/Red>
        rel material:binding:physics = </World/Looks/Rubber>
        rel material:bindingStrength
    }

    def Scope "Looks"
    {
        def Material "Red"
        {
            def Shader "Surface"
            {
                uniform token info:id = "UsdPreviewSurface"
            }
        }

        def Material "Rubber" (
            prepend apiSchemas = ["PhysicsMaterialAPI"]
        )
        {
            float physics:staticFriction = 0.5
        }
    }

    def SphereLight "Lamp"
    {
        float inputs:radius = 0.5
    }

    def Camera "Cam"
    {
    }

    def Xform "Guide"
    {
        uniform token purpose = "guide"

        def Cube "Box"
        {
            double size = 2
        }
    }

    def Xform "GuideRails"
    {
    }

    def "Group"
    {
        def Sphere "Ball"
        {
            double radius = 3
            custom double physics:mass = 1
        }
    }

    def PhysicsRevoluteJoint "Hinge"
    {
        rel physics:body0 = </World/Body>
        float physics:lowerLimit = -90
    }
}

def PhysicsScene "PhysicsScene"
{
    vector3f physics:gravityDirection = (0, 0, -1)
}

def "Data"
{
    custom int counter = 5

    def "Nested"
    {
    }
}

def NoSuchType "Odd"
{
}

class "Template"
{
    custom int hidden = 1
}

over "Overlay"
{
    def Cube "Hidden"
    {
    }
}
"""

ALL_PRIMS = {
    "/World",
    "/World/Body",
    "/World/Looks",
    "/World/Looks/Red",
    "/World/Looks/Red/Surface",
    "/World/Looks/Rubber",
    "/World/Lamp",
    "/World/Cam",
    "/World/Guide",
    "/World/Guide/Box",
    "/World/GuideRails",
    "/World/Group",
    "/World/Group/Ball",
    "/World/Hinge",
    "/PhysicsScene",
    "/Data",
    "/Data/Nested",
    "/Odd",
}

#: Native instances (nested too) and an instanceable prim below a point instancer.
INSTANCED = """#usda 1.0
def Xform "Assets"
{
    def Xform "Leg"
    {
        def Cube "Post"
        {
        }
    }

    def Xform "Chair"
    {
        def Cube "Seat"
        {
            double size = 1
        }

        def Xform "Leg" (
            instanceable = true
            references = </Assets/Leg>
        )
        {
        }
    }
}

def Xform "Room"
{
    def Xform "ChairA" (
        instanceable = true
        prepend apiSchemas = ["PhysicsRigidBodyAPI"]
        references = </Assets/Chair>
    )
    {
        double3 xformOp:translate = (1, 0, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }

    def Scope "ChairB" (
        instanceable = true
        references = </Assets/Chair>
    )
    {
    }
}

def PointInstancer "Field"
{
    rel prototypes = [</Field/Protos/Tree>]

    def Scope "Protos"
    {
        def Xform "Tree" (
            instanceable = true
            references = </Assets/Leg>
        )
        {
        }
    }
}
"""


def open_stage(usda: str) -> Any:
    stage = Usd.Stage.CreateInMemory()
    assert stage.GetRootLayer().ImportFromString(usda)
    return stage


@pytest.fixture(scope="module")
def scene() -> Any:
    return open_stage(SCENE)


@pytest.fixture(scope="module")
def instanced() -> Any:
    return open_stage(INSTANCED)


def by_path(scope: Scope) -> dict[str, PrimScope]:
    return {entry.path: entry for entry in scope.prims}


def selected(stage: Any, prim: PrimPredicate, prop: PropertyPredicate | None = None) -> set[str]:
    """Paths a single selector populates in their own right (ancestors excluded)."""
    scope = resolve_scope(stage, Desc(selectors=[Selector(prim, prop)]))
    return {e.path for e in scope.prims if not e.reserved_only}


def props(stage: Any, path: str, prop: PropertyPredicate) -> list[str]:
    """Property names a selector of ``path`` with ``prop`` populates."""
    scope = resolve_scope(stage, Desc(selectors=[Selector(P.has_path(path), prop)]))
    return [p.GetName() for p in by_path(scope)[path].properties]


def names(entry: PrimScope) -> set[str]:
    return {p.GetName() for p in entry.properties}


# -- prim predicate kinds ------------------------------------------------------------------


def test_none_and_all(scene: Any) -> None:
    assert selected(scene, P.none()) == set()
    assert selected(scene, P.all()) == ALL_PRIMS  # no class, no over, no pseudo-root


def test_and_or_not(scene: Any) -> None:
    xforms = P.has_type("Xform")
    under_world = P.is_under_path("/World")
    assert selected(scene, P.and_(xforms, P.not_(P.has_path("/World")))) == {
        "/World/Guide",
        "/World/GuideRails",
    }
    assert selected(scene, P.or_(P.has_type("Camera"), P.has_type("Cube"))) == {
        "/World/Cam",
        "/World/Guide/Box",
    }
    assert selected(scene, P.not_(under_world)) == {
        "/PhysicsScene",
        "/Data",
        "/Data/Nested",
        "/Odd",
    }


def test_has_parent_matches_the_parent_and_never_a_top_level_prim(scene: Any) -> None:
    assert selected(scene, P.has_parent(P.has_path("/World/Guide"))) == {"/World/Guide/Box"}
    top_level = {"/World", "/PhysicsScene", "/Data", "/Odd"}
    assert selected(scene, P.has_parent(P.all())) == ALL_PRIMS - top_level


def test_has_ancestor_considers_strict_ancestors(scene: Any) -> None:
    assert selected(scene, P.has_ancestor(P.has_type("Scope"))) == {
        "/World/Looks/Red",
        "/World/Looks/Red/Surface",
        "/World/Looks/Rubber",
    }
    assert selected(scene, P.has_ancestor(P.has_path("/World/Looks/Red/Surface"))) == set()


def test_has_property_covers_authored_and_schema_declared_properties(scene: Any) -> None:
    # radius is authored on Ball only, but every Sphere declares it.
    assert selected(scene, P.has_property(Q.has_name("radius"))) == {"/World/Group/Ball"}
    assert selected(scene, P.has_property(Q.has_name("clippingRange"))) == {"/World/Cam"}
    assert selected(scene, P.has_property(Q.is_custom())) == {
        "/World/Body",
        "/World/Group/Ball",
        "/Data",
    }


def test_has_type_compares_the_type_name_exactly(scene: Any) -> None:
    assert selected(scene, P.has_type("Mesh", "Cube")) == {"/World/Body", "/World/Guide/Box"}
    assert selected(scene, P.has_type("Gprim")) == set()
    assert selected(scene, P.has_type("NoSuchType")) == {"/Odd"}


def test_is_a_type_accepts_derived_types(scene: Any) -> None:
    assert selected(scene, P.is_a_type("Gprim")) == {
        "/World/Body",
        "/World/Guide/Box",
        "/World/Group/Ball",
    }
    assert selected(scene, P.is_a_type("PhysicsJoint")) == {"/World/Hinge"}
    assert selected(scene, P.is_a_type("UsdGeomCamera")) == {"/World/Cam"}
    assert selected(scene, P.is_a_type("NoSuchType", "Bogus")) == set()


def test_has_schema_accepts_a_type_or_an_applied_schema(scene: Any) -> None:
    assert selected(scene, P.has_schema("Camera", "PhysicsMassAPI")) == {
        "/World/Cam",
        "/World/Body",
    }
    assert selected(scene, P.has_schema("Gprim")) == set()


def test_has_applied_schema_compares_exactly_with_the_instance_name(scene: Any) -> None:
    assert selected(scene, P.has_applied_schema("CollectionAPI:lightLink")) == {"/World/Lamp"}
    assert selected(scene, P.has_applied_schema("CollectionAPI")) == set()
    assert selected(scene, P.has_applied_schema("PhysicsMaterialAPI")) == {"/World/Looks/Rubber"}
    assert selected(scene, P.has_applied_schema("Camera")) == set()  # a type, not applied


def test_has_applied_schema_in_namespace_compares_whole_components(scene: Any) -> None:
    assert selected(scene, P.has_applied_schema_in_namespace("CollectionAPI")) == {"/World/Lamp"}
    assert selected(scene, P.has_applied_schema_in_namespace("Collection")) == set()
    assert selected(scene, P.has_applied_schema_in_namespace("PhysicsMassAPI")) == {"/World/Body"}


def test_has_path_and_is_under_path(scene: Any) -> None:
    assert selected(scene, P.has_path("/World/Body", "/Data")) == {"/World/Body", "/Data"}
    assert selected(scene, P.has_path("/Nowhere")) == set()
    assert selected(scene, P.is_under_path("/World/Guide")) == {"/World/Guide", "/World/Guide/Box"}
    assert selected(scene, P.is_under_path("/")) == ALL_PRIMS


def test_has_kind_compares_the_kind_exactly(scene: Any) -> None:
    assert selected(scene, P.has_kind("assembly")) == {"/World"}
    assert selected(scene, P.has_kind("model", "group")) == set()  # no kind inheritance


def test_has_purpose_uses_the_inherited_purpose_of_imageables(scene: Any) -> None:
    assert selected(scene, P.has_purpose("guide")) == {"/World/Guide", "/World/Guide/Box"}
    assert selected(scene, P.has_purpose("proxy")) == {"/World/Body"}
    default = selected(scene, P.has_purpose("default"))
    assert "/World/Cam" in default and "/World/Group/Ball" in default
    # typeless and non-imageable prims have no purpose
    for path in ("/World/Group", "/Data", "/PhysicsScene", "/World/Looks/Red", "/Odd"):
        assert path not in default


def test_has_metadata_tests_that_a_path_resolves_whatever_the_value(scene: Any) -> None:
    assert selected(scene, P.has_metadata("kind")) == {"/World"}
    assert selected(scene, P.has_metadata("customData:flag")) == {"/World/Body"}  # false
    assert selected(scene, P.has_metadata("customData:missing")) == set()


# -- property predicate kinds --------------------------------------------------------------

BODY = "/World/Body"


def test_property_none_selects_the_prim_without_properties(scene: Any) -> None:
    scope = resolve_scope(scene, Desc(selectors=[Selector(P.has_path(BODY), Q.none())]))
    entry = by_path(scope)[BODY]
    assert entry.properties == [] and not entry.reserved_only and entry.by_selector


def test_property_all_publishes_what_has_a_value(scene: Any) -> None:
    got = set(props(scene, BODY, Q.all()))
    body = scene.GetPrimAtPath(BODY)
    expected = {a.GetName() for a in body.GetAttributes() if a.HasValue()}
    expected |= {r.GetName() for r in body.GetRelationships() if r.IsAuthored()}
    expected.discard("omni:xform")  # a stage transform name: never published
    assert got == expected
    assert {"points", "physics:velocity", "material:bindingStrength"} <= got
    assert "normals" not in got  # declared by Mesh, no value


def test_declared_by_schema_applied_or_not(scene: Any) -> None:
    mass = set(UsdPhysics.MassAPI.GetSchemaAttributeNames(False))
    assert set(props(scene, BODY, Q.declared_by_schema("PhysicsMassAPI"))) == mass
    # Ball does not apply MassAPI, yet its physics:mass is a MassAPI property.
    assert props(scene, "/World/Group/Ball", Q.declared_by_schema("PhysicsMassAPI")) == [
        "physics:mass"
    ]
    assert props(scene, "/World/Group/Ball", Q.declared_by_schema("Cube")) == [
        "doubleSided",
        "extent",
        "orientation",
        "purpose",
        "visibility",
    ]
    # abstract types are schemas too
    assert props(scene, "/World/Group/Ball", Q.declared_by_schema("Imageable")) == [
        "purpose",
        "visibility",
    ]


def test_declared_by_schema_multiple_apply_family_and_instance(scene: Any) -> None:
    family = props(scene, "/World/Lamp", Q.declared_by_schema("CollectionAPI"))
    instance = props(scene, "/World/Lamp", Q.declared_by_schema("CollectionAPI:lightLink"))
    assert instance and all(n.startswith("collection:lightLink:") for n in instance)
    assert set(instance) < set(family)
    assert any(n.startswith("collection:shadowLink:") for n in family)
    assert not [n for n in family if not n.startswith("collection:")]


def test_has_name_and_in_namespace(scene: Any) -> None:
    assert props(scene, BODY, Q.has_name("points", "sim:temperature", "nope")) == [
        "points",
        "sim:temperature",
    ]
    # strictly inside, on ':' boundaries
    assert props(scene, BODY, Q.in_namespace("material:binding")) == ["material:binding:physics"]
    assert props(scene, BODY, Q.in_namespace("sim")) == ["sim:temperature"]
    assert props(scene, BODY, Q.in_namespace("si")) == []


def test_property_has_metadata(scene: Any) -> None:
    assert props(scene, BODY, Q.has_metadata("customData:unit")) == ["sim:temperature"]
    assert props(scene, BODY, Q.has_metadata("customData:other")) == []


def test_attribute_relationship_custom_authored(scene: Any) -> None:
    rels = props(scene, BODY, Q.is_relationship())
    assert rels == ["material:binding", "material:binding:physics", "material:bindingStrength"]
    attrs = props(scene, BODY, Q.is_attribute())
    assert "points" in attrs and not set(rels) & set(attrs)
    assert props(scene, BODY, Q.is_custom()) == ["sim:temperature"]
    assert props(scene, BODY, Q.is_authored()) == [
        "faceVertexCounts",
        "faceVertexIndices",
        "material:binding",
        "material:binding:physics",
        "material:bindingStrength",
        "physics:mass",
        "points",
        "purpose",
        "sim:temperature",
    ]


def test_property_combinators(scene: Any) -> None:
    assert props(scene, BODY, Q.and_(Q.is_authored(), Q.in_namespace("physics"))) == [
        "physics:mass"
    ]
    assert props(scene, BODY, Q.or_(Q.has_name("points"), Q.is_custom())) == [
        "points",
        "sim:temperature",
    ]
    authored = set(props(scene, BODY, Q.is_authored()))
    not_authored = set(props(scene, BODY, Q.not_(Q.is_authored())))
    assert not authored & not_authored
    assert authored | not_authored == set(props(scene, BODY, Q.all()))


# -- several selectors and descs -----------------------------------------------------------


def test_selectors_of_several_descs_add_up(scene: Any) -> None:
    first = Desc(selectors=[Selector(P.has_path(BODY), Q.has_name("points"), ["kind"])])
    second = Desc(
        selectors=[
            Selector(P.is_a_type("Gprim"), Q.is_custom(), ["customData:flag"], ["customData"]),
            Selector(P.has_path("/Data"), Q.all()),
        ],
        stage_metadata_paths=["upAxis"],
    )
    scope = resolve_scope(scene, [first, second])
    entries = by_path(scope)
    assert names(entries[BODY]) == {"points", "sim:temperature"}
    assert entries[BODY].prim_metadata_paths == ("kind", "customData:flag")
    assert entries[BODY].property_metadata_paths == ("customData",)
    assert names(entries["/World/Group/Ball"]) == {"physics:mass"}
    assert names(entries["/Data"]) == {"counter"}
    assert scope.stage_metadata_paths == ("upAxis",)
    assert scope.domains == 0


def test_domains_of_several_descs_are_ored(scene: Any) -> None:
    scope = resolve_scope(scene, [Desc(RENDERING), Desc(PHYSICS)])
    assert scope.domains == PopulationDomain.ALL
    assert "/PhysicsScene" in by_path(scope)  # PHYSICS content
    assert "/World/Cam" in by_path(scope)  # RENDERING content


def test_a_domain_and_a_selector_on_the_same_prim_add_up(scene: Any) -> None:
    scope = resolve_scope(scene, Desc(PHYSICS, [Selector(P.has_path(BODY), Q.is_custom())]))
    body = by_path(scope)[BODY]
    assert "sim:temperature" in names(body) and "physics:mass" in names(body)
    assert body.domains == PHYSICS and body.by_selector


def test_nothing_selects_nothing(scene: Any) -> None:
    assert resolve_scope(scene, []).prims == []
    assert resolve_scope(scene, Desc()).prims == []
    assert resolve_scope(scene, Desc(PopulationDomain.NONE, [Selector()])).prims == []
    unknown = resolve_scope(scene, Desc(4 | 8))  # unknown bits are ignored
    assert unknown.prims == [] and unknown.domains == 0


def test_a_desc_with_only_domains_is_the_plain_domain(scene: Any) -> None:
    def summary(scope: Scope) -> list[tuple[str, bool, list[str]]]:
        return [(e.path, e.reserved_only, [p.GetName() for p in e.properties]) for e in scope.prims]

    plain = resolve_scope(scene, Desc(PHYSICS))
    assert summary(plain) == summary(resolve_scope(scene, [Desc(PHYSICS), Desc()]))
    assert summary(plain) == summary(resolve_scope(scene, Desc(PHYSICS, [Selector()])))


def test_descs_must_be_a_desc_or_a_sequence_of_descs(scene: Any) -> None:
    for bad in (None, "desc", [Selector()], PopulationDomain.RENDERING):
        with pytest.raises(TypeError, match="descs"):
            resolve_scope(scene, bad)  # type: ignore[arg-type]


def test_bad_path_arguments_are_rejected(scene: Any) -> None:
    for pred in (P.has_path("/World.points"), P.is_under_path("/World{v=a}")):
        with pytest.raises(OvstageError) as info:
            resolve_scope(scene, Desc(selectors=[Selector(pred)]))
        assert info.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(OvstageError):
        resolve_scope(scene, Desc(stage_metadata_paths=["customLayerData::x"]))


def test_a_missing_root_selects_nothing(scene: Any) -> None:
    assert resolve_scope(scene, Desc(RENDERING), root="/Nowhere").prims == []


def test_entries_carry_their_path_and_property_names(scene: Any) -> None:
    for entry in resolve_scope(scene, [Desc(RENDERING), Desc(PHYSICS)]).prims:
        assert entry.path == str(entry.prim.GetPath())
        assert entry.property_names == [p.GetName() for p in entry.properties]


def test_root_limits_the_scope_to_a_subtree_and_brings_its_ancestors(scene: Any) -> None:
    scope = resolve_scope(scene, Desc(selectors=[Selector(P.all(), Q.all())]), root="/World/Guide")
    assert [(e.path, e.reserved_only) for e in scope.prims] == [
        ("/World", True),
        ("/World/Guide", False),
        ("/World/Guide/Box", False),
    ]


# -- domains -------------------------------------------------------------------------------


def test_rendering_claims_imageable_shading_and_typeless_content(scene: Any) -> None:
    entries = by_path(resolve_scope(scene, Desc(RENDERING)))
    assert {p for p, e in entries.items() if not e.reserved_only} == ALL_PRIMS - {
        "/PhysicsScene",  # typed, neither imageable nor shading
        "/Odd",  # a type no schema defines
    }
    assert names(entries["/Data"]) == {"counter"}  # a typeless prim's attributes
    lamp = names(entries["/World/Lamp"])
    assert {"inputs:radius", "inputs:intensity"} <= lamp  # authored and fallback values
    assert "sim:temperature" in names(entries[BODY]) and "omni:xform" not in names(entries[BODY])
    assert names(entries["/World/Looks/Red/Surface"]) >= {"info:id"}
    assert not any(e.type_metadata for e in entries.values())


def test_physics_claims_physics_prims_with_their_physics_properties(scene: Any) -> None:
    entries = by_path(resolve_scope(scene, Desc(PHYSICS)))
    claimed = {p for p, e in entries.items() if not e.reserved_only}
    assert claimed == {"/World/Body", "/World/Looks/Rubber", "/World/Hinge", "/PhysicsScene"}
    assert {p for p, e in entries.items() if e.reserved_only} == {"/World", "/World/Looks"}
    body = names(entries[BODY])
    assert {"physics:mass", "physics:velocity", "physics:collisionEnabled"} <= body
    assert {"points", "faceVertexIndices"} <= body  # a collider's shape
    assert not body & {"sim:temperature", "material:binding", "omni:xform"}
    hinge = names(entries["/World/Hinge"])
    assert {"physics:body0", "physics:lowerLimit", "physics:axis"} <= hinge
    assert not hinge & {"purpose", "visibility"}  # declared by Imageable, not by physics
    assert names(entries["/World/Looks/Rubber"]) == {
        "physics:density",
        "physics:dynamicFriction",
        "physics:restitution",
        "physics:staticFriction",
    }
    assert {p for p, e in entries.items() if e.type_metadata} == claimed


# -- ancestors and derived transforms ------------------------------------------------------


def test_ancestors_come_along_with_reserved_names_only(scene: Any) -> None:
    scope = resolve_scope(scene, Desc(selectors=[Selector(P.has_type("Sphere"), Q.all())]))
    assert [(e.path, e.reserved_only) for e in scope.prims] == [
        ("/World", True),
        ("/World/Group", True),
        ("/World/Group/Ball", False),
    ]
    world, group, ball = scope.prims
    assert world.properties == [] and group.properties == []
    assert world.derived_transform and not group.derived_transform  # typeless: not xformable
    assert ball.derived_transform and world.world_matrix and ball.world_matrix
    assert not world.type_metadata and not ball.type_metadata


def test_parents_come_before_children(scene: Any) -> None:
    for descs in (Desc(RENDERING), Desc(PHYSICS), Desc(selectors=[Selector(P.all())])):
        seen: set[str] = set()
        for entry in resolve_scope(scene, descs).prims:
            parent = str(entry.prim.GetParent().GetPath())
            assert parent == "/" or parent in seen, entry.path
            seen.add(entry.path)


def test_world_matrix_only_without_rendering(scene: Any) -> None:
    with_rendering = by_path(resolve_scope(scene, [Desc(RENDERING), Desc(PHYSICS)]))
    assert with_rendering[BODY].derived_transform and not with_rendering[BODY].world_matrix
    physics = by_path(resolve_scope(scene, Desc(PHYSICS)))
    assert physics[BODY].world_matrix and not physics["/World/Looks/Rubber"].derived_transform


# -- built-ins -----------------------------------------------------------------------------


def test_builtins_of_typed_typeless_and_unknown_prims(scene: Any) -> None:
    entries = by_path(resolve_scope(scene, Desc(selectors=[Selector(P.all())])))
    body = builtins_of(entries[BODY], 0)
    assert body.prim_type == "Mesh"
    assert body.schemas == ("PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "PhysicsMassAPI")
    assert body.ancestor_types == (
        "PointBased",
        "Gprim",
        "Boundable",
        "Xformable",
        "Imageable",
        "Typed",
    )
    typeless = builtins_of(entries["/World/Group"], 0)
    assert typeless.prim_type is None and typeless.schemas == () and typeless.ancestor_types == ()
    odd = builtins_of(entries["/Odd"], 0)
    assert odd.prim_type == "NoSuchType" and odd.ancestor_types == ()
    assert builtins_of(entries["/World/Hinge"], 0).ancestor_types == (
        "PhysicsJoint",
        "Imageable",
        "Typed",
    )


def test_a_multiple_apply_instance_contributes_its_family(scene: Any) -> None:
    entries = by_path(resolve_scope(scene, Desc(RENDERING)))
    schemas = builtins_of(entries["/World/Lamp"], RENDERING).schemas
    assert "CollectionAPI:lightLink" in schemas and "CollectionAPI:shadowLink" in schemas
    assert schemas.count("CollectionAPI") == 1 and "LightAPI" in schemas


# -- instancing ----------------------------------------------------------------------------


def test_instance_roots_get_the_instance_builtins(instanced: Any) -> None:
    entries = by_path(resolve_scope(instanced, Desc(RENDERING)))
    chair_a = builtins_of(entries["/Room/ChairA"], RENDERING)
    assert chair_a.prim_type == "XformInstance"
    assert chair_a.schemas == ("PhysicsRigidBodyAPI", "GeomInstanceAPI", "GeomInstanceRootAPI")
    assert chair_a.ancestor_types == ("Xformable",)
    chair_b = builtins_of(entries["/Room/ChairB"], RENDERING)
    assert chair_b.prim_type == "ScopeInstance" and chair_b.ancestor_types == ("Xformable",)
    assert "xformOp:translate" in names(entries["/Room/ChairA"])
    prototype = instanced.GetPrimAtPath("/Room/ChairA").GetPrototype()
    assert entries["/Room/ChairA"].prototype == str(prototype.GetPath())
    assert not entries["/Room/ChairA"].type_metadata  # RENDERING alone


def test_instance_contents_are_populated_through_prototypes(instanced: Any) -> None:
    entries = by_path(resolve_scope(instanced, Desc(RENDERING)))
    assert not [p for p in entries if p.startswith("/Room/ChairA/")]  # no instance proxies
    chair = str(instanced.GetPrimAtPath("/Room/ChairA").GetPrototype().GetPath())
    assert chair.startswith("/__Prototype_")
    assert f"{chair}/Seat" in entries and not entries[chair].reserved_only  # typeless root
    nested = entries[f"{chair}/Leg"]  # an instance root inside a prototype
    assert nested.instance_root and nested.in_prototype
    assert builtins_of(nested, RENDERING).schemas == ("GeomInstanceAPI",)
    assert "GeomInstanceRootAPI" in builtins_of(entries["/Assets/Chair/Leg"], RENDERING).schemas


def test_selector_or_physics_populated_instance_roots_write_the_type_metadata(
    instanced: Any,
) -> None:
    by_selector = by_path(resolve_scope(instanced, Desc(selectors=[Selector(P.has_type("Scope"))])))
    assert by_selector["/Room/ChairB"].type_metadata
    assert builtins_of(by_selector["/Room/ChairB"], 0).prim_type == "ScopeInstance"
    physics = by_path(resolve_scope(instanced, Desc(PHYSICS)))
    assert physics["/Room/ChairA"].type_metadata and physics["/Room/ChairA"].instance_tags


def test_path_predicates_never_match_inside_prototypes(instanced: Any) -> None:
    everything = selected(instanced, P.is_under_path("/"))
    assert everything and not [p for p in everything if p.startswith("/__Prototype_")]
    assert "/Room/ChairA" in everything  # the instance root itself is not inside
    prototype = str(instanced.GetPrimAtPath("/Room/ChairA").GetPrototype().GetPath())
    assert selected(instanced, P.has_path(prototype, f"{prototype}/Seat")) == set()
    assert selected(instanced, P.is_under_path(prototype)) == set()
    assert f"{prototype}/Seat" in selected(instanced, P.has_type("Cube"))


def test_point_instancer_instanceable_prims_keep_their_authored_builtins(instanced: Any) -> None:
    tree = "/Field/Protos/Tree"
    by_selector = resolve_scope(instanced, Desc(selectors=[Selector(P.has_path(tree))]))
    entry = by_path(by_selector)[tree]
    assert entry.instance_root and not entry.instance_tags and entry.prototype
    got = builtins_of(entry, by_selector.domains)
    assert got.prim_type == "Xform" and "GeomInstanceAPI" not in got.schemas
    assert got.ancestor_types == ("Xformable", "Imageable", "Typed")
    with_rendering = resolve_scope(instanced, Desc(RENDERING, [Selector(P.has_path(tree))]))
    assert builtins_of(by_path(with_rendering)[tree], with_rendering.domains).ancestor_types == ()
    rendering_only = resolve_scope(instanced, Desc(RENDERING))
    assert builtins_of(by_path(rendering_only)[tree], RENDERING).prim_type == "XformInstance"


def test_builtins_ignore_the_property_predicate(instanced: Any) -> None:
    scope = resolve_scope(instanced, Desc(selectors=[Selector(P.has_path("/Room/ChairA"))]))
    entry = by_path(scope)["/Room/ChairA"]
    assert entry.properties == []
    assert builtins_of(entry, 0).prim_type == "XformInstance"


def test_resolving_takes_many_prims_in_one_pass() -> None:
    # 200 sibling meshes below one xform: one entry each, parents first.
    body = "\n".join(
        f'    def Mesh "M{i}"\n    {{\n        point3f[] points = [({i}, 0, 0)]\n    }}'
        for i in range(200)
    )
    stage = open_stage(f'#usda 1.0\ndef Xform "Root"\n{{\n{body}\n}}\n')
    scope = resolve_scope(stage, Desc(selectors=[Selector(P.is_a_type("Mesh"), Q.is_authored())]))
    assert len(scope.prims) == 201 and scope.prims[0].reserved_only
    assert all(names(e) == {"points"} for e in scope.prims[1:])
