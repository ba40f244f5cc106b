"""Hierarchy queries and the hierarchy computation models.

Relations come from path components over the prims the stage holds, so prims authored by
client writes have a hierarchy too (the reference tracks it only for populated and cloned
prims). ``compute_hierarchy`` implements the CPU model: ``omni:fabric:worldMatrix =
omni:xform * parent world`` (row-major float64 4x4, USD row-vector convention, translation
in elements 12..14), with ``omni:resetXformStack`` making a prim's world its local
transform; it updates prims that already carry ``omni:fabric:worldMatrix`` and never
creates that attribute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ._abi import HierarchyModelDescRaw, HierarchyResultRaw
from ._enums import HierarchyComputationModel, HierarchyRelation
from ._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError
from ._guards import as_int32, as_timeout, as_uint64
from ._handles import _Handle
from ._lib import call, native
from ._ops import Operation

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = [
    "Hierarchy",
    "HierarchyComputationModelDesc",
    "HierarchyItem",
    "HierarchyResult",
]


def _code(value: int) -> ErrorCode | int:
    try:
        return ErrorCode(value)
    except ValueError:
        return value


@dataclass(frozen=True)
class HierarchyItem:
    """The relation of one input prim: ``status`` (``OK``, or ``NOT_FOUND`` when the stage
    does not hold the prim) and the related prim paths, sorted."""

    status: int
    paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", tuple(str(p) for p in self.paths))

    @property
    def ok(self) -> bool:
        """Whether the prim was found."""
        return self.status == ErrorCode.OK


@dataclass(frozen=True)
class HierarchyResult:
    """What a hierarchy query returns: one :class:`HierarchyItem` per input path, in order."""

    ordinal: int
    items: tuple[HierarchyItem, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))

    @property
    def input_count(self) -> int:
        """Number of input paths (= number of items)."""
        return len(self.items)

    def item_paths(self, i: int) -> tuple[str, ...]:
        """The related paths of input ``i`` (``IndexError`` when out of range)."""
        if not 0 <= i < len(self.items):
            raise IndexError(f"item {i} is outside [0, {len(self.items)})")
        return self.items[i].paths


@dataclass(frozen=True)
class HierarchyComputationModelDesc:
    """An advertised hierarchy computation model."""

    model_id: int
    name: str
    description: str


class Hierarchy(_Handle):
    """A hierarchy query handle (from ``Stage.get_hierarchy_async``)."""

    _kind = "Hierarchy"

    def result(self, timeout: int = TIMEOUT_INFINITE) -> HierarchyResult:
        """The result, once computed (TIMEOUT raises OvstageError)."""
        self._check()
        return self._stage.fetch_hierarchy_result(self, timeout)

    def release(self) -> Operation:
        """Enqueue the release of the handle."""
        return self._stage.release_hierarchy(self)


def _hierarchy_handle(obj: Any) -> int:
    if isinstance(obj, Hierarchy):
        return obj._check()
    return as_uint64(obj, "hierarchy")


class _HierarchyMixin:
    """The hierarchy methods of :class:`Stage`."""

    if TYPE_CHECKING:
        _id: int

        def _require_live(self, what: str = ...) -> int: ...

        def _enqueue(self, what: str, fn: Any, *args: Any) -> Operation: ...

        def _rejected(self, exc: OvstageError) -> Operation: ...

        def _fetch_when_ready(
            self, what: str, fn: Any, kind: str, handle: int, timeout_ns: int
        ) -> Any: ...

    def get_hierarchy_computation_models(self) -> list[HierarchyComputationModelDesc]:
        """The four advertised models: cpu-incremental, gpu-incremental, gpu-global and
        runtime-default (this build computes with the CPU model; GPU ones are refused)."""
        sid = self._require_live("get_hierarchy_computation_models")
        addr, count = call(native.HierarchyComputationModels, sid).split(" ")
        models = (HierarchyModelDescRaw * int(count)).from_address(int(addr))  # kept by the engine
        return [
            HierarchyComputationModelDesc(_model(m.model_id), m.name.text(), m.description.text())
            for m in models
        ]

    def compute_hierarchy_async(
        self,
        input_ordinal: int,
        output_ordinal: int,
        model: HierarchyComputationModel | int = HierarchyComputationModel.DEFAULT_CPU,
    ) -> Operation:
        """Enqueue a world-transform computation recorded at ``output_ordinal``.

        It reads the newest committed ``omni:xform``/``omni:resetXformStack`` values (it runs
        after the pending floor advances and the pending mutations at or below
        ``input_ordinal``, which selects no snapshot), updates ``omni:fabric:worldMatrix`` of
        the prims that carry it, and records a change at ``output_ordinal`` for each row it
        changes. ``output_ordinal`` is not subject to the write floor: a sealed one is
        accepted, and readers that consumed it earlier do not see those rows.

        ``model`` gets only an int32 range check here: ``RUNTIME_DEFAULT`` is the model the
        stage captured at creation (``hierarchy_model``), GPU models are ``NOT_SUPPORTED`` in
        this build, ``INVALID`` and unknown ids ``INVALID_ARGUMENT`` (a rejected Operation).
        A floor advance over ``omni:fabric:worldMatrix`` runs the runtime-default model by
        itself when the hierarchy's inputs changed.
        """
        inp = as_uint64(input_ordinal, "input_ordinal")
        out = as_uint64(output_ordinal, "output_ordinal")
        model_id = as_int32(model, "model")
        return self._enqueue("compute_hierarchy_async", native.ComputeHierarchy, model_id, inp, out)

    def compute_hierarchy(
        self,
        input_ordinal: int,
        output_ordinal: int,
        model: HierarchyComputationModel | int = HierarchyComputationModel.DEFAULT_CPU,
    ) -> None:
        """Blocking :meth:`compute_hierarchy_async` (raises on rejection or failure)."""
        self.compute_hierarchy_async(input_ordinal, output_ordinal, model).wait()

    def get_hierarchy_async(
        self, path_list: int, ordinal: int, relation: HierarchyRelation | int
    ) -> Hierarchy:
        """Enqueue a hierarchy query over ``path_list`` (copied now).

        ``relation`` is ``PARENT`` (0 or 1 path; a top-level prim has none), ``CHILDREN`` or
        ``SIBLINGS``; an unknown relation gives a rejected handle (``INVALID_ARGUMENT``). The
        query runs after pending mutations at or below ``ordinal`` and pending floor
        advances, and sees the hierarchy as committed then: ``ordinal`` selects no snapshot
        and comes back as the result's ``ordinal``. A prim the stage does not hold has a
        ``NOT_FOUND`` item; the batch does not fail.
        """
        plist = as_uint64(path_list, "path_list")
        ord_ = as_uint64(ordinal, "ordinal")
        rel = as_int32(relation, "relation")
        stage = cast("Stage", self)
        sid = self._require_live("get_hierarchy_async")
        try:
            handle, op_id = call(native.GetHierarchy, sid, plist, ord_, rel).split(" ")
        except OvstageError as exc:
            return Hierarchy(stage, 0, self._rejected(exc))
        return Hierarchy(stage, int(handle), Operation._accepted(stage, int(op_id)))

    def get_hierarchy(
        self, path_list: int, ordinal: int, relation: HierarchyRelation | int
    ) -> HierarchyResult:
        """Blocking hierarchy query: enqueue, fetch the result, release the handle."""
        handle = self.get_hierarchy_async(path_list, ordinal, relation)
        with handle:
            handle.wait()
            return handle.result()

    def fetch_hierarchy_result(
        self, hierarchy: Hierarchy | int, timeout: int = 0
    ) -> HierarchyResult:
        """The result of a hierarchy handle: non-blocking by default, as the reference
        (``TIMEOUT`` raises while it is pending); ``timeout`` (ns, ours) waits that long.

        Paths are strings; the handle keeps its result until it is released.
        """
        handle = _hierarchy_handle(hierarchy)
        timeout_ns = as_timeout(timeout)
        addr = self._fetch_when_ready(
            "fetch_hierarchy_result", native.FetchHierarchyResult, "hierarchy", handle, timeout_ns
        )
        raw = HierarchyResultRaw.from_address(addr)
        try:
            paths = [raw.paths[k].string.text() for k in range(raw.path_count)]
            items = []
            for i in range(raw.input_count):
                item = raw.items[i]
                mine = paths[item.path_offset : item.path_offset + item.path_count]
                items.append(HierarchyItem(_code(item.status), tuple(mine)))
            return HierarchyResult(int(raw.ordinal), tuple(items))
        finally:
            call(native.ReleaseHierarchyResult, raw.hierarchy_result_id)

    def release_hierarchy(self, hierarchy: Hierarchy | int) -> Operation:
        """Enqueue the release of a hierarchy handle."""
        handle = _hierarchy_handle(hierarchy)
        op = self._enqueue("release_hierarchy", native.ReleaseHierarchy, handle)
        if op.ok and isinstance(hierarchy, Hierarchy):
            hierarchy._released = True
            hierarchy._drop_op()
        return op


def _model(model_id: int) -> HierarchyComputationModel | int:
    try:
        return HierarchyComputationModel(model_id)
    except ValueError:
        return model_id
