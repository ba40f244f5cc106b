"""Population descriptions: predicate, selector and desc shapes and their argument checks.

These classes need no USD runtime (only the path syntax check uses it when present).
"""

from __future__ import annotations

import pytest
from ovstage import ErrorCode, OvstageError, PopulationDomain
from ovstage.population import (
    Desc,
    PrimPredicate,
    PrimPredicateKind,
    PropertyPredicate,
    PropertyPredicateKind,
    Selector,
)
from ovstage.population._descs import normalize_descs, validate_paths

P, Q = PrimPredicate, PropertyPredicate

PRIM_STRING_CONSTRUCTORS = [
    ("has_type", PrimPredicateKind.HAS_TYPE),
    ("is_a_type", PrimPredicateKind.IS_A_TYPE),
    ("has_schema", PrimPredicateKind.HAS_SCHEMA),
    ("has_applied_schema", PrimPredicateKind.HAS_APPLIED_SCHEMA),
    ("has_applied_schema_in_namespace", PrimPredicateKind.HAS_APPLIED_SCHEMA_IN_NAMESPACE),
    ("has_path", PrimPredicateKind.HAS_PATH),
    ("is_under_path", PrimPredicateKind.IS_UNDER_PATH),
    ("has_kind", PrimPredicateKind.HAS_KIND),
    ("has_purpose", PrimPredicateKind.HAS_PURPOSE),
    ("has_metadata", PrimPredicateKind.HAS_METADATA),
]
PROPERTY_STRING_CONSTRUCTORS = [
    ("declared_by_schema", PropertyPredicateKind.DECLARED_BY_SCHEMA),
    ("has_name", PropertyPredicateKind.HAS_NAME),
    ("in_namespace", PropertyPredicateKind.IN_NAMESPACE),
    ("has_metadata", PropertyPredicateKind.HAS_METADATA),
]


@pytest.mark.parametrize(("name", "kind"), PRIM_STRING_CONSTRUCTORS)
def test_prim_string_constructors_fill_only_strings(name: str, kind: PrimPredicateKind) -> None:
    pred = getattr(P, name)("/A", "/B")
    assert pred.kind is kind
    assert pred.strings == ("/A", "/B")
    assert pred.subpredicates == () and pred.nested is None


@pytest.mark.parametrize(("name", "kind"), PROPERTY_STRING_CONSTRUCTORS)
def test_property_string_constructors_fill_only_strings(
    name: str, kind: PropertyPredicateKind
) -> None:
    pred = getattr(Q, name)("a", "b:c")
    assert pred.kind is kind
    assert pred.strings == ("a", "b:c")
    assert pred.subpredicates == () and pred.nested is None


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("has_parent", PrimPredicateKind.HAS_PARENT),
        ("has_ancestor", PrimPredicateKind.HAS_ANCESTOR),
    ],
)
def test_relative_prim_constructors_take_one_prim_predicate(
    name: str, kind: PrimPredicateKind
) -> None:
    inner = P.has_type("Xform")
    pred = getattr(P, name)(inner)
    assert pred.kind is kind and pred.subpredicates == (inner,) and pred.strings == ()
    with pytest.raises(TypeError, match="PrimPredicate"):
        getattr(P, name)(Q.all())
    with pytest.raises(TypeError):
        getattr(P, name)("/World")


def test_has_property_nests_one_property_predicate() -> None:
    inner = Q.has_name("points")
    pred = P.has_property(inner)
    assert pred.kind is PrimPredicateKind.HAS_PROPERTY
    assert pred.nested is inner and pred.strings == () and pred.subpredicates == ()
    with pytest.raises(TypeError, match="PropertyPredicate"):
        P.has_property(P.all())


def test_value_less_kinds() -> None:
    for pred, kind in (
        (P.none(), PrimPredicateKind.NONE),
        (P.all(), PrimPredicateKind.ALL),
    ):
        assert pred.kind is kind
        assert (pred.strings, pred.subpredicates, pred.nested) == ((), (), None)
    for ppred, pkind in (
        (Q.none(), PropertyPredicateKind.NONE),
        (Q.all(), PropertyPredicateKind.ALL),
        (Q.is_attribute(), PropertyPredicateKind.IS_ATTRIBUTE),
        (Q.is_relationship(), PropertyPredicateKind.IS_RELATIONSHIP),
        (Q.is_custom(), PropertyPredicateKind.IS_CUSTOM),
        (Q.is_authored(), PropertyPredicateKind.IS_AUTHORED),
    ):
        assert ppred.kind is pkind
        assert (ppred.strings, ppred.subpredicates, ppred.nested) == ((), (), None)


def test_combinators_need_subpredicates_of_their_own_type() -> None:
    a, b = P.has_type("Mesh"), P.has_kind("model")
    assert P.and_(a, b).subpredicates == (a, b)
    assert P.or_(a).subpredicates == (a,)
    assert P.not_(a).kind is PrimPredicateKind.NOT
    x, y = Q.is_custom(), Q.has_name("n")
    assert Q.and_(x, y).kind is PropertyPredicateKind.AND
    assert Q.or_(x, y).subpredicates == (x, y)
    assert Q.not_(x).subpredicates == (x,)
    for combinator in (P.and_, P.or_, Q.and_, Q.or_):
        with pytest.raises(TypeError, match="at least one"):
            combinator()
    with pytest.raises(TypeError, match="PrimPredicate"):
        P.and_(a, x)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="PropertyPredicate"):
        Q.or_(x, a)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        P.not_(x)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Q.not_(a)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", [n for n, _ in PRIM_STRING_CONSTRUCTORS])
def test_prim_string_arguments_are_checked(name: str) -> None:
    make = getattr(P, name)
    with pytest.raises(ValueError, match="at least one"):
        make()
    with pytest.raises(ValueError, match="empty"):
        make("ok", "")
    with pytest.raises(TypeError, match="str"):
        make(b"/bytes")
    with pytest.raises(TypeError, match="str"):
        make(7)


@pytest.mark.parametrize("name", [n for n, _ in PROPERTY_STRING_CONSTRUCTORS])
def test_property_string_arguments_are_checked(name: str) -> None:
    make = getattr(Q, name)
    with pytest.raises(ValueError, match="at least one"):
        make()
    with pytest.raises(ValueError, match="empty"):
        make("")
    with pytest.raises(TypeError, match="str"):
        make(None)


def test_direct_construction_rejects_a_slot_the_kind_does_not_use() -> None:
    with pytest.raises(TypeError, match="strings only"):
        PrimPredicate(PrimPredicateKind.HAS_TYPE, ("Mesh",), (P.all(),))
    with pytest.raises(TypeError, match="no value"):
        PrimPredicate(PrimPredicateKind.ALL, ("x",))
    with pytest.raises(TypeError, match="subpredicates only"):
        PrimPredicate(PrimPredicateKind.AND, ("x",), (P.all(),))
    with pytest.raises(TypeError, match="exactly one"):
        PrimPredicate(PrimPredicateKind.NOT, subpredicates=(P.all(), P.none()))
    with pytest.raises(TypeError, match="nested"):
        PrimPredicate(PrimPredicateKind.HAS_PROPERTY, ("points",), nested=Q.all())
    with pytest.raises(TypeError):
        PrimPredicate(PrimPredicateKind.HAS_PARENT, nested=Q.all())
    with pytest.raises(TypeError, match="no nested"):
        PropertyPredicate(PropertyPredicateKind.ALL, nested=Q.all())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="strings only"):
        PropertyPredicate(PropertyPredicateKind.HAS_NAME, ("a",), (Q.all(),))
    with pytest.raises(TypeError, match="no value"):
        PropertyPredicate(PropertyPredicateKind.IS_CUSTOM, ("a",))
    with pytest.raises(ValueError):
        PrimPredicate(18)
    with pytest.raises(ValueError):
        PropertyPredicate(13)
    assert PrimPredicate(8, ["Mesh"]) == P.has_type("Mesh")


def test_all_description_classes_are_immutable() -> None:
    prim = P.and_(P.has_type("Mesh"))
    prop = Q.has_name("points")
    selector = Selector(prim, prop)
    desc = Desc(PopulationDomain.RENDERING, [selector])
    for obj in (prim, prop, selector, desc):
        for name in type(obj).__slots__:
            with pytest.raises(AttributeError, match="immutable"):
                setattr(obj, name, None)
            with pytest.raises(AttributeError, match="immutable"):
                delattr(obj, name)
        with pytest.raises(AttributeError):
            obj.extra = 1  # type: ignore[attr-defined]
    assert prim.kind is PrimPredicateKind.AND and desc.selectors == (selector,)


def test_equal_trees_compare_and_hash_equal() -> None:
    def build() -> Desc:
        return Desc(
            PopulationDomain.PHYSICS,
            [Selector(P.or_(P.has_type("A"), P.has_property(Q.is_custom())), Q.all(), ["kind"])],
            ["upAxis"],
        )

    assert build() == build() and hash(build()) == hash(build())
    assert build() != Desc(PopulationDomain.PHYSICS)
    assert P.has_type("A") != Q.has_name("A")


def test_selector_defaults_select_nothing_and_checks_its_arguments() -> None:
    bare = Selector()
    assert bare.prim_predicate == P.none() and bare.property_predicate == Q.none()
    assert bare.prim_metadata_paths == () and bare.property_metadata_paths == ()
    sel = Selector(P.all(), None, ["kind", "customData:a"], ("doc",))
    assert sel.property_predicate == Q.none()
    assert sel.prim_metadata_paths == ("kind", "customData:a")
    with pytest.raises(TypeError, match="prim_predicate"):
        Selector(Q.all())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="property_predicate"):
        Selector(P.all(), P.all())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"prim_metadata_paths.*bare str"):
        Selector(P.all(), Q.all(), "kind")
    with pytest.raises(TypeError, match="property_metadata_paths"):
        Selector(P.all(), Q.all(), (), "doc")
    with pytest.raises(ValueError, match="empty"):
        Selector(P.all(), Q.all(), [""])
    with pytest.raises(TypeError, match="str"):
        Selector(P.all(), Q.all(), [1])


def test_desc_defaults_and_argument_checks() -> None:
    assert Desc().domains == PopulationDomain.NONE
    assert Desc().selectors == () and Desc().stage_metadata_paths == ()
    assert Desc(PopulationDomain.ALL).domains is PopulationDomain.ALL
    assert Desc(2).domains is PopulationDomain.PHYSICS
    assert Desc(4 | 1).domains == 5  # unknown bits pass through
    with pytest.raises(ValueError, match="uint32"):
        Desc(-1)
    with pytest.raises(ValueError, match="uint32"):
        Desc(1 << 32)
    with pytest.raises(TypeError, match="domains"):
        Desc("RENDERING")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="selectors"):
        Desc(0, [P.all()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="selectors"):
        Desc(0, Selector())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="stage_metadata_paths"):
        Desc(0, (), "upAxis")
    assert Desc(0, (), ["upAxis"]).stage_metadata_paths == ("upAxis",)


def test_normalize_descs_takes_one_desc_or_a_sequence() -> None:
    one = Desc(PopulationDomain.RENDERING)
    assert normalize_descs(one) == (one,)
    assert normalize_descs([one, Desc()]) == (one, Desc())
    assert normalize_descs(()) == ()
    for bad in (None, "desc", 1, [one, Selector()], Selector()):
        with pytest.raises(TypeError, match="descs"):
            normalize_descs(bad)


@pytest.mark.parametrize(
    "path",
    ["/World.points", "/World.rel[/Target]", "/World{v=a}", "/World{v=a}Child", "World", "//"],
)
@pytest.mark.parametrize("kind", ["has_path", "is_under_path"])
def test_path_predicates_reject_non_prim_paths(kind: str, path: str) -> None:
    desc = Desc(selectors=[Selector(P.not_(getattr(P, kind)("/Ok", path)))])
    with pytest.raises(OvstageError) as info:
        validate_paths([desc])
    assert info.value.code == ErrorCode.INVALID_ARGUMENT
    assert repr(path) in str(info.value) and "descs[0].selectors[0]" in str(info.value)


def test_prim_paths_and_the_root_are_accepted() -> None:
    validate_paths(
        [Desc(selectors=[Selector(P.or_(P.has_path("/", "/A/B_1"), P.is_under_path("/A")))])]
    )


@pytest.mark.parametrize("bad", [":a", "a:", "a::b", ":"])
def test_metadata_paths_with_an_empty_component_are_rejected(bad: str) -> None:
    places = [
        Desc(stage_metadata_paths=[bad]),
        Desc(selectors=[Selector(P.all(), Q.all(), [bad])]),
        Desc(selectors=[Selector(P.all(), Q.all(), (), [bad])]),
        Desc(selectors=[Selector(P.has_metadata(bad))]),
        Desc(selectors=[Selector(P.has_property(Q.not_(Q.has_metadata(bad))))]),
        Desc(selectors=[Selector(P.all(), Q.and_(Q.has_metadata("ok", bad)))]),
    ]
    for desc in places:
        with pytest.raises(OvstageError) as info:
            validate_paths([Desc(), desc])
        assert info.value.code == ErrorCode.INVALID_ARGUMENT
        assert repr(bad) in str(info.value) and "descs[1]" in str(info.value)
    validate_paths([Desc(stage_metadata_paths=["customLayerData:a:b"])])
