"""The export surface: names, constants, defaults, and bad input (a clear error naming the
argument, nothing written)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import ovstage
import pytest

pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'ovstage-go[usd]')")

from ovstage import ErrorCode, OvstageError
from ovstage import population as pop
from pxr import Sdf

SCENE = """#usda 1.0
def Xform "World"
{
    float sim:heat = 1
}
"""


@pytest.fixture
def populated(stage: ovstage.Stage) -> ovstage.Stage:
    pop.open_usd_from_string(stage, SCENE, 1)
    stage.advance_write_floor(1).wait()
    return stage


def test_the_33_constants_and_the_python_enums() -> None:
    names = [n for n in dir(pop) if n.startswith("OVSTAGE_POPULATION_EXPORT_")]
    assert len(names) == 33
    assert pop.OVSTAGE_POPULATION_EXPORT_RULE_NONE == 0
    assert pop.OVSTAGE_POPULATION_EXPORT_RULE_INFER_CUSTOM_TYPE == 8
    assert pop.OVSTAGE_POPULATION_EXPORT_RULE_REQUIRED == 16
    assert pop.OVSTAGE_POPULATION_EXPORT_TRANSFORM_USD_MATRIX_OP == 2
    assert pop.OVSTAGE_POPULATION_EXPORT_METADATA_LAYER_STANDARD == 3
    assert pop.OVSTAGE_POPULATION_EXPORT_PROPERTY_MATERIAL_BINDING == 3
    assert not hasattr(pop, "OVSTAGE_POPULATION_EXPORT_PROPERTY_INVALID")
    key = pop.OVSTAGE_POPULATION_EXPORT_UNKNOWN_APPLIED_API_SCHEMAS_CUSTOM_DATA_KEY
    assert key == "ovpopulation:unknownAppliedAPISchemas"
    assert [(m.name, m.value) for m in pop.ExportDestinationMode] == [
        ("EMPTY", 0),
        ("OPEN_EXISTING", 1),
    ]
    assert [(m.name, m.value) for m in pop.SourceApiSchemaPolicy] == [
        ("EXPLICIT_ONLY", 0),
        ("APPLY_RECORDED", 1),
    ]
    assert [(m.name, m.value) for m in pop.ExportProjection] == [
        ("EXPLICIT_RULES", 0),
        ("SCHEMA_DECLARED", 1),
    ]
    assert pop.export_available() is True


def test_the_report_has_the_23_counters(populated, tmp_path: Path) -> None:
    report = pop.export_to_usd_file(populated, tmp_path / "r.usda", 1)
    assert list(report) == [
        "prims_examined", "prims_exported", "prims_skipped", "attributes_examined",
        "attributes_exported", "attributes_skipped", "attributes_unsupported",
        "api_schemas_examined", "api_schemas_applied", "api_schemas_skipped",
        "custom_attributes_inferred", "unknown_metadata_preserved", "transforms_examined",
        "transforms_exported", "property_edges_examined", "property_edges_exported",
        "property_edges_skipped", "property_edges_unsupported", "metadata_examined",
        "metadata_exported", "metadata_skipped", "metadata_unsupported",
        "source_states_unavailable",
    ]  # fmt: skip
    assert report["prims_examined"] == 1
    assert report["transforms_exported"] == 1  # the default exports the transform only


@pytest.mark.parametrize("ordinal", [0, 2, 5])
def test_an_ordinal_other_than_the_committed_one_is_refused(populated, tmp_path, ordinal) -> None:
    out = tmp_path / "o.usda"
    with pytest.raises(OvstageError) as info:
        pop.export_to_usd_file(populated, out, ordinal)
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert "current committed ovstage ordinal (1)" in info.value.message
    assert info.value.message.startswith("export_to_usd_file failed: ")
    assert pop.last_error() == info.value.message
    assert not out.exists()


def _unsealed_heat(stage: ovstage.Stage, ordinal: int) -> None:
    """A write of /World's sim:heat at ``ordinal``, not sealed."""
    dictionary = ovstage.PathDictionary(stage)
    with dictionary.create_path_list_from_strings(["/World"]) as path_list:
        query = stage.query_from_path_list(path_list)
        value = np.array([5.0], dtype=np.float32)
        stage.write_attribute(query, "sim:heat", ordinal, value, is_array=False).wait()
        stage.release_query(query).wait()


def test_an_unsealed_write_is_not_the_committed_ordinal(populated, tmp_path) -> None:
    _unsealed_heat(populated, 2)
    with pytest.raises(OvstageError, match="current committed"):
        pop.export_to_usd_file(populated, tmp_path / "o.usda", 2)


@pytest.mark.parametrize(
    ("keyword", "value", "error", "fragment"),
    [
        ("selection", 2, ValueError, "selection"),
        ("layer_mode", 9, ValueError, "layer_mode"),
        ("transform_policy", "none", TypeError, "transform_policy"),
        ("unknown_metadata_policy", 3, ValueError, "unknown_metadata_policy"),
        ("source_api_schema_policy", 5, ValueError, "source_api_schema_policy"),
        ("projection", -1, ValueError, "projection"),
        ("since_ordinal", -1, ValueError, "since_ordinal"),
        ("prim_predicate", "ALL", TypeError, "prim_predicate"),
        ("property_predicate", pop.PrimPredicate.all(), TypeError, "property_predicate"),
        ("attribute_rules", "points", TypeError, "attribute_rules"),
        ("attribute_rules", [5], TypeError, "attribute_rules[0]"),
        ("prim_rules", ["/World"], TypeError, "prim_rules[0]"),
        ("prim_rules", [{"path": 3}], TypeError, "prim_rules[0]['path']"),
        ("api_schema_rules", [{"schema": "X"}], ValueError, "unknown key 'schema'"),
        ("property_rules", [{"source_property_name": "r"}], ValueError, "property_kind"),
        ("property_rules", [{"property_kind": 0}], ValueError, "INVALID"),
        ("metadata_rules", [{"metadata_kind": 7}], ValueError, "metadata_kind"),
        ("attribute_rules", [{"flags": 2**32}], ValueError, "flags"),
        ("attribute_rules", [""] * 4097, ValueError, "at most 4096"),
    ],
)
def test_bad_options_name_the_argument(
    populated, tmp_path, keyword, value, error, fragment
) -> None:
    out = tmp_path / "bad.usda"
    with pytest.raises(error) as info:
        pop.export_to_usd_file(populated, out, 1, **{keyword: value})
    assert fragment in str(info.value)
    assert not out.exists()


def test_a_predicate_kind_export_does_not_evaluate_is_not_supported(populated, tmp_path) -> None:
    with pytest.raises(OvstageError) as info:
        pop.export_to_usd_file(
            populated, tmp_path / "k.usda", 1, prim_predicate=pop.PrimPredicate.has_kind("group")
        )
    assert info.value.code == ErrorCode.NOT_SUPPORTED
    assert "HAS_KIND" in info.value.message


def test_unwritable_and_unknown_identifiers(populated, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(OvstageError) as info:
        pop.export_to_usd_file(populated, blocker / "out.usda", 1)
    assert info.value.code == ErrorCode.OP_FAILED
    assert "cannot write there" in info.value.message
    with pytest.raises(OvstageError) as info:
        pop.export_to_usd_file(populated, tmp_path / "out.txt", 1)
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert list(tmp_path.iterdir()) == [blocker]  # no temporary file left behind


def test_a_failing_export_leaves_the_stored_file_and_destination_as_they_were(
    populated, tmp_path: Path
) -> None:
    out = tmp_path / "kept.usda"
    pop.export_to_usd_file(populated, out, 1)
    before = out.read_bytes()
    with pytest.raises(OvstageError):
        pop.export_to_usd_file(populated, out, 7)
    assert out.read_bytes() == before
    with pop.create_export_destination(populated, tmp_path / "d.usda") as destination:
        destination.export(1)
        content = destination.layer.ExportToString()
        required = [{"source_attribute_name": "sim:heat", "flags": pop.RuleFlags.REQUIRED}]
        with pytest.raises(OvstageError):
            destination.export(1, attribute_rules=required)
        assert destination.layer.ExportToString() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.usda"]


def test_destination_arguments(populated, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="destination must be an ExportDestination"):
        pop.export_to_destination(populated, "d.usda", 1)
    with pytest.raises(ValueError, match="mode"):
        pop.create_export_destination(populated, tmp_path / "d.usda", 4)
    with pytest.raises(TypeError, match="identifier"):
        pop.create_export_destination(populated, 42)
    destination = pop.create_export_destination(populated, tmp_path / "d.usda")
    with ovstage.Stage("other") as other, pytest.raises(ValueError, match="another stage"):
        pop.export_to_destination(other, destination, 1)
    assert pop.export_to_destination(populated, destination, 1)["prims_examined"] == 1
    destination.close()
    destination.close()  # closing twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        pop.export_to_destination(populated, destination, 1)
    with pytest.raises(RuntimeError, match="closed"):
        destination.save_async()


def test_layer_and_stage_arguments(populated) -> None:
    with pytest.raises(TypeError, match="usd_layer"):
        pop.export_to_usd_layer(populated, 12, 1)
    with pytest.raises(TypeError, match="usd_stage"):
        pop.export_to_usd_stage(populated, object(), 1)
    with pytest.raises(OvstageError) as info:
        pop.export_to_usd_layer(populated, "/no/such/layer.usda", 1)
    assert info.value.code == ErrorCode.OP_FAILED


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"root_path": "World"}, ValueError),
        ({"root_path": 5}, TypeError),
        ({"include_custom_namespaces": "sim"}, TypeError),
        ({"include_custom_namespaces": ["omni:x"]}, ValueError),
        ({"include_custom_namespaces": ["usd"]}, ValueError),
        ({"include_custom_namespaces": ["sim:1bad"]}, ValueError),
        ({"prim_predicate": "all"}, TypeError),
    ],
)
def test_typed_hierarchy_arguments(populated, tmp_path, kwargs, error) -> None:
    root = kwargs.pop("root_path", "/")
    layer = Sdf.Layer.CreateAnonymous("typed.usda")
    with pytest.raises(error):
        pop.export_typed_hierarchy_to_usd_layer(populated, layer, root, 1, **kwargs)
    assert layer.empty


def test_a_destroyed_stage_is_refused(tmp_path: Path) -> None:
    stage = ovstage.Stage("gone")
    stage.destroy()
    with pytest.raises(OvstageError) as info:
        pop.export_to_usd_file(stage, tmp_path / "g.usda", 1)
    assert info.value.code == ErrorCode.INVALID_HANDLE
    with pytest.raises(TypeError, match=r"ovstage\.Stage"):
        pop.export_to_usd_file("stage", tmp_path / "g.usda", 1)


def test_export_reads_the_sealed_state_while_a_newer_write_is_pending(populated, tmp_path) -> None:
    _unsealed_heat(populated, 2)
    rules = [{"source_attribute_name": "sim:heat", "flags": pop.RuleFlags.INFER_CUSTOM_TYPE}]
    out = tmp_path / "sealed.usda"
    pop.export_to_usd_file(populated, out, 1, attribute_rules=rules)
    assert Sdf.Layer.OpenAsAnonymous(str(out)).GetAttributeAtPath("/World.sim:heat").default == 1.0


def test_a_destination_not_made_by_create_refuses_work(populated) -> None:
    destination = pop.ExportDestination(populated, None, 99, "raw.usda")
    with pytest.raises(RuntimeError, match="not opened"):
        destination.export(1)
    with pytest.raises(RuntimeError, match="not opened"):
        destination.save()
    destination.close()
    assert destination.closed
