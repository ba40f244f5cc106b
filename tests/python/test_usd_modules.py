"""``ovstage.instancing`` and ``ovstage.population`` without an OpenUSD runtime."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import ovstage
import ovstage.instancing
import ovstage.population
import pytest
from ovstage import ErrorCode, OvstageError, PopulationDomain
from ovstage import instancing as instancing_module
from ovstage.population import (
    Desc,
    ExportDestination,
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
    assert result.stdout == "False\n"


def test_availability_flags() -> None:
    assert ovstage.instancing.available() is False
    assert ovstage.population.available() is False
    assert ovstage.population.descs_available() is False


def _assert_not_supported(fn: Callable[..., Any], *args: Any, what: str) -> None:
    with pytest.raises(OvstageError) as info:
        fn(*args)
    assert info.value.code == ErrorCode.NOT_SUPPORTED
    assert f"USD {what} is not in this build" in info.value.message


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("get_prototype_roots", ()),
        ("get_prototype_root", ("/World/Instance",)),
        ("get_instance_roots", ("/__Prototype_1",)),
    ],
)
def test_instancing_functions_raise_not_supported(stage, name: str, args: tuple) -> None:
    _assert_not_supported(getattr(ovstage.instancing, name), stage, *args, what="instancing")


POPULATION_CALLS: list[tuple[str, tuple]] = [
    ("open_usd", ("scene.usda",)),
    ("open_usd_from_string", ("#usda 1.0",)),
    ("open_usd_with_desc", ("scene.usda", 1, math.nan, [Desc()])),
    ("open_usd_from_string_with_desc", ("#usda 1.0", 1, math.nan, [Desc()])),
    ("add_usd_reference", ("ref.usda", "/World/Ref")),
    ("add_usd_reference_from_string", ("#usda 1.0", "/World/Ref")),
    ("remove_usd", (1,)),
    ("reset_usd", ()),
    ("update_from_usd_time", (2, 0.5)),
    ("apply_usd_changes", (2,)),
    ("export_to_usd_file", ("out.usda",)),
    ("export_typed_hierarchy_to_usd_file", ("out.usda",)),
]


@pytest.mark.parametrize("suffix", ["", "_async"])
@pytest.mark.parametrize(("name", "args"), POPULATION_CALLS)
def test_population_operations_raise_not_supported(stage, name, args, suffix) -> None:
    fn = getattr(ovstage.population, name + suffix)
    _assert_not_supported(fn, stage, *args, what="population")
    assert "USD population is not in this build" in ovstage.population.last_error()


def test_schema_registration_and_export_destinations_raise_not_supported() -> None:
    _assert_not_supported(ovstage.population.register_usd_schemas, ["/schemas"], what="population")
    _assert_not_supported(ExportDestination, "out.usda", what="population")


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
