"""Model-based test: random op sequences on a real stage, compared with ``model.StageModel``.

A hypothesis ``RuleBasedStateMachine`` drives one stage with writes (dense, ``count``,
``index_map``, ``mask``; UPSERT and INSERT; sometimes a conflicting schema or an invalid
addressing), floor advances, queries (duplicates and empty ones included), raw polls with
timeout 0, waits, releases and latest reads, submitting ops out of ordinal order without
waiting. Every enqueue result is checked against the model's admission rules and every read
against its sealed-snapshot semantics; teardown seals everything and compares the whole
stage.

``OVSTAGE_MODEL_EXAMPLES`` / ``OVSTAGE_MODEL_STEPS`` raise the budget for longer local runs.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import ovstage
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    precondition,
    rule,
)
from model import ReadExpectation, StageModel, Value, plan_targets
from ovstage import TIMEOUT_INFINITE, AttributeSemantic, ErrorCode, OvstageError, PrimMode

PRIMS = ("/W/p0", "/W/p1", "/W/p2", "/W/p3", "/W/p4")


@dataclass(frozen=True)
class Attr:
    """An attribute the machine writes: payload rows have ``shape[1:]`` folded into lanes."""

    name: str
    dtype: np.dtype[Any]
    row_shape: tuple[int, ...]
    semantic: int

    @property
    def lanes(self) -> int:
        """Values per row."""
        return int(np.prod(self.row_shape, dtype=np.int64))

    def schema(self, dtype: np.dtype[Any] | None = None) -> tuple[object, ...]:
        """The column layout a write with ``dtype`` creates."""
        return ((dtype or self.dtype).str, self.lanes, self.semantic)


ATTRS = (
    Attr("a", np.dtype(np.float32), (), int(AttributeSemantic.NONE)),
    Attr("b", np.dtype(np.int16), (3,), int(AttributeSemantic.POINT)),
    Attr("c", np.dtype(np.float64), (4, 4), int(AttributeSemantic.MATRIX)),
)
#: The dtype a "wrong schema" write uses instead of the attribute's own.
OTHER_DTYPE = np.dtype(np.int32)


@dataclass
class QueryRef:
    """A live query of the machine and the prim paths it was built from (in order)."""

    paths: tuple[str, ...]
    query: ovstage.Query


def _payload(uid: int, rows: int, attr: Attr, dtype: np.dtype[Any]) -> np.ndarray:
    """Distinct small-integer values: row ``r`` lane ``j`` is ``(uid*16 + r)*lanes + j``."""
    base = (uid * 16 + np.arange(rows, dtype=np.int64))[:, None] * attr.lanes
    flat = base + np.arange(attr.lanes, dtype=np.int64)[None, :]
    return flat.astype(dtype).reshape((rows, *attr.row_shape))


def _rows_as_values(payload: np.ndarray) -> list[Value]:
    return [tuple(float(x) for x in row.reshape(-1)) for row in payload]


write_shapes = st.fixed_dictionaries(
    {
        "mode": st.sampled_from(["dense", "count", "index_map", "mask"]),
        "rows_delta": st.sampled_from([0, 0, 0, 0, 1, -1]),
        "count": st.integers(1, len(PRIMS) + 1),
        "index_map": st.lists(st.integers(0, 1 << 16), min_size=1, max_size=6),
        "map_rows": st.integers(1, 6),
        "bad_map": st.integers(0, 7).map(lambda x: x == 0),
        "mask": st.integers(0, 63),
        "wrong_schema": st.integers(0, 9).map(lambda x: x == 0),
    }
)


class StageMachine(RuleBasedStateMachine):
    """Drives a stage and the model side by side."""

    queries = Bundle("queries")

    def __init__(self) -> None:
        super().__init__()
        self.stage = ovstage.Stage("model")
        self.paths = ovstage.PathDictionary(self.stage)
        self.model = StageModel()
        self.ops: dict[int, ovstage.Operation] = {}
        self.live_queries: list[QueryRef] = []
        self.uid = 0
        self.max_ordinal = 0
        self.expected = ReadExpectation()  # what the read in progress may return

    # -- helpers -------------------------------------------------------------------------

    def _make_query(self, prim_paths: tuple[str, ...]) -> QueryRef:
        # The query keeps working after its source path list is released (spec §3.4).
        with self.paths.create_path_list_from_strings(list(prim_paths)) as plist:
            query = self.stage.query_from_path_list(plist)
        ref = QueryRef(prim_paths, query)
        self.live_queries.append(ref)
        return ref

    def _track(self, op: ovstage.Operation) -> None:
        assert op.ok, f"enqueue unexpectedly rejected: {op.error_message()}"
        assert op.op_id != 0
        self.ops[op.op_id] = op

    def _finish(self, op_id: int) -> None:
        """Wait op ``op_id`` to completion (it must succeed) and tell the model."""
        op = self.ops.pop(op_id)
        op.wait()
        self.model.finished(op_id)

    def _poll_all(self) -> None:
        """Raw-poll every pending op with timeout 0; settle those that finished."""
        for op_id in list(self.ops):
            code, errors, lowest = self.stage.wait_op(op_id, 0)
            if code == ErrorCode.TIMEOUT:
                assert 0 < lowest <= op_id, (op_id, lowest)
                continue
            assert code == ErrorCode.OK
            assert errors == [], f"op {op_id} failed: {self.stage._last_op_error(errors[0])}"
            self._finish(op_id)

    def _flush(self) -> None:
        for op_id in sorted(self.ops):
            self._finish(op_id)

    def _read(self, ref: QueryRef, names: list[str], end: int) -> dict[Any, Value] | ErrorCode:
        """A latest read: values by ``(attribute, prim)``, or the read's error code."""
        values: dict[tuple[str, str], Value] = {}
        read = self.stage.read_attributes(ref.query, names, ovstage.OrdinalRange.latest(end))
        try:
            with read:
                for group in read.groups():
                    with group:
                        values.update(self._group_values(group))
        except OvstageError as exc:
            return ErrorCode(exc.code)
        finally:
            # The read's own op (failed or not) is settled so no tracking is left behind.
            if read.op is not None and read.op.ok:
                with contextlib.suppress(OvstageError):
                    read.op.wait()
        return values

    def _group_values(self, group: ovstage.ReadGroup) -> dict[tuple[str, str], Value]:
        name = self.paths.token_to_string(group.attribute)
        attr = next(a for a in ATTRS if a.name == name)
        assert not group.is_delete and not group.is_array
        assert group.tensor_count == 1
        assert group.semantic == attr.semantic
        assert group.tensor(0).dtype.lanes == attr.lanes
        expected = self.expected
        assert group.ordinal == expected.group_ordinals[name], (group.ordinal, expected)
        assert group.meta.attribute_write_floor_ordinal == expected.floor
        data = np.from_dlpack(group.dlpack(0))
        prim_paths = self.paths.get_path_strings(group.prim_list)
        out = {}
        for local in range(group.prim_count):
            row = group.data_row_index(local) if group.has_data_index_map else local
            value = tuple(float(x) for x in np.atleast_1d(data[row]))
            out[(name, prim_paths[group.prim_index(local)])] = value
        return out

    def _check_read(self, ref: QueryRef, names: list[str], end: int) -> None:
        self.expected = self.model.expect_read(ref.paths, names)
        outcome = self._read(ref, names, end)
        if isinstance(outcome, ErrorCode):
            event(f"read failed: {outcome.name}")
        else:
            event(f"read returned {min(len(outcome), 3)}+ values")
        if self.expected.uncertain:
            event("read with uncertain keys")
        problem = self.expected.check(outcome)
        assert problem is None, f"read {names} over {ref.paths}: {problem}"

    # -- rules ---------------------------------------------------------------------------

    @initialize(target=queries)
    def all_prims(self) -> QueryRef:
        """Start with a query over every prim."""
        return self._make_query(PRIMS)

    @rule(target=queries, prim_paths=st.lists(st.sampled_from(PRIMS), max_size=6))
    def new_query(self, prim_paths: list[str]) -> QueryRef:
        """A query over any prims, in any order, duplicates and empty lists included."""
        return self._make_query(tuple(prim_paths))

    @rule(
        ref=queries,
        attr=st.sampled_from(ATTRS),
        ordinal_delta=st.integers(-2, 5),
        shape=write_shapes,
        insert=st.integers(0, 4).map(lambda x: x == 0),
    )
    def write(
        self, ref: QueryRef, attr: Attr, ordinal_delta: int, shape: dict[str, Any], insert: bool
    ) -> None:
        """Enqueue a write without waiting; check admission against the model.

        The ordinal is drawn around the requested floor, so both admissions and
        ``WRITE_FLOOR_VIOLATION`` rejections are common.
        """
        if ref.query.released:
            return
        ordinal = max(0, self.model.floors.global_floor + ordinal_delta)
        self.max_ordinal = max(self.max_ordinal, ordinal)
        n = len(ref.paths)
        mode = shape["mode"]
        count = index_map = mask = None
        if mode == "count":
            count = shape["count"]
            rows = count + shape["rows_delta"]
        elif mode == "index_map":
            rows = shape["map_rows"]
            # Entries below the payload's rows, or (sometimes) one equal to it (invalid).
            index_map = [e % rows for e in shape["index_map"]]
            if shape["bad_map"]:
                index_map[-1] = rows
        elif mode == "mask":
            count = max(1, min(shape["count"], n))
            mask = [shape["mask"]]
            rows = count + shape["rows_delta"]
        else:
            rows = n + shape["rows_delta"]
        rows = max(rows, 0)
        dtype = OTHER_DTYPE if shape["wrong_schema"] else attr.dtype
        schema = attr.schema(dtype)
        # Python passes count = len(index_map) when count is omitted (spec §5.3).
        logical = len(index_map) if index_map is not None else count
        plan = plan_targets(ref.paths, rows, logical, index_map, mask)
        if self.model.schema_is_racy(attr.name, schema):
            self._flush()
        if insert and plan is not None and self.model.insert_is_racy(plan):
            self._flush()
        self.uid += 1
        payload = _payload(self.uid, rows, attr, dtype)
        errors = self.model.write_errors(attr.name, schema, ordinal, plan, insert)
        op = self.stage.write_attribute(
            ref.query,
            attr.name,
            ordinal,
            payload,
            is_array=False,
            semantic=attr.semantic,
            prim_mode=PrimMode.INSERT if insert else PrimMode.UPSERT,
            count=count,
            index_map=index_map,
            mask=mask,
        )
        event(f"write {mode}: " + (ErrorCode(op.status).name if not op.ok else "accepted"))
        if errors:
            assert op.status in errors, (op.status, errors, op.error_message())
            assert op.op_id == 0
            try:
                op.wait()
            except OvstageError as exc:
                assert exc.code == op.status
            else:
                raise AssertionError("wait() of a rejected enqueue did not raise")
            return
        assert plan is not None
        self._track(op)
        self.model.accept_write(
            op.op_id, attr.name, schema, ordinal, plan, _rows_as_values(payload)
        )
        if insert:
            # An INSERT must not race writes enqueued after it (they could create its prims).
            self._finish(op.op_id)

    @rule(ordinal_delta=st.integers(-1, 3))
    def advance(self, ordinal_delta: int) -> None:
        """Enqueue a floor advance (Scope.ALL) without waiting; lower ones are no-ops."""
        ordinal = max(0, self.model.floors.global_floor + ordinal_delta)
        self.max_ordinal = max(self.max_ordinal, ordinal)
        op = self.stage.advance_write_floor(ordinal)
        self._track(op)
        self.model.accept_advance(op.op_id, ordinal)

    @rule()
    def poll(self) -> None:
        """Raw ``wait_op(op, 0)`` on every pending op."""
        self._poll_all()

    @precondition(lambda self: bool(self.ops))
    @rule(pick=st.integers(0, 1 << 16), blocking=st.booleans())
    def wait_one(self, pick: int, blocking: bool) -> None:
        """Wait one pending op: a poll with ``Operation.wait(0)`` or a blocking wait."""
        op_id = sorted(self.ops)[pick % len(self.ops)]
        if blocking:
            self._finish(op_id)
            return
        try:
            self.ops[op_id].wait(0)
        except OvstageError as exc:
            assert exc.code == ErrorCode.TIMEOUT  # still pending, and still waitable
            return
        del self.ops[op_id]
        self.model.finished(op_id)

    @rule(
        ref=queries,
        names=st.lists(st.sampled_from([a.name for a in ATTRS]), min_size=1, max_size=3),
        end=st.integers(0, (1 << 64) - 1),
        settle=st.booleans(),
    )
    def read(self, ref: QueryRef, names: list[str], end: int, settle: bool) -> None:
        """A latest read; ``end`` is irrelevant to latest reads (spec §1.10)."""
        if ref.query.released:
            return
        if settle:
            self._poll_all()
        self._check_read(ref, names, end)

    @precondition(lambda self: len(self.live_queries) > 1)
    @rule(ref=consumes(queries))
    def release_query(self, ref: QueryRef) -> None:
        """Release a query while ops that use it may still be pending."""
        if ref.query.released:
            return
        ref.query.release().wait()
        self.live_queries.remove(ref)

    @invariant()
    def pending_ops_are_known_and_healthy(self) -> None:
        """Every op the model still tracks is known to the engine and has not failed."""
        for op_id in self.ops:
            code, errors, _ = self.stage.wait_op(op_id, 0)
            assert code in (ErrorCode.OK, ErrorCode.TIMEOUT)
            assert not errors

    def teardown(self) -> None:
        """Seal everything, compare the whole stage, check nothing is left tracked."""
        try:
            self._flush()
            op = self.stage.advance_write_floor(self.max_ordinal)
            op.wait()
            self.model.floors.advance_all(self.max_ordinal)
            with contextlib.ExitStack() as stack:
                ref = self._make_query(PRIMS)
                stack.callback(lambda: ref.query.release().wait())
                self._check_read(ref, [a.name for a in ATTRS], TIMEOUT_INFINITE)
            for live in self.live_queries:
                if not live.query.released:
                    live.query.release().wait()
            diag = self.stage._diagnostics()
            assert diag["ops"] == 0, diag
            assert diag["reads"] == 0 and diag["groups"] == 0 and diag["queries"] == 0, diag
        finally:
            self.stage.destroy()


StageMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("OVSTAGE_MODEL_EXAMPLES", "120")),
    stateful_step_count=int(os.environ.get("OVSTAGE_MODEL_STEPS", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestStageModel = StageMachine.TestCase
