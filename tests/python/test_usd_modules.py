"""``ovstage.instancing`` and ``ovstage.population`` without an OpenUSD runtime."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import ovstage
import ovstage.instancing
import ovstage.population
import pytest
from ovstage import ErrorCode, PopulationDomain
from ovstage import instancing as instancing_module
from ovstage.population import (
    Desc,
    PrimPredicate,
    PrimPredicateKind,
    PropertyPredicate,
    PropertyPredicateKind,
    Selector,
)


def test_dotted_imports_are_the_package_attributes() -> None:
    assert sys.modules["ovstage.instancing"] is ovstage.instancing is instancing_module
    assert sys.modules["ovstage.population"] is ovstage.population


@pytest.mark.parametrize("module", ["ovstage.population", "ovstage.instancing"])
def test_dotted_import_in_a_fresh_interpreter(module: str) -> None:
    script = (
        f"import sys, {module}\n"
        f"import ovstage\n"
        f"mod = sys.modules[{module!r}]\n"
        f"assert mod is getattr(ovstage, {module.split('.')[1]!r})\n"
        f"print(mod.available())\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{sys.modules[module].available()}\n"


def test_population_is_available_exactly_when_pxr_imports() -> None:
    try:
        import pxr.Usd  # noqa: F401
    except ImportError:
        importable = False
    else:
        importable = True
    assert ovstage.population.available() is importable
    assert ovstage.population.descs_available() is importable
    assert ovstage.population.export_available() is importable


POPULATION_CALLS: list[tuple[str, tuple]] = [
    ("open_usd", ("scene.usda", 1)),
    ("open_usd_from_string", ("#usda 1.0", 1)),
    ("open_usd_with_desc", ("scene.usda", 1, math.nan, [Desc()])),
    ("open_usd_from_string_with_desc", ("#usda 1.0", 1, math.nan, [Desc()])),
    ("repopulate_usd_with_desc", (1, math.nan, [Desc()])),
    ("add_usd_reference", ("ref.usda", "/World/Ref")),
    ("add_usd_reference_from_string", ("#usda 1.0", "/World/Ref")),
    ("remove_usd", (1,)),
    ("reset_usd", ()),
    ("update_from_usd_time", (2, 0.5)),
    ("apply_usd_changes", (2,)),
]

EXPORT_CALLS: list[tuple[str, tuple]] = [
    ("export_to_usd_file", ("out.usda", 1)),
    ("export_to_usd_layer", ("out.usda", 1)),
    ("export_to_usd_stage", ("out.usda", 1)),
    ("export_typed_hierarchy_to_usd_file", ("out.usda", "/", 1)),
    ("export_typed_hierarchy_to_usd_layer", ("out.usda", "/", 1)),
    ("create_export_destination", ("out.usda",)),
]

# Runs in a fresh interpreter where ``import pxr`` fails (as without usd-core): every population
# call (with a stage), the schema registration and the instancing queries; prints one line each.
_NO_USD_SCRIPT = """
import json, math, sys
sys.modules["pxr"] = None  # import pxr raises ImportError from now on
import ovstage
from ovstage import instancing, population
from ovstage.population import Desc

calls = json.loads(sys.argv[1])
out = {"available": population.available(), "descs": population.descs_available(),
       "instancing": instancing.available(), "calls": {}}
with ovstage.Stage("no-usd") as stage:
    def run(key, fn, *args):
        try:
            fn(*args)
        except ovstage.OvstageError as exc:
            out["calls"][key] = [exc.code, exc.message, population.last_error()]
        else:
            out["calls"][key] = None
    for name, args in calls:
        args = [[Desc()] if a == "DESCS" else (math.nan if a == "NAN" else a) for a in args]
        for suffix in ("", "_async"):
            run(name + suffix, getattr(population, name + suffix), stage, *args)
    run("register_usd_schemas", population.register_usd_schemas, ["/schemas"])
    run("get_prototype_roots", instancing.get_prototype_roots, stage)
print(json.dumps(out))
"""


def _encoded(args: tuple) -> list:
    return ["DESCS" if isinstance(a, list) else ("NAN" if a != a else a) for a in args]


@pytest.fixture(scope="module")
def without_usd() -> dict[str, Any]:
    """What the population calls do in an interpreter where pxr cannot be imported."""
    import json

    calls = json.dumps([(name, _encoded(args)) for name, args in POPULATION_CALLS + EXPORT_CALLS])
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-c", _NO_USD_SCRIPT, calls],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_without_usd_nothing_is_available(without_usd) -> None:
    assert without_usd["available"] is False
    assert without_usd["descs"] is False
    assert without_usd["instancing"] is False


@pytest.mark.parametrize("suffix", ["", "_async"])
@pytest.mark.parametrize(("name", "args"), POPULATION_CALLS + EXPORT_CALLS)
def test_without_usd_population_calls_say_what_to_install(without_usd, name, args, suffix) -> None:
    del args
    code, message, last = without_usd["calls"][name + suffix]
    assert code == ErrorCode.NOT_SUPPORTED
    assert "pip install 'ovstage-go[usd]'" in message
    assert message.startswith(f"population.{name}{suffix}: ")
    assert last == message


def test_without_usd_schema_registration_and_instancing_raise_not_supported(without_usd) -> None:
    code, message, _ = without_usd["calls"]["register_usd_schemas"]
    assert code == ErrorCode.NOT_SUPPORTED
    assert "ovstage-go[usd]" in message
    code, _, _ = without_usd["calls"]["get_prototype_roots"]
    assert code == ErrorCode.NOT_SUPPORTED


def test_description_classes_construct_as_immutable_trees() -> None:
    prim = PrimPredicate.and_(
        PrimPredicate.is_under_path("/World"),
        PrimPredicate.not_(PrimPredicate.has_type("Camera", "Light")),
    )
    assert prim.kind == PrimPredicateKind.AND
    assert [c.kind for c in prim.subpredicates] == [
        PrimPredicateKind.IS_UNDER_PATH,
        PrimPredicateKind.NOT,
    ]
    assert prim.strings == () and prim.nested is None
    assert prim.subpredicates[0].strings == ("/World",)
    assert prim.subpredicates[1].subpredicates[0] == PrimPredicate(
        PrimPredicateKind.HAS_TYPE, ("Camera", "Light")
    )
    prop = PropertyPredicate.or_(
        PropertyPredicate.has_name("points"), PropertyPredicate.is_custom()
    )
    has_prop = PrimPredicate.has_property(prop)
    assert has_prop.nested is prop and has_prop.subpredicates == () and has_prop.strings == ()
    selector = Selector(prim, prop, prim_metadata_paths=["kind"])
    assert selector.prim_metadata_paths == ("kind",)
    desc = Desc(PopulationDomain.PHYSICS, [selector], ("metersPerUnit",))
    assert desc.selectors[0].property_predicate.subpredicates[1].kind == (
        PropertyPredicateKind.IS_CUSTOM
    )
    assert Selector().prim_predicate == PrimPredicate.none()
    assert Selector().property_predicate == PropertyPredicate.none()
    assert Desc().domains == PopulationDomain.NONE
    assert Desc().selectors == () and Desc().stage_metadata_paths == ()
    for obj, name in (
        (desc, "domains"),
        (selector, "prim_predicate"),
        (prim, "kind"),
        (prim, "subpredicates"),
        (prop, "strings"),
    ):
        with pytest.raises(AttributeError):
            setattr(obj, name, None)
        with pytest.raises(AttributeError):
            delattr(obj, name)
    assert hash(prim) == hash(
        PrimPredicate.and_(
            PrimPredicate.is_under_path("/World"),
            PrimPredicate.not_(PrimPredicate.has_type("Camera", "Light")),
        )
    )


def test_predicate_kind_values_match_the_abi() -> None:
    assert [k.value for k in PrimPredicateKind] == list(range(18))
    assert PrimPredicateKind.HAS_METADATA == 17
    assert PrimPredicateKind.HAS_APPLIED_SCHEMA_IN_NAMESPACE == 12
    assert [k.value for k in PropertyPredicateKind] == list(range(13))
    assert PropertyPredicateKind.IS_AUTHORED == 12
    assert ovstage.population.PopulationDomain is PopulationDomain
