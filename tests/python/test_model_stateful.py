"""Model-based test: random op sequences on a real stage, compared with ``model.StageModel``.

A hypothesis ``RuleBasedStateMachine`` drives one stage with writes (dense, ``count``,
``index_map``, ``mask``; UPSERT and INSERT; sometimes of another dtype or role, which is refused
where a target carries the attribute and opens a second column of the name elsewhere),
attribute and whole-prim deletes, floor advances (``ALL``, ``INCLUDE``, ``EXCLUDE``), map
sessions (setup with the attribute's schema, another one or none; buffers checked against the
committed values, edited, committed with ``unmap_group`` or ``unmap``, or left open for
``destroy``; a commit that fails makes the final unmap return that failure), clones of
subtrees (onto fresh, existing, nested and invalid targets, merging below an absent target
root), queries (duplicates and empty ones included), raw polls with timeout 0, waits,
releases, latest and range reads, and floor queries, submitting ops out of ordinal order
without waiting. Every enqueue result and every op's outcome is checked against the model's
rules and every read against its sealed-snapshot and change-membership semantics; teardown
seals everything and compares the whole stage.

The budget comes from a settings profile: ``OVSTAGE_MODEL_PROFILE`` = ``ci`` (the default, a few
seconds) or ``long``; ``OVSTAGE_MODEL_EXAMPLES`` / ``OVSTAGE_MODEL_STEPS`` override it.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
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
from model import (
    CURRENT,
    MapSetup,
    ReadExpectation,
    ReadResult,
    Schema,
    Span,
    StageModel,
    Value,
    WritePlan,
    is_under,
    plan_targets,
)
from ovstage import AttributeSemantic, ErrorCode, OvstageError, PrimMode, Scope

#: The initial prim universe: subtrees (for clones) and leaves; clones add their copies.
PRIMS = ("/W/p0", "/W/p0/a", "/W/p0/a/b", "/W/p1", "/W/p1/a", "/W/p2", "/W/p3")
#: Clone targets that exist only once a clone (or a write) creates them.
TARGETS = ("/W/k0", "/W/k1", "/W/k2")
#: Bound on the universe clones grow (queries should keep hitting the same prims).
MAX_PRIMS = 40
# A read enumerates subsets of a key's unfinished changes; settle ops beyond this many.
MAX_UNCERTAIN = 5
#: Open map sessions at most.
MAX_SESSIONS = 3


@dataclass(frozen=True)
class Attr:
    """An attribute the machine writes: payload rows have ``shape[1:]`` folded into lanes.
    ``alt_semantic`` is the role of "role change" writes (None: the attribute has no role)."""

    name: str
    dtype: np.dtype[Any]
    row_shape: tuple[int, ...]
    semantic: int
    alt_semantic: int | None

    @property
    def lanes(self) -> int:
        """Values per row."""
        return int(np.prod(self.row_shape, dtype=np.int64))

    def schema(self, dtype: np.dtype[Any] | None = None, semantic: int | None = None) -> Schema:
        """The column layout a write with ``dtype`` and ``semantic`` goes to."""
        return (
            (dtype or self.dtype).str,
            self.lanes,
            self.semantic if semantic is None else semantic,
        )

    @property
    def zero(self) -> Value:
        return (0.0,) * self.lanes


S = AttributeSemantic
ATTRS = (
    Attr("a", np.dtype(np.float32), (), int(S.NONE), None),
    Attr("b", np.dtype(np.int16), (3,), int(S.POINT), int(S.NORMAL)),
    Attr("c", np.dtype(np.float64), (4, 4), int(S.MATRIX), int(S.FRAME)),
)
NAMES = [a.name for a in ATTRS]
#: The dtype a "schema change" write uses instead of the attribute's own.
OTHER_DTYPE = np.dtype(np.int32)


@dataclass
class QueryRef:
    """A live query of the machine and the prim paths it was built from (in order)."""

    paths: tuple[str, ...]
    query: ovstage.Query


@dataclass
class MapSession:
    """An open map session: the model's decision for its setup, and the rows it will commit."""

    map: ovstage.Map
    ref: QueryRef
    attr: Attr
    ordinal: int
    insert: bool
    setup: MapSetup
    setup_op: int
    group: ovstage.MapGroup | None = None
    rows: list[Value] = field(default_factory=list)
    committed: bool = False  # the group was committed by unmap_group
    # The codes the unmap_group commit fails with: a failure makes the session terminal, and
    # the final unmap returns it without writing.
    commit_errors: frozenset[ovstage.ErrorCode] = frozenset()


def _payload(uid: int, rows: int, attr: Attr, dtype: np.dtype[Any]) -> np.ndarray:
    """Distinct small-integer values: row ``r`` lane ``j`` is ``(uid*16 + r)*lanes + j``."""
    base = (uid * 16 + np.arange(rows, dtype=np.int64))[:, None] * attr.lanes
    flat = base + np.arange(attr.lanes, dtype=np.int64)[None, :]
    return flat.astype(dtype).reshape((rows, *attr.row_shape))


def _rows_as_values(payload: np.ndarray) -> list[Value]:
    return [tuple(float(x) for x in row.reshape(-1)) for row in payload]


def _failure_code(message: str) -> ErrorCode:
    """The status an execution failure's message starts with (plain OP_FAILED has none)."""
    name = message.split(":", 1)[0]
    return ErrorCode[name] if name in ErrorCode.__members__ else ErrorCode.OP_FAILED


write_shapes = st.fixed_dictionaries(
    {
        "mode": st.sampled_from(["dense", "count", "index_map", "mask"]),
        "rows_delta": st.sampled_from([0] * 8 + [1, -1]),
        "count": st.integers(1, 7),
        "index_map": st.lists(st.integers(0, 1 << 16), min_size=1, max_size=6),
        "map_rows": st.integers(1, 6),
        "bad_map": st.integers(0, 7).map(lambda x: x == 0),
        "mask": st.integers(0, 63),
        "schema": st.sampled_from(["own"] * 16 + ["dtype", "role"]),
    }
)
clone_targets = st.lists(
    st.tuples(
        st.sampled_from(["fresh"] * 6 + ["any", "any", "nested", "duplicate", "inside"]),
        st.integers(0, 1 << 10),
    ),
    min_size=1,
    max_size=2,
)


class StageMachine(RuleBasedStateMachine):
    """Drives a stage and the model side by side."""

    queries = Bundle("queries")
    #: The stage's history window (None: the default config, 16 ordinals).
    WINDOW: int | None = None

    def __init__(self) -> None:
        super().__init__()
        if self.WINDOW is None:
            self.stage = ovstage.Stage("model")
        else:
            config = ovstage.StageConfig(history_ordinals=self.WINDOW)
            self.stage = ovstage.Stage("model", config=config)
        self.paths = ovstage.PathDictionary(self.stage)
        self.model = StageModel(window=self.stage.history_ordinals)
        self.ops: dict[int, ovstage.Operation] = {}
        self.live_queries: list[QueryRef] = []
        self.sessions: list[MapSession] = []
        self.universe: list[str] = [*PRIMS, *TARGETS]
        self.uid = 0
        self.max_ordinal = 0
        self.expected = ReadExpectation()  # what the read in progress may return

    # -- helpers -------------------------------------------------------------------------

    def _make_query(self, prim_paths: tuple[str, ...]) -> QueryRef:
        # The query keeps working after its source path list is released.
        with self.paths.create_path_list_from_strings(list(prim_paths)) as plist:
            query = self.stage.query_from_path_list(plist)
        ref = QueryRef(prim_paths, query)
        self.live_queries.append(ref)
        return ref

    def _pick(self, i: int) -> str:
        return self.universe[i % len(self.universe)]

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

    def _settled(self, op_id: int, exc: OvstageError | None) -> None:
        """Check a finished op's outcome against the model's decision and tell the model."""
        fails = self.model.failures(op_id)
        if exc is None:
            assert not fails, f"op {op_id} succeeded; expected a failure with one of {fails}"
        else:
            assert fails, f"op {op_id} failed: {exc}"
            assert exc.code == ErrorCode.OP_FAILED, exc
            assert _failure_code(exc.message) in fails, (exc.message, fails)
            event(f"op failed as decided: {_failure_code(exc.message).name}")
        self.model.finished(op_id)

    def _finish(self, op_id: int) -> None:
        """Wait op ``op_id`` to completion and check its outcome."""
        op = self.ops.pop(op_id)
        try:
            op.wait()
        except OvstageError as exc:
            self._settled(op_id, exc)
        else:
            self._settled(op_id, None)

    def _settle(self, op_ids: list[int]) -> None:
        for op_id in op_ids:
            if op_id in self.ops:
                self._finish(op_id)

    def _poll_all(self) -> None:
        """Raw-poll every pending op with timeout 0; settle those that finished."""
        for op_id in list(self.ops):
            code, errors, lowest = self.stage.wait_op(op_id, 0)
            if code == ErrorCode.TIMEOUT:
                assert 0 < lowest <= op_id, (op_id, lowest)
                continue
            # 0.3.0: a failed op answers OP_FAILED, listing its chain's failures.
            assert code == (ErrorCode.OP_FAILED if errors else ErrorCode.OK), (code, errors)
            assert bool(errors) == bool(self.model.failures(op_id)), (op_id, errors)
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
    ) -> ReadResult | ErrorCode:
        """What the read returned, or its error code."""
        result = ReadResult()
        read = self.stage.read_attributes(ref.query, names, rng)
        try:
            with read:
                for group in read.groups():
                    with group:
                        self._collect(group, result)
        except OvstageError as exc:
            return ErrorCode(exc.code)
        finally:
            # The read's own op (failed or not) is settled so no tracking is left behind.
            if read.op is not None and read.op.ok:
                with contextlib.suppress(OvstageError):
                    read.op.wait()
        for cell in result.tombs:
            # A read naming an attribute twice returns its groups twice.
            result.tombs[cell] //= names.count(cell[0])
        return result

    def _collect(self, group: ovstage.ReadGroup, result: ReadResult) -> None:
        name = self.paths.token_to_string(group.attribute)
        attr = next(a for a in ATTRS if a.name == name)
        assert not group.is_array
        assert group.meta.attribute_write_floor_ordinal == self.expected.floors[name]
        prim_paths = self.paths.get_path_strings(group.prim_list)
        prims = list(
            dict.fromkeys(prim_paths[group.prim_index(k)] for k in range(group.prim_count))
        )
        # A group's ordinal is the newest sealed change among its keys.
        ordinals = self.expected.group_ordinals(name, prims)
        if group.is_delete:
            assert (group.tensor_count, group.data_count) == (0, 0)
            # No tensor names the column: the ordinal is one of the name's columns'.
            assert group.ordinal in ordinals.values(), (group.ordinal, ordinals)
            result.tombs.update((name, p) for p in prims)
            return
        assert group.tensor_count == 1
        tensor = group.tensor(0)  # typed layout: the stored tuple is an axis, lanes 1
        assert tensor.dtype.lanes == 1
        side = {4: 2, 9: 3, 16: 4}.get(attr.lanes)
        if group.semantic == S.MATRIX and side:
            axes: tuple[int, ...] = (side, side)
        else:
            axes = (attr.lanes,) if attr.lanes > 1 else ()
        assert tensor.shape_tuple[1:] == axes, (tensor.shape_tuple, attr.lanes, group.semantic)
        data = np.from_dlpack(group.dlpack(0))
        schema = (data.dtype.str, attr.lanes, group.semantic)
        want = ordinals[schema]
        assert group.ordinal == want, (group.ordinal, want, schema)
        for local in range(group.prim_count):
            prim = prim_paths[group.prim_index(local)]
            row = group.data_row_index(local) if group.has_data_index_map else local
            value = tuple(float(x) for x in np.asarray(data[row]).reshape(-1))
            key = (name, prim, schema)
            assert result.values.get(key, value) == value, key  # a prim listed twice
            result.values[key] = value

    def _check_read(self, ref: QueryRef, names: list[str], span: Span) -> None:
        if self.model.pending_changes(ref.paths, names) > MAX_UNCERTAIN:
            self._poll_all()
        if self.model.pending_changes(ref.paths, names) > MAX_UNCERTAIN:
            self._flush()
        self.expected = self.model.expect_read(ref.paths, names, span)
        if span.is_range:
            rng = ovstage.OrdinalRange.between(span.start, span.end)
        else:
            rng = ovstage.OrdinalRange.latest(span.end)
        outcome = self._read(ref, names, rng)
        kind = "range" if span.is_range else "latest"
        if isinstance(outcome, ErrorCode):
            event(f"{kind} read failed: {outcome.name}")
        else:
            columns = {(k[0], k[2]) for k in outcome.values}
            values, tombs = min(len(outcome.values), 3), len(outcome.tombs)
            event(f"{kind} read returned {values}+ values, {tombs} tombs")
            if len(columns) > len({c[0] for c in columns}):
                event(f"{kind} read returned several columns of one name")
        if any(len(o) > 1 for o in self.expected.outcomes.values()):
            event(f"{kind} read with uncertain keys")
        floors = [self.model.floors.effective(n) for n in names]
        if not span.is_range and span.end < max(floors):
            status = outcome.name if isinstance(outcome, ErrorCode) else "served"
            event(f"lagging latest read (window {self.model.window}): {status}")
        problem = self.expected.check(outcome)
        assert problem is None, f"{kind} read {names} {span} over {ref.paths}: {problem}"

    # -- rules ---------------------------------------------------------------------------

    @initialize(target=queries)
    def all_prims(self) -> QueryRef:
        """Start with a query over every initial prim."""
        return self._make_query(PRIMS)

    @rule(target=queries, picks=st.lists(st.integers(0, 1 << 10), max_size=6))
    def new_query(self, picks: list[int]) -> QueryRef:
        """A query over any prims, in any order, duplicates and empty lists included."""
        return self._make_query(tuple(self._pick(i) for i in picks))

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
        # Python passes count = len(index_map) when count is omitted.
        logical = len(index_map) if index_map is not None else count
        plan = plan_targets(ref.paths, rows, logical, index_map, mask)
        # Another dtype or role: refused where a target carries the attribute in another
        # column, a second column of the name elsewhere.
        dtype, semantic = attr.dtype, attr.semantic
        if shape["schema"] == "dtype":
            dtype = OTHER_DTYPE
        elif shape["schema"] == "role" and attr.alt_semantic is not None:
            semantic = attr.alt_semantic
        schema = attr.schema(dtype, semantic)
        if model.schema_is_racy(attr.name, schema):
            self._flush()
        prims = [p for p, _ in plan.targets] if plan is not None else []
        # A map setup, an INSERT commit or a clone reading or creating these prims runs first.
        self._settle(model.pending_touching(prims, locking_only=True))
        if insert:
            self._settle(model.pending_touching(prims))
        self.uid += 1
        payload = _payload(self.uid, rows, attr, dtype)
        enqueue_errors, run_errors = model.write_errors(attr.name, schema, ordinal, plan, insert)
        op = self.stage.write_attribute(
            ref.query,
            attr.name,
            ordinal,
            payload,
            is_array=False,
            semantic=semantic,
            prim_mode=PrimMode.INSERT if insert else PrimMode.UPSERT,
            count=count,
            index_map=index_map,
            mask=mask,
        )
        event(f"write {mode}: " + (ErrorCode(op.status).name if not op.ok else "accepted"))
        if enqueue_errors:
            self._expect_rejected(op, enqueue_errors | run_errors)
            return
        if run_errors and not op.ok:
            # Known at enqueue when nothing pending could change it (ordinal conflicts of
            # writes are always reported by the op).
            self._expect_rejected(op, run_errors - {ErrorCode.WRITE_FLOOR_VIOLATION})
            return
        if run_errors:
            self._track(op)
            model.accept_other(op.op_id, fails=run_errors)
            event("write refused when it runs")
            if insert:
                self._finish(op.op_id)
            return
        assert plan is not None
        if schema != attr.schema() and plan.targets:
            event("write opens or extends a second column")
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

        Pending ops are settled first: a delete racing them is not decided by the model.
        """
        if ref.query.released:
            return
        self._flush()
        ordinal = self._ordinal(ordinal_delta, names or None)
        errors = self.model.delete_errors(ref.paths, names, ordinal)
        op = self.stage.delete_attributes(ref.query, names, ordinal)
        event(("delete attributes: " if names else "delete prims: ") + ErrorCode(op.status).name)
        if errors and op.ok:
            # Nothing is pending, so the refusal is known at enqueue; either channel is fine.
            self._track(op)
            self.model.accept_other(op.op_id, fails=errors)
            self._finish(op.op_id)
            return
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

        ``EXCLUDE`` raises the attributes known when it runs, so pending ops (which may
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

    # -- map sessions --------------------------------------------------------------------

    @precondition(lambda self: len(self.sessions) < MAX_SESSIONS)
    @rule(
        ref=queries,
        attr=st.sampled_from(ATTRS),
        variant=st.sampled_from(["own"] * 5 + ["none", "dtype", "role"]),
        ordinal_delta=st.integers(-1, 8),
        insert=st.integers(0, 5).map(lambda x: x == 0),
    )
    def open_map(
        self, ref: QueryRef, attr: Attr, variant: str, ordinal_delta: int, insert: bool
    ) -> None:
        """Enqueue a map session; the model decides its setup (nothing touching its prims is
        left pending, and later mutations touching them wait for the setup)."""
        if ref.query.released:
            return
        dtype, semantic = attr.dtype, attr.semantic
        if variant == "dtype":
            dtype = OTHER_DTYPE
        elif variant == "role" and attr.alt_semantic is not None:
            semantic = attr.alt_semantic
        schema = None if variant == "none" else attr.schema(dtype, semantic)
        ordinal = self._ordinal(ordinal_delta, [attr.name])
        self._settle(self.model.pending_touching(ref.paths))
        mapped = self.stage.map_attribute(
            ref.query,
            attr.name,
            ordinal,
            prim_mode=PrimMode.INSERT if insert else PrimMode.UPSERT,
            dtype=None if schema is None else ovstage.numpy_to_dldatatype(dtype, attr.lanes),
            semantic=0 if schema is None else semantic,
        )
        if ordinal <= self.model.floors.effective(attr.name):
            assert mapped.handle == 0
            assert mapped.op is not None
            self._expect_rejected(mapped.op, {ErrorCode.WRITE_FLOOR_VIOLATION})
            event("map rejected: WRITE_FLOOR_VIOLATION")
            return
        assert mapped.op is not None
        setup = self.model.plan_map(attr.name, schema, ordinal, ref.paths, insert, attr.zero)
        self._track(mapped.op)
        self.model.accept_other(mapped.op.op_id, fails=setup.errors, locked=ref.paths)
        self.sessions.append(
            MapSession(
                mapped, ref, attr, ordinal, insert, setup, mapped.op.op_id, rows=setup.prefill
            )
        )
        event(f"map {variant}: " + ("setup fails" if setup.errors else "setup succeeds"))

    @precondition(lambda self: bool(self.sessions))
    @rule(pick=st.integers(0, 1 << 8), edits=st.integers(0, 63))
    def fetch_map(self, pick: int, edits: int) -> None:
        """Fetch a session's group; check its layout and starting values; edit some rows
        (bit ``i`` of ``edits`` changes row ``i``)."""
        session = self.sessions[pick % len(self.sessions)]
        if session.group is not None:
            return
        try:
            group = session.map.fetch_next()
        except OvstageError as exc:
            assert session.setup.errors, f"map setup failed: {exc}"
            assert exc.code in session.setup.errors, (exc, session.setup.errors)
            self._commit(session, final=True)  # ends the failed session (the unmap fails too)
            return
        assert not session.setup.errors, "a map setup the model expects to fail succeeded"
        assert group is not None
        assert session.setup.schema is not None
        n, lanes = len(session.ref.paths), session.attr.lanes
        assert group.prim_count == n
        assert not group.has_data_index_map
        assert group.tensor_count == 1
        listed = self.paths.get_path_strings(group.prim_list)
        assert tuple(listed[group.prim_index(k)] for k in range(n)) == session.ref.paths
        rows = np.from_dlpack(group.dlpack(0)).reshape(n, lanes)
        assert rows.dtype.str == session.setup.schema[0]
        self.uid += 1
        fresh = _payload(self.uid, n, session.attr, rows.dtype).reshape(n, lanes)
        session.rows = []
        for i in range(n):
            value = tuple(float(x) for x in rows[i])
            assert value == session.setup.prefill[i], (i, value, session.setup.prefill[i])
            if edits >> i & 1:
                rows[i] = fresh[i]
            session.rows.append(tuple(float(x) for x in rows[i]))
        assert session.map.fetch_next() is None
        session.group = group
        event("map group checked")

    @precondition(lambda self: bool(self.sessions))
    @rule(pick=st.integers(0, 1 << 8), final=st.booleans())
    def commit_map(self, pick: int, final: bool) -> None:
        """Commit a session's group with ``unmap_group``, or end it with ``unmap()``."""
        session = self.sessions[pick % len(self.sessions)]
        if not final and (session.group is None or session.committed):
            final = True
        self._commit(session, final)

    def _commit(self, session: MapSession, final: bool) -> None:
        model = self.model
        # The handle forgets its setup op at unmap: settle it first. The commit re-checks the
        # floor, schemas and (INSERT) prims when it runs: settle the ops that could change them.
        self._settle([session.setup_op])
        self._settle(model.pending_touching(session.ref.paths))
        plan = WritePlan(())
        if not session.committed:
            plan = WritePlan(tuple((p, i) for i, p in enumerate(session.ref.paths)))
        errors = set(session.setup.errors)
        if not errors and not session.committed:
            assert session.setup.schema is not None
            enqueue_errors, run_errors = model.write_errors(
                session.attr.name, session.setup.schema, session.ordinal, plan, session.insert
            )
            errors = enqueue_errors | run_errors  # a commit is refused by its op
        if final and session.commit_errors:
            errors = set(session.commit_errors)  # terminal: the remembered failure
        if final:
            op = session.map.unmap()
            self.sessions.remove(session)
            assert session.map.released
        else:
            assert session.group is not None
            op = session.map.unmap_group(session.group)
            session.committed, session.commit_errors = True, frozenset(errors)
        self._track(op)
        if errors:
            model.accept_other(op.op_id, fails=errors)
            event("map commit fails")
            return
        assert session.setup.schema is not None
        model.accept_write(
            op.op_id,
            session.attr.name,
            session.setup.schema,
            session.ordinal,
            plan,
            session.rows,
            locked=session.ref.paths if session.insert else (),
        )
        event("map commit" + (" (unfetched)" if session.group is None else ""))

    # -- clones --------------------------------------------------------------------------

    @rule(
        source=st.integers(0, 1 << 10),
        held=st.integers(0, 3).map(lambda x: x != 0),
        target_kinds=clone_targets,
        ordinal_delta=st.integers(-2, 5),
    )
    def clone(
        self, source: int, held: bool, target_kinds: list[tuple[str, int]], ordinal_delta: int
    ) -> None:
        """Clone a subtree (mostly of a prim that exists) onto one or two targets."""
        existing = [p for p in self.universe if p in self.model.prims]
        src = existing[source % len(existing)] if held and existing else self._pick(source)
        dsts: list[str] = []
        for kind, pick in target_kinds:
            if kind == "fresh":
                dsts.append(TARGETS[pick % len(TARGETS)])
            elif kind == "nested" and dsts:
                dsts.append(dsts[0] + "/a")
            elif kind == "duplicate" and dsts:
                dsts.append(dsts[0])
            elif kind == "inside":
                dsts.append(src + "/a")
            else:
                dsts.append(self._pick(pick))
        ordinal = self._ordinal(ordinal_delta)
        if len(set(dsts)) < len(dsts) or any(is_under(d, src) for d in dsts):
            op = self.stage.clone_async(src, dsts, ordinal)
            self._expect_rejected(op, {ErrorCode.INVALID_ARGUMENT})
            event("clone rejected at enqueue")
            return
        region = [src, *dsts]
        self._settle(self.model.pending_in_region(region))
        outcome = self.model.plan_clone(src, dsts, ordinal)
        copies = [c for row in outcome.mapped for c in row if c not in self.universe]
        if len(self.universe) + len(copies) > MAX_PRIMS:
            return
        self.universe.extend(dict.fromkeys([*(d for d in dsts if d not in self.universe), *copies]))
        op = self.stage.clone_async(src, dsts, ordinal)
        self._track(op)
        if outcome.errors:
            self.model.accept_other(op.op_id, fails=outcome.errors, roots=region)
            event("clone fails: " + "/".join(sorted(e.name for e in outcome.errors)))
            return
        self.model.accept_clone(op.op_id, outcome, ordinal, region)
        event(f"clone of {len(outcome.subtree)} prims onto {len(dsts)} targets")

    # -- waits, reads, floors ------------------------------------------------------------

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
            if exc.code == ErrorCode.TIMEOUT:
                return  # still pending, and still waitable
            del self.ops[op_id]
            self._settled(op_id, exc)
            return
        del self.ops[op_id]
        self._settled(op_id, None)

    def _near_change(self, names: list[str], anchor: int, shift: int) -> int:
        """An ordinal ``shift`` away from one some change was made at (or a floor)."""
        ordinals = sorted(
            {c.ordinal for changes in self.model.history.values() for c in changes}
            | {self.model.floors.effective(n) for n in names}
        )
        return max(0, ordinals[anchor % len(ordinals)] + shift)

    @rule(
        ref=queries,
        names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),
        anchor=st.integers(0, 1 << 16),
        shift=st.integers(-2, 2),
        current=st.integers(0, 5).map(lambda x: x == 0),
        settle=st.booleans(),
    )
    def read_latest(
        self, ref: QueryRef, names: list[str], anchor: int, shift: int, current: bool, settle: bool
    ) -> None:
        """A snapshot read ``latest(N)``, N near an ordinal some change was made at (or
        current values)."""
        if ref.query.released:
            return
        if settle:
            self._poll_all()
        end = CURRENT if current else self._near_change(names, anchor, shift)
        self._check_read(ref, names, Span(end))

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
        start = self._near_change(names, anchor, -back)
        self._check_read(ref, names, Span(start + length, start, is_range=True))

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

    @rule()
    def check_oldest_preserved(self) -> None:
        """``get_oldest_preserved_ordinal``: where the history window starts."""
        self._flush()
        with self.stage.get_oldest_preserved_ordinal() as query:
            got = query.fetch()
        want = self.model.oldest_preserved() if self.model.window else 0
        assert got == want, (got, want, self.model.window)
        event(f"oldest preserved ordinal (window {self.model.window}): {'> 0' if got else '0'}")

    @precondition(lambda self: len(self.live_queries) > 1)
    @rule(ref=consumes(queries))
    def release_query(self, ref: QueryRef) -> None:
        """Release a query while ops that use it may still be pending."""
        if ref.query.released or any(s.ref is ref for s in self.sessions):
            return  # an open map session commits through its query
        op = ref.query.release()
        self._track(op)
        self.model.accept_other(op.op_id)
        self.live_queries.remove(ref)

    @invariant()
    def pending_ops_are_known_and_healthy(self) -> None:
        """Every op the model still tracks is known to the engine, and has failed only if the
        model decided it fails."""
        for op_id in self.ops:
            code, errors, _ = self.stage.wait_op(op_id, 0)
            assert code in (ErrorCode.OK, ErrorCode.TIMEOUT, ErrorCode.OP_FAILED)
            assert (code == ErrorCode.OP_FAILED) == bool(errors), (op_id, code, errors)
            assert not errors or self.model.failures(op_id), (op_id, errors)

    def teardown(self) -> None:
        """End the map sessions (leaving every other one open for ``destroy``), seal
        everything, compare the whole stage, check nothing else is left tracked."""
        try:
            left_open = self.sessions[1::2]
            for session in self.sessions[::2]:
                self._commit(session, final=True)
            self._flush()
            op = self.stage.advance_write_floor(self.max_ordinal)
            self._track(op)
            self.model.accept_advance(op.op_id, self.max_ordinal)
            self._finish(op.op_id)
            with contextlib.ExitStack() as stack:
                ref = self._make_query(tuple(self.universe))
                stack.callback(lambda: ref.query.release().wait())
                self._check_read(ref, NAMES, Span(CURRENT))
                sealed = self.model.sealed_state()
                assert self.expected.check(sealed) is None
            for live in self.live_queries:
                if not live.query.released:
                    live.query.release().wait()
            diag = self.stage._diagnostics()
            for kind in ("ops", "reads", "queries", "ordinal_queries"):
                assert diag[kind] == 0, diag
            # What is left: the sessions left open, and their fetched groups.
            assert diag["maps"] == len(left_open), diag
            assert diag["groups"] == sum(s.group is not None for s in left_open), diag
        finally:
            self.stage.destroy()


def _register_profiles() -> settings:
    common: dict[str, Any] = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
    settings.register_profile(
        "ovstage-model-ci", max_examples=100, stateful_step_count=40, **common
    )
    settings.register_profile(
        "ovstage-model-long", max_examples=2000, stateful_step_count=80, **common
    )
    chosen = settings.get_profile("ovstage-model-" + os.environ.get("OVSTAGE_MODEL_PROFILE", "ci"))
    overrides: dict[str, int] = {}
    if "OVSTAGE_MODEL_EXAMPLES" in os.environ:
        overrides["max_examples"] = int(os.environ["OVSTAGE_MODEL_EXAMPLES"])
    if "OVSTAGE_MODEL_STEPS" in os.environ:
        overrides["stateful_step_count"] = int(os.environ["OVSTAGE_MODEL_STEPS"])
    return settings(chosen, **overrides)


class ShortWindowMachine(StageMachine):
    """A window of 2 ordinals: lagging reads fall below its frontier and meet its boundary."""

    WINDOW = 2


class ParityMachine(StageMachine):
    """Window 0: the reference's answers (any change after the end refuses a snapshot)."""

    WINDOW = 0


StageMachine.TestCase.settings = _register_profiles()
TestStageModel = StageMachine.TestCase
# The window variants run fewer examples: the default machine covers the rest of the rules.
_variant = settings(
    _register_profiles(), max_examples=max(1, _register_profiles().max_examples // 3)
)
ShortWindowMachine.TestCase.settings = _variant
ParityMachine.TestCase.settings = _variant
TestStageModelShortWindow = ShortWindowMachine.TestCase
TestStageModelParity = ParityMachine.TestCase
