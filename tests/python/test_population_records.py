"""Population's per-prim records between ops (docs/architecture.md "Memory"): packed into one
path string and an index array, without a Python object per prim, and the same mapping once
an op unpacks them again."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from ovstage import PopulationDomain

pytest.importorskip("pxr", reason="usd-core is not installed")

from ovstage import population as pop
from ovstage.population._records import PathTable, WrittenColumns
from ovstage.population._state import existing_state

SCENE = """#usda 1.0
def Xform "World"
{
    def Xform "A"
    {
        double speed.timeSamples = {
            0: 1.0,
            10: 3.0,
        }
    }
    def Xform "B"
    {
        double mass = 2.0
    }
}
"""


def test_a_packed_table_keeps_every_path_and_its_shared_value() -> None:
    one, two = ("one",), ("two",)
    table: PathTable[tuple[str]] = PathTable({"/a": one, "/b": two, "/c": one})
    table.compact()
    assert table._live is None, "packed: no dict"
    assert len(table) == 3
    assert table._values == [one, two], "each distinct value kept once"
    assert table.get("/c") is one and table.get("/b") is two and table.get("/x") is None
    table.pop("/a")
    table["/d"] = two
    table.compact()
    assert dict(table.items()) == {"/b": two, "/c": one, "/d": two}
    copy = table.copy()
    copy.pop("/b")
    assert "/b" in table and "/b" not in copy, "a copy is independent"


def test_an_empty_table_packs_and_unpacks_empty() -> None:
    table: PathTable[int] = PathTable()
    table.compact()
    assert len(table) == 0 and list(table) == []
    table.compact()
    assert dict(table.items()) == {}


def test_written_columns_forget_a_prim_whose_last_column_is_removed() -> None:
    written = WrittenColumns()
    layout = MappingProxyType({"mass": object()})
    written.update("/W/B", layout)  # type: ignore[arg-type]
    written.compact()
    written.remove("/W/B", ["mass"])
    written.compact()
    assert "/W/B" not in written and len(written) == 0


def test_records_are_packed_after_each_op_and_still_drive_the_next(stage) -> None:
    rendering = pop.Desc(domains=PopulationDomain.RENDERING)
    pop.open_usd_from_string_with_desc(stage, SCENE, 1, 0.0, rendering)
    state = existing_state(stage)
    assert state is not None
    records = (state.written._of, state.source_written._of, state.sampled)
    assert all(r._live is None for r in records), "no per-prim dict between ops"
    assert set(state.written) >= {"/World/A", "/World/B"}
    assert list(state.sampled) == ["/World/A"], "only A varies in time"
    pop.update_from_usd_time(stage, 2, 1.0)
    assert all(r._live is None for r in records[:2]) and state.sampled._live is None
    assert "speed" in state.written.get("/World/A")
