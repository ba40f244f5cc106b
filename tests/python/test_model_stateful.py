"""Model-based test: random op sequences on a real stage, compared with ``model.StageModel``.

A hypothesis ``RuleBasedStateMachine`` drives one stage with writes (dense, ``count``,
``index_map``, ``mask``; UPSERT and INSERT; sometimes a schema change or invalid addressing),
attribute and whole-prim deletes, floor advances (``ALL``, ``INCLUDE``, ``EXCLUDE``), queries
(duplicates and empty ones included), raw polls with timeout 0, waits, releases, latest and
range reads, and floor queries, submitting ops out of ordinal order without waiting. Every
enqueue result is checked against the model's admission rules and every read against its
sealed-snapshot and change-membership semantics; teardown seals everything and compares the
whole stage.

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
from model import TOMBSTONE, ReadExpectation, StageModel, Value, plan_targets
from ovstage import AttributeSemantic, ErrorCode, OvstageError, PrimMode, Scope

PRIMS = ("/W/p0", "/W/p1", "/W/p2", "/W/p3", "/W/p4")
# A read enumerates subsets of a key's unfinished changes; settle ops beyond this many.
MAX_UNCERTAIN = 5


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
NAMES = [a.name for a in ATTRS]
#: The dtype a "schema change" write uses instead of the attribute's own.
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
        "rows_delta": st.sampled_from([0] * 8 + [1, -1]),
        "count": st.integers(1, len(PRIMS) + 1),
        "index_map": st.lists(st.integers(0, 1 << 16), min_size=1, max_size=6),
        "map_rows": st.integers(1, 6),
        "bad_map": st.integers(0, 7).map(lambda x: x == 0),
        "mask": st.integers(0, 63),
        "schema_change": st.integers(0, 9).map(lambda x: x == 0),
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

    def _ordinal(self, delta: int, names: list[str] | None = None) -> int:
        """An ordinal ``delta`` around the highest floor of ``names`` (all attributes)."""
        floor = max(self.model.floors.effective(n) for n in names or NAMES)
        ordinal = max(0, floor + delta)
        self.max_ordinal = max(self.max_ordinal, ordinal)
        return ordinal

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

    def _expect_rejected(self, op: ovstage.Operation, errors: set[ErrorCode]) -> None:
        assert op.status in errors, (op.status, errors, op.error_message())
        assert op.op_id == 0
        try:
            op.wait()
        except OvstageError as exc:
            assert exc.code == op.status
        else:
            raise AssertionError("wait() of a rejected enqueue did not raise")

    def _read(
        self, ref: QueryRef, names: list[str], rng: ovstage.OrdinalRange
    ) -> dict[Any, Any] | ErrorCode:
        """Values (or TOMBSTONE) by ``(attribute, prim)``, or the read's error code."""
        values: dict[tuple[str, str], Any] = {}
        read = self.stage.read_attributes(ref.query, names, rng)
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

    def _group_values(self, group: ovstage.ReadGroup) -> dict[tuple[str, str], Any]:
        name = self.paths.token_to_string(group.attribute)
        attr = next(a for a in ATTRS if a.name == name)
        assert not group.is_array
        assert group.semantic == attr.semantic
        assert group.ordinal == self.expected.group_ordinals[name], (group.ordinal, name)
        assert group.meta.attribute_write_floor_ordinal == self.expected.floors[name]
        prim_paths = self.paths.get_path_strings(group.prim_list)
        prims = [prim_paths[group.prim_index(k)] for k in range(group.prim_count)]
        if group.is_delete:
            assert (group.tensor_count, group.data_count) == (0, 0)
            return {(name, p): TOMBSTONE for p in prims}
        assert group.tensor_count == 1
        assert group.tensor(0).dtype.lanes == attr.lanes
        data = np.from_dlpack(group.dlpack(0))
        out = {}
        for local, prim in enumerate(prims):
            row = group.data_row_index(local) if group.has_data_index_map else local
            out[(name, prim)] = tuple(float(x) for x in np.atleast_1d(data[row]))
        return out

    def _check_read(self, ref: QueryRef, names: list[str], span: tuple[int, int] | None) -> None:
        if self.model.pending_changes(ref.paths, names) > MAX_UNCERTAIN:
            self._poll_all()
        if self.model.pending_changes(ref.paths, names) > MAX_UNCERTAIN:
            self._flush()
        self.expected = self.model.expect_read(ref.paths, names, span)
        if span is None:
            rng = ovstage.OrdinalRange.latest(self.max_ordinal)
        else:
            rng = ovstage.OrdinalRange.between(*span)
        outcome = self._read(ref, names, rng)
        kind = "latest" if span is None else "range"
        if isinstance(outcome, ErrorCode):
            event(f"{kind} read failed: {outcome.name}")
        else:
            tombs = sum(v is TOMBSTONE for v in outcome.values())
            event(f"{kind} read returned {min(len(outcome) - tombs, 3)}+ values, {tombs} tombs")
        if any(len(o) > 1 for o in self.expected.outcomes.values()):
            event(f"{kind} read with uncertain keys")
        problem = self.expected.check(outcome)
        assert problem is None, f"{kind} read {names} {span} over {ref.paths}: {problem}"

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

        The ordinal is drawn around the floor, so both admissions and
        ``WRITE_FLOOR_VIOLATION`` rejections are common.
        """
        if ref.query.released:
            return
        model = self.model
        ordinal = self._ordinal(ordinal_delta, [attr.name])
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
        # Python passes count = len(index_map) when count is omitted (spec §5.3).
        logical = len(index_map) if index_map is not None else count
        plan = plan_targets(ref.paths, rows, logical, index_map, mask)
        # A schema change is only tried where it must be refused (a target carries the
        # attribute): elsewhere it would open a second column, which the model leaves out.
        dtype = attr.dtype
        if shape["schema_change"] and attr.name in model.schemas:
            dtype = OTHER_DTYPE
        schema = attr.schema(dtype)
        if model.schema_is_racy(attr.name, schema):
            self._flush()
        if (
            plan is not None
            and model.creates_column(attr.name, schema, plan)
            and not any(model.live((attr.name, p)) for p, _ in plan.targets)
        ):
            return
        if insert and plan is not None and model.touches_pending(p for p, _ in plan.targets):
            self._flush()
        self.uid += 1
        payload = _payload(self.uid, rows, attr, dtype)
        errors = model.write_errors(attr.name, schema, ordinal, plan, insert)
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
            self._expect_rejected(op, errors)
            return
        assert plan is not None
        self._track(op)
        model.accept_write(op.op_id, attr.name, schema, ordinal, plan, _rows_as_values(payload))
        if insert:
            # An INSERT must not race writes enqueued after it (they could create its prims).
            self._finish(op.op_id)

    @rule(
        ref=queries,
        attr=st.sampled_from(ATTRS),
        ordinal_delta=st.integers(0, 5),
        shape=write_shapes,
    )
    def upsert(self, ref: QueryRef, attr: Attr, ordinal_delta: int, shape: dict[str, Any]) -> None:
        """An UPSERT above the floor (writes are the bulk of a real workload)."""
        self.write(ref, attr, ordinal_delta, shape, False)

    @rule(
        ref=queries,
        names=st.lists(st.sampled_from(NAMES), max_size=3),
        ordinal_delta=st.integers(-1, 4),
    )
    def delete(self, ref: QueryRef, names: list[str], ordinal_delta: int) -> None:
        """Delete attributes (or, with none listed, the whole prims) and wait for it.

        Pending writes are settled first: a delete racing them is not decided by the model.
        """
        if ref.query.released:
            return
        self._flush()
        ordinal = self._ordinal(ordinal_delta, names or None)
        errors = self.model.delete_errors(ref.paths, names, ordinal)
        op = self.stage.delete_attributes(ref.query, names, ordinal)
        event(("delete attributes: " if names else "delete prims: ") + ErrorCode(op.status).name)
        if errors:
            self._expect_rejected(op, errors)
            return
        assert op.ok, op.error_message()
        op.wait()
        self.model.apply_delete(op.op_id, ref.paths, names, ordinal)

    @rule(
        ordinal_delta=st.integers(-1, 3),
        scope=st.sampled_from([Scope.ALL, Scope.ALL, Scope.INCLUDE, Scope.EXCLUDE]),
        listed=st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
    )
    def advance(self, ordinal_delta: int, scope: Scope, listed: list[str]) -> None:
        """Enqueue a floor advance without waiting; lower ones are no-ops.

        ``EXCLUDE`` raises the attributes known when it runs, so pending writes (which may
        create attributes) are settled first.
        """
        if scope == Scope.EXCLUDE and self.model.has_pending_writes():
            self._flush()
        if scope == Scope.ALL:
            listed = []
        ordinal = self._ordinal(ordinal_delta, listed or None)
        op = self.stage.advance_write_floor(ordinal, scope, [self._token(n) for n in listed])
        event(f"advance {scope.name}")
        self._track(op)
        self.model.accept_advance(op.op_id, ordinal, scope, listed)

    @rule()
    def seal_everything(self) -> None:
        """``advance_write_floor(highest ordinal used)``: every change becomes readable."""
        op = self.stage.advance_write_floor(self.max_ordinal)
        self._track(op)
        self.model.accept_advance(op.op_id, self.max_ordinal)

    def _token(self, name: str) -> int:
        return self.paths.intern_token(name)

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
        names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),
        settle=st.booleans(),
    )
    def read_latest(self, ref: QueryRef, names: list[str], settle: bool) -> None:
        """A latest read (its end ordinal is irrelevant, spec §1.10)."""
        if ref.query.released:
            return
        if settle:
            self._poll_all()
        self._check_read(ref, names, None)

    @rule(
        ref=queries,
        names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=2),
        anchor=st.integers(0, 1 << 16),
        back=st.integers(0, 3),
        length=st.integers(0, 12),
        settle=st.booleans(),
    )
    def read_range(
        self, ref: QueryRef, names: list[str], anchor: int, back: int, length: int, settle: bool
    ) -> None:
        """A range read ``[start, start + length]`` near an ordinal some change was made at."""
        if ref.query.released:
            return
        if settle:
            self._poll_all()
        ordinals = sorted(
            {c.ordinal for changes in self.model.history.values() for c in changes}
            | {self.model.floors.effective(n) for n in names}
        )
        start = max(0, ordinals[anchor % len(ordinals)] - back)
        self._check_read(ref, names, (start, start + length))

    @rule(name=st.sampled_from([*NAMES, None]))
    def check_floor(self, name: str | None) -> None:
        """``get_attribute_write_floor`` (``None``: the reported global floor)."""
        self._flush()
        with self.stage.get_attribute_write_floor(name) as query:
            got = query.fetch()
        if name is None:
            want = self.model.floors.reported_global(self.model.known)
        else:
            want = self.model.floors.effective(name)
        assert got == want, (name, got, want)

    @precondition(lambda self: len(self.live_queries) > 1)
    @rule(ref=consumes(queries))
    def release_query(self, ref: QueryRef) -> None:
        """Release a query while ops that use it may still be pending."""
        if ref.query.released:
            return
        op = ref.query.release()
        self._track(op)
        self.model.accept_other(op.op_id)
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
            self._track(op)
            self.model.accept_advance(op.op_id, self.max_ordinal)
            self._finish(op.op_id)
            with contextlib.ExitStack() as stack:
                ref = self._make_query(PRIMS)
                stack.callback(lambda: ref.query.release().wait())
                self._check_read(ref, NAMES, None)
                assert self.expected.check(self.model.sealed_state()) is None
            for live in self.live_queries:
                if not live.query.released:
                    live.query.release().wait()
            diag = self.stage._diagnostics()
            for kind in ("ops", "reads", "groups", "queries", "ordinal_queries", "maps"):
                assert diag[kind] == 0, diag
        finally:
            self.stage.destroy()


StageMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("OVSTAGE_MODEL_EXAMPLES", "150")),
    stateful_step_count=int(os.environ.get("OVSTAGE_MODEL_STEPS", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestStageModel = StageMachine.TestCase
