"""USD value -> column mapping (``ovstage.population._mapping``): one test per mapping rule.

Each scene is a small USDA string written for these tests. Cells that the stage must store are
written with ``write_attribute`` and read back, so the column type a rule produces is the one
the stage really keeps (dtype code/bits/lanes, array-ness, semantic).
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import OrdinalRange
from ovstage._enums import AttributeSemantic as AS
from readback import floor_of, read_groups

pxr = pytest.importorskip("pxr", reason="usd-core is not installed")

from ovstage.population import _mapping as mapping  # noqa: E402
from ovstage.population._mapping import BOOL, FLOAT, INT, UINT, Cell, ColumnType  # noqa: E402
from pxr import Gf, Sdf, Usd  # noqa: E402

DEFAULT = Usd.TimeCode.Default()
LOGGER = "ovstage.population"


class RecordingInterner:
    """A stand-in for the stage's dictionary: sequential ids, every call recorded."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.calls: list[str] = []

    def token(self, text: str) -> int:
        self.calls.append(text)
        assert text, "the mapping must not intern the empty string (it is id 0)"
        return self.ids.setdefault("t:" + text, len(self.ids) + 1)

    def path(self, path: str) -> int:
        self.calls.append(path)
        return self.ids.setdefault("p:" + path, len(self.ids) + 1)

    def id_of(self, text: str) -> int:
        return self.ids["t:" + text]


@functools.cache
def usd_stage(body: str, header: str = "") -> Any:
    """An in-memory USD stage of the scene (kept alive: a prim expires with its stage)."""
    stage = Usd.Stage.CreateInMemory()
    assert stage.GetRootLayer().ImportFromString(f"#usda 1.0\n{header}\n{body}")
    return stage


def prim_of(body: str, path: str = "/P") -> Any:
    return usd_stage(body).GetPrimAtPath(path)


def cell_of(body: str, name: str, interner: Any = None, path: str = "/P", **kw: Any) -> Cell | None:
    prim = prim_of(body, path)
    prop = prim.GetProperty(name)
    assert prop, f"{path}.{name} is not in the scene"
    return mapping.map_property(
        prop, kw.pop("time", DEFAULT), interner or RecordingInterner(), **kw
    )


def roundtrip(stage: ovstage.Stage, make_query: Callable[..., Any], cell: Cell) -> Any:
    """Write ``cell`` to ``/R`` above the stage's floor and read it back; returns the group."""
    query = make_query(["/R"])
    ordinal = floor_of(stage) + 1
    payload = [cell.array_row_tensor()] if cell.ctype.is_array else cell.value[None]
    stage.write_attribute(
        query,
        cell.name,
        ordinal,
        payload,
        is_array=cell.ctype.is_array,
        semantic=int(cell.ctype.semantic),
    ).wait()
    stage.advance_write_floor(ordinal).wait()
    (group,) = read_groups(stage, query, [cell.name], OrdinalRange.latest(ordinal))
    assert group.is_array == cell.ctype.is_array
    assert int(group.semantic) == int(cell.ctype.semantic)
    assert group.dtypes["/R"] == (cell.ctype.code, cell.ctype.bits, cell.ctype.lanes)
    np.testing.assert_array_equal(
        np.asarray(group.values["/R"]).reshape(-1), cell.value.astype(np.float64).reshape(-1)
    )
    return group


def attr_scene(decl: str) -> str:
    return f'def "P"\n{{\n    {decl}\n}}\n'


# ---------------------------------------------------------------- scalars and vectors

SCALARS = [
    ("bool b = true", (BOOL, 8, 1), [1]),
    ("uchar b = 200", (UINT, 8, 1), [200]),
    ("int b = -7", (INT, 32, 1), [-7]),
    ("uint b = 4000000000", (UINT, 32, 1), [4000000000]),
    ("int64 b = -9000000000", (INT, 64, 1), [-9000000000]),
    ("uint64 b = 18000000000000000000", (UINT, 64, 1), [18000000000000000000]),
    ("half b = 0.5", (FLOAT, 16, 1), [0.5]),
    ("float b = 1.25", (FLOAT, 32, 1), [1.25]),
    ("double b = 0.1", (FLOAT, 64, 1), [0.1]),
    ("int2 b = (1, -2)", (INT, 32, 2), [1, -2]),
    ("int3 b = (1, 2, 3)", (INT, 32, 3), [1, 2, 3]),
    ("int4 b = (1, 2, 3, 4)", (INT, 32, 4), [1, 2, 3, 4]),
    ("half2 b = (0.5, 2)", (FLOAT, 16, 2), [0.5, 2]),
    ("half4 b = (1, 2, 3, 4)", (FLOAT, 16, 4), [1, 2, 3, 4]),
    ("float2 b = (1, 2)", (FLOAT, 32, 2), [1, 2]),
    ("float3 b = (1, 2, 3)", (FLOAT, 32, 3), [1, 2, 3]),
    ("double3 b = (0.1, 0.2, 0.3)", (FLOAT, 64, 3), [0.1, 0.2, 0.3]),
    ("double4 b = (1, 2, 3, 4)", (FLOAT, 64, 4), [1, 2, 3, 4]),
]


@pytest.mark.parametrize(
    ("decl", "dtype", "expected"), SCALARS, ids=[s[0].split()[0] for s in SCALARS]
)
def test_numeric_scalars_and_vectors_keep_their_bytes(stage, make_query, decl, dtype, expected):
    cell = cell_of(attr_scene(decl), "b")
    assert cell is not None
    assert cell.name == "b"
    assert cell.ctype == ColumnType(*dtype, is_array=False, semantic=AS.NONE)
    assert cell.value.shape == (dtype[2],)
    assert cell.value.dtype == cell.ctype.numpy_dtype
    np.testing.assert_array_equal(cell.value, np.asarray(expected, dtype=cell.ctype.numpy_dtype))
    roundtrip(stage, make_query, cell)


ARRAYS = [
    ("bool[] b = [true, false, true]", (BOOL, 8, 1), [1, 0, 1]),
    ("uchar[] b = [1, 255]", (UINT, 8, 1), [1, 255]),
    ("int[] b = [1, -2, 3]", (INT, 32, 1), [1, -2, 3]),
    ("uint64[] b = [5]", (UINT, 64, 1), [5]),
    ("half[] b = [0.25, 8]", (FLOAT, 16, 1), [0.25, 8]),
    ("float[] b = []", (FLOAT, 32, 1), []),
    ("double2[] b = [(1, 2), (3, 4)]", (FLOAT, 64, 2), [[1, 2], [3, 4]]),
    ("int3[] b = [(1, 2, 3)]", (INT, 32, 3), [[1, 2, 3]]),
    ("half3[] b = [(1, 2, 3), (4, 5, 6)]", (FLOAT, 16, 3), [[1, 2, 3], [4, 5, 6]]),
    ("float4[] b = [(1, 2, 3, 4)]", (FLOAT, 32, 4), [[1, 2, 3, 4]]),
]


@pytest.mark.parametrize(
    ("decl", "dtype", "expected"), ARRAYS, ids=[s[0].split()[0] for s in ARRAYS]
)
def test_arrays_use_the_element_dtype(stage, make_query, decl, dtype, expected):
    cell = cell_of(attr_scene(decl), "b")
    assert cell is not None
    assert cell.ctype == ColumnType(*dtype, is_array=True, semantic=AS.NONE)
    lanes = dtype[2]
    assert cell.value.shape == ((len(expected), lanes) if lanes > 1 else (len(expected),))
    np.testing.assert_array_equal(
        cell.value, np.asarray(expected, dtype=cell.ctype.numpy_dtype).reshape(cell.value.shape)
    )
    roundtrip(stage, make_query, cell)


ROLES = [
    ("point3f b = (1, 2, 3)", (FLOAT, 32, 3), AS.POINT),
    ("point3d[] b = [(1, 2, 3)]", (FLOAT, 64, 3), AS.POINT),
    ("normal3f b = (0, 0, 1)", (FLOAT, 32, 3), AS.NORMAL),
    ("normal3h[] b = [(0, 1, 0)]", (FLOAT, 16, 3), AS.NORMAL),
    ("vector3d b = (1, 0, 0)", (FLOAT, 64, 3), AS.VECTOR),
    ("color3f b = (0.5, 0.25, 1)", (FLOAT, 32, 3), AS.COLOR),
    ("color4h[] b = [(1, 0, 0, 1)]", (FLOAT, 16, 4), AS.COLOR),
    ("color4d b = (1, 0, 0, 1)", (FLOAT, 64, 4), AS.COLOR),
    ("texCoord2f[] b = [(0, 1), (1, 0)]", (FLOAT, 32, 2), AS.TEXTURE_COORDINATE),
    ("texCoord3d b = (0, 1, 2)", (FLOAT, 64, 3), AS.TEXTURE_COORDINATE),
]


@pytest.mark.parametrize(("decl", "dtype", "semantic"), ROLES, ids=[r[0].split()[0] for r in ROLES])
def test_roles_keep_the_base_dtype_and_give_the_semantic(stage, make_query, decl, dtype, semantic):
    cell = cell_of(attr_scene(decl), "b")
    assert cell is not None
    assert cell.ctype == ColumnType(
        *dtype, is_array=decl.split()[0].endswith("[]"), semantic=semantic
    )
    roundtrip(stage, make_query, cell)


@pytest.mark.parametrize(("kind", "bits"), [("h", 16), ("f", 32), ("d", 64)])
def test_quaternions_store_the_real_part_last(stage, make_query, kind, bits):
    # USDA writes a quaternion real part first: (w, x, y, z).
    scene = attr_scene(
        f"quat{kind} q = (1, 2, 3, 4)\n    quat{kind}[] qs = [(1, 2, 3, 4), (5, 6, 7, 8)]"
    )
    single = cell_of(scene, "q")
    many = cell_of(scene, "qs")
    assert single is not None and many is not None
    assert single.ctype == ColumnType(FLOAT, bits, 4, False, AS.QUATERNION)
    assert many.ctype == ColumnType(FLOAT, bits, 4, True, AS.QUATERNION)
    np.testing.assert_array_equal(single.value, [2, 3, 4, 1])
    np.testing.assert_array_equal(many.value, [[2, 3, 4, 1], [6, 7, 8, 5]])
    roundtrip(stage, make_query, single)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_matrices_are_row_major_doubles(stage, make_query, n):
    rows = ", ".join("(" + ", ".join(str(r * n + c) for c in range(n)) + ")" for r in range(n))
    scene = attr_scene(f"matrix{n}d m = ({rows})\n    matrix{n}d[] ms = [({rows}), ({rows})]")
    single = cell_of(scene, "m")
    many = cell_of(scene, "ms")
    assert single is not None and many is not None
    assert single.ctype == ColumnType(FLOAT, 64, n * n, False, AS.MATRIX)
    np.testing.assert_array_equal(single.value, np.arange(n * n))
    assert many.ctype == ColumnType(FLOAT, 64, n * n, True, AS.MATRIX)
    np.testing.assert_array_equal(many.value, [np.arange(n * n)] * 2)
    roundtrip(stage, make_query, single)
    roundtrip(stage, make_query, Cell("ms", many.ctype, many.value))


def test_frame4d_is_a_frame_not_a_matrix(stage, make_query):
    cell = cell_of(attr_scene("frame4d f = ((1,0,0,0),(0,1,0,0),(0,0,1,0),(5,6,7,1))"), "f")
    assert cell is not None
    assert cell.ctype == ColumnType(FLOAT, 64, 16, False, AS.FRAME)
    assert cell.value[12:15].tolist() == [5, 6, 7]
    roundtrip(stage, make_query, cell)


def test_timecodes_are_doubles_with_time_code_semantic(stage, make_query):
    scene = attr_scene("timecode t = 24.5\n    timecode[] ts = [1, 2.5]")
    single = cell_of(scene, "t")
    many = cell_of(scene, "ts")
    assert single is not None and many is not None
    assert single.ctype == ColumnType(FLOAT, 64, 1, False, AS.TIME_CODE)
    assert single.value.tolist() == [24.5]
    assert many.ctype == ColumnType(FLOAT, 64, 1, True, AS.TIME_CODE)
    assert many.value.tolist() == [1.0, 2.5]
    roundtrip(stage, make_query, single)


@pytest.mark.parametrize("decl", ["opaque o", "group g"])
def test_opaque_values_populate_nothing(decl):
    name = decl.split()[1]
    assert cell_of(attr_scene(decl), name) is None


def test_an_attribute_without_a_value_populates_nothing():
    assert cell_of(attr_scene("float unset"), "unset") is None


# ---------------------------------------------------------------- string-like values


def test_tokens_and_strings_become_ids(stage, make_query, paths):
    interner = mapping.DictionaryInterner(paths)
    scene = attr_scene('token t = "hello"\n    string s = "hello"')
    token = cell_of(scene, "t", interner)
    string = cell_of(scene, "s", interner)
    assert token is not None and string is not None
    assert token.ctype == ColumnType(UINT, 64, 1, False, AS.TOKEN_ID)
    assert string.ctype == ColumnType(UINT, 64, 1, False, AS.NONE)
    assert token.value.tolist() == string.value.tolist() == [paths.intern_token("hello")]
    assert paths.token_to_string(int(token.value[0])) == "hello"
    roundtrip(stage, make_query, token)


@pytest.mark.parametrize(
    "decl",
    ['token e = ""', 'string e = ""', 'pathExpression e = ""', "asset e = @@"],
)
def test_empty_string_like_values_are_id_zero(decl):
    interner = RecordingInterner()
    cell = cell_of(attr_scene(decl), "e", interner)
    assert cell is not None, "an authored empty value is populated"
    assert cell.value.tolist() == [0] * cell.ctype.lanes
    assert interner.calls == []


def test_dictionary_interner_gives_the_empty_token_id_zero(paths):
    with pytest.raises(ovstage.OvxError):
        paths.intern_token("")  # the dictionary itself refuses it
    interner = mapping.DictionaryInterner(paths)
    assert interner.token("") == 0
    assert interner.token("a") == paths.intern_token("a")
    assert interner.path("/A/B") == paths.intern_path("/A/B")


def test_long_token_arrays_intern_each_distinct_token_once():
    words = ["x", "", "y", "z"] * 50  # long enough to take the np.unique path
    scene = attr_scene("token[] t = [" + ", ".join(f'"{w}"' for w in words) + "]")
    interner = RecordingInterner()
    cell = cell_of(scene, "t", interner)
    assert cell is not None and cell.value.shape == (200,)
    assert sorted(interner.calls) == ["x", "y", "z"]
    ids = {"": 0, **{w: interner.id_of(w) for w in "xyz"}}
    assert cell.value.tolist() == [ids[w] for w in words]


def test_string_like_arrays_intern_each_distinct_string_once():
    interner = RecordingInterner()
    scene = attr_scene('token[] t = ["b", "a", "b", "", "a", "b"]\n    string[] s = ["x", "", "x"]')
    tokens = cell_of(scene, "t", interner)
    assert tokens is not None
    assert tokens.ctype == ColumnType(UINT, 64, 1, True, AS.TOKEN_ID)
    a, b = interner.id_of("a"), interner.id_of("b")
    assert tokens.value.tolist() == [b, a, b, 0, a, b]
    assert sorted(interner.calls) == ["a", "b"]
    strings = mapping.map_property(prim_of(scene).GetAttribute("s"), DEFAULT, interner)
    assert strings is not None
    assert strings.ctype == ColumnType(UINT, 64, 1, True, AS.NONE)
    assert strings.value.tolist() == [interner.id_of("x"), 0, interner.id_of("x")]


def test_string_pinned_to_byte_form_is_a_string_row(stage, make_query):
    scene = attr_scene('string s = "héllo"\n    string e = ""')
    cell = cell_of(scene, "s", string_bytes=True)
    assert cell is not None
    assert cell.ctype == ColumnType(UINT, 8, 1, True, AS.STRING)
    assert bytes(cell.value) == "héllo".encode()
    empty = cell_of(scene, "e", string_bytes=True)
    assert empty is not None and empty.value.shape == (0,)
    roundtrip(stage, make_query, cell)
    # without the pin it is an id
    assert cell_of(scene, "s").ctype.semantic == AS.NONE  # type: ignore[union-attr]


def test_asset_is_an_authored_and_resolved_id_pair(stage, make_query, paths, tmp_path):
    target = tmp_path / "other.usda"
    target.write_text("#usda 1.0\n")
    scene = attr_scene(
        f"asset found = @{target.as_posix()}@\n    asset missing = @no/such/file.usda@\n"
        f"    asset[] both = [@{target.as_posix()}@, @@]"
    )
    interner = mapping.DictionaryInterner(paths)
    found = cell_of(scene, "found", interner)
    missing = cell_of(scene, "missing", interner)
    both = cell_of(scene, "both", interner)
    assert found is not None and missing is not None and both is not None
    assert found.ctype == ColumnType(UINT, 64, 2, False, AS.ASSET_PATH_ID)
    authored, resolved = (paths.token_to_string(int(i)) for i in found.value)
    assert authored == target.as_posix()
    assert resolved and resolved.endswith("other.usda")
    assert (
        missing.value[1] == 0
        and paths.token_to_string(int(missing.value[0])) == "no/such/file.usda"
    )
    assert both.ctype == ColumnType(UINT, 64, 2, True, AS.ASSET_PATH_ID)
    assert both.value.tolist() == [found.value.tolist(), [0, 0]]
    roundtrip(stage, make_query, found)
    roundtrip(stage, make_query, Cell("both", both.ctype, both.value))


def test_path_expression_is_the_id_of_its_text(stage, make_query, paths):
    interner = mapping.DictionaryInterner(paths)
    scene = attr_scene(
        'pathExpression e = "/World/* - /World/B"\n    pathExpression[] es = ["/A", ""]'
    )
    single = cell_of(scene, "e", interner)
    many = cell_of(scene, "es", interner)
    assert single is not None and many is not None
    assert single.ctype == ColumnType(UINT, 64, 1, False, AS.PATH_EXPRESSION_STRING)
    assert paths.token_to_string(int(single.value[0])) == "/World/* - /World/B"
    assert many.ctype == ColumnType(UINT, 64, 1, True, AS.PATH_EXPRESSION_STRING)
    assert many.value.tolist() == [paths.intern_token("/A"), 0]
    roundtrip(stage, make_query, single)


# ---------------------------------------------------------------- relationships, connections

REL_SCENE = """def "P"
{
    rel targets = [</P/B.x>, </P/A>]
    rel none
    rel cleared = None
}
"""


def test_relationship_targets_become_path_ids(stage, make_query, paths):
    interner = mapping.DictionaryInterner(paths)
    cell = cell_of(REL_SCENE, "targets", interner)
    assert cell is not None
    assert cell.ctype == ColumnType(UINT, 64, 1, True, AS.RELATIONSHIP_PATH_ID)
    assert [paths.path_to_string(int(i)) for i in cell.value] == ["/P/B.x", "/P/A"]
    roundtrip(stage, make_query, cell)


@pytest.mark.parametrize("name", ["none", "cleared"])
def test_a_relationship_without_targets_is_an_empty_row(stage, make_query, name):
    cell = cell_of(REL_SCENE, name)
    assert cell is not None
    assert cell.ctype.semantic == AS.RELATIONSHIP_PATH_ID
    assert cell.value.shape == (0,)
    roundtrip(stage, make_query, cell)


def test_a_connection_is_one_prim_and_property_pair(stage, make_query, paths, caplog):
    scene = """def "P"
{
    float out = 1
    float single.connect = </P.out>
    float many.connect = [</P.out>, </Q.out>]
    float plain = 2
}
"""
    prim = prim_of(scene)
    interner = mapping.DictionaryInterner(paths)
    cell = mapping.map_connection(prim.GetAttribute("single"), interner)
    assert cell is not None
    assert cell.name == "single.connect"
    assert cell.ctype == ColumnType(UINT, 64, 2, True, AS.CONNECTION_PATH_ID)
    assert cell.value.tolist() == [[paths.intern_path("/P"), paths.intern_token("out")]]
    roundtrip(stage, make_query, cell)
    assert mapping.map_connection(prim.GetAttribute("plain"), interner) is None
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert mapping.map_connection(prim.GetAttribute("many"), interner) is None
    assert "2 sources" in caplog.text
    # the connected attribute itself has no value: map_property populates nothing for it
    assert mapping.map_property(prim.GetAttribute("single"), DEFAULT, interner) is None


# ---------------------------------------------------------------- special cases


def test_extent_on_an_imageable_is_six_doubles(stage, make_query):
    scene = """def Sphere "P"
{
    float3[] extent = [(-1, -2, -3), (4, 5, 6)]
}
def "T"
{
    float3[] extent = [(-1, -2, -3), (4, 5, 6)]
}
"""
    cell = cell_of(scene, "extent")
    assert cell is not None
    assert cell.ctype == ColumnType(FLOAT, 64, 6, False, AS.NONE)
    assert cell.value.tolist() == [-1, -2, -3, 4, 5, 6]
    roundtrip(stage, make_query, cell)
    # a typeless (not imageable) prim keeps the authored float3[]
    plain = cell_of(scene, "extent", path="/T")
    assert plain is not None and plain.ctype == ColumnType(FLOAT, 32, 3, True)


def test_an_extent_that_is_not_two_points_is_skipped(caplog):
    scene = 'def Cube "P"\n{\n    float3[] extent = [(-1, -1, -1)]\n}\n'
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert cell_of(scene, "extent") is None
    assert "extent needs two" in caplog.text


@pytest.mark.parametrize("name", sorted(mapping.NEVER_PUBLISHED))
def test_derived_transform_names_are_never_published_from_usd(name):
    scene = f'def Xform "P"\n{{\n    double {name} = 1\n}}\n'
    assert cell_of(scene, name) is None


# ---------------------------------------------------------------- numeric conversion
# Schema-declared attributes used below: Cube.size (double), Camera.focalLength (float),
# Camera.clippingRange (float2), Mesh.faceVertexCounts (int[]), Mesh.points (point3f[]),
# Gprim.doubleSided (bool), PointInstancer.ids (int64[]), PointInstancer.orientations (quath[]),
# Mesh.subdivisionScheme (token).

CONVERTED = [
    ("Cube", "int size = 3", (FLOAT, 64, 1, False, AS.NONE), [3.0]),
    ("Camera", "double focalLength = 0.1", (FLOAT, 32, 1, False, AS.NONE), [np.float32(0.1)]),
    ("Camera", "double focalLength = 1e300", (FLOAT, 32, 1, False, AS.NONE), [np.inf]),
    ("Camera", "double focalLength = -1e300", (FLOAT, 32, 1, False, AS.NONE), [-np.inf]),
    ("Camera", "double focalLength = 1e-300", (FLOAT, 32, 1, False, AS.NONE), [0.0]),
    ("Camera", "int focalLength = 16777217", (FLOAT, 32, 1, False, AS.NONE), [16777216.0]),
    (
        "Camera",
        "double2 clippingRange = (0.5, 1e40)",
        (FLOAT, 32, 2, False, AS.NONE),
        [0.5, np.inf],
    ),
    ("Camera", "int2 clippingRange = (1, 2)", (FLOAT, 32, 2, False, AS.NONE), [1, 2]),
    ("Mesh", "uint[] faceVertexCounts = [3, 4]", (INT, 32, 1, True, AS.NONE), [3, 4]),
    ("Mesh", "int64[] faceVertexCounts = [3, -4]", (INT, 32, 1, True, AS.NONE), [3, -4]),
    (
        "Mesh",
        "float[] faceVertexCounts = [1.7, -2.9, -0.5]",
        (INT, 32, 1, True, AS.NONE),
        [1, -2, 0],
    ),
    ("Mesh", "bool[] faceVertexCounts = [true, false]", (INT, 32, 1, True, AS.NONE), [1, 0]),
    (
        "Mesh",
        "double3[] points = [(0.1, 2, 3)]",
        (FLOAT, 32, 3, True, AS.POINT),
        [[np.float32(0.1), 2, 3]],
    ),
    ("Mesh", "int3[] points = [(1, 2, 3)]", (FLOAT, 32, 3, True, AS.POINT), [[1, 2, 3]]),
    ("Mesh", "half3[] points = [(1, 2, 3)]", (FLOAT, 32, 3, True, AS.POINT), [[1, 2, 3]]),
    ("Cube", "int doubleSided = 1", (BOOL, 8, 1, False, AS.NONE), [True]),
    ("Cube", "double doubleSided = 0.9", (BOOL, 8, 1, False, AS.NONE), [False]),
    ("Cube", "double doubleSided = 1.5", (BOOL, 8, 1, False, AS.NONE), [True]),
    ("Cube", "bool size = true", (FLOAT, 64, 1, False, AS.NONE), [1.0]),
    (
        "Mesh",
        "double[] faceVertexCounts = [2147483647.9]",
        (INT, 32, 1, True, AS.NONE),
        [2**31 - 1],
    ),
    ("NurbsPatch", "uint uOrder = 5", (INT, 32, 1, False, AS.NONE), [5]),
    ("NurbsPatch", "double uOrder = -3.99", (INT, 32, 1, False, AS.NONE), [-3]),
    ("PointInstancer", "double[] ids = [1.5, -9e15]", (INT, 64, 1, True, AS.NONE), [1, -9e15]),
    (
        "PointInstancer",
        "uint64[] ids = [9223372036854775807]",
        (INT, 64, 1, True, AS.NONE),
        [2**63 - 1],
    ),
]


@pytest.mark.parametrize(
    ("schema", "decl", "ctype", "expected"), CONVERTED, ids=[f"{c[0]}:{c[1]}" for c in CONVERTED]
)
def test_a_value_authored_with_another_numeric_type_converts_to_the_declared_one(
    stage, make_query, schema, decl, ctype, expected, caplog
):
    name = decl.split()[1]
    scene = f'def {schema} "P"\n{{\n    {decl}\n}}\n'
    with caplog.at_level(logging.WARNING, logger=LOGGER), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # overflow to inf is the rule, not noise
        cell = cell_of(scene, name)
    assert cell is not None, caplog.text
    assert cell.ctype == ColumnType(*ctype)
    assert cell.value.dtype == cell.ctype.numpy_dtype
    np.testing.assert_array_equal(
        cell.value.astype(np.float64).reshape(-1),
        np.asarray(expected, dtype=np.float64).reshape(-1),
    )
    assert not caplog.records
    if np.isfinite(cell.value.astype(np.float64)).all():
        roundtrip(stage, make_query, cell)


def test_inf_and_nan_pass_through_to_floating_point():
    scene = 'def Camera "P"\n{\n    double2 clippingRange = (inf, nan)\n}\n'
    cell = cell_of(scene, "clippingRange")
    assert cell is not None and cell.ctype == ColumnType(FLOAT, 32, 2, False)
    assert np.isposinf(cell.value[0]) and np.isnan(cell.value[1])


UNCONVERTIBLE = [
    ("Mesh", "int64[] faceVertexCounts = [1, 3000000000]", "out of range"),
    ("Mesh", "uint64[] faceVertexCounts = [18446744073709551615]", "out of range"),
    ("Mesh", "double[] faceVertexCounts = [1, 2147483648.5]", "out of range"),
    ("Mesh", "double[] faceVertexCounts = [1, inf]", "out of range"),
    ("Mesh", "float[] faceVertexCounts = [nan]", "out of range"),
    ("PointInstancer", "double[] ids = [9.3e18]", "out of range"),
    ("Cube", "int doubleSided = 2", "out of range"),
    ("NurbsPatch", "int64 uOrder = 3000000000", "out of range"),
    ("NurbsPatch", "uint64 uOrder = 18446744073709551615", "out of range"),
    ("Cube", "int doubleSided = -1", "out of range"),
    ("Cube", "double doubleSided = 2.0", "out of range"),
    ("Mesh", "double2[] points = [(1, 2)]", "shape"),
    ("Mesh", "double3 points = (1, 2, 3)", "shape"),
    ("Camera", "float2 focalLength = (1, 2)", "shape"),
    ("Camera", "float[] focalLength = [1]", "shape"),
    ("Cube", 'token size = "big"', "not convertible"),
    ("Cube", "asset size = @x.usda@", "not convertible"),
    ("Mesh", "int subdivisionScheme = 1", "not convertible"),
    ("PointInstancer", "quatf[] orientations = [(1, 0, 0, 0)]", "not convertible"),
    ("Cube", "matrix2d size = ((1, 0), (0, 1))", "not convertible"),
]


@pytest.mark.parametrize(
    ("schema", "decl", "why"), UNCONVERTIBLE, ids=[f"{c[0]}:{c[1]}" for c in UNCONVERTIBLE]
)
def test_an_unconvertible_value_is_skipped_with_a_warning(schema, decl, why, caplog):
    name = decl.split()[1]
    scene = f'def {schema} "P"\n{{\n    {decl}\n}}\n'
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert cell_of(scene, name) is None
    (record,) = caplog.records
    assert record.name == LOGGER and record.levelno == logging.WARNING
    assert why in record.getMessage() and f"/P.{name}" in record.getMessage()


def test_a_property_no_schema_declares_uses_its_authored_type():
    scene = 'def Cube "P"\n{\n    int sizeish = 3\n    double3[] points = [(1, 2, 3)]\n}\n'
    assert cell_of(scene, "sizeish").ctype == ColumnType(INT, 32, 1, False)  # type: ignore[union-attr]
    # Cube declares no points: the authored double3[] stays double
    assert cell_of(scene, "points").ctype == ColumnType(FLOAT, 64, 3, True)  # type: ignore[union-attr]


def test_force_marks_a_changed_declared_type():
    scene = attr_scene("double x = 1")
    before = ColumnType(FLOAT, 32, 1, False)
    changed = cell_of(scene, "x", previous=before)
    assert changed is not None and changed.force
    same = cell_of(scene, "x", previous=changed.ctype)
    assert same is not None and not same.force
    assert not cell_of(scene, "x").force  # type: ignore[union-attr]  # first population
    assert mapping.needs_force(before, changed.ctype)
    assert not mapping.needs_force(None, changed.ctype)
    # an unconvertible value gives no cell, so it never forces a replacement
    bad = 'def Cube "P"\n{\n    token size = "big"\n}\n'
    assert cell_of(bad, "size", previous=before) is None


# ---------------------------------------------------------------- metadata

META_SCENE = """def "P" (
    kind = "component"
    instanceable = true
    documentation = "a prim"
    customData = {
        int count = 3
        double ratio = 0.5
        bool flag = false
        string label = ""
        float3 offset = (1, 2, 3)
        token[] tags = ["red", "", "red"]
        dictionary nested = {
            int deep = 7
            token t = "tok"
        }
    }
)
{
    float a = 1 (
        customData = { int weight = 9 }
        displayGroup = "physics"
    )
}
"""


def test_prim_metadata_fields_map_by_their_type(stage, make_query, paths):
    prim = prim_of(META_SCENE)
    interner = mapping.DictionaryInterner(paths)
    cells = {
        c.name: c
        for c in mapping.map_metadata(prim, ["kind", "instanceable", "documentation"], "", interner)
    }
    assert set(cells) == {
        "usd-metadata:kind",
        "usd-metadata:instanceable",
        "usd-metadata:documentation",
    }
    kind = cells["usd-metadata:kind"]
    assert kind.ctype == ColumnType(UINT, 64, 1, False, AS.TOKEN_ID)
    assert kind.value.tolist() == [paths.intern_token("component")]
    assert cells["usd-metadata:instanceable"].ctype == ColumnType(BOOL, 8, 1, False)
    assert cells["usd-metadata:instanceable"].value.tolist() == [True]
    doc = cells["usd-metadata:documentation"]
    assert doc.ctype == ColumnType(UINT, 64, 1, False, AS.NONE)
    assert doc.value.tolist() == [paths.intern_token("a prim")]
    for cell in cells.values():
        roundtrip(stage, make_query, cell)


def test_the_type_name_metadata_is_a_token():
    prim = prim_of('def Cube "P"\n{\n}\n')
    interner = RecordingInterner()
    (cell,) = mapping.map_metadata(prim, ["typeName"], "", interner)
    assert cell.name == "usd-metadata:typeName"
    assert cell.ctype == ColumnType(UINT, 64, 1, False, AS.TOKEN_ID)
    assert cell.value.tolist() == [interner.id_of("Cube")]


def test_naming_a_dictionary_populates_each_value_below_it():
    prim = prim_of(META_SCENE)
    interner = RecordingInterner()
    cells = {c.name: c for c in mapping.map_metadata(prim, ["customData"], "", interner)}
    assert set(cells) == {
        "usd-metadata:customData:count",
        "usd-metadata:customData:ratio",
        "usd-metadata:customData:flag",
        "usd-metadata:customData:label",
        "usd-metadata:customData:offset",
        "usd-metadata:customData:tags",
        "usd-metadata:customData:nested:deep",
        "usd-metadata:customData:nested:t",
    }
    assert cells["usd-metadata:customData:count"].ctype == ColumnType(INT, 32, 1, False)
    assert cells["usd-metadata:customData:count"].value.tolist() == [3]
    assert cells["usd-metadata:customData:ratio"].ctype == ColumnType(FLOAT, 64, 1, False)
    assert cells["usd-metadata:customData:flag"].value.tolist() == [False]
    assert cells["usd-metadata:customData:label"].value.tolist() == [0]
    offset = cells["usd-metadata:customData:offset"]
    assert offset.ctype == ColumnType(FLOAT, 32, 3, False)
    assert offset.value.tolist() == [1, 2, 3]
    tags = cells["usd-metadata:customData:tags"]
    assert tags.ctype == ColumnType(UINT, 64, 1, True, AS.TOKEN_ID)
    assert tags.value.tolist() == [interner.id_of("red"), 0, interner.id_of("red")]
    nested = cells["usd-metadata:customData:nested:t"]
    assert nested.value.tolist() == [interner.id_of("tok")]


def test_a_dictionary_key_is_addressed_with_colons():
    prim = prim_of(META_SCENE)
    (deep,) = mapping.map_metadata(prim, ["customData:nested:deep"], "", RecordingInterner())
    assert deep.name == "usd-metadata:customData:nested:deep"
    assert deep.value.tolist() == [7]
    nested = mapping.map_metadata(prim, ["customData:nested"], "", RecordingInterner())
    assert sorted(c.name for c in nested) == [
        "usd-metadata:customData:nested:deep",
        "usd-metadata:customData:nested:t",
    ]


def test_a_value_named_twice_gives_one_cell():
    prim = prim_of(META_SCENE)
    cells = mapping.map_metadata(
        prim,
        ["customData:nested:deep", "customData:nested", "kind", "kind"],
        "",
        RecordingInterner(),
    )
    names = [c.name for c in cells]
    assert sorted(names) == [
        "usd-metadata:customData:nested:deep",
        "usd-metadata:customData:nested:t",
        "usd-metadata:kind",
    ]


def test_property_metadata_lands_under_the_property_prefix():
    attr = prim_of(META_SCENE).GetAttribute("a")
    interner = RecordingInterner()
    cells = {
        c.name: c
        for c in mapping.map_metadata(attr, ["customData", "displayGroup"], "a:", interner)
    }
    assert set(cells) == {"a:usd-metadata:customData:weight", "a:usd-metadata:displayGroup"}
    assert cells["a:usd-metadata:customData:weight"].value.tolist() == [9]
    assert cells["a:usd-metadata:displayGroup"].value.tolist() == [interner.id_of("physics")]


def test_stage_metadata_maps_like_prim_metadata(paths):
    stage = usd_stage(
        'def "P"\n{\n}\n',
        header='(\n    upAxis = "Z"\n    metersPerUnit = 0.01\n'
        '    customLayerData = { string who = "tests" }\n)',
    )
    interner = mapping.DictionaryInterner(paths)
    cells = {
        c.name: c
        for c in mapping.map_metadata(
            stage, ["upAxis", "metersPerUnit", "customLayerData"], "", interner
        )
    }
    assert cells["usd-metadata:upAxis"].ctype.semantic == AS.TOKEN_ID
    assert cells["usd-metadata:upAxis"].value.tolist() == [paths.intern_token("Z")]
    assert cells["usd-metadata:metersPerUnit"].ctype == ColumnType(FLOAT, 64, 1, False)
    assert cells["usd-metadata:metersPerUnit"].value.tolist() == [0.01]
    assert cells["usd-metadata:customLayerData:who"].value.tolist() == [paths.intern_token("tests")]


def test_absent_metadata_populates_nothing():
    prim = prim_of(META_SCENE)
    assert (
        mapping.map_metadata(
            prim, ["customData:nope", "hidden", "active:x"], "", RecordingInterner()
        )
        == []
    )


@pytest.mark.parametrize("bad", [":kind", "kind:", "customData::count", "", ":"])
def test_a_metadata_path_with_an_empty_component_is_rejected(bad):
    prim = prim_of(META_SCENE)
    interner = RecordingInterner()
    with pytest.raises(ValueError, match="empty component") as info:
        mapping.map_metadata(prim, ["kind", bad], "", interner)
    assert repr(bad) in str(info.value)
    assert interner.calls == [], "nothing is read before every path is checked"


def test_metadata_values_without_a_column_type_are_left_out():
    # apiSchemas is a list op and specifier an enum: neither has a column type
    prim = prim_of('def "P" (\n    prepend apiSchemas = ["CollectionAPI:x"]\n)\n{\n}\n')
    assert mapping.map_metadata(prim, ["apiSchemas", "specifier"], "", RecordingInterner()) == []


# ---------------------------------------------------------------- derived transforms

XFORM_SCENE = """def Xform "X"
{
    double3 xformOp:translate = (1, 2, 3)
    double3 xformOp:translate.timeSamples = { 0: (1, 2, 3), 10: (4, 5, 6) }
    float3 xformOp:rotateXYZ = (0, 0, 90)
    float3 xformOp:scale = (2, 2, 2)
    uniform token[] xformOpOrder = ["xformOp:translate", "xformOp:rotateXYZ", "xformOp:scale"]
}
def Xform "R"
{
    uniform token[] xformOpOrder = ["!resetXformStack!"]
}
def Scope "S"
{
}
def "T"
{
}
"""


def test_the_local_transform_is_a_row_major_matrix_with_translation_last(stage, make_query):
    usd = usd_stage(XFORM_SCENE)
    prim = usd.GetPrimAtPath("/X")
    cells = {c.name: c for c in mapping.derived_transform_cells(prim, DEFAULT)}
    assert set(cells) == {"omni:xform", "omni:resetXformStack"}
    xform = cells["omni:xform"]
    assert xform.ctype == ColumnType(FLOAT, 64, 16, False, AS.MATRIX)
    expected = Gf.Matrix4d().SetScale(2) * Gf.Matrix4d().SetRotate(
        Gf.Rotation(Gf.Vec3d(0, 0, 1), 90)
    )
    expected = expected * Gf.Matrix4d().SetTranslate(Gf.Vec3d(1, 2, 3))
    np.testing.assert_allclose(xform.value, np.asarray(expected).reshape(16), atol=1e-12)
    assert xform.value[12:15].tolist() == [1, 2, 3]
    assert cells["omni:resetXformStack"].ctype == ColumnType(BOOL, 8, 1, False)
    assert cells["omni:resetXformStack"].value.tolist() == [False]
    later = mapping.derived_transform_cells(prim, Usd.TimeCode(10))[0]
    assert later.value[12:15].tolist() == [4, 5, 6]
    for cell in cells.values():
        roundtrip(stage, make_query, cell)


def test_reset_xform_stack_is_published():
    prim = usd_stage(XFORM_SCENE).GetPrimAtPath("/R")
    cells = {c.name: c for c in mapping.derived_transform_cells(prim, DEFAULT)}
    assert cells["omni:resetXformStack"].value.tolist() == [True]
    np.testing.assert_array_equal(cells["omni:xform"].value, np.eye(4).reshape(16))


@pytest.mark.parametrize("path", ["/S", "/T"])
def test_a_prim_that_is_not_xformable_has_no_derived_transform(path):
    assert (
        mapping.derived_transform_cells(usd_stage(XFORM_SCENE).GetPrimAtPath(path), DEFAULT) == []
    )


def test_the_world_matrix_starts_as_the_local_transform():
    prim = usd_stage(XFORM_SCENE).GetPrimAtPath("/X")
    xform = mapping.derived_transform_cells(prim, DEFAULT)[0]
    world = mapping.world_matrix_cell(xform)
    assert world.name == "omni:fabric:worldMatrix"
    assert world.ctype == xform.ctype
    np.testing.assert_array_equal(world.value, xform.value)
    assert world.value is not xform.value


def test_time_varying_properties_are_reported():
    usd = usd_stage(XFORM_SCENE)
    prim = usd.GetPrimAtPath("/X")
    assert mapping.is_time_varying(prim.GetAttribute("xformOp:translate"))
    assert not mapping.is_time_varying(prim.GetAttribute("xformOp:scale"))
    assert not mapping.is_time_varying(prim_of(REL_SCENE).GetRelationship("targets"))


def test_a_time_sample_is_read_at_the_requested_time():
    scene = attr_scene("float v = 1\n    float v.timeSamples = { 0: 2, 10: 12 }")
    assert cell_of(scene, "v", time=Usd.TimeCode(5)).value.tolist() == [7]  # type: ignore[union-attr]
    assert cell_of(scene, "v").value.tolist() == [1]  # type: ignore[union-attr]


def test_every_usd_value_type_is_mapped_or_deliberately_left_out():
    """A guard for new USD types: each value type usd-core knows maps to a column, except the
    ones that carry no plain value (opaque, group) and the ones the stage has no rule for."""
    left_out = {"opaque", "group", "duration"}
    names = {
        str(getattr(Sdf.ValueTypeNames, n).scalarType)
        for n in dir(Sdf.ValueTypeNames)
        if isinstance(getattr(Sdf.ValueTypeNames, n), Sdf.ValueTypeName)
    }
    names.discard("")
    unmapped = {n for n in names if mapping._column_type(Sdf.ValueTypeNames.Find(n)) is None}
    assert unmapped <= left_out, unmapped - left_out
    # a role type gives the semantic of the role
    assert mapping._column_type(Sdf.ValueTypeNames.Point3fArray) == ColumnType(
        FLOAT, 32, 3, True, AS.POINT
    )
