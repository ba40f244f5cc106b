"""USD export round trips: populate a scene, change it, export, read it back with usd-core and
populate the exported file again — the values, types and hierarchy are the modified ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import ovstage
import pytest

pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'ovstage-go[usd]')")

from ovstage import OrdinalRange
from ovstage import population as pop
from pxr import Gf, Sdf, Usd

#: One custom attribute of each USD type population maps, with a value.
TYPED_VALUES: list[tuple[str, str]] = [
    ("bool", "true"),
    ("uchar", "200"),
    ("int", "-7"),
    ("uint", "4000000000"),
    ("int64", "-9000000000"),
    ("uint64", "18000000000000000000"),
    ("half", "1.5"),
    ("float", "2.25"),
    ("double", "3.125"),
    ("int2", "(1, 2)"),
    ("int3", "(1, 2, 3)"),
    ("int4", "(1, 2, 3, 4)"),
    ("half3", "(0.5, 1, 2)"),
    ("float2", "(1, 2)"),
    ("float3", "(1, 2, 3)"),
    ("float4", "(1, 2, 3, 4)"),
    ("double3", "(1, 2, 3)"),
    ("point3f", "(1, 2, 3)"),
    ("normal3f", "(0, 0, 1)"),
    ("vector3d", "(1, 0, 0)"),
    ("color3f", "(0.5, 0.25, 1)"),
    ("color4f", "(0.5, 0.25, 1, 0.5)"),
    ("texCoord2f", "(0.5, 0.75)"),
    ("quatf", "(1, 0, 0, 0)"),
    ("quatd", "(0.5, 0.5, 0.5, 0.5)"),
    ("quath", "(1, 0, 0, 0)"),
    ("matrix2d", "((1, 2), (3, 4))"),
    ("matrix3d", "((1, 0, 0), (0, 1, 0), (0, 0, 1))"),
    ("matrix4d", "((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (1, 2, 3, 1))"),
    ("timecode", "12"),
    ("token", '"tok"'),
    ("asset", "@tex.png@"),
    ("int[]", "[1, 2, 3]"),
    ("float[]", "[1.5, 2.5]"),
    ("double[]", "[]"),
    ("point3f[]", "[(0, 0, 0), (1, 2, 3)]"),
    ("color3f[]", "[(1, 0, 0)]"),
    ("quatf[]", "[(1, 0, 0, 0), (0, 1, 0, 0)]"),
    ("matrix4d[]", "[((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1))]"),
    ("token[]", '["a", "b", "a"]'),
    ("asset[]", "[@a.usd@, @b.usd@]"),
    ("bool[]", "[true, false]"),
]


def _attr_name(type_name: str) -> str:
    return "t:" + type_name.replace("[]", "_array")


SCENE = (
    "#usda 1.0\n"
    'def Xform "World"\n{\n'
    "    double3 xformOp:translate = (1, 2, 3)\n"
    '    uniform token[] xformOpOrder = ["xformOp:translate"]\n'
    '    def Mesh "Box" (prepend apiSchemas = ["PhysicsRigidBodyAPI"])\n    {\n'
    "        point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]\n"
    "        int[] faceVertexCounts = [3]\n"
    "        int[] faceVertexIndices = [0, 1, 2]\n"
    '        uniform token subdivisionScheme = "none"\n'
    '        string label = "a box"\n'
    "        rel material:binding = </World/Mat>\n"
    + "".join(f"        custom {t} {_attr_name(t)} = {v}\n" for t, v in TYPED_VALUES)
    + "    }\n"
    '    def Material "Mat"\n    {\n'
    '        token outputs:surface = "s"\n'
    "        token outputs:surface.connect = </World/Mat/Shader.outputs:surface>\n"
    '        def Shader "Shader"\n        {\n'
    "            token outputs:surface\n"
    "        }\n"
    "    }\n"
    "}\n"
)


def _populated(stage: ovstage.Stage, usda: str = SCENE) -> None:
    pop.open_usd_from_string(stage, usda, 1)
    stage.advance_write_floor(1).wait()


def _write(stage: ovstage.Stage, path: str, name: str, value: np.ndarray, ordinal: int) -> None:
    dictionary = ovstage.PathDictionary(stage)
    with dictionary.create_path_list_from_strings([path]) as path_list:
        query = stage.query_from_path_list(path_list)
        stage.write_attribute(query, name, ordinal, value, is_array=False).wait()
        stage.release_query(query).wait()


def _custom_rules() -> list[dict[str, Any]]:
    return [
        {
            "source_attribute_name": "t:*",
            "source_attribute_name_match": pop.OVSTAGE_POPULATION_EXPORT_NAME_MATCH_GLOB,
            "flags": pop.OVSTAGE_POPULATION_EXPORT_RULE_INFER_CUSTOM_TYPE,
        }
    ]


def test_every_mapped_type_round_trips_through_a_file(stage, tmp_path: Path) -> None:
    _populated(stage)
    out = tmp_path / "types.usda"
    report = pop.export_to_usd_file(stage, out, 1, attribute_rules=_custom_rules())
    assert report["attributes_exported"] == len(TYPED_VALUES)
    assert report["attributes_unsupported"] == 0
    source = Usd.Stage.Open(Sdf.Layer.CreateAnonymous(".usda"))
    source.GetRootLayer().ImportFromString(SCENE)
    exported = Sdf.Layer.FindOrOpen(str(out))
    for type_name, _ in TYPED_VALUES:
        name = _attr_name(type_name)
        want = source.GetAttributeAtPath(f"/World/Box.{name}")
        got = exported.GetAttributeAtPath(f"/World/Box.{name}")
        assert got, name
        assert str(got.typeName) == type_name, name
        assert got.custom
        if type_name.startswith("asset"):
            authored = want.Get()
            paths = [authored] if type_name == "asset" else list(authored)
            values = [got.default] if type_name == "asset" else list(got.default)
            assert [a.path for a in values] == [a.path for a in paths], name
        else:
            assert got.default == want.Get(), name


def test_a_modified_value_comes_back_from_a_re_population(stage, tmp_path: Path) -> None:
    _populated(stage)
    _write(stage, "/World/Box", "t:float", np.array([9.75], dtype=np.float32), 2)
    _write(stage, "/World/Box", "t:double3", np.array([[7.0, 8.0, 9.0]]), 2)
    stage.advance_write_floor(2).wait()
    out = tmp_path / "modified.usda"
    pop.export_to_usd_file(
        stage,
        out,
        2,
        attribute_rules=_custom_rules(),
        layer_mode=pop.OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF,
    )
    exported = Usd.Stage.Open(str(out))
    assert exported.GetAttributeAtPath("/World/Box.t:float").Get() == 9.75
    assert exported.GetAttributeAtPath("/World/Box.t:double3").Get() == Gf.Vec3d(7, 8, 9)
    # The exported layer (defs: it stands alone) populates the same columns again.
    with ovstage.Stage("again") as again:
        pop.open_usd(again, str(out), 1, domains=pop.PopulationDomain.ALL)
        again.advance_write_floor(1).wait()
        columns = _columns(again, ["t:float", "t:double3"])
        assert columns["t:float"]["/World/Box"][0] == [9.75]
        assert columns["t:double3"]["/World/Box"][0] == [7.0, 8.0, 9.0]


def test_typed_hierarchy_exports_defs_types_schemas_and_declared_values(stage, tmp_path) -> None:
    _populated(stage)
    out = tmp_path / "typed.usda"
    report = pop.export_typed_hierarchy_to_usd_file(stage, out, "/World", 1)
    assert report["prims_exported"] == 4
    layer = Sdf.Layer.FindOrOpen(str(out))
    box = layer.GetPrimAtPath("/World/Box")
    assert box.specifier == Sdf.SpecifierDef
    assert box.typeName == "Mesh"
    assert list(box.GetInfo("apiSchemas").prependedItems) == ["PhysicsRigidBodyAPI"]
    assert layer.GetPrimAtPath("/World").typeName == "Xform"
    assert layer.GetPrimAtPath("/World/Mat").typeName == "Material"
    # Declared values come out; custom ones do not (no custom namespace named), and a value
    # equal to the schema fallback is left to the schema.
    assert list(box.attributes["points"].default) == [
        Gf.Vec3f(0, 0, 0),
        Gf.Vec3f(1, 0, 0),
        Gf.Vec3f(0, 1, 0),
    ]
    assert box.attributes["subdivisionScheme"].default == "none"
    assert box.attributes["subdivisionScheme"].variability == Sdf.VariabilityUniform
    assert "t:float" not in box.attributes
    assert "doubleSided" not in box.attributes
    # The local transform as one matrix op.
    world = layer.GetPrimAtPath("/World")
    assert world.attributes["xformOp:transform"].default == Gf.Matrix4d().SetTranslate((1, 2, 3))
    assert list(world.attributes["xformOpOrder"].default) == ["xformOp:transform"]
    composed = Usd.Stage.Open(str(out))
    assert composed.GetPrimAtPath("/World/Box").IsA(Usd.Typed)
    assert composed.GetPrimAtPath("/World/Box").HasAPI("PhysicsRigidBodyAPI")


def test_typed_hierarchy_custom_namespaces_bring_custom_attributes(stage, tmp_path) -> None:
    _populated(stage)
    out = tmp_path / "typed.usda"
    pop.export_typed_hierarchy_to_usd_file(stage, out, "/", 1, include_custom_namespaces=["t"])
    layer = Sdf.Layer.FindOrOpen(str(out))
    box = layer.GetPrimAtPath("/World/Box")
    assert box.attributes["t:float"].default == 2.25
    assert box.attributes["t:token_array"].typeName == Sdf.ValueTypeNames.TokenArray


def test_prim_rules_write_specs_and_def_types(stage) -> None:
    _populated(stage)
    layer = Sdf.Layer.CreateAnonymous("prims.usda")
    rules = [
        {"path": "/World/Mat", "usd_type_name": "Scope"},
        {"path": "/World/Box", "path_match": pop.OVSTAGE_POPULATION_EXPORT_PATH_MATCH_PREFIX},
    ]
    pop.export_to_usd_layer(
        stage,
        layer,
        1,
        prim_rules=rules,
        layer_mode=pop.OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF,
        transform_policy=pop.OVSTAGE_POPULATION_EXPORT_TRANSFORM_NONE,
    )
    assert layer.GetPrimAtPath("/World/Mat").typeName == "Scope"
    assert layer.GetPrimAtPath("/World/Box").typeName == "Mesh"
    assert layer.GetPrimAtPath("/World/Box").specifier == Sdf.SpecifierDef
    assert not layer.GetAttributeAtPath("/World.xformOp:transform")


def test_over_mode_writes_sparse_untyped_overs(stage) -> None:
    _populated(stage)
    layer = Sdf.Layer.CreateAnonymous("over.usda")
    pop.export_to_usd_layer(
        stage,
        layer,
        1,
        attribute_rules=["points"],
        transform_policy=pop.OVSTAGE_POPULATION_EXPORT_TRANSFORM_NONE,
    )
    box = layer.GetPrimAtPath("/World/Box")
    assert box.specifier == Sdf.SpecifierOver
    assert box.typeName == ""
    assert set(box.attributes.keys()) == {"points"}
    assert layer.GetPrimAtPath("/World/Mat") is None


def test_attribute_rule_renames_and_types(stage) -> None:
    _populated(stage)
    layer = Sdf.Layer.CreateAnonymous("rename.usda")
    rules = [
        {"source_attribute_name": "label", "usd_type_name": "string"},
        {
            "source_attribute_name": "t:float",
            "destination_attribute_name": "sim:temperature",
            "usd_type_name": "double",
        },
    ]
    pop.export_to_usd_layer(stage, layer, 1, attribute_rules=rules)
    box = layer.GetPrimAtPath("/World/Box")
    assert box.attributes["label"].default == "a box"
    assert box.attributes["sim:temperature"].default == 2.25
    assert box.attributes["sim:temperature"].typeName == Sdf.ValueTypeNames.Double


def test_a_rule_without_a_type_is_unsupported_and_required_fails(stage) -> None:
    _populated(stage)
    layer = Sdf.Layer.CreateAnonymous("untyped.usda")
    none = pop.OVSTAGE_POPULATION_EXPORT_TRANSFORM_NONE
    report = pop.export_to_usd_layer(
        stage, layer, 1, attribute_rules=["t:float"], transform_policy=none
    )
    assert report["attributes_unsupported"] == 1
    assert not layer.GetAttributeAtPath("/World/Box.t:float")
    required = [
        {"source_attribute_name": "t:float", "flags": pop.OVSTAGE_POPULATION_EXPORT_RULE_REQUIRED}
    ]
    with pytest.raises(ovstage.OvstageError) as info:
        pop.export_to_usd_layer(stage, layer, 1, attribute_rules=required, transform_policy=none)
    assert "t:float" in info.value.message
    assert layer.empty


def test_relationship_material_binding_and_connection_rules(stage) -> None:
    _populated(stage)
    layer = Sdf.Layer.CreateAnonymous("edges.usda")
    rules = [
        {
            "source_property_name": "material:binding",
            "property_kind": pop.OVSTAGE_POPULATION_EXPORT_PROPERTY_MATERIAL_BINDING,
        },
        {
            "source_property_name": "outputs:surface",
            "property_kind": pop.OVSTAGE_POPULATION_EXPORT_PROPERTY_CONNECTION,
        },
    ]
    report = pop.export_to_usd_layer(stage, layer, 1, property_rules=rules)
    assert report["property_edges_exported"] == 2
    binding = layer.GetRelationshipAtPath("/World/Box.material:binding")
    assert list(binding.targetPathList.explicitItems) == [Sdf.Path("/World/Mat")]
    assert (
        "MaterialBindingAPI"
        in layer.GetPrimAtPath("/World/Box").GetInfo("apiSchemas").prependedItems
    )
    surface = layer.GetAttributeAtPath("/World/Mat.outputs:surface")
    assert list(surface.connectionPathList.explicitItems) == [
        Sdf.Path("/World/Mat/Shader.outputs:surface")
    ]
    assert surface.typeName == Sdf.ValueTypeNames.Token


def test_api_schema_rules_and_recorded_schemas(stage) -> None:
    _populated(stage)
    layer = Sdf.Layer.CreateAnonymous("api.usda")
    rules = [
        {"path": "/World/Box", "schema_name": "PhysicsCollisionAPI"},
        {"path": "/World/Box", "schema_name": "CollectionAPI", "instance_name": "lights"},
        {"path": "/World/Box", "schema_name": "NoSuchAPI"},
    ]
    report = pop.export_to_usd_layer(
        stage,
        layer,
        1,
        api_schema_rules=rules,
        source_api_schema_policy=pop.SourceApiSchemaPolicy.APPLY_RECORDED,
        transform_policy=pop.OVSTAGE_POPULATION_EXPORT_TRANSFORM_NONE,
    )
    applied = list(layer.GetPrimAtPath("/World/Box").GetInfo("apiSchemas").prependedItems)
    assert applied == ["PhysicsCollisionAPI", "CollectionAPI:lights", "PhysicsRigidBodyAPI"]
    assert report["api_schemas_skipped"] == 1


def test_metadata_rules_prim_and_layer(stage) -> None:
    usda = """#usda 1.0
(
    defaultPrim = "World"
    customLayerData = { string creator = "tests" }
)
def Xform "World" (
    kind = "component"
    customData = { int answer = 42 }
)
{
}
"""
    descs = [
        pop.Desc(
            pop.PopulationDomain.RENDERING,
            [pop.Selector(pop.PrimPredicate.all(), prim_metadata_paths=["kind", "customData"])],
            stage_metadata_paths=["defaultPrim", "customLayerData"],
        )
    ]
    pop.open_usd_from_string_with_desc(stage, usda, 1, pop.DEFAULT_TIME, descs)
    stage.advance_write_floor(1).wait()
    layer = Sdf.Layer.CreateAnonymous("meta.usda")
    rules = [
        {"source_metadata_name": "kind"},
        {"source_metadata_name": "usd-metadata:customData:answer"},
        {
            "source_metadata_name": "defaultPrim",
            "metadata_kind": pop.OVSTAGE_POPULATION_EXPORT_METADATA_LAYER_STANDARD,
        },
        {
            "source_metadata_name": "customLayerData:creator",
            "metadata_kind": pop.OVSTAGE_POPULATION_EXPORT_METADATA_LAYER_CUSTOM_DATA,
        },
    ]
    report = pop.export_to_usd_layer(stage, layer, 1, metadata_rules=rules)
    assert report["metadata_exported"] == 4, report
    world = layer.GetPrimAtPath("/World")
    assert world.kind == "component"
    assert dict(world.customData) == {"answer": 42}
    assert layer.defaultPrim == "World"
    assert dict(layer.customLayerData) == {"creator": "tests"}


REFERENCES_SCENE = """#usda 1.0
def Xform "World"
{
    def Xform "Proto"
    {
    }
    def Xform "Crate" (
        customData = {
            string[] refs = ["@./crate.usda@</Crate>", "</World/Proto>"]
            string one = "@./lid.usda@"
            string bad = "@./oops.usda@<not a path>"
            int number = 3
        }
    )
    {
    }
}
"""


def test_references_metadata_rules(stage) -> None:
    descs = [
        pop.Desc(
            pop.PopulationDomain.RENDERING,
            [pop.Selector(pop.PrimPredicate.all(), prim_metadata_paths=["customData"])],
        )
    ]
    pop.open_usd_from_string_with_desc(stage, REFERENCES_SCENE, 1, pop.DEFAULT_TIME, descs)
    stage.advance_write_floor(1).wait()
    kind = pop.OVSTAGE_POPULATION_EXPORT_METADATA_REFERENCES
    rules = [
        {"source_metadata_name": "customData:refs", "metadata_kind": kind},
        {"source_metadata_name": "customData:one", "metadata_kind": kind},
        {"source_metadata_name": "customData:bad", "metadata_kind": kind},
        {"source_metadata_name": "customData:number", "metadata_kind": kind},
    ]
    layer = Sdf.Layer.CreateAnonymous("refs.usda")
    report = pop.export_to_usd_layer(stage, layer, 1, metadata_rules=rules)
    crate = layer.GetPrimAtPath("/World/Crate")
    assert list(crate.referenceList.prependedItems) == [
        Sdf.Reference("./crate.usda", "/Crate"),
        Sdf.Reference("", "/World/Proto"),
        Sdf.Reference("./lid.usda"),
    ]
    # four rules over three prims: two values written, two that name no reference, and the
    # prims without the cells (World, Proto) skipped
    assert report["metadata_examined"] == 12, report
    assert report["metadata_exported"] == 2, report
    assert report["metadata_unsupported"] == 2, report
    assert report["metadata_skipped"] == 8, report
    assert not layer.GetPrimAtPath("/World/Proto").referenceList.prependedItems
    # the internal reference composes: the crate gets Proto's (empty) contents, no errors
    assert Usd.Stage.Open(layer).GetPrimAtPath("/World/Crate").HasAuthoredReferences()
    required = [dict(rules[2], flags=pop.OVSTAGE_POPULATION_EXPORT_RULE_REQUIRED)]
    untouched = Sdf.Layer.CreateAnonymous("required.usda")
    with pytest.raises(ovstage.OvstageError, match="not an absolute prim path"):
        pop.export_to_usd_layer(stage, untouched, 1, metadata_rules=required)
    assert untouched.empty


def test_layer_and_stage_exports_edit_in_place(stage, tmp_path: Path) -> None:
    _populated(stage)
    path = tmp_path / "target.usda"
    Sdf.Layer.CreateNew(str(path)).Save()
    usd_stage = Usd.Stage.Open(str(path))
    pop.export_to_usd_stage(stage, usd_stage, 1, attribute_rules=["points"])
    assert usd_stage.GetAttributeAtPath("/World/Box.points").Get() is not None
    # Only the identifier is passed on: an object with GetIdentifier() works for layers.
    other = Sdf.Layer.CreateAnonymous("other.usda")

    class Named:
        def GetIdentifier(self) -> str:
            return other.identifier

    pop.export_to_usd_layer(stage, Named(), 1, attribute_rules=["points"])
    assert other.GetAttributeAtPath("/World/Box.points")


def _columns(stage: ovstage.Stage, names: list[str]) -> dict[str, dict[str, Any]]:
    """``{attribute: {prim: (value, stored dtype, semantic)}}`` at the stage's floor; token
    ids as their strings, assets as their authored paths (ids are the stage's own)."""
    from readback import read_groups

    dictionary = ovstage.PathDictionary(stage)
    query = stage.query()
    with stage.get_attribute_write_floor(None) as floor:
        ordinal = floor.fetch()
    groups = read_groups(stage, query, names, OrdinalRange.latest(ordinal))
    stage.release_query(query).wait()
    out: dict[str, dict[str, Any]] = {}
    for group in groups:
        for path, value in group.values.items():
            if not isinstance(value, list):
                value = [value]
            if group.semantic == ovstage.AttributeSemantic.ASSET_PATH_ID:
                value = [dictionary.token_to_string(v) if v else "" for v in value[::2]]
            elif group.semantic == ovstage.AttributeSemantic.TOKEN_ID or group.attribute == (
                "usd-prim-type"
            ):
                value = [dictionary.token_to_string(v) if v else "" for v in value]
            out.setdefault(group.attribute, {})[path] = (value, group.dtypes[path], group.semantic)
    return out


def test_re_populating_the_export_gives_back_every_column(stage, tmp_path: Path) -> None:
    """populate -> export (DEF) -> populate the file again: every custom column, the prim
    types and the hierarchy come back with the same values, dtypes and semantics."""
    _populated(stage)
    out = tmp_path / "again.usda"
    pop.export_to_usd_file(
        stage,
        out,
        1,
        attribute_rules=_custom_rules(),
        layer_mode=pop.OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF,
    )
    names = [_attr_name(t) for t, _ in TYPED_VALUES] + ["usd-prim-type", "omni:xform"]
    before = _columns(stage, names)
    with ovstage.Stage("again") as again:
        pop.open_usd(again, str(out), 1)
        again.advance_write_floor(1).wait()
        after = _columns(again, names)
    for name in names:
        assert after.get(name) == before.get(name), name
    assert len(before) == len(names)  # every column was there to compare
    exported = Usd.Stage.Open(str(out))
    assert [str(p.GetPath()) for p in exported.Traverse()] == [
        "/World",
        "/World/Box",
        "/World/Mat",
        "/World/Mat/Shader",
    ]
    assert exported.GetPrimAtPath("/World/Mat/Shader").GetTypeName() == "Shader"
