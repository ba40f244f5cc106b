"""Change-based export (``since_ordinal``) and reusable destinations."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import ovstage
import pytest

pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'ovstage-go[usd]')")

from ovstage import population as pop
from pxr import Gf, Sdf

SCENE = """#usda 1.0
def Xform "World"
{
    def Xform "A"
    {
        float sim:heat = 1
    }
    def Xform "B"
    {
        float sim:heat = 2
    }
    def Xform "C"
    {
        float sim:heat = 3
    }
}
"""

CHANGES = pop.OVSTAGE_POPULATION_EXPORT_SELECTION_CHANGED_PROPERTIES_SINCE_ORDINAL
HEAT = [
    {
        "source_attribute_name": "sim:*",
        "source_attribute_name_match": pop.OVSTAGE_POPULATION_EXPORT_NAME_MATCH_GLOB,
        "flags": pop.OVSTAGE_POPULATION_EXPORT_RULE_INFER_CUSTOM_TYPE,
    }
]


def _populated(stage: ovstage.Stage) -> None:
    pop.open_usd_from_string(stage, SCENE, 1)
    stage.advance_write_floor(1).wait()


def _on(stage: ovstage.Stage, paths: list[str], op) -> None:
    dictionary = ovstage.PathDictionary(stage)
    with dictionary.create_path_list_from_strings(paths) as path_list:
        query = stage.query_from_path_list(path_list)
        op(query).wait()
        stage.release_query(query).wait()


def _heat(stage: ovstage.Stage, path: str, value: float, ordinal: int) -> None:
    _on(
        stage,
        [path],
        lambda q: stage.write_attribute(
            q, "sim:heat", ordinal, np.array([value], dtype=np.float32), is_array=False
        ),
    )


def _move(
    stage: ovstage.Stage,
    path: str,
    offset: tuple[float, float, float],
    ordinal: int,
    name: str = "omni:xform",
) -> None:
    matrix = np.eye(4)
    matrix[3, :3] = offset
    _on(
        stage,
        [path],
        lambda q: stage.write_attribute(
            q,
            name,
            ordinal,
            matrix.reshape(1, 16),
            is_array=False,
            semantic=ovstage.AttributeSemantic.MATRIX,
        ),
    )


def test_only_properties_changed_in_the_interval_are_exported(stage) -> None:
    _populated(stage)
    _heat(stage, "/World/B", 20.0, 2)
    _move(stage, "/World/C", (0, 0, 5), 2)
    stage.advance_write_floor(2).wait()
    layer = Sdf.Layer.CreateAnonymous("changes.usda")
    report = pop.export_to_usd_layer(
        stage, layer, 2, since_ordinal=1, selection=CHANGES, attribute_rules=HEAT
    )
    assert layer.GetAttributeAtPath("/World/B.sim:heat").default == 20.0
    assert not layer.GetPrimAtPath("/World/A")
    assert not layer.GetAttributeAtPath("/World/B.xformOp:transform")
    moved = layer.GetAttributeAtPath("/World/C.xformOp:transform").default
    assert moved == Gf.Matrix4d().SetTranslate((0, 0, 5))
    assert not layer.GetAttributeAtPath("/World/C.sim:heat")
    assert report["attributes_exported"] == 1
    assert report["transforms_exported"] == 1
    # since_ordinal == ordinal: an empty interval writes nothing.
    empty = Sdf.Layer.CreateAnonymous("none.usda")
    pop.export_to_usd_layer(
        stage, empty, 2, since_ordinal=2, selection=CHANGES, attribute_rules=HEAT
    )
    assert empty.empty


RESET_SCENE = """#usda 1.0
def Xform "World"
{
    def Xform "A"
    {
        uniform token[] xformOpOrder = ["!resetXformStack!"]
    }
    def Xform "B"
    {
    }
}
"""


@pytest.mark.parametrize("name", ["omni:xform", "omni:fabric:localMatrix"])
def test_a_transform_written_under_either_name_is_exported(stage, name: str) -> None:
    """The stage keeps the transform under its storage name and discovery reports that name:
    a write under the public name or the storage name is the one transform column, and a
    change export of it keeps the prim's reset of the transform stack, unchanged since."""
    pop.open_usd_from_string(stage, RESET_SCENE, 1)
    stage.advance_write_floor(1).wait()
    _move(stage, "/World/A", (1, 2, 3), 2, name)
    _move(stage, "/World/B", (4, 5, 6), 2, name)
    stage.advance_write_floor(2).wait()
    full = Sdf.Layer.CreateAnonymous("full.usda")
    pop.export_to_usd_layer(stage, full, 2)
    changes = Sdf.Layer.CreateAnonymous("changes.usda")
    report = pop.export_to_usd_layer(stage, changes, 2, since_ordinal=1, selection=CHANGES)
    assert report["transforms_exported"] == 2
    for layer in (full, changes):
        for path, offset in (("/World/A", (1, 2, 3)), ("/World/B", (4, 5, 6))):
            matrix = layer.GetAttributeAtPath(f"{path}.xformOp:transform").default
            assert matrix == Gf.Matrix4d().SetTranslate(offset), (layer, path)
            # the storage name is never written as an attribute of its own
            assert not layer.GetAttributeAtPath(f"{path}.omni:fabric:localMatrix")
        order = layer.GetAttributeAtPath("/World/A.xformOpOrder").default
        assert list(order) == ["!resetXformStack!", "xformOp:transform"], layer
        assert list(layer.GetAttributeAtPath("/World/B.xformOpOrder").default) == [
            "xformOp:transform"
        ]


def test_a_destination_follows_sparse_writes_and_deletes(stage, tmp_path: Path) -> None:
    _populated(stage)
    out = tmp_path / "live.usda"
    with pop.create_export_destination(stage, out) as destination:
        destination.export(1, attribute_rules=HEAT)
        assert destination.layer.GetAttributeAtPath("/World/C.sim:heat").default == 3.0
        # Ordinal 2: B changes, C loses its attribute, A is deleted.
        _heat(stage, "/World/B", 25.0, 2)
        _on(stage, ["/World/C"], lambda q: stage.delete_attributes(q, ["sim:heat"], 2))
        _on(stage, ["/World/A"], lambda q: stage.delete_attributes(q, [], 2))
        stage.advance_write_floor(2).wait()
        report = destination.export(2, since_ordinal=1, selection=CHANGES, attribute_rules=HEAT)
        layer = destination.layer
        assert layer.GetAttributeAtPath("/World/B.sim:heat").default == 25.0
        # OVER mode: the deleted value is blocked (the source's opinion stays hidden)
        assert layer.GetAttributeAtPath("/World/C.sim:heat").default == Sdf.ValueBlock()
        assert not layer.GetPrimAtPath("/World/A")
        assert report["attributes_exported"] == 1
        assert not out.exists()  # nothing is stored before an explicit save
        destination.save()
        saved = Sdf.Layer.OpenAsAnonymous(str(out))
        assert saved.GetAttributeAtPath("/World/B.sim:heat").default == 25.0
        assert not saved.GetPrimAtPath("/World/A")
    assert destination.closed


def test_a_def_destination_drops_deleted_properties(stage) -> None:
    _populated(stage)
    layer = Sdf.Layer.CreateAnonymous("def.usda")
    defs = pop.OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF
    pop.export_to_usd_layer(stage, layer, 1, attribute_rules=HEAT, layer_mode=defs)
    _on(stage, ["/World/C"], lambda q: stage.delete_attributes(q, ["sim:heat"], 2))
    stage.advance_write_floor(2).wait()
    pop.export_to_usd_layer(
        stage, layer, 2, since_ordinal=1, selection=CHANGES, attribute_rules=HEAT, layer_mode=defs
    )
    assert not layer.GetAttributeAtPath("/World/C.sim:heat")
    assert layer.GetAttributeAtPath("/World/B.sim:heat").default == 2.0


def test_save_replaces_the_stored_file_and_close_discards(stage, tmp_path: Path) -> None:
    _populated(stage)
    out = tmp_path / "kept.usda"
    destination = pop.create_export_destination(stage, out)
    destination.export(1, attribute_rules=HEAT)
    destination.save()
    before = out.read_text()
    _heat(stage, "/World/A", 10.0, 2)
    stage.advance_write_floor(2).wait()
    destination.export(2, attribute_rules=HEAT)
    destination.close()  # unsaved content is discarded
    assert out.read_text() == before
    with pytest.raises(RuntimeError, match="closed"):
        destination.export(2, attribute_rules=HEAT)
    with pytest.raises(RuntimeError, match="closed"):
        destination.save()


def test_open_existing_keeps_the_stored_content(stage, tmp_path: Path) -> None:
    _populated(stage)
    out = tmp_path / "existing.usda"
    layer = Sdf.Layer.CreateNew(str(out))
    Sdf.CreatePrimInLayer(layer, "/Keep").specifier = Sdf.SpecifierDef
    layer.Save()
    del layer
    mode = pop.ExportDestinationMode.OPEN_EXISTING
    with pop.create_export_destination(stage, out, mode) as destination:
        destination.export(1, attribute_rules=HEAT)
        destination.save()
    saved = Sdf.Layer.OpenAsAnonymous(str(out))
    assert saved.GetPrimAtPath("/Keep")
    assert saved.GetAttributeAtPath("/World/A.sim:heat").default == 1.0
    with pytest.raises(ovstage.OvstageError) as info:
        pop.create_export_destination(stage, tmp_path / "missing.usda", mode)
    assert info.value.code == ovstage.ErrorCode.OP_FAILED


def test_one_live_destination_per_identifier(stage, tmp_path: Path) -> None:
    _populated(stage)
    out = tmp_path / "one.usda"
    first = pop.create_export_destination(stage, out)
    with pytest.raises(ovstage.OvstageError, match="already active") as info:
        pop.create_export_destination(stage, str(tmp_path / "." / "one.usda"))
    assert info.value.code == ovstage.ErrorCode.INVALID_ARGUMENT
    first.close()
    second = pop.create_export_destination(stage, out)
    assert second.handle != first.handle and second.identifier == str(out)
    second.close()


def test_async_destination_ops_run_in_order(stage, tmp_path: Path) -> None:
    _populated(stage)
    out = tmp_path / "async.usda"
    created = pop.ExportDestination.create_async(stage, out)
    destination = created.destination
    exported = destination.export_async(1, attribute_rules=HEAT)
    saved = destination.save_async()
    closed = destination.close_async()
    assert created.wait() is destination
    report = exported.wait()
    assert report["attributes_exported"] == 3
    assert report["attributes_examined"] == 3  # one per (prim, attribute)
    assert saved.wait() is True
    assert closed.wait() is True
    assert destination.closed
    with pytest.raises(RuntimeError, match="already been consumed"):
        exported.wait()
    assert Sdf.Layer.OpenAsAnonymous(str(out)).GetAttributeAtPath("/World/B.sim:heat")


def test_async_file_export_reports_failure_at_wait(stage, tmp_path: Path) -> None:
    _populated(stage)
    op = pop.export_to_usd_file_async(stage, tmp_path / "f.usda", 5, attribute_rules=HEAT)
    with pytest.raises(ovstage.OvstageError) as info:
        op.wait()
    assert info.value.code == ovstage.ErrorCode.INVALID_ARGUMENT
    assert not (tmp_path / "f.usda").exists()
    ok = pop.export_to_usd_file_async(stage, tmp_path / "f.usda", 1, attribute_rules=HEAT)
    assert ok.wait()["attributes_exported"] == 3


def test_an_unclosed_destination_warns_when_collected(stage, tmp_path: Path) -> None:
    _populated(stage)
    destination = pop.create_export_destination(stage, tmp_path / "leak.usda")
    with pytest.warns(ResourceWarning, match="ExportDestination .* garbage-collected unreleased"):
        del destination
        gc.collect()
    # The identifier is free again.
    pop.create_export_destination(stage, tmp_path / "leak.usda").close()


def test_async_layer_stage_and_typed_hierarchy_exports(stage, tmp_path: Path) -> None:
    from pxr import Usd

    _populated(stage)
    layer = Sdf.Layer.CreateAnonymous("async.usda")
    report = pop.export_to_usd_layer_async(stage, layer, 1, attribute_rules=HEAT).wait()
    assert report["attributes_exported"] == 3
    path = tmp_path / "stage.usda"
    Sdf.Layer.CreateNew(str(path)).Save()
    usd_stage = Usd.Stage.Open(str(path))
    pop.export_to_usd_stage_async(stage, usd_stage, 1, attribute_rules=HEAT).wait()
    assert usd_stage.GetAttributeAtPath("/World/A.sim:heat").Get() == 1.0
    typed = tmp_path / "typed.usda"
    op = pop.export_typed_hierarchy_to_usd_file_async(stage, typed, "/World", 1)
    assert op.wait()["prims_exported"] == 4
    assert Sdf.Layer.OpenAsAnonymous(str(typed)).GetPrimAtPath("/World/B").typeName == "Xform"
    with pytest.raises(RuntimeError, match="consumed"):
        op.wait()


# -- source states that cannot be read at the ordinal ------------------------------------

SCENE_TWO = """#usda 1.0
def Xform "World"
{
    def Xform "A"
    {
        float sim:heat = 1
        float sim:mass = 5
    }
}
"""


def _value(layer: Sdf.Layer, name: str) -> object:
    spec = layer.GetAttributeAtPath(f"/World/A.{name}")
    return spec.default if spec else None


@pytest.mark.parity
def test_an_unreadable_source_state_is_skipped_and_counted(stage) -> None:
    """Without a history window (parity mode) a change recorded after the ordinal, sealed or
    not, makes that attribute's state at the ordinal unreadable: the export skips it, counts
    it, and exports the rest."""
    pop.open_usd_from_string(stage, SCENE_TWO, 1)
    stage.advance_write_floor(1).wait()
    _heat(stage, "/World/A", 7.0, 2)  # a producer ahead of the floor, not sealed
    layer = Sdf.Layer.CreateAnonymous("unavailable.usda")
    report = pop.export_to_usd_layer(stage, layer, 1, attribute_rules=HEAT)
    assert report["source_states_unavailable"] == 1
    assert _value(layer, "sim:heat") is None  # neither the old nor the unsealed value
    assert _value(layer, "sim:mass") == 5
    assert report["attributes_exported"] == 1
    # once sealed, the next export at the new floor reads it again
    stage.advance_write_floor(2).wait()
    again = Sdf.Layer.CreateAnonymous("available.usda")
    report = pop.export_to_usd_layer(stage, again, 2, attribute_rules=HEAT)
    assert report["source_states_unavailable"] == 0
    assert _value(again, "sim:heat") == 7


@pytest.mark.parity
def test_a_change_export_counts_an_unreadable_state_too(stage, tmp_path: Path) -> None:
    pop.open_usd_from_string(stage, SCENE_TWO, 1)
    stage.advance_write_floor(1).wait()
    with pop.create_export_destination(stage, tmp_path / "changes.usda") as destination:
        destination.export(1, attribute_rules=HEAT)
        _heat(stage, "/World/A", 7.0, 2)
        report = destination.export(1, since_ordinal=0, selection=CHANGES, attribute_rules=HEAT)
        assert report["source_states_unavailable"] == 1
        assert _value(destination.layer, "sim:mass") == 5


@pytest.mark.parity
def test_a_required_rule_on_an_unreadable_state_fails_the_export(stage) -> None:
    pop.open_usd_from_string(stage, SCENE_TWO, 1)
    stage.advance_write_floor(1).wait()
    _heat(stage, "/World/A", 7.0, 2)
    layer = Sdf.Layer.CreateAnonymous("required.usda")
    rules = [
        {
            "source_attribute_name": "sim:heat",
            "flags": pop.OVSTAGE_POPULATION_EXPORT_RULE_INFER_CUSTOM_TYPE
            | pop.OVSTAGE_POPULATION_EXPORT_RULE_REQUIRED,
        }
    ]
    with pytest.raises(ovstage.OvstageError, match=r"sim:heat.*could not be read") as caught:
        pop.export_to_usd_layer(stage, layer, 1, attribute_rules=rules)
    assert caught.value.code == ovstage.ErrorCode.OP_FAILED
    assert layer.empty  # the export failed before writing


def test_with_a_history_window_the_state_behind_a_producer_is_read(stage) -> None:
    """The same sequence with the default window: the sealed state at 1 is served."""
    pop.open_usd_from_string(stage, SCENE_TWO, 1)
    stage.advance_write_floor(1).wait()
    _heat(stage, "/World/A", 7.0, 2)
    layer = Sdf.Layer.CreateAnonymous("window.usda")
    report = pop.export_to_usd_layer(stage, layer, 1, attribute_rules=HEAT)
    assert report["source_states_unavailable"] == 0
    assert _value(layer, "sim:heat") == 1


def test_two_rules_naming_one_destination_on_a_new_prim(stage) -> None:
    """A prim the export made gets its attribute specs without a lookup; a second value for
    the same destination name still lands on the one spec (the later column's, by name)."""
    pop.open_usd_from_string(stage, SCENE_TWO, 1)
    stage.advance_write_floor(1).wait()
    rules = [
        {
            "source_attribute_name": name,
            "destination_attribute_name": "sim:out",
            "flags": pop.OVSTAGE_POPULATION_EXPORT_RULE_INFER_CUSTOM_TYPE,
        }
        for name in ("sim:heat", "sim:mass")
    ]
    layer = Sdf.Layer.CreateAnonymous("one-name.usda")
    report = pop.export_to_usd_layer(stage, layer, 1, attribute_rules=rules)
    assert report["attributes_exported"] == 2
    assert _value(layer, "sim:out") == 5
    assert set(layer.GetPrimAtPath("/World/A").properties.keys()) >= {"sim:out"}
    assert layer.GetAttributeAtPath("/World/A.sim:heat") is None
