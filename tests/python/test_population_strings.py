"""Strings pinned to byte form: where the stage already holds a string property of a prim as
a STRING column (ragged UTF-8 bytes), population writes the USD string's bytes there instead
of an interned id; everywhere else a string is an id."""

from __future__ import annotations

from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import AttributeSemantic, OrdinalRange
from ovstage import population as pop
from readback import Group, read_groups

pytest.importorskip("pxr", reason="usd-core is not installed")

SCENE = """#usda 1.0
def Xform "World"
{
    def Xform "Pinned"
    {
        string label = "héllo"
        string note = ""
        string[] tags = ["a", "b"]
    }
    def Xform "Plain"
    {
        string label = "héllo"
    }
    def Xform "Timed"
    {
        string label.timeSamples = {
            0: "early",
            10: "late",
        }
    }
}
"""

STRING = int(AttributeSemantic.STRING)


def write_strings(stage: ovstage.Stage, attribute: str, rows: dict[str, bytes], ordinal: int):
    """A client's STRING column: one byte row per prim."""
    paths = ovstage.PathDictionary(stage)
    with paths.create_path_list_from_strings(list(rows)) as path_list:
        query = stage.query_from_path_list(path_list)
        tensors = [np.frombuffer(r, dtype=np.uint8).copy() for r in rows.values()]
        stage.write_attribute(
            query, attribute, ordinal, tensors, is_array=True, semantic=STRING
        ).wait()
        stage.release_query(query).wait()


def groups(stage: ovstage.Stage, attribute: str, ordinal: int) -> dict[str, Group]:
    """``{prim: its group}`` of a latest read of ``attribute`` (sealed first)."""
    stage.advance_write_floor(ordinal).wait()
    with stage.query() as query:
        found = read_groups(stage, query, [attribute], OrdinalRange.latest(ordinal))
    return {p: g for g in found for p in g.prims}


def text(group: Group, prim: str) -> str:
    return bytes(group.values[prim]).decode("utf-8")


def token_text(stage: ovstage.Stage, group: Group, prim: str) -> Any:
    (value,) = np.asarray(group.values[prim]).reshape(-1).tolist()
    return ovstage.PathDictionary(stage).token_to_string(value) if value else ""


@pytest.fixture
def pinned(stage: ovstage.Stage) -> ovstage.Stage:
    write_strings(stage, "label", {"/World/Pinned": b"old", "/World/Timed": b"old"}, 1)
    write_strings(stage, "note", {"/World/Pinned": b"old"}, 1)
    write_strings(stage, "tags", {"/World/Pinned": b"old"}, 1)
    pop.open_usd_from_string(stage, SCENE, 2, 0.0)
    return stage


def test_a_string_the_stage_holds_as_string_rows_is_written_as_bytes(pinned) -> None:
    label = groups(pinned, "label", 2)
    assert label["/World/Pinned"].semantic == STRING and label["/World/Pinned"].is_array
    assert text(label["/World/Pinned"], "/World/Pinned") == "héllo"
    assert label["/World/Pinned"].ordinal == 2
    # the same property on a prim without a STRING column is an id, as everywhere else
    plain = label["/World/Plain"]
    assert plain.semantic == int(AttributeSemantic.NONE) and not plain.is_array
    assert token_text(pinned, plain, "/World/Plain") == "héllo"


def test_an_empty_pinned_string_is_an_empty_string_row(pinned) -> None:
    note = groups(pinned, "note", 2)["/World/Pinned"]
    assert note.semantic == STRING
    assert note.values["/World/Pinned"] == []


def test_a_string_array_is_not_written_into_a_string_column(pinned, caplog) -> None:
    # a string[] is a list of ids, so it cannot follow a STRING column: the value is not
    # expressible there, it is skipped and the column keeps its type and previous value
    tags = groups(pinned, "tags", 2)["/World/Pinned"]
    assert tags.semantic == STRING
    assert bytes(tags.values["/World/Pinned"]) == b"old"
    warned = [r.getMessage() for r in caplog.get_records("setup")]
    assert any("/World/Pinned.tags" in m and "STRING column" in m for m in warned), warned


def test_a_pinned_time_sampled_string_is_resampled_as_bytes(pinned) -> None:
    assert text(groups(pinned, "label", 2)["/World/Timed"], "/World/Timed") == "early"
    pop.update_from_usd_time(pinned, 3, 1.0)  # time code 24 (24 per second by default)
    assert text(groups(pinned, "label", 3)["/World/Timed"], "/World/Timed") == "late"
