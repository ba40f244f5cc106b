"""Status codes, exceptions, enums and argument guards.

Pure Python: these tests need neither the native extension nor a stage.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from ovstage._enums import (
    AttributeSemantic,
    FilterOp,
    HierarchyComputationModel,
    HierarchyRelation,
    LogSeverity,
    PopulationDomain,
    PrimMode,
    Scope,
)
from ovstage._errors import (
    OVSTAGE_TIMEOUT_INFINITE,
    OVX_API_ERROR,
    OVX_API_SUCCESS,
    TIMEOUT_INFINITE,
    ErrorCode,
    OvstageError,
    OvxError,
    error_from_native,
)
from ovstage._guards import (
    as_attribute,
    as_bool_flag,
    as_enum,
    as_index,
    as_int32,
    as_native_str,
    as_sequence,
    as_size_t,
    as_str,
    as_timeout,
    as_uint,
    as_uint32,
    as_uint64,
    attribute_problem,
    string_problem,
)

# ---------------------------------------------------------------- errors


def test_error_code_values_are_the_abi_values() -> None:
    assert {m.name: m.value for m in ErrorCode} == {
        "OK": 0,
        "INVALID_ARGUMENT": 1,
        "INVALID_HANDLE": 2,
        "NOT_FOUND": 3,
        "PRIM_NOT_FOUND": 4,
        "WRITE_FLOOR_VIOLATION": 5,
        "NOT_SUPPORTED": 6,
        "QUEUE_FULL": 7,
        "END_OF_ITERATION": 8,
        "OUT_OF_MEMORY": 9,
        "LAYOUT_CHANGED": 10,
        "TIMEOUT": 11,
        "OP_FAILED": 12,
        "OUT_OF_RANGE": 13,
        "INTERNAL": 99,
    }


def test_constants() -> None:
    assert OVX_API_SUCCESS == 0
    assert OVX_API_ERROR == 1
    assert TIMEOUT_INFINITE == OVSTAGE_TIMEOUT_INFINITE == 2**64 - 1 == 0xFFFFFFFFFFFFFFFF


def test_ovstage_error_str_and_attributes() -> None:
    err = OvstageError(ErrorCode.TIMEOUT, "not ready")
    assert isinstance(err, RuntimeError)
    assert err.code == 11 and type(err.code) is int
    assert err.message == "not ready"
    assert str(err) == "TIMEOUT: not ready"
    bare = OvstageError(2)
    assert bare.message == ""
    assert str(bare) == "INVALID_HANDLE"


def test_ovstage_error_unknown_code_and_numpy_code() -> None:
    assert str(OvstageError(1234, "x")) == "ERROR_1234: x"
    assert str(OvstageError(-3)) == "ERROR_-3"
    assert OvstageError(np.uint32(12)).code == 12
    assert str(OvstageError(np.uint32(12))) == "OP_FAILED"


@pytest.mark.parametrize("bad", [1.0, "1", b"1", None, 2.5])
def test_ovstage_error_code_must_be_an_integer(bad: object) -> None:
    with pytest.raises(TypeError):
        OvstageError(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        OvxError(bad)  # type: ignore[arg-type]


def test_ovstage_error_raises_and_pickles() -> None:
    with pytest.raises(OvstageError) as info:
        raise OvstageError(ErrorCode.OP_FAILED, "boom")
    assert info.value.code == ErrorCode.OP_FAILED
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.code, copy.message, str(copy)) == (12, "boom", "OP_FAILED: boom")


def test_ovx_error_str() -> None:
    err = OvxError(1, "empty token")
    assert isinstance(err, RuntimeError)
    assert (err.code, err.message) == (1, "empty token")
    assert str(err) == "ovx error 1: empty token"
    assert str(OvxError(1)) == "ovx error 1"
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == "ovx error 1: empty token"


def test_error_from_native_ovstage() -> None:
    err = error_from_native(RuntimeError("[ovstage:8] end of iteration"))
    assert type(err) is OvstageError
    assert err.code == ErrorCode.END_OF_ITERATION
    assert err.message == "end of iteration"


def test_error_from_native_ovx() -> None:
    err = error_from_native(RuntimeError("[ovx:1] malformed path 'a//b'"))
    assert type(err) is OvxError
    assert (err.code, err.message) == (1, "malformed path 'a//b'")


def test_error_from_native_empty_and_multiline_messages() -> None:
    assert error_from_native(RuntimeError("[ovstage:11]")).message == ""
    err = error_from_native(RuntimeError("[ovstage:99] line one\nline two"))
    assert (err.code, err.message) == (99, "line one\nline two")


@pytest.mark.parametrize(
    "text", ["something broke", "[ovstage:x] bad", "prefix [ovstage:1] late", ""]
)
def test_error_from_native_other_text_is_internal(text: str) -> None:
    err = error_from_native(RuntimeError(text))
    assert type(err) is OvstageError
    assert err.code == ErrorCode.INTERNAL
    assert err.message == text


# ---------------------------------------------------------------- enums


def test_enum_values() -> None:
    assert [int(m) for m in FilterOp] == list(range(8))
    assert [m.name for m in FilterOp] == [
        "HAS", "IN", "CONTAINS", "PREFIX", "LT", "LE", "GT", "GE"
    ]  # fmt: skip
    assert (PrimMode.UPSERT, PrimMode.INSERT) == (0, 1)
    assert (Scope.ALL, Scope.INCLUDE, Scope.EXCLUDE) == (0, 1, 2)
    assert (
        HierarchyRelation.PARENT,
        HierarchyRelation.CHILDREN,
        HierarchyRelation.SIBLINGS,
    ) == (0, 1, 2)
    assert {m.name: m.value for m in LogSeverity} == {
        "VERBOSE": -2, "INFO": -1, "WARNING": 0, "ERROR": 1, "NONE": 3
    }  # fmt: skip


def test_attribute_semantic_values() -> None:
    names = [
        "NONE", "ASSET_PATH_ID", "TOKEN_ID", "PATH_EXPRESSION_STRING",
        "RELATIONSHIP_PATH_ID", "POINT", "VECTOR", "NORMAL", "COLOR", "QUATERNION",
        "MATRIX", "TEXTURE_COORDINATE", "CONNECTION_PATH_ID", "STRING", "TIME_CODE",
        "FRAME",
    ]  # fmt: skip
    assert [(m.name, m.value) for m in AttributeSemantic] == [
        (name, i) for i, name in enumerate(names)
    ]


def test_hierarchy_computation_model_aliases() -> None:
    model = HierarchyComputationModel
    assert [(m.name, m.value) for m in model] == [
        ("INVALID", 0),
        ("CPU_INCREMENTAL", 1),
        ("GPU_INCREMENTAL", 2),
        ("GPU_GLOBAL", 3),
        ("RUNTIME_DEFAULT", 4),
    ]
    assert model.DEFAULT_CPU is model.CPU_INCREMENTAL
    assert model.DEFAULT_GPU is model.GPU_GLOBAL


def test_population_domain_is_a_flag() -> None:
    assert PopulationDomain.RENDERING | PopulationDomain.PHYSICS == PopulationDomain.ALL
    assert int(PopulationDomain.NONE) == 0
    assert PopulationDomain.RENDERING in PopulationDomain.ALL


# ---------------------------------------------------------------- guards


class _Level:
    """An object implementing ``__index__`` (accepted like an int)."""

    def __index__(self) -> int:
        return 7


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (5, 5),
        (True, 1),
        (False, 0),
        (ErrorCode.TIMEOUT, 11),
        (np.int8(3), 3),
        (np.uint64(2**64 - 1), 2**64 - 1),
        (np.int64(42), 42),
        (np.array(9), 9),
        (np.array(9, dtype=np.uint16), 9),
        (_Level(), 7),
        (2**64 - 1, 2**64 - 1),
    ],
)
def test_as_uint64_accepts_integers(value: object, expected: int) -> None:
    result = as_uint64(value, "ordinal")
    assert result == expected
    assert type(result) is int


@pytest.mark.parametrize(
    "value",
    [5.0, 0.0, np.float64(5.0), np.array(5.0), "5", b"5", None, [5], np.array([5])],
)
def test_as_uint_rejects_non_integers_naming_the_argument(value: object) -> None:
    with pytest.raises(TypeError, match="ordinal"):
        as_uint64(value, "ordinal")


@pytest.mark.parametrize("value", [-1, np.int64(-5), -(2**70)])
def test_as_uint_rejects_negative(value: object) -> None:
    with pytest.raises(ValueError, match=r"ordinal.*-"):
        as_uint64(value, "ordinal")


def test_as_uint_width_limits() -> None:
    assert as_uint32(2**32 - 1, "count") == 2**32 - 1
    with pytest.raises(ValueError, match=rf"count.*{2**32}"):
        as_uint32(2**32, "count")
    with pytest.raises(ValueError, match="token"):
        as_uint64(2**64, "token")
    assert as_uint(255, "lanes", bits=8) == 255
    with pytest.raises(ValueError, match="lanes"):
        as_uint(256, "lanes", bits=8)
    assert as_size_t(2**32, "element_sizes") == 2**32


def test_as_int32_is_a_signed_range_check() -> None:
    assert as_int32(AttributeSemantic.FRAME, "semantic") == 15
    assert as_int32(1000, "semantic") == 1000  # newer library values pass
    assert as_int32(-(2**31), "semantic") == -(2**31)
    assert as_int32(2**31 - 1, "semantic") == 2**31 - 1
    with pytest.raises(ValueError, match="semantic"):
        as_int32(2**31, "semantic")
    with pytest.raises(ValueError, match="semantic"):
        as_int32(-(2**31) - 1, "semantic")
    with pytest.raises(TypeError, match="semantic"):
        as_int32(1.0, "semantic")


def test_as_enum_closed_enum() -> None:
    assert as_enum(1, PrimMode, "prim_mode") is PrimMode.INSERT
    assert as_enum(np.int32(2), Scope, "scope") is Scope.EXCLUDE
    assert as_enum(LogSeverity.VERBOSE, LogSeverity, "severity") is LogSeverity.VERBOSE
    assert as_enum(True, PrimMode, "prim_mode") is PrimMode.INSERT
    with pytest.raises(ValueError, match=r"prim_mode.*UPSERT=0.*INSERT=1.*5"):
        as_enum(5, PrimMode, "prim_mode")
    with pytest.raises(ValueError, match="severity"):
        as_enum(2, LogSeverity, "severity")
    with pytest.raises(TypeError, match="op"):
        as_enum(1.0, FilterOp, "op")
    with pytest.raises(TypeError, match="op"):
        as_enum("HAS", FilterOp, "op")


def test_as_bool_flag() -> None:
    assert as_bool_flag(True, "is_array") is True
    assert as_bool_flag(False, "is_array") is False
    for bad in (1, 0, np.bool_(True), None, "True"):
        with pytest.raises(TypeError, match="is_array"):
            as_bool_flag(bad, "is_array")


def test_as_attribute() -> None:
    assert as_attribute("points") == "points"
    assert as_attribute(17) == 17
    token = as_attribute(np.uint64(17))
    assert token == 17 and type(token) is int
    for bad in (1.0, b"points", None, ["points"]):
        with pytest.raises(TypeError, match="attribute"):
            as_attribute(bad)
    with pytest.raises(TypeError, match="attrs"):
        as_attribute(2.0, "attrs")
    with pytest.raises(ValueError, match="attribute"):
        as_attribute(-1)


def test_as_timeout() -> None:
    assert as_timeout(TIMEOUT_INFINITE) == 2**64 - 1
    assert as_timeout(0) == 0
    with pytest.raises(TypeError, match="timeout"):
        as_timeout(1.5)
    with pytest.raises(ValueError, match="timeout"):
        as_timeout(-1)


def test_as_str() -> None:
    assert as_str("/World", "path") == "/World"
    for bad in (b"/World", 1, None):
        with pytest.raises(TypeError, match="path"):
            as_str(bad, "path")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "Token string must be non-empty"),
        ("a\x00b", "Token string contains embedded NUL at index 1: 'a\\x00b'"),
        (
            "ab\udcff",
            "Token string is not valid UTF-8 (lone surrogate '\\udcff' at index 2): 'ab\\udcff'",
        ),
        ("points", None),
        ("pünkte/点", None),
    ],
    ids=["empty", "nul", "lone-surrogate", "ascii", "non-ascii"],
)
def test_string_problem_names_what_is_wrong_and_shows_the_value(text, problem) -> None:
    assert string_problem(text, "Token") == problem


def test_string_problem_shortens_long_values_and_may_allow_empty() -> None:
    assert string_problem("", "Value", empty_ok=True) is None
    message = string_problem("x" * 500 + "\x00", "Path")
    assert message is not None and "at index 500" in message and "(501 characters)" in message
    assert len(message) < 200


def test_as_native_str_raises_value_error_naming_the_argument() -> None:
    assert as_native_str("stage", "name", "Stage name") == "stage"
    assert as_native_str("", "name", "Stage name", empty_ok=True) == ""
    with pytest.raises(ValueError, match=r"name: Stage name string is not valid UTF-8"):
        as_native_str("s\udcff", "name", "Stage name")
    with pytest.raises(TypeError, match="name must be a str, got bytes"):
        as_native_str(b"s", "name", "Stage name")


def test_attribute_problem() -> None:
    assert attribute_problem(0) == "token 0 is not a valid token"
    assert attribute_problem(7) is None
    assert attribute_problem("p") is None
    assert attribute_problem("") == "Token string must be non-empty"


def test_as_sequence_and_as_index_name_the_argument() -> None:
    assert as_sequence((1, 2), "attrs", "tokens") == [1, 2]
    for bad, kind in ((None, "NoneType"), ("ab", "str"), (b"ab", "bytes"), (3, "int")):
        with pytest.raises(TypeError, match=f"attrs must be a sequence of tokens, got {kind}"):
            as_sequence(bad, "attrs", "tokens")
    assert as_index(np.int64(2), "local") == 2
    with pytest.raises(TypeError, match="local must be an integer, got float"):
        as_index(1.0, "local")
