"""``AttributeMode`` REJECT / FORCE on ``write_attribute``, ``WriteDesc`` and ``map_attribute``
(0.3.0): FORCE replaces the schema of the target prims that carry the attribute with another
one, at the op's ordinal; REJECT refuses the schema change."""

from __future__ import annotations

from typing import Any

import numpy as np
import ovstage
import pytest
from conftest import query_over
from ovstage import (
    AttributeMode,
    DLDataType,
    DLDataTypeCode,
    ErrorCode,
    OrdinalRange,
    OvstageError,
    WriteDesc,
)

F32 = np.float32
I32 = np.int32


def typed_values(stage: ovstage.Stage, query: ovstage.Query, attr: str, end: int) -> dict[str, Any]:
    """``{prim: (value, numpy dtype str)}`` of a ``latest(end)`` read of one attribute."""
    paths = ovstage.PathDictionary(stage)
    out: dict[str, Any] = {}
    with stage.read_attributes(query, [attr], OrdinalRange.latest(end)) as read:
        read.wait()
        for group in read.groups():
            with group:
                if group.is_delete:
                    continue
                data = np.from_dlpack(group.dlpack(0))
                prims = paths.get_path_strings(group.prim_list)
                for k in range(group.prim_count):
                    row = group.data_row_index(k) if group.has_data_index_map else k
                    out[prims[group.prim_index(k)]] = (data[row].item(), data.dtype.str)
    return out


def test_the_enum_matches_the_c_values() -> None:
    assert [(m.name, m.value) for m in AttributeMode] == [("REJECT", 0), ("FORCE", 1)]
    assert "AttributeMode" in ovstage.__all__
    assert WriteDesc("x", np.zeros(1, F32), False).attribute_mode == AttributeMode.REJECT


def test_force_write_replaces_the_schema_of_target_prims_only(stage: ovstage.Stage) -> None:
    with query_over(stage, ["/A", "/B"]) as both, query_over(stage, ["/A"]) as a:
        stage.write_attribute(both, "x", 1, np.array([1.5, 2.5], F32), is_array=False).wait()
        with pytest.raises(OvstageError) as info:
            stage.write_attribute(a, "x", 2, np.array([7], I32), is_array=False).wait()
        assert info.value.code == ErrorCode.INVALID_ARGUMENT, "REJECT is the default"
        stage.write_attribute(
            a, "x", 2, np.array([7], I32), is_array=False, attribute_mode=AttributeMode.FORCE
        ).wait()
        stage.advance_write_floor(2).wait()
        assert typed_values(stage, both, "x", 2) == {"/A": (7, "<i4"), "/B": (2.5, "<f4")}


def test_force_in_a_batch_entry(stage: ovstage.Stage) -> None:
    with query_over(stage, ["/A"]) as a:
        stage.write_attribute(a, "x", 1, np.array([1], F32), is_array=False).wait()
        stage.write_attribute(a, "y", 1, np.array([1], F32), is_array=False).wait()
        entries = [
            WriteDesc("x", np.array([3], I32), False, attribute_mode=AttributeMode.FORCE),
            WriteDesc("y", np.array([4], F32), False),
        ]
        stage.write_attributes(a, entries, 2).wait()
        stage.advance_write_floor(2).wait()
        assert typed_values(stage, a, "x", 2) == {"/A": (3, "<i4")}
        assert typed_values(stage, a, "y", 2) == {"/A": (4.0, "<f4")}
        rejecting = [WriteDesc("y", np.array([5], I32), False)]
        with pytest.raises(OvstageError) as info:
            stage.write_attributes(a, rejecting, 3).wait()
        assert info.value.code == ErrorCode.INVALID_ARGUMENT


def test_force_map_replaces_the_schema_of_committed_prims(stage: ovstage.Stage) -> None:
    i32 = DLDataType(DLDataTypeCode.kDLInt, 32, 1)
    with query_over(stage, ["/A"]) as a:
        stage.write_attribute(a, "m", 1, np.array([1.5], F32), is_array=False).wait()
        refused = stage.map_attribute(a, "m", 2, attribute_mode=AttributeMode.FORCE)
        with pytest.raises(OvstageError) as info:
            refused.wait()
        assert info.value.code == ErrorCode.INVALID_ARGUMENT
        assert "FORCE requires dtype" in info.value.message
        with stage.map_attribute(a, "m", 2, dtype=i32, attribute_mode=AttributeMode.FORCE) as m:
            m.wait()
            group = m.fetch_next()
            assert group is not None
            np.from_dlpack(group.dlpack(0))[0] = 9
            m.unmap_group(group).wait()
        stage.advance_write_floor(2).wait()
        assert typed_values(stage, a, "m", 2) == {"/A": (9, "<i4")}


def test_reserved_names_refuse_force(stage: ovstage.Stage) -> None:
    with query_over(stage, ["/A"]) as a:
        token = ovstage.PathDictionary(stage).intern_token("Mesh")
        op = stage.write_attribute(
            a,
            "usd-prim-type",
            1,
            np.array([token], np.uint64),
            is_array=False,
            attribute_mode=AttributeMode.FORCE,
        )
        with pytest.raises(OvstageError) as info:
            op.wait()
        assert info.value.code == ErrorCode.INVALID_ARGUMENT
        assert "attribute_mode REJECT" in info.value.message
        assert typed_values(stage, a, "usd-prim-type", 1) == {}, "nothing was written"


@pytest.mark.parametrize(
    ("mode", "error", "words"),
    [
        (2, ValueError, "REJECT=0, FORCE=1"),
        (-1, ValueError, "REJECT=0, FORCE=1"),
        ("FORCE", TypeError, "must be an integer"),
        (True, TypeError, "bool"),
        (1.0, TypeError, "must be an integer"),
    ],
)
def test_bad_attribute_modes_are_refused_naming_the_argument(
    stage: ovstage.Stage, mode: Any, error: type[Exception], words: str
) -> None:
    with query_over(stage, ["/A"]) as a:
        with pytest.raises(error, match="attribute_mode") as info:
            stage.write_attribute(
                a, "x", 1, np.array([1], F32), is_array=False, attribute_mode=mode
            )
        assert words in str(info.value)
        with pytest.raises(error, match=r"writes\[0\]: attribute_mode"):
            stage.write_attributes(
                a, [WriteDesc("x", np.array([1], F32), False, attribute_mode=mode)], 1
            )
        with pytest.raises(error, match="attribute_mode"):
            stage.map_attribute(a, "x", 1, attribute_mode=mode)
        stage.advance_write_floor(1).wait()
        assert typed_values(stage, a, "x", 1) == {}, "the stage is unchanged"
