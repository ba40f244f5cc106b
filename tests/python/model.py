"""A small pure-Python reference model of an ovstage stage.

The model knows nothing of the engine. It keeps, per key ``(attribute, prim, schema)`` (one
*cell* of one column: an attribute name may have several columns, one per storage schema and
role, on different prims), every accepted change (ordinal, submission sequence, value or
:data:`TOMBSTONE`), the requested write floors (global and per attribute), which prims exist
and which accepted ops are known to have finished. From that it predicts:

* **admission**: the set of status codes a write or delete may be rejected with
  (``WRITE_FLOOR_VIOLATION`` at or below the effective floor or, under the ordinal admission
  policy, below (NONDECREASING) or at (STRICTLY_INCREASING) a change of the cell or a
  lifecycle event of the prim; ``INVALID_ARGUMENT`` for bad addressing or a schema change on
  a prim that carries the attribute in another column; ``PRIM_NOT_FOUND`` for INSERT onto an
  existing prim). Several may apply and the engine may report any one of them, so the model
  returns them all; empty means "accepted". Floors and bad requests are refused at enqueue;
  the others may be refused at enqueue or by the op when it runs (ordinal conflicts of
  writes always by the op), depending on what is pending;
* **outcomes** of ops that only fail when they run: map setups (the schema they map, the
  committed values their buffers start with), map commits (a failed commit makes the
  session's final unmap fail the same way) and clones (subtree copies; a missing source, an
  existing target root, a floor at or above the ordinal, a merge into an existing prim below
  an absent target root that carries a cloned attribute in another schema fail them whole);
* **floors**: ``Scope.ALL`` / ``INCLUDE`` / ``EXCLUDE`` advances, effective floors
  ``max(G, F[a])`` and the reported global floor (minimum over known attributes);
* **reads**: snapshots (``latest(N)``: the state at N) and change ranges, under our read
  admission (README "Where we differ"): every selected key gets the set of outcomes it may
  have (a value, a tombstone, absent, or ``WRITE_FLOOR_VIOLATION`` / ``OUT_OF_RANGE`` failing
  the read); when every key is certain, the read's own status follows (first failing
  attribute in request order, ``WRITE_FLOOR_VIOLATION`` before ``OUT_OF_RANGE``). A change
  whose op is not known to have finished may or may not have been applied when the read runs;
  the outcome sets cover both.

Every op's outcome is decided when it is enqueued: the engine orders conflicting mutations in
submission order (README "Ops run in parallel"), so an outcome depends on the ops submitted
before it, which the model knows. Callers keep the model exact by avoiding the races it does
not decide for reads and map buffers: an INSERT, a delete, a map setup or commit, or a
clone racing pending ops on the prims it reads or creates, a schema change racing a pending
write of another schema, an ``EXCLUDE`` advance racing pending writes that create attributes,
a mutation racing a pending map setup or clone that reads its prims.
``test_model_stateful.py`` settles ops before those.

A key has a *row* once a write to it was applied (deletes never create rows): only keys with
rows take part in reads. A delete tombstones the keys that have a value ordered before it (in
(ordinal, submission) order); it also names cells without a row, which the policy checks later
mutations against (and, under FLOOR_ONLY, which a lower-ordinal write running after it still
ends under).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import combinations

from ovstage import ErrorCode, Scope

__all__ = [
    "ABSENT",
    "CURRENT",
    "TOMBSTONE",
    "Change",
    "CloneOutcome",
    "Floors",
    "LifecycleEvent",
    "MapSetup",
    "Outcome",
    "ReadExpectation",
    "ReadResult",
    "Span",
    "StageModel",
    "Value",
    "WritePlan",
    "is_under",
    "plan_targets",
    "rebase",
]

# Bound on a write's targets, to order the elements of one write after each other.
_MAX_TARGETS = 1 << 20

#: One value: the row's components as Python numbers (a 1-lane value is a 1-tuple).
Value = tuple[float, ...]
#: A column's schema: (numpy dtype string, lanes, semantic).
Schema = tuple[str, int, int]
#: A cell: (attribute, prim).
Cell = tuple[str, str]
#: A key: one cell in the column of one schema.
Key = tuple[str, str, Schema]


class _Marker(Enum):
    TOMBSTONE = "tombstone"
    ABSENT = "absent"


#: The value of a delete change, and a read outcome (a tombstone group's key).
TOMBSTONE = _Marker.TOMBSTONE
#: A read outcome: the key is not in any group.
ABSENT = _Marker.ABSENT

#: What a read returns for one key: a value, TOMBSTONE, ABSENT, or the code failing the read.
Outcome = Value | _Marker | ErrorCode


def is_under(path: str, ancestor: str) -> bool:
    """Whether ``path`` is ``ancestor`` or below it (by path components)."""
    return path == ancestor or path.startswith(ancestor + "/")


def rebase(path: str, source: str, target: str) -> str:
    """``path`` (inside ``source``) moved under ``target``."""
    return target + path[len(source) :]


@dataclass(frozen=True)
class Change:
    """One accepted change of a key: ``value`` (or TOMBSTONE) at ``ordinal``; ``seq`` orders
    equal ordinals; ``op`` is the op that makes it."""

    ordinal: int
    seq: int
    op: int
    value: Value | _Marker

    @property
    def is_write(self) -> bool:
        """Whether the change writes a value (rather than deleting)."""
        return self.value is not TOMBSTONE


@dataclass
class Floors:
    """Requested write floors: the global floor G and per-attribute floors F[a]."""

    global_floor: int = 0
    attr: dict[str, int] = field(default_factory=dict)

    def effective(self, attribute: str) -> int:
        """``max(G, F[a])``: the floor that applies to ``attribute``."""
        return max(self.global_floor, self.attr.get(attribute, 0))

    def advance(
        self, ordinal: int, scope: Scope, listed: Sequence[str], known: Iterable[str]
    ) -> None:
        """One ``advance_write_floor``; floors only rise."""
        if scope == Scope.INCLUDE:
            targets: Iterable[str] = listed
        elif scope == Scope.ALL or not listed:
            self.global_floor = max(self.global_floor, ordinal)
            targets = known
        else:
            targets = [a for a in known if a not in listed]
        for a in targets:
            self.attr[a] = max(self.attr.get(a, 0), ordinal)

    def reported_global(self, known: Iterable[str]) -> int:
        """The reported global floor: the minimum over known attributes (G when none)."""
        floors = [self.effective(a) for a in known]
        return min(floors) if floors else self.global_floor


@dataclass(frozen=True)
class WritePlan:
    """Which prims a write touches and which payload row each one takes, in query order."""

    targets: tuple[tuple[str, int], ...]


def plan_targets(
    paths: Sequence[str],
    rows: int,
    count: int | None,
    index_map: Sequence[int] | None,
    mask: Sequence[int] | None,
) -> WritePlan | None:
    """Resolve a fixed-size write's addressing, or None when it is invalid.

    ``count`` addresses the leading prims; ``index_map[i]`` is the payload row of logical
    element ``i``; ``mask`` bit ``i`` (LSB first) selects logical element ``i``. Invalid:
    ``count`` above the query's prim count, an ``index_map`` entry not below the payload's
    rows, or (without an index map) a row count that differs from the logical count.
    """
    logical = len(paths) if count is None else count
    if logical > len(paths):
        return None
    if logical == 0:
        return WritePlan(())
    if index_map is not None:
        if any(entry >= rows for entry in index_map[:logical]):
            return None
    elif rows != logical:
        return None
    targets = []
    for i in range(logical):
        if mask is not None and not (mask[i // 64] >> (i % 64)) & 1:
            continue
        targets.append((paths[i], index_map[i] if index_map is not None else i))
    return WritePlan(tuple(targets))


@dataclass
class ReadResult:
    """What a read returned: values by key (the schema from the group's dtype and semantic),
    and the number of tombstone groups naming each cell (a tombstone group has no tensor to
    name its column)."""

    values: dict[Key, Value] = field(default_factory=dict)
    tombs: Counter[Cell] = field(default_factory=Counter)


#: The end ordinal of a read of current values (no change comes after it).
CURRENT = (1 << 64) - 1


@dataclass(frozen=True)
class Span:
    """What a read asks for: the snapshot at ``end`` or (``is_range``) the changes in
    ``[start, end]``."""

    end: int
    start: int = 0
    is_range: bool = False


@dataclass
class ReadExpectation:
    """What a read may return: per key, the set of possible outcomes.

    ``sealed_top`` is each selected key's newest sealed change (a group's ``ordinal`` is the
    newest of its keys'), ``floors`` each attribute's effective floor (a group's ``meta``
    floor), ``attributes`` the requested names in order.
    """

    outcomes: dict[Key, set[Outcome]] = field(default_factory=dict)
    sealed_top: dict[Key, int] = field(default_factory=dict)
    floors: dict[str, int] = field(default_factory=dict)
    attributes: list[str] = field(default_factory=list)

    def group_ordinals(self, attribute: str, prims: Iterable[str]) -> dict[Schema, int]:
        """Per schema, the ordinal a group of ``attribute`` over ``prims`` carries."""
        out: dict[Schema, int] = {}
        chosen = set(prims)
        for key, top in self.sealed_top.items():
            if key[0] == attribute and key[1] in chosen:
                out[key[2]] = max(out.get(key[2], 0), top)
        return out

    def failure(self) -> tuple[bool, ErrorCode | None]:
        """``(decided, status)``: once every key's outcome is certain, the read's failure (the
        first attribute with a failing key, ``WRITE_FLOOR_VIOLATION`` before
        ``OUT_OF_RANGE``), or None for success."""
        if any(len(options) != 1 for options in self.outcomes.values()):
            return False, None
        for attribute in self.attributes:
            found = set().union(*(o for k, o in self.outcomes.items() if k[0] == attribute))
            for code in (ErrorCode.WRITE_FLOOR_VIOLATION, ErrorCode.OUT_OF_RANGE):
                if code in found:
                    return True, code
        return True, None

    def check(self, result: ReadResult | ErrorCode) -> str | None:
        """Return why ``result`` (or the read's error code) is impossible, or None when the
        model allows it."""
        decided, want = self.failure()
        if isinstance(result, ErrorCode):
            if decided and result != want:
                return f"read failed with {result.name}, expected {want}"
            if not any(result in options for options in self.outcomes.values()):
                return f"read failed with {result.name}, which no selected key can cause"
            return None
        if decided and want is not None:
            return f"read succeeded, expected {want.name}"
        cells: dict[Cell, list[Key]] = {}
        for key in self.outcomes:
            cells.setdefault(key[:2], []).append(key)
        for key, value in result.values.items():
            if key not in self.outcomes:
                return f"a value for a key the model never saw written: {key}"
            if value not in self.outcomes[key]:
                return f"{key}: got {value}, expected one of {self.outcomes[key]}"
        extra = [cell for cell in result.tombs if cell not in cells]
        if extra:
            return f"tombstone groups for cells the model never saw written: {extra}"
        for cell, keys in cells.items():
            # Keys without a value took no part in the read (absent) or came back in one of
            # the cell's tombstone groups.
            rest = [k for k in keys if k not in result.values]
            for key in rest:
                if not self.outcomes[key] & {ABSENT, TOMBSTONE}:
                    return f"{key}: not returned, expected one of {self.outcomes[key]}"
            must = sum(1 for k in rest if ABSENT not in self.outcomes[k])
            can = sum(1 for k in rest if TOMBSTONE in self.outcomes[k])
            if not must <= result.tombs[cell] <= can:
                return f"{cell}: {result.tombs[cell]} tombstone groups, expected {must}..{can}"
        return None


@dataclass
class MapSetup:
    """What a map session's setup decides: the schema it maps and the values its buffers start
    with (the committed values, zeros where there is none), or the codes it fails with."""

    schema: Schema | None
    prefill: list[Value]
    errors: set[ErrorCode]


@dataclass
class CloneOutcome:
    """What a clone decides: the source subtree, each target's copy of every subtree prim, or
    the codes it fails with."""

    subtree: list[str]
    mapped: list[list[str]]
    errors: set[ErrorCode]


@dataclass
class _Op:
    """An accepted op the model tracks until it is known to have finished."""

    keys: tuple[Key, ...] = ()  # cells it changes (its changes are in history)
    creates: tuple[str, ...] = ()  # prims that exist once it finished
    fails: frozenset[ErrorCode] = frozenset()  # the codes it fails with (empty: succeeds)
    # Prims (and subtrees) it reads or creates while it runs: later mutations touching them
    # wait for it (map setups, INSERT commits, clones).
    locked: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()

    def touches(self, prim: str) -> bool:
        """Whether the op reads, changes or creates ``prim``."""
        return (
            prim in self.creates
            or prim in self.locked
            or any(k[1] == prim for k in self.keys)
            or any(is_under(prim, r) for r in self.roots)
        )

    @property
    def locking(self) -> bool:
        return bool(self.locked or self.roots)


FLOOR_ONLY, NONDECREASING, STRICTLY_INCREASING = 1, 2, 3


@dataclass(frozen=True)
class LifecycleEvent:
    """A finished delete (``attributes`` None: whole prims) or the prims a clone created."""

    ordinal: int
    seq: int
    prims: frozenset[str]
    attributes: frozenset[str] | None
    create: bool = False

    def covers(self, attribute: str, prim: str) -> bool:
        """Whether the event deletes the cell."""
        return (
            not self.create
            and prim in self.prims
            and (self.attributes is None or attribute in self.attributes)
        )


class StageModel:
    """Reference model of one stage's ordinals, floors, prims, columns, deletes, map commits,
    clones and reads, under one ordinal admission policy (the default NONDECREASING)."""

    def __init__(self, policy: int = NONDECREASING, window: int = 16) -> None:
        self.policy = policy
        #: The stage's history window (``StageConfig.history_ordinals``; 0: the reference's
        #: answers, where any change after the end refuses a snapshot).
        self.window = window
        self.lifecycle: list[LifecycleEvent] = []
        self.floors = Floors()
        self.history: dict[Key, list[Change]] = {}
        self.prims: set[str] = set()  # prims that exist (applied state)
        self.known: set[str] = set()  # attributes with a column (applied state)
        self.pending: dict[int, _Op] = {}
        self._seq = 0

    # -- helpers -------------------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq * _MAX_TARGETS

    def _applied(self, change: Change) -> bool:
        return change.op not in self.pending

    def _applied_changes(self, key: Key) -> list[Change]:
        return [c for c in self.history.get(key, ()) if self._applied(c)]

    def has_row(self, key: Key) -> bool:
        """Whether an applied write gave the key a row in its column."""
        return any(c.is_write for c in self._applied_changes(key))

    def live(self, key: Key) -> bool:
        """Whether the key's newest applied change is a write (the prim carries it)."""
        changes = self._applied_changes(key)
        return bool(changes) and max(changes, key=lambda c: (c.ordinal, c.seq)).is_write

    def committed(self, key: Key) -> Value | None:
        """The key's value in the applied state (what map buffers and clones copy)."""
        changes = self._applied_changes(key)
        if not changes:
            return None
        value = max(changes, key=lambda c: (c.ordinal, c.seq)).value
        return None if value is TOMBSTONE else value

    def keys_of(self, attribute: str, prim: str) -> list[Key]:
        """The keys of a cell, one per column it ever had a change in."""
        return sorted(k for k in self.history if k[0] == attribute and k[1] == prim)

    def live_schemas(self, attribute: str, prim: str) -> list[Schema]:
        """The schemas in which ``prim`` carries ``attribute``."""
        return [k[2] for k in self.keys_of(attribute, prim) if self.live(k)]

    def live_in_other_schema(self, attribute: str, prim: str, schema: Schema) -> bool:
        """Whether ``prim`` carries ``attribute`` in a column of another schema."""
        return any(s != schema for s in self.live_schemas(attribute, prim))

    def live_from(self, key: Key, ordinal: int, seq: int) -> bool:
        """Whether the key carries a value at some point from just before (ordinal, seq) on,
        counting every accepted change."""
        prior = []
        for c in self.history.get(key, ()):
            if (c.ordinal, c.seq) < (ordinal, seq):
                prior.append(c)
            elif c.is_write:
                return True
        return bool(prior) and max(prior, key=lambda c: (c.ordinal, c.seq)).is_write

    def overlaps_other_schema(
        self, attribute: str, prim: str, schema: Schema, ordinal: int
    ) -> bool:
        """Whether a write of ``schema`` at ``ordinal`` would overlap the cell's life in a
        column of another schema (the engine refuses the schema change)."""
        seq = self._seq * _MAX_TARGETS + _MAX_TARGETS
        return any(
            k[2] != schema and self.live_from(k, ordinal, seq)
            for k in self.keys_of(attribute, prim)
        )

    def value_before(self, key: Key, ordinal: int, seq: int) -> bool:
        """Whether the key has a value change ordered before (ordinal, seq)."""
        return any(
            c.is_write and (c.ordinal, c.seq) < (ordinal, seq) for c in self.history.get(key, ())
        )

    def _blocks(self, retained: int, ordinal: int) -> bool:
        if self.policy == NONDECREASING:
            return retained > ordinal
        if self.policy == STRICTLY_INCREASING:
            return retained >= ordinal
        return False

    def cell_conflict(self, attribute: str, prim: str, ordinal: int) -> bool:
        """Whether a change of the cell (any schema), or a delete naming it, refuses a
        mutation at ``ordinal`` under the policy."""
        return any(
            self._blocks(c.ordinal, ordinal)
            for k in self.keys_of(attribute, prim)
            for c in self.history[k]
        ) or any(
            e.covers(attribute, prim) and self._blocks(e.ordinal, ordinal) for e in self.lifecycle
        )

    def prim_conflict(self, prim: str, ordinal: int) -> bool:
        """Whether a change of any cell of ``prim``, or a lifecycle event naming it, refuses
        a mutation of the prim's lifecycle at ``ordinal``."""
        return any(
            self._blocks(c.ordinal, ordinal)
            for k, changes in self.history.items()
            if k[1] == prim
            for c in changes
        ) or any(prim in e.prims and self._blocks(e.ordinal, ordinal) for e in self.lifecycle)

    def live_attributes(self, paths: Sequence[str]) -> set[str]:
        """Attributes that some of ``paths`` carry (what a whole-prim delete deletes)."""
        return {k[0] for k in self.history if k[1] in paths and self.live(k)}

    def has_pending_writes(self) -> bool:
        """Whether an op that changes cells is not known to have finished."""
        return any(op.keys for op in self.pending.values())

    def pending_touching(self, prims: Iterable[str], locking_only: bool = False) -> list[int]:
        """Pending ops (locking ones only, if asked) that touch one of ``prims``."""
        wanted = list(prims)
        return sorted(
            op_id
            for op_id, op in self.pending.items()
            if (op.locking or not locking_only) and any(op.touches(p) for p in wanted)
        )

    def pending_in_region(self, roots: Sequence[str]) -> list[int]:
        """Pending ops touching a prim at or below one of ``roots`` (or locking a subtree
        overlapping one of them)."""

        def inside(p: str) -> bool:
            return any(is_under(p, r) for r in roots)

        out = []
        for op_id, op in self.pending.items():
            prims = [*op.creates, *op.locked, *(k[1] for k in op.keys)]
            overlap = any(inside(r) or any(is_under(x, r) for x in roots) for r in op.roots)
            if overlap or any(inside(p) for p in prims):
                out.append(op_id)
        return sorted(out)

    def schema_is_racy(self, attribute: str, schema: Schema) -> bool:
        """Whether a pending op may make a cell of ``attribute`` live in another schema."""
        return any(
            k[0] == attribute and k[2] != schema for op in self.pending.values() for k in op.keys
        )

    # -- writes --------------------------------------------------------------------------

    def write_errors(
        self,
        attribute: str,
        schema: Schema,
        ordinal: int,
        plan: WritePlan | None,
        insert: bool,
    ) -> tuple[set[ErrorCode], set[ErrorCode]]:
        """Status codes a write (or map commit) may fail with, as (refused at enqueue, refused
        at enqueue or when it runs); both empty: it succeeds.

        ``schema`` is the layout the write carries (dtype, lanes, semantic). It is refused on a
        target prim that carries the attribute in a column of another schema; elsewhere it
        goes to (or opens) the column of its own schema.
        """
        enqueue: set[ErrorCode] = set()
        run: set[ErrorCode] = set()
        if ordinal <= self.floors.effective(attribute):
            enqueue.add(ErrorCode.WRITE_FLOOR_VIOLATION)
        if plan is None:
            enqueue.add(ErrorCode.INVALID_ARGUMENT)
            return enqueue, run
        for prim, _ in plan.targets:
            if self.cell_conflict(attribute, prim, ordinal):
                run.add(ErrorCode.WRITE_FLOOR_VIOLATION)
            if self.overlaps_other_schema(attribute, prim, schema, ordinal):
                run.add(ErrorCode.INVALID_ARGUMENT)
            if insert and prim in self.prims:
                run.add(ErrorCode.PRIM_NOT_FOUND)
        return enqueue, run

    def accept_write(
        self,
        op: int,
        attribute: str,
        schema: Schema,
        ordinal: int,
        plan: WritePlan,
        payload: Sequence[Value],
        locked: Sequence[str] = (),
    ) -> None:
        """Record an accepted write or map commit (op id ``op``) that will succeed.

        FLOOR_ONLY: a delete ordered after the write that already finished covers it too (a
        key with no value before the delete gets its tombstone with the write), and a prim
        deleted whole after it is not brought back."""
        seq = self._next_seq()
        retro: list[tuple[Key, Change]] = []
        for prim in dict.fromkeys(p for p, _ in plan.targets):
            key = (attribute, prim, schema)
            for e in self.lifecycle:
                if (
                    e.ordinal > ordinal
                    and e.covers(attribute, prim)
                    and not self.value_before(key, e.ordinal, e.seq)
                ):
                    retro.append((key, Change(e.ordinal, e.seq, op, TOMBSTONE)))
        keys = []
        creates = []
        for i, (prim, row) in enumerate(plan.targets):
            key = (attribute, prim, schema)
            # A query may name a prim twice: the later element of the same write wins.
            self.history.setdefault(key, []).append(Change(ordinal, seq + i, op, payload[row]))
            keys.append(key)
            if not any(
                e.attributes is None and not e.create and e.ordinal > ordinal and prim in e.prims
                for e in self.lifecycle
            ):
                creates.append(prim)
        for key, change in retro:
            self.history[key].append(change)
        self.pending[op] = _Op(
            keys=tuple(keys),
            creates=tuple(creates),
            locked=tuple(locked),
        )

    # -- deletes -------------------------------------------------------------------------

    def delete_errors(
        self, paths: Sequence[str], attributes: Sequence[str], ordinal: int
    ) -> set[ErrorCode]:
        """Codes a delete may be rejected with (an empty ``attributes`` deletes whole prims,
        checked against the global floor, the attributes the prims carry and, under the
        policy, every cell and the lifecycle of the prims)."""
        refused = {ErrorCode.WRITE_FLOOR_VIOLATION}
        if not attributes and ordinal <= self.floors.global_floor:
            return refused
        checked = attributes or self.live_attributes(paths)
        if any(ordinal <= self.floors.effective(a) for a in checked):
            return refused
        for prim in paths:
            if not attributes and self.prim_conflict(prim, ordinal):
                return refused
            if any(self.cell_conflict(a, prim, ordinal) for a in attributes):
                return refused
        return set()

    def apply_delete(
        self, op: int, paths: Sequence[str], attributes: Sequence[str], ordinal: int
    ) -> None:
        """Record an accepted delete that already finished (callers wait deletes at once,
        with nothing pending): a tombstone for every key of the deleted cells (whole prims:
        of every cell of the prims, except those under their attribute's floor) with a value
        ordered before the delete, and the delete in the lifecycle; whole prims stop existing
        unless given a value or created at a later ordinal."""
        whole = not attributes
        seq = self._next_seq()
        for key in list(self.history):
            if key[1] not in paths or (not whole and key[0] not in attributes):
                continue
            if whole and ordinal <= self.floors.effective(key[0]):
                continue
            if self.value_before(key, ordinal, seq):
                self.history[key].append(Change(ordinal, seq, op, TOMBSTONE))
        if paths:
            self.lifecycle.append(
                LifecycleEvent(
                    ordinal, seq, frozenset(paths), None if whole else frozenset(attributes)
                )
            )
        if whole:
            for prim in paths:
                if not self._revived_after(prim, ordinal):
                    self.prims.discard(prim)

    def _revived_after(self, prim: str, ordinal: int) -> bool:
        return any(
            c.is_write and c.ordinal > ordinal
            for k, changes in self.history.items()
            if k[1] == prim
            for c in changes
        ) or any(e.create and e.ordinal > ordinal and prim in e.prims for e in self.lifecycle)

    # -- map sessions and clones ---------------------------------------------------------

    def plan_map(
        self,
        attribute: str,
        schema: Schema | None,
        ordinal: int,
        paths: Sequence[str],
        insert: bool,
        zero: Value,
    ) -> MapSetup:
        """Decide a map setup over ``paths`` (nothing touching them may be pending). ``schema``
        None maps the one schema the prims carry ``attribute`` in; ``zero`` is the value of a
        buffer row with nothing committed."""
        errors: set[ErrorCode] = set()
        if schema is None:
            found = {s for p in paths for s in self.live_schemas(attribute, p)}
            if len(found) != 1:
                return MapSetup(None, [], {ErrorCode.INVALID_ARGUMENT})  # "dtype is required"
            (schema,) = found
        for p in paths:
            if self.cell_conflict(attribute, p, ordinal):
                errors.add(ErrorCode.WRITE_FLOOR_VIOLATION)
            if self.overlaps_other_schema(attribute, p, schema, ordinal):
                errors.add(ErrorCode.INVALID_ARGUMENT)
            if insert and p in self.prims:
                errors.add(ErrorCode.PRIM_NOT_FOUND)
        prefill = []
        for p in paths:
            value = self.committed((attribute, p, schema))
            prefill.append(zero if value is None else value)
        return MapSetup(schema, prefill, errors)

    def plan_clone(self, source: str, targets: Sequence[str], ordinal: int) -> CloneOutcome:
        """Decide a clone of ``source`` onto ``targets`` (nothing touching the source or the
        target subtrees may be pending)."""
        if source not in self.prims:
            return CloneOutcome([], [], {ErrorCode.NOT_FOUND})
        subtree = [source, *sorted(p for p in self.prims if p != source and is_under(p, source))]
        errors: set[ErrorCode] = set()
        mapped: list[list[str]] = []
        seen: set[str] = set()
        for target in targets:
            copies = [rebase(p, source, target) for p in subtree]
            if copies[0] in self.prims:
                errors.add(ErrorCode.PRIM_NOT_FOUND)  # "already exists": nothing is cloned
            # An existing prim below an absent target root is merged into; it refuses a cloned
            # attribute it carries in another schema (OP_FAILED: nothing is cloned).
            for prim, copy in zip(subtree[1:], copies[1:], strict=True):
                if copy in self.prims and any(
                    self.live(k) and self.live_in_other_schema(k[0], copy, k[2])
                    for k in self.history
                    if k[1] == prim
                ):
                    errors.add(ErrorCode.OP_FAILED)
            if seen & set(copies):
                errors.add(ErrorCode.OP_FAILED)  # one target is another target's copy
            seen.update(copies)
            mapped.append(copies)
        # Admission: the global floor, and the floor of every attribute the subtree carries.
        if ordinal <= self.floors.global_floor or any(
            ordinal <= self.floors.effective(k[0])
            for k in self.history
            if k[1] in subtree and self.live(k)
        ):
            errors.add(ErrorCode.WRITE_FLOOR_VIOLATION)
        # The policy: every cell and the lifecycle of each prim the clone creates.
        if any(self.prim_conflict(c, ordinal) for copies in mapped for c in copies):
            errors.add(ErrorCode.WRITE_FLOOR_VIOLATION)
        return CloneOutcome(subtree, mapped, errors)

    def accept_clone(
        self, op: int, outcome: CloneOutcome, ordinal: int, roots: Sequence[str]
    ) -> None:
        """Record a clone that will succeed: every live source key is copied, at ``ordinal``,
        to each target's copy of its prim."""
        seq = self._next_seq()
        keys = []
        i = 0
        for key in sorted(k for k in self.history if k[1] in outcome.subtree and self.live(k)):
            value = self.committed(key)
            at = outcome.subtree.index(key[1])
            for copies in outcome.mapped:
                copy = (key[0], copies[at], key[2])
                assert value is not None
                self.history.setdefault(copy, []).append(Change(ordinal, seq + i, op, value))
                keys.append(copy)
                i += 1
        created = tuple(c for copies in outcome.mapped for c in copies)
        self.lifecycle.append(LifecycleEvent(ordinal, seq, frozenset(created), None, create=True))
        self.pending[op] = _Op(keys=tuple(keys), creates=created, roots=tuple(roots))

    # -- floors and other ops ------------------------------------------------------------

    def accept_advance(
        self, op: int, ordinal: int, scope: Scope = Scope.ALL, listed: Sequence[str] = ()
    ) -> None:
        """Record an accepted advance (``EXCLUDE`` only with no write pending)."""
        self.floors.advance(ordinal, scope, listed, self.known)
        self.pending[op] = _Op()

    def accept_other(
        self,
        op: int,
        fails: Iterable[ErrorCode] = (),
        locked: Sequence[str] = (),
        roots: Sequence[str] = (),
    ) -> None:
        """Track an accepted op that changes no data (releases, map setups, failing ops)."""
        self.pending[op] = _Op(fails=frozenset(fails), locked=tuple(locked), roots=tuple(roots))

    def failures(self, op: int) -> frozenset[ErrorCode]:
        """The codes op ``op`` fails with (empty: it succeeds)."""
        tracked = self.pending.get(op)
        return tracked.fails if tracked is not None else frozenset()

    def finished(self, op: int) -> None:
        """The engine reported op ``op`` finished (with the outcome the model decided)."""
        tracked = self.pending.pop(op, None)
        if tracked is None or tracked.fails:
            return
        self.known.update(k[0] for k in tracked.keys)
        self.prims.update(tracked.creates)

    # -- reads ---------------------------------------------------------------------------

    def _key_outcome(
        self, applied: list[Change], floor: int, span: Span, served: bool = False
    ) -> Outcome:
        """The outcome of a key when exactly ``applied`` of its changes were applied.

        A key is selected when it has a row (a snapshot) or a change in the range. Then an
        unsealed selected change at or before the end fails the read with
        ``WRITE_FLOOR_VIOLATION``; else a sealed change after the end (never for current
        values; with no window, any change after the end) with ``OUT_OF_RANGE``, unless the
        read is ``served``: a snapshot or a range ending inside the history window, which
        shows the key's newest sealed change at or before the end; else the key shows its
        sealed state, which is its state at the end (a change after the end that is not
        sealed does not touch it)."""
        if not any(c.is_write for c in applied):
            return ABSENT  # no row
        sealed = [
            c for c in applied if c.ordinal <= floor and (not served or c.ordinal <= span.end)
        ]
        newest = max(sealed, key=lambda c: (c.ordinal, c.seq)) if sealed else None
        in_span = [c for c in applied if span.start <= c.ordinal <= span.end]
        if span.is_range and not in_span:
            return ABSENT
        if any(c.ordinal > floor for c in in_span):
            return ErrorCode.WRITE_FLOOR_VIOLATION
        parity = self.window == 0
        if (
            not served
            and span.end != CURRENT
            and any(span.end < c.ordinal and (parity or c.ordinal <= floor) for c in applied)
        ):
            return ErrorCode.OUT_OF_RANGE
        if newest is None or (newest.value is TOMBSTONE and not span.is_range):
            return ABSENT
        return newest.value

    def version_frontier(self, attribute: str, schema: Schema) -> int:
        """The oldest snapshot end the column ``(attribute, schema)`` serves from its
        versions: the newest change of any of its keys at least ``window`` ordinals behind
        the floor (the state before it is no longer kept)."""
        floor = self.floors.effective(attribute)
        if floor < self.window:
            return 0
        return max(
            (
                c.ordinal
                for key, changes in self.history.items()
                if key[0] == attribute and key[2] == schema
                for c in changes
                if c.ordinal <= floor - self.window
            ),
            default=0,
        )

    def oldest_preserved(self) -> int:
        """What ``get_oldest_preserved_ordinal`` reports (with a window)."""
        return max((self.version_frontier(k[0], k[2]) for k in self.history), default=0)

    def _served(self, key: Key, span: Span) -> bool:
        """Whether a read of ``key`` over ``span`` is served from the history window."""
        return (
            self.window > 0
            and span.end != CURRENT
            and span.end >= self.version_frontier(key[0], key[2])
        )

    def _key_outcomes(self, key: Key, floor: int, span: Span) -> set[Outcome]:
        changes = self.history.get(key, [])
        served = self._served(key, span)
        # Changes at or below the floor are applied by the time the read runs (it waits for
        # the advances, which wait for them); pending ones above it may or may not be.
        certain = [c for c in changes if self._applied(c) or c.ordinal <= floor]
        maybe = [c for c in changes if c not in certain]
        outcomes = set()
        for n in range(len(maybe) + 1):
            for subset in combinations(maybe, n):
                outcomes.add(self._key_outcome(certain + list(subset), floor, span, served))
        return outcomes

    def pending_changes(self, paths: Sequence[str], attributes: Sequence[str]) -> int:
        """The most uncertain changes of one key a read would enumerate."""
        return max(
            (
                sum(1 for c in changes if not self._applied(c))
                for key, changes in self.history.items()
                if key[0] in attributes and key[1] in paths
            ),
            default=0,
        )

    def expect_read(
        self, paths: Sequence[str], attributes: Sequence[str], span: Span
    ) -> ReadExpectation:
        """What ``read_attributes(query(paths), attributes, range)`` may return."""
        exp = ReadExpectation(attributes=list(attributes))
        for attribute in dict.fromkeys(attributes):
            floor = self.floors.effective(attribute)
            exp.floors[attribute] = floor
            for key, changes in self.history.items():
                if key[0] != attribute or key[1] not in paths:
                    continue
                exp.outcomes[key] = self._key_outcomes(key, floor, span)
                sealed = [c for c in changes if c.ordinal <= min(floor, span.end)]
                if sealed:
                    exp.sealed_top[key] = max(sealed, key=lambda c: (c.ordinal, c.seq)).ordinal
        return exp

    def sealed_state(self) -> ReadResult:
        """Every key's newest sealed value (for end-of-run comparisons)."""
        out = ReadResult()
        for key in self.history:
            outcome = self._key_outcome(
                self._applied_changes(key), self.floors.effective(key[0]), Span(CURRENT)
            )
            if isinstance(outcome, tuple):
                out.values[key] = outcome
        return out
