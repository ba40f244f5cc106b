"""``ovstage.instancing`` and the instancing table population records per stage.

Population itself is tested elsewhere; here the table is built from a USD stage written for
these tests and registered the way population registers it.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import weakref
from typing import Any

import pytest

pytest.importorskip("pxr", reason="usd-core is not installed")

import ovstage
from ovstage import ErrorCode, OvstageError, PopulationDomain, instancing
from ovstage.population import Desc, PrimPredicate, Selector
from ovstage.population._selection import (
    InstancingTable,
    instancing_table,
    register_table,
    resolve_scope,
    table_for,
)
from pxr import Usd

SCENE = """#usda 1.0
def Xform "Assets"
{
    def Xform "Bolt"
    {
        def Cube "Head"
        {
        }
    }

    def Xform "Crate"
    {
        def Cube "Box"
        {
        }

        def Xform "Bolt" (
            instanceable = true
            references = </Assets/Bolt>
        )
        {
        }
    }
}

def Xform "Yard"
{
    def Xform "CrateA" (
        instanceable = true
        references = </Assets/Crate>
    )
    {
    }

    def Xform "CrateB" (
        instanceable = true
        references = </Assets/Crate>
    )
    {
    }

    def Scope "CrateC" (
        instanceable = true
        references = </Assets/Crate>
    )
    {
    }

    def Xform "Plain"
    {
    }
}
"""


@pytest.fixture(scope="module")
def usd_stage() -> Any:
    stage = Usd.Stage.CreateInMemory()
    assert stage.GetRootLayer().ImportFromString(SCENE)
    return stage


def _prototype(usd_stage: Any, path: str) -> str:
    return str(usd_stage.GetPrimAtPath(path).GetPrototype().GetPath())


def test_the_table_lists_every_native_instance_root(usd_stage: Any) -> None:
    crate = _prototype(usd_stage, "/Yard/CrateA")
    bolt = _prototype(usd_stage, "/Assets/Crate/Bolt")
    assert crate != bolt and crate.startswith("/__Prototype_")
    table = instancing_table(usd_stage)
    assert table.prototype_of == {
        "/Assets/Crate/Bolt": bolt,
        "/Yard/CrateA": crate,
        "/Yard/CrateB": crate,
        "/Yard/CrateC": crate,
        f"{crate}/Bolt": bolt,  # nested instancing inside the crate prototype
    }
    assert table.prototype_roots() == sorted({crate, bolt})
    assert table.instance_roots(crate) == ["/Yard/CrateA", "/Yard/CrateB", "/Yard/CrateC"]
    assert table.instance_roots("/Yard/Plain") == []


def test_a_scope_limits_the_table_to_the_populated_instance_roots(usd_stage: Any) -> None:
    scope = resolve_scope(
        usd_stage, Desc(selectors=[Selector(PrimPredicate.has_path("/Yard/CrateB"))])
    )
    crate = _prototype(usd_stage, "/Yard/CrateB")
    assert instancing_table(usd_stage, scope).prototype_of == {"/Yard/CrateB": crate}
    everything = resolve_scope(usd_stage, Desc(PopulationDomain.RENDERING))
    assert instancing_table(usd_stage, everything) == instancing_table(usd_stage)


def test_queries_answer_from_the_registered_table(stage: ovstage.Stage, usd_stage: Any) -> None:
    assert instancing.available() is True
    crate = _prototype(usd_stage, "/Yard/CrateA")
    bolt = _prototype(usd_stage, "/Assets/Crate/Bolt")
    register_table(stage, instancing_table(usd_stage))
    assert instancing.get_prototype_roots(stage) == sorted({crate, bolt})
    assert instancing.get_prototype_root(stage, "/Yard/CrateC") == crate
    assert instancing.get_prototype_root(stage, f"{crate}/Bolt") == bolt
    assert instancing.get_instance_roots(stage, crate) == [
        "/Yard/CrateA",
        "/Yard/CrateB",
        "/Yard/CrateC",
    ]
    assert instancing.get_instance_roots(stage, "/__Prototype_999") == []


def test_a_registration_replaces_the_previous_table(stage: ovstage.Stage) -> None:
    register_table(stage, InstancingTable({"/A": "/__Prototype_1"}))
    register_table(stage, InstancingTable({"/B": "/__Prototype_2"}))
    assert instancing.get_prototype_roots(stage) == ["/__Prototype_2"]
    with pytest.raises(OvstageError) as info:
        instancing.get_prototype_root(stage, "/A")
    assert info.value.code == ErrorCode.NOT_FOUND


def test_a_prim_that_is_not_an_instance_root_is_not_found(
    stage: ovstage.Stage, usd_stage: Any
) -> None:
    register_table(stage, instancing_table(usd_stage))
    for path in ("/Yard/Plain", "/Yard", "/Nowhere", _prototype(usd_stage, "/Yard/CrateA")):
        with pytest.raises(OvstageError) as info:
            instancing.get_prototype_root(stage, path)
        assert info.value.code == ErrorCode.NOT_FOUND
        assert repr(path) in str(info.value)


def test_a_stage_never_populated_has_no_instancing(stage: ovstage.Stage) -> None:
    assert table_for(stage) is None
    assert instancing.get_prototype_roots(stage) == []
    assert instancing.get_instance_roots(stage, "/__Prototype_1") == []
    with pytest.raises(OvstageError) as info:
        instancing.get_prototype_root(stage, "/Yard/CrateA")
    assert info.value.code == ErrorCode.NOT_FOUND


def test_tables_are_per_stage_and_go_with_the_stage() -> None:
    first, second = ovstage.Stage(), ovstage.Stage()
    try:
        register_table(first, InstancingTable({"/I": "/__Prototype_1"}))
        assert instancing.get_prototype_roots(first) == ["/__Prototype_1"]
        assert instancing.get_prototype_roots(second) == []
    finally:
        second.destroy()
    held = weakref.ref(first)
    first.destroy()
    del first
    gc.collect()
    assert held() is None  # the registry does not keep a stage alive


def test_bad_arguments(stage: ovstage.Stage) -> None:
    with pytest.raises(TypeError, match="stage"):
        instancing.get_prototype_roots("stage")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="instance_root"):
        instancing.get_prototype_root(stage, 7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="prototype_root"):
        instancing.get_instance_roots(stage, None)  # type: ignore[arg-type]


def test_a_destroyed_stage_is_an_invalid_handle() -> None:
    gone = ovstage.Stage()
    register_table(gone, InstancingTable({"/I": "/__Prototype_1"}))
    gone.destroy()
    with pytest.raises(OvstageError) as info:
        instancing.get_prototype_roots(gone)
    assert info.value.code == ErrorCode.INVALID_HANDLE


def test_without_usd_core_instancing_is_not_supported() -> None:
    program = textwrap.dedent(
        """
        import sys
        sys.modules["pxr"] = None  # usd-core cannot be imported
        import ovstage
        from ovstage import ErrorCode, OvstageError, instancing
        assert instancing.available() is False
        stage = ovstage.Stage()
        try:
            for call in (
                lambda: instancing.get_prototype_roots(stage),
                lambda: instancing.get_prototype_root(stage, "/I"),
                lambda: instancing.get_instance_roots(stage, "/__Prototype_1"),
            ):
                try:
                    call()
                except OvstageError as exc:
                    assert exc.code == ErrorCode.NOT_SUPPORTED, exc
                    assert "ovstage-go[usd]" in str(exc), exc
                else:
                    raise AssertionError("no error")
        finally:
            stage.destroy()
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "error::ResourceWarning"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
