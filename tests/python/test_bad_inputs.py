"""Bad-input matrix: every malformed call fails cleanly and leaves the stage unchanged.

Each case names one bad argument and the exact outcome: an exception raised by the call
(type, and code for ``OvstageError``/``OvxError``), or a rejected enqueue (``Operation`` with
that status, op id 0, ``wait()`` raising it), and optionally texts the message must contain:
the argument it names and the value given. After each case the stage must read back exactly
as before, with the same live engine objects and buffers. Inputs that the spec accepts by
copying (non-contiguous, negative strides, Fortran order, strided DLPack producers) are
checked separately: they are written with the right values.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import DLDataType, DLDevice, DLTensor, ErrorCode, OvstageError, OvxError

PRIMS = ["/Bad/A", "/Bad/B", "/Bad/C"]
SCALAR = np.array([1.0, 2.0, 3.0], np.float32)
VEC3 = np.arange(9, dtype=np.float32).reshape(3, 3) + 10
RAGGED = [np.array([1.0, 2.0], np.float32), np.array([3.0], np.float32), np.zeros(0, np.float32)]


@dataclass
class Env:
    """A stage with two sealed attributes over three prims, plus a second stage."""

    stage: ovstage.Stage
    other: ovstage.Stage
    paths: ovstage.PathDictionary
    plist: ovstage.PathList
    query: ovstage.Query
    other_query: ovstage.Query

    def write(self, tensors: Any, ordinal: int = 2, attribute: Any = "s", **kw: Any) -> Any:
        """``write_attribute`` on the env's query with defaults for everything else."""
        kw.setdefault("is_array", False)
        return self.stage.write_attribute(self.query, attribute, ordinal, tensors, **kw)

    def snapshot(self, ordinal: int = 1) -> tuple[Any, ...]:
        """Sealed values of the attributes at ``ordinal``, live engine objects and live
        buffers."""
        gc.collect()
        values = {}
        with self.stage.read_attributes(
            self.query, ["s", "v", "arr"], ovstage.OrdinalRange.latest(ordinal)
        ) as read:
            read.wait()
            for group in read.groups():
                with group:
                    name = self.paths.token_to_string(group.attribute)
                    values[name] = [
                        np.from_dlpack(group.dlpack(i)).tolist() for i in range(group.tensor_count)
                    ]
        gc.collect()
        return values, self.stage._diagnostics()


@pytest.fixture
def env() -> Iterator[Env]:
    """The matrix's stage: ``s`` = [1, 2, 3] (float32), ``v`` = float32x3 and a ragged ``arr``,
    all sealed at 1."""
    stage, other = ovstage.Stage("bad-inputs"), ovstage.Stage("bad-inputs-other")
    paths = ovstage.PathDictionary(stage)
    plist = paths.create_path_list_from_strings(PRIMS)
    query = stage.query_from_path_list(plist)
    with ovstage.PathDictionary(other).create_path_list_from_strings(PRIMS) as other_list:
        other_query = other.query_from_path_list(other_list)  # each stage its own list
    e = Env(stage, other, paths, plist, query, other_query)
    e.write(SCALAR, 1).wait()
    e.write(VEC3, 1, "v").wait()
    e.write(RAGGED, 1, "arr", is_array=True).wait()
    stage.advance_write_floor(1).wait()
    try:
        yield e
    finally:
        gc.collect()
        for q in (query, other_query):
            if not q.released:
                q.release().wait()
        plist.release()
        other.destroy()
        stage.destroy()


@dataclass(frozen=True)
class Raises:
    """The call raises ``exc`` (with ``code`` for OvstageError / OvxError) whose text contains
    each of ``names``."""

    exc: type[BaseException]
    code: int | None = None
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rejected:
    """The call returns an Operation rejected at enqueue with ``code``, its message containing
    each of ``names``."""

    code: ErrorCode
    names: tuple[str, ...] = ()


SURROGATE = "\udcff"  # a lone surrogate: a str that has no UTF-8 encoding


def _dl(
    shape: tuple[int, ...],
    *,
    data: Any = "array",
    code: int = 2,
    bits: int = 32,
    lanes: int = 1,
    strides: tuple[int, ...] | None = None,
    ndim: int | None = None,
    device: int = 1,
) -> DLTensor:
    """A hand-built DLTensor (as a C caller could pass), over real memory unless data=None."""
    backing = np.zeros(16, np.float64)
    shape_arr = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    strides_arr = (ctypes.c_int64 * len(strides))(*strides) if strides else None
    t = DLTensor(
        data=backing.ctypes.data if data == "array" else data,
        device=DLDevice(device, 0),
        ndim=len(shape) if ndim is None else ndim,
        dtype=DLDataType(code, bits, lanes),
        shape=shape_arr if shape else None,
        strides=strides_arr,
        byte_offset=0,
    )
    t._keepalive = (backing, shape_arr, strides_arr)
    return t


class _UsedCapsuleProducer:
    """A producer whose ``__dlpack__`` hands out a capsule another consumer already took."""

    def __init__(self) -> None:
        self.array = SCALAR.copy()
        self.capsule = self.array.__dlpack__()
        ovstage.DLTensor.from_dlpack(self)  # consumes (renames) the capsule

    def __dlpack__(self, **kw: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class _NotACapsuleProducer:
    def __dlpack__(self, **kw: Any) -> Any:
        return 42

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def _released_query(e: Env) -> ovstage.Query:
    q = e.stage.query_from_path_list(e.plist)
    q.release().wait()
    return q


def _released_read_handle(e: Env) -> int:
    read = e.stage.read_attributes(e.query, ["s"], ovstage.OrdinalRange.latest(1))
    read.wait()
    handle = read.handle
    read.release().wait()
    return handle


def _other_stage_group(e: Env) -> None:
    """Release via ``e.stage`` a group fetched from another (temporary) stage."""
    with (
        ovstage.Stage("bad-inputs-third") as third,
        e.paths.create_path_list_from_strings(PRIMS) as plist,
        third.query_from_path_list(plist) as query,
    ):
        third.write_attribute(query, "s", 1, SCALAR, is_array=False).wait()
        third.advance_write_floor(1).wait()
        with third.read_attributes(query, ["s"], ovstage.OrdinalRange.latest(1)) as read:
            read.wait()
            with read.fetch_next() as group:
                e.stage.release_group(group)


def _double_group_release(e: Env) -> None:
    with e.stage.read_attributes(e.query, ["s"], ovstage.OrdinalRange.latest(1)) as read:
        read.wait()
        group = read.fetch_next()
        group.release()
        group.release()


def _negative_timeout(e: Env) -> None:
    op = e.stage.advance_write_floor(1)
    try:
        op.wait(-1)
    finally:
        op.wait()


def _double_path_list_release(e: Env) -> None:
    plist = e.paths.create_path_list_from_strings(PRIMS)
    plist.release()
    e.paths.destroy_path_list(int(plist))


def _wait_twice(e: Env) -> None:
    op = e.stage.advance_write_floor(1)
    op.wait()
    op.wait()


def _on_group(e: Env, call: Callable[[ovstage.ReadGroup], Any]) -> Any:
    """``call`` on the group of a latest read of ``s`` (released afterwards)."""
    with (
        e.stage.read_attributes(e.query, ["s"], ovstage.OrdinalRange.latest(1)) as read,
        read.fetch_next() as group,
    ):
        return call(group)


def _log_filter(text: str) -> None:
    try:
        ovstage.set_log_callback(lambda *args: None, channel_filter=text)
    finally:
        ovstage.set_log_callback(None)


def _batch(e: Env, *writes: ovstage.WriteDesc) -> Any:
    return e.stage.write_attributes(e.query, list(writes), 2)


def _stage_named(name: str) -> None:
    ovstage.Stage(name).destroy()


_BAD_NAME = "s" + SURROGATE
_SHOWN = repr(_BAD_NAME)  # how messages show the value: 's\\udcff'


CASES: list[tuple[str, Callable[[Env], Any], Raises | Rejected]] = [
    # -- wrong dtypes
    (
        "complex64",
        lambda e: e.write(np.zeros(3, np.complex64)),
        Raises(ValueError, names=("tensors[0]", "complex64")),
    ),
    ("complex128", lambda e: e.write(np.zeros(3, np.complex128)), Raises(ValueError)),
    ("object", lambda e: e.write(np.array([1, None, 2], dtype=object)), Raises(TypeError)),
    ("structured", lambda e: e.write(np.zeros(3, dtype=[("a", "f4")])), Raises(ValueError)),
    ("longdouble", lambda e: e.write(np.zeros(3, np.longdouble)), Raises(ValueError)),
    ("datetime64", lambda e: e.write(np.zeros(3, "datetime64[s]")), Raises(ValueError)),
    ("unicode", lambda e: e.write(np.array(["a", "b", "c"])), Raises(ValueError)),
    ("big-endian", lambda e: e.write(np.zeros(3, ">f4")), Raises(ValueError)),
    (
        "dl-complex",
        lambda e: e.write(_dl((3,), code=5, bits=64)),
        Rejected(ErrorCode.NOT_SUPPORTED),
    ),
    ("dl-opaque", lambda e: e.write(_dl((3,), code=3)), Rejected(ErrorCode.NOT_SUPPORTED)),
    ("dl-4-bit", lambda e: e.write(_dl((3,), code=0, bits=4)), Rejected(ErrorCode.NOT_SUPPORTED)),
    ("dl-float8", lambda e: e.write(_dl((3,), bits=8)), Rejected(ErrorCode.NOT_SUPPORTED)),
    ("dl-lanes-0", lambda e: e.write(_dl((3,), lanes=0)), Rejected(ErrorCode.INVALID_ARGUMENT)),
    ("dl-lanes-256", lambda e: e.write(_dl((3,), lanes=256)), Rejected(ErrorCode.NOT_SUPPORTED)),
    ("other-dtype-on-column", lambda e: e.write(SCALAR.astype(np.int32)), Rejected(1)),
    ("semantic-layout", lambda e: e.write(SCALAR, attribute="id", semantic=2), Rejected(1)),
    ("semantic-role-change", lambda e: e.write(SCALAR, semantic=5), Rejected(1)),
    # -- wrong shapes
    ("rows-plus-one", lambda e: e.write(np.zeros(4, np.float32)), Rejected(1)),
    ("rows-minus-one", lambda e: e.write(np.zeros(2, np.float32)), Rejected(1)),
    ("flat-N-times-L", lambda e: e.write(np.zeros(9, np.float32), attribute="v"), Rejected(1)),
    ("lanes-change", lambda e: e.write(np.zeros((3, 2), np.float32), attribute="v"), Rejected(1)),
    ("empty-trailing-dim", lambda e: e.write(np.zeros((3, 0), np.float32)), Rejected(1)),
    ("fold-over-255", lambda e: e.write(np.zeros((3, 256), np.uint8), attribute="w"), Rejected(6)),
    ("dl-ndim-0", lambda e: e.write(_dl(())), Rejected(ErrorCode.INVALID_ARGUMENT)),
    ("dl-ndim-40", lambda e: e.write(_dl((1,) * 40)), Rejected(ErrorCode.INVALID_ARGUMENT)),
    ("dl-ndim-negative", lambda e: e.write(_dl((3,), ndim=-1)), Rejected(1)),
    ("dl-negative-dim", lambda e: e.write(_dl((-3,))), Rejected(ErrorCode.INVALID_ARGUMENT)),
    ("dl-huge-dim", lambda e: e.write(_dl((1 << 60,))), Rejected(ErrorCode.INVALID_ARGUMENT)),
    ("dl-null-data", lambda e: e.write(_dl((3,), data=None)), Rejected(1)),
    ("dl-cuda-device", lambda e: e.write(_dl((3,), device=2)), Rejected(6)),
    ("dl-unknown-device", lambda e: e.write(_dl((3,), device=99)), Rejected(6)),
    (
        "extent-past-array",
        lambda e: e.write(ovstage.make_dltensor(SCALAR, shape=[4])),
        Raises(ValueError),
    ),
    (
        "negative-strides-past-array",
        lambda e: e.write(ovstage.make_dltensor(SCALAR, strides=[-1])),
        Raises(ValueError),
    ),
    ("empty-tensor-list", lambda e: e.write([]), Raises(ValueError)),
    ("two-tensors-fixed", lambda e: e.write([SCALAR, SCALAR]), Rejected(1)),
    ("is-array-onto-fixed", lambda e: e.write(SCALAR, is_array=True), Rejected(1)),
    ("fixed-onto-array", lambda e: e.write(SCALAR, attribute="arr"), Rejected(1)),
    # -- ordinals
    ("ordinal-negative", lambda e: e.write(SCALAR, -1), Raises(ValueError)),
    ("ordinal-float", lambda e: e.write(SCALAR, 2.0), Raises(TypeError)),
    ("ordinal-str", lambda e: e.write(SCALAR, "2"), Raises(TypeError)),
    ("ordinal-2**64", lambda e: e.write(SCALAR, 1 << 64), Raises(ValueError)),
    ("ordinal-at-floor", lambda e: e.write(SCALAR, 1), Rejected(ErrorCode.WRITE_FLOOR_VIOLATION)),
    ("ordinal-zero", lambda e: e.write(SCALAR, 0), Rejected(ErrorCode.WRITE_FLOOR_VIOLATION)),
    ("advance-float", lambda e: e.stage.advance_write_floor(2.5), Raises(TypeError)),
    ("advance-2**64", lambda e: e.stage.advance_write_floor(1 << 64), Raises(ValueError)),
    ("advance-scope-3", lambda e: e.stage.advance_write_floor(2, scope=3), Raises(ValueError)),
    ("range-2**64", lambda e: ovstage.OrdinalRange.latest(1 << 64), Raises(ValueError)),
    ("range-reversed", lambda e: ovstage.OrdinalRange.between(5, 4), Raises(ValueError)),
    # -- counts, index maps, masks
    ("count-2**32", lambda e: e.write(SCALAR, count=1 << 32), Raises(ValueError)),
    ("count-2**32-1", lambda e: e.write(SCALAR, count=(1 << 32) - 1), Rejected(1)),
    ("count-above-prims", lambda e: e.write(np.zeros(4, np.float32), count=4), Rejected(1)),
    ("count-zero", lambda e: e.write(SCALAR, count=0), Raises(ValueError)),
    ("count-float", lambda e: e.write(SCALAR, count=3.0), Raises(TypeError)),
    (
        "index-map-2**32",
        lambda e: e.write(SCALAR, index_map=[0, 1, 1 << 32]),
        Raises(ValueError, names=("index_map[2]", "4294967296")),
    ),
    ("index-map-past-rows", lambda e: e.write(SCALAR, index_map=[0, 1, 3]), Rejected(1)),
    ("index-map-huge", lambda e: e.write(SCALAR, index_map=[0, 1, (1 << 32) - 1]), Rejected(1)),
    (
        "index-map-negative",
        lambda e: e.write(SCALAR, index_map=[0, -1, 2]),
        Raises(ValueError, names=("index_map[1]", "-1")),
    ),
    ("index-map-float", lambda e: e.write(SCALAR, index_map=[0.0, 1.0, 2.0]), Raises(TypeError)),
    ("index-map-2d", lambda e: e.write(SCALAR, index_map=[[0, 1, 2]]), Raises(ValueError)),
    (
        "index-map-and-mask",
        lambda e: e.write(SCALAR, index_map=[0, 1, 2], mask=[7], count=3),
        Raises(ValueError),
    ),
    ("mask-without-count", lambda e: e.write(SCALAR, mask=[7]), Raises(ValueError)),
    ("mask-too-short", lambda e: e.write(SCALAR, mask=[1], count=65), Raises(ValueError)),
    ("mask-2**64", lambda e: e.write(SCALAR, mask=[1 << 64], count=3), Raises(ValueError)),
    # -- attributes and other arguments
    ("attribute-float", lambda e: e.write(SCALAR, attribute=1.5), Raises(TypeError)),
    (
        "attribute-empty",
        lambda e: e.write(SCALAR, attribute=""),
        Rejected(1, ("attribute", "must be non-empty")),
    ),
    (
        "attribute-nul",
        lambda e: e.write(SCALAR, attribute="a\x00b"),
        Rejected(1, ("attribute", "NUL", "'a\\x00b'")),
    ),
    ("attribute-forged-token", lambda e: e.write(SCALAR, attribute=1 << 60), Rejected(1)),
    ("attribute-derived", lambda e: e.write(SCALAR, attribute="usd-path"), Rejected(6)),
    ("is-array-int", lambda e: e.write(SCALAR, is_array=1), Raises(TypeError)),
    ("prim-mode-2", lambda e: e.write(SCALAR, prim_mode=2), Raises(ValueError)),
    ("insert-existing", lambda e: e.write(SCALAR, attribute="n", prim_mode=1), Rejected(4)),
    ("semantic-2**31", lambda e: e.write(SCALAR, semantic=1 << 31), Raises(ValueError)),
    ("timeout-negative", _negative_timeout, Raises(ValueError)),
    # -- deletes, scoped floors, ordinal queries
    ("delete-at-floor", lambda e: e.stage.delete_attributes(e.query, ["s"], 1), Rejected(5)),
    ("delete-derived", lambda e: e.stage.delete_attributes(e.query, ["usd-path"], 2), Rejected(6)),
    (
        "delete-attributes-none",
        lambda e: e.stage.delete_attributes(e.query, None, 2),
        Raises(TypeError),
    ),
    (
        "delete-attributes-str",
        lambda e: e.stage.delete_attributes(e.query, "s", 2),
        Raises(TypeError),
    ),
    (
        "delete-ordinal-negative",
        lambda e: e.stage.delete_attributes(e.query, ["s"], -1),
        Raises(ValueError),
    ),
    ("delete-forged-query", lambda e: e.stage.delete_attributes(987654321, ["s"], 2), Rejected(2)),
    (
        "advance-include-forged-token",
        lambda e: e.stage.advance_write_floor(2, scope=1, attributes=[1 << 60]),
        Rejected(1),
    ),
    (
        "advance-include-negative-token",
        lambda e: e.stage.advance_write_floor(2, scope=1, attributes=[-1]),
        Raises(ValueError),
    ),
    (
        "forged-ordinal-query",
        lambda e: e.stage.fetch_ordinal(987654321, 0),
        Raises(OvstageError, 2),
    ),
    # -- things that are not tensors
    ("none", lambda e: e.write(None), Raises(TypeError)),
    ("string", lambda e: e.write("abc"), Raises(TypeError)),
    ("dict", lambda e: e.write({}), Raises(TypeError)),
    ("plain-object", lambda e: e.write(object()), Raises(TypeError)),
    ("list-of-floats", lambda e: e.write([1.0, 2.0, 3.0]), Raises(TypeError)),
    ("raw-capsule", lambda e: e.write(SCALAR.__dlpack__()), Raises(TypeError)),
    ("consumed-capsule", lambda e: e.write(_UsedCapsuleProducer()), Raises(BufferError)),
    ("dlpack-not-a-capsule", lambda e: e.write(_NotACapsuleProducer()), Raises(BufferError)),
    # -- handles: forged, released, foreign, double release
    (
        "forged-query",
        lambda e: e.stage.write_attribute(987654321, "s", 2, SCALAR, is_array=False),
        Rejected(2),
    ),
    (
        "other-stage-query",
        lambda e: e.stage.write_attribute(e.other_query, "s", 2, SCALAR, is_array=False),
        Rejected(2),
    ),
    (
        "released-query-object",
        lambda e: e.stage.write_attribute(_released_query(e), "s", 2, SCALAR, is_array=False),
        Raises(OvstageError, 2),
    ),
    (
        "released-query-int",
        lambda e: e.stage.write_attribute(
            _released_query(e).handle, "s", 2, SCALAR, is_array=False
        ),
        Rejected(2),
    ),
    (
        "read-forged-query",
        lambda e: e.stage.read_attributes(
            987654321, ["s"], ovstage.OrdinalRange.latest(1)
        ).fetch_next(),
        Raises(OvstageError, 2),
    ),
    ("forged-read", lambda e: e.stage.fetch_read_next(987654321, 0), Raises(OvstageError, 2)),
    (
        "released-read",
        lambda e: e.stage.fetch_read_next(_released_read_handle(e), 0),
        Raises(OvstageError, 2),
    ),
    ("forged-release-read", lambda e: e.stage.release_read(987654321), Rejected(2)),
    ("forged-release-query", lambda e: e.stage.release_query(987654321), Rejected(2)),
    (
        "forged-path-list",
        lambda e: e.stage.query_from_path_list(987654321),
        Raises(OvstageError, 2),
    ),
    # (0.3.0: wait_op / release_op of a forged or released id return their status without
    # raising: test_v03_op_tracking.py)
    ("other-stage-group", _other_stage_group, Raises(OvstageError, 2)),
    ("double-group-release", _double_group_release, Raises(OvstageError, 2)),
    ("double-path-list-release", _double_path_list_release, Raises(OvxError, 1)),
    ("operation-waited-twice", _wait_twice, Raises(OvstageError, 2)),
    ("forged-token-to-string", lambda e: e.paths.token_to_string(1 << 60), Raises(OvxError, 1)),
    ("forged-path-to-string", lambda e: e.paths.path_to_string(1 << 60), Raises(OvxError, 1)),
    # -- unclear errors (issue 10): the message names the argument and the value given
    (
        "attribute-token-0",
        lambda e: e.write(SCALAR, attribute=0),
        Rejected(1, ("attribute: token 0 is not a valid token",)),
    ),
    (
        "attribute-token-0-general-path",
        lambda e: e.write([SCALAR], attribute=0),
        Rejected(1, ("attribute: token 0 is not a valid token",)),
    ),
    (
        "attribute-surrogate",
        lambda e: e.write(SCALAR, attribute=_BAD_NAME),
        Rejected(1, ("attribute", "UTF-8", _SHOWN)),
    ),
    (
        "attribute-surrogate-general-path",
        lambda e: e.write([SCALAR], attribute=_BAD_NAME),
        Rejected(1, ("attribute", "UTF-8", _SHOWN)),
    ),
    (
        "batch-token-0",
        lambda e: _batch(e, ovstage.WriteDesc(0, SCALAR, False)),
        Rejected(1, ("writes[0]: attribute: token 0 is not a valid token",)),
    ),
    (
        "batch-attribute-surrogate",
        lambda e: _batch(
            e, ovstage.WriteDesc("s", SCALAR, False), ovstage.WriteDesc(_BAD_NAME, SCALAR, False)
        ),
        Rejected(1, ("writes[1]: attribute", "UTF-8", _SHOWN)),
    ),
    (
        "batch-tensor-complex",
        lambda e: _batch(e, ovstage.WriteDesc("s", np.zeros(3, np.complex64), False)),
        Raises(ValueError, names=("writes[0]: tensors[0]", "complex64")),
    ),
    (
        "read-attrs-token-0",
        lambda e: e.stage.read_attributes(e.query, ["s", 0], ovstage.OrdinalRange.latest(1)).op,
        Rejected(1, ("attrs[1]: token 0 is not a valid token",)),
    ),
    (
        "read-attrs-surrogate",
        lambda e: e.stage.read_attributes(e.query, [_BAD_NAME], ovstage.OrdinalRange.latest(1)).op,
        Rejected(1, ("attrs[0]", "UTF-8", _SHOWN)),
    ),
    (
        "read-attrs-none",
        lambda e: e.stage.read_attributes(e.query, None, ovstage.OrdinalRange.latest(1)),
        Raises(TypeError, names=("attrs", "NoneType")),
    ),
    (
        "delete-token-0",
        lambda e: e.stage.delete_attributes(e.query, [0], 2),
        Rejected(1, ("attributes[0]: token 0 is not a valid token",)),
    ),
    (
        "delete-surrogate",
        lambda e: e.stage.delete_attributes(e.query, ["s", _BAD_NAME], 2),
        Rejected(1, ("attributes[1]", "UTF-8", _SHOWN)),
    ),
    (
        "advance-include-token-0",
        lambda e: e.stage.advance_write_floor(2, scope=1, attributes=[0]),
        Rejected(1, ("attributes[0]: token 0 is not a valid token",)),
    ),
    (
        "advance-include-surrogate",
        lambda e: e.stage.advance_write_floor(2, scope=1, attributes=[_BAD_NAME]),
        Rejected(1, ("attributes[0]", "UTF-8", _SHOWN)),
    ),
    (
        "floor-token-0",
        lambda e: e.stage.get_attribute_write_floor(0).op,
        Rejected(1, ("attribute: token 0 is not a valid token", "None")),
    ),
    (
        "floor-surrogate",
        lambda e: e.stage.get_attribute_write_floor(_BAD_NAME).op,
        Rejected(1, ("attribute", "UTF-8", _SHOWN)),
    ),
    (
        "floor-empty-name",
        lambda e: e.stage.get_attribute_write_floor("").op,
        Rejected(1, ("attribute", "must be non-empty")),
    ),
    (
        "query-attrs-surrogate",
        lambda e: e.stage.query(attrs=["s", _BAD_NAME]).op,
        Rejected(1, ("attrs[1]", "UTF-8", _SHOWN)),
    ),
    (
        "filter-attribute-surrogate",
        lambda e: (
            e.stage.query(
                ovstage.Filter([ovstage.Predicate(_BAD_NAME, ovstage.FilterOp.HAS, [])])
            ).op
        ),
        Rejected(1, ("filter predicate 0 attribute", "UTF-8", _SHOWN)),
    ),
    (
        "filter-value-surrogate",
        lambda e: (
            e.stage.query(
                ovstage.Filter([ovstage.Predicate("s", ovstage.FilterOp.IN, ["1", _BAD_NAME])])
            ).op
        ),
        Rejected(1, ("filter predicate 0 value 1", "UTF-8", _SHOWN)),
    ),
    (
        "filter-predicates-none",
        lambda e: ovstage.Filter(None).to_c(),  # type: ignore[arg-type]
        Raises(TypeError, names=("predicates", "NoneType")),
    ),
    (
        "map-token-0",
        lambda e: e.stage.map_attribute(e.query, 0, 2).op,
        Rejected(1, ("attribute: token 0 is not a valid token",)),
    ),
    (
        "map-attribute-surrogate",
        lambda e: e.stage.map_attribute(e.query, _BAD_NAME, 2).op,
        Rejected(1, ("attribute", "UTF-8", _SHOWN)),
    ),
    (
        "map-element-sizes-2**63",
        lambda e: e.stage.map_attribute(e.query, "arr", 2, element_sizes=[1, 1 << 63, 1]).op,
        Rejected(1, ("element_sizes[1] = 9223372036854775808",)),
    ),
    (
        "map-element-sizes-2**64-1",
        lambda e: e.stage.map_attribute(e.query, "arr", 2, element_sizes=[(1 << 64) - 1] * 3).op,
        Rejected(1, ("element_sizes[0] = 18446744073709551615",)),
    ),
    (
        "clone-source-surrogate",
        lambda e: e.stage.clone_async("/Bad/A" + SURROGATE, ["/Bad/Z"], 2),
        Rejected(1, ("source_path", "UTF-8", repr("/Bad/A" + SURROGATE))),
    ),
    (
        "clone-target-nul",
        lambda e: e.stage.clone_async("/Bad/A", ["/Bad/Y", "/Bad/Z\x00"], 2),
        Rejected(1, ("target_paths[1]", "NUL", "'/Bad/Z\\x00'")),
    ),
    (
        "clone-targets-none",
        lambda e: e.stage.clone_async("/Bad/A", None, 2),
        Raises(TypeError, names=("target_paths", "NoneType")),
    ),
    (
        "intern-token-surrogate",
        lambda e: e.paths.intern_token(_BAD_NAME),
        Raises(OvxError, 1, ("string:", "UTF-8", _SHOWN)),
    ),
    (
        "intern-path-surrogate",
        lambda e: e.paths.intern_path("/Bad/" + SURROGATE),
        Raises(OvxError, 1, ("path:", "UTF-8", repr("/Bad/" + SURROGATE))),
    ),
    (
        "intern-path-malformed",
        lambda e: e.paths.intern_path("Bad//A"),
        Raises(OvxError, 1, ("path:", "Bad//A")),
    ),
    (
        "path-list-surrogate",
        lambda e: e.paths.create_path_list_from_strings(["/Bad/A", "/Bad/" + SURROGATE]),
        Raises(OvxError, 1, ("paths[1]", "UTF-8", repr("/Bad/" + SURROGATE))),
    ),
    (
        "path-list-malformed",
        lambda e: e.paths.create_path_list_from_strings(["/Bad/A", "Bad//B"]),
        Raises(OvxError, 1, ("paths[1]", "Bad//B")),
    ),
    (
        "path-list-forged-path",
        lambda e: e.paths.create_path_list([e.paths.intern_path("/Bad/A"), 1 << 60]),
        Raises(OvxError, 1, ("paths[1]", str(1 << 60))),
    ),
    (
        "path-list-none",
        lambda e: e.paths.create_path_list_from_strings(None),
        Raises(TypeError, names=("paths", "NoneType")),
    ),
    (
        "stage-name-surrogate",
        lambda e: _stage_named(_BAD_NAME),
        Raises(ValueError, None, ("name", _SHOWN)),
    ),
    (
        "stage-name-nul",
        lambda e: _stage_named("a\x00b"),
        Raises(ValueError, None, ("name", "NUL", "'a\\x00b'")),
    ),
    (
        "log-filter-surrogate",
        lambda e: _log_filter("ovstage=" + SURROGATE),
        Raises(OvstageError, 1, ("channel_filter", "UTF-8", repr("ovstage=" + SURROGATE))),
    ),
    (
        "group-tensor-float-index",
        lambda e: _on_group(e, lambda g: g.tensor(0.0)),
        Raises(TypeError, names=("tensor index", "float")),
    ),
    (
        "group-dlpack-str-index",
        lambda e: _on_group(e, lambda g: g.dlpack("0")),
        Raises(TypeError, names=("tensor index", "str")),
    ),
    (
        "group-prim-index-str",
        lambda e: _on_group(e, lambda g: g.prim_index("0")),
        Raises(TypeError, names=("local", "str")),
    ),
]


@pytest.mark.parametrize(("call", "outcome"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_fails_cleanly_and_changes_nothing(
    env: Env, call: Callable[[Env], Any], outcome: Raises | Rejected
) -> None:
    before = env.snapshot()
    if isinstance(outcome, Raises):
        with pytest.raises(outcome.exc) as info:
            call(env)
        if outcome.code is not None:
            assert info.value.code == outcome.code, info.value  # type: ignore[attr-defined]
        message = str(info.value)
    else:
        op = call(env)
        assert isinstance(op, ovstage.Operation)
        assert (op.status, op.op_id, op.ok) == (outcome.code, 0, False), op.error_message()
        message = op.error_message()
        assert message
        with pytest.raises(OvstageError) as info:
            op.wait()
        assert info.value.code == outcome.code
    for name in outcome.names:
        assert name in message, f"{name!r} not in {message!r}"
    assert env.snapshot() == before


def test_rejected_writes_leave_no_buffers_behind(env: Env) -> None:
    """Rejections after the payload copy (floor, schema, addressing) free the copy."""
    gc.collect()
    before = env.stage._diagnostics()["buffers"]
    for _ in range(50):
        for op in (
            env.write(SCALAR, 1),  # floor
            env.write(SCALAR.astype(np.int32)),  # schema
            env.write(np.zeros(4, np.float32)),  # rows
            env.write(SCALAR, index_map=[0, 1, 3]),  # index map
        ):
            assert not op.ok
    gc.collect()
    assert env.stage._diagnostics()["buffers"] == before


# ---------------------------------------------------------------- accepted by copying


class _Producer:
    """A non-numpy DLPack producer over a numpy view (keeps its strides, even negative)."""

    def __init__(self, view: np.ndarray) -> None:
        self.view = view

    def __dlpack__(self, **kw: Any) -> Any:
        return self.view.__dlpack__(**kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


BASE6 = np.array([6.0, 5.0, 4.0, 3.0, 2.0, 1.0], np.float32)
GRID = np.arange(9, dtype=np.float32).reshape(3, 3)

COPIED: list[tuple[str, str, Callable[[], Any], list[Any]]] = [
    ("every-other", "s", lambda: BASE6[::2], [6.0, 4.0, 2.0]),
    ("negative-stride", "s", lambda: BASE6[::-2], [1.0, 3.0, 5.0]),
    ("fortran-order", "v", lambda: np.asfortranarray(GRID), GRID.tolist()),
    ("transposed", "v", lambda: GRID.T, GRID.T.tolist()),
    ("column-slice", "s", lambda: GRID[:, 1], [1.0, 4.0, 7.0]),
    ("producer-negative-stride", "s", lambda: _Producer(BASE6[::-2]), [1.0, 3.0, 5.0]),
    ("producer-transposed", "v", lambda: _Producer(GRID.T), GRID.T.tolist()),
    (
        "producer-strided-rows",
        "v",
        lambda: _Producer(np.arange(18, dtype=np.float32).reshape(6, 3)[::2]),
        np.arange(18, dtype=np.float32).reshape(6, 3)[::2].tolist(),
    ),
    (
        "dltensor-strides",
        "s",
        lambda: ovstage.make_dltensor(BASE6, shape=[3], strides=[2]),
        [6.0, 4.0, 2.0],
    ),
    ("list-input", "s", lambda: [np.array([7.0, 8.0, 9.0], np.float32)], [7.0, 8.0, 9.0]),
]


@pytest.mark.parametrize(
    ("attribute", "make", "expected"), [c[1:] for c in COPIED], ids=[c[0] for c in COPIED]
)
def test_non_contiguous_input_is_accepted_by_copying(
    env: Env, attribute: str, make: Callable[[], Any], expected: list[Any]
) -> None:
    source = make()
    env.stage.write_attribute(env.query, attribute, 2, source, is_array=False).wait()
    env.stage.advance_write_floor(2).wait()
    values, _ = env.snapshot(2)
    assert values[attribute] == [expected]


def test_packed_ragged_write_naming_billions_of_empty_rows_does_not_exhaust_memory(
    env: Env,
) -> None:
    """An empty packed payload has as many (empty) rows as its index map names: 2**32 here.
    The engine used to materialize per-row offsets for all of them and abort the process."""
    empty = np.zeros(0, np.float32)
    op = env.write(empty, attribute="packed", is_array=True, index_map=[(1 << 32) - 1, 0, 0])
    op.wait()
    env.stage.advance_write_floor(2).wait()
    with env.stage.read_attributes(env.query, ["packed"], ovstage.OrdinalRange.latest(2)) as read:
        read.wait()
        with read.fetch_next() as group:
            assert group.is_array and group.prim_count == 3
            assert [group.tensor(i).shape_tuple for i in range(3)] == [(0,), (0,), (0,)]
