"""A small pure-Python reference model of an ovstage stage (spec §1.7-§1.11, §3.8-§3.10).

The model knows nothing of the engine. It keeps, per key ``(attribute, prim)``, every accepted
change (ordinal, submission sequence, value or :data:`TOMBSTONE`), the requested write floors
(global and per attribute), which prims exist and which accepted ops are known to have
finished. From that it predicts:

* **admission** at enqueue: the set of status codes a write or delete may be rejected with
  (``WRITE_FLOOR_VIOLATION`` at or below the effective floor, ``INVALID_ARGUMENT`` for bad
  addressing or a schema change on a prim that carries the attribute, ``PRIM_NOT_FOUND`` for
  INSERT onto an existing prim). Several may apply and the engine may report any one of them
  (precedence is not specified), so the model returns them all; empty means "accepted";
* **floors**: ``Scope.ALL`` / ``INCLUDE`` / ``EXCLUDE`` advances, effective floors
  ``max(G, F[a])`` and the reported global floor (minimum over known attributes);
* **reads**, latest and range, with sealed-snapshot semantics and change membership (§1.10):
  every key gets the set of outcomes it may have (a value, a tombstone, absent, or
  ``WRITE_FLOOR_VIOLATION`` / ``OUT_OF_RANGE`` failing the read). A change whose op is not
  known to have finished may or may not have been applied when the read runs; the outcome
  sets cover both.

Ops are assumed to succeed when they execute. Callers keep that true, and the model exact, by
avoiding the races it does not decide: an INSERT or a delete racing pending writes to the
same prims, a schema change racing a pending write, an ``EXCLUDE`` advance racing pending
writes that create attributes. ``test_model_stateful.py`` flushes before those.

A key has a *row* once a write to it was applied (deletes never create rows): only keys with
rows take tombstones, fail latest reads before their first seal, or appear in range reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import combinations

from ovstage import ErrorCode, Scope

__all__ = [
    "ABSENT",
    "TOMBSTONE",
    "Change",
    "Floors",
    "Outcome",
    "ReadExpectation",
    "StageModel",
    "Value",
    "WritePlan",
    "plan_targets",
]

# Bound on a write's targets, to order the elements of one write after each other.
_MAX_TARGETS = 1 << 20

#: One value: the row's components as Python numbers (a 1-lane value is a 1-tuple).
Value = tuple[float, ...]

Key = tuple[str, str]


class _Marker(Enum):
    TOMBSTONE = "tombstone"
    ABSENT = "absent"


#: The value of a delete change, and a read outcome (a tombstone group's key).
TOMBSTONE = _Marker.TOMBSTONE
#: A read outcome: the key is not in any group.
ABSENT = _Marker.ABSENT

#: What a read returns for one key: a value, TOMBSTONE, ABSENT, or the code failing the read.
Outcome = Value | _Marker | ErrorCode


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
        """One ``advance_write_floor`` (spec §1.8); floors only rise."""
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
    """Resolve a fixed-size write's addressing (spec §3.8), or None when it is invalid.

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
class ReadExpectation:
    """What a read may return: per key, the set of possible outcomes.

    ``group_ordinals`` is each attribute's newest sealed change (a group's ``ordinal``) and
    ``floors`` each attribute's effective floor (a group's ``meta`` floor).
    """

    outcomes: dict[Key, set[Outcome]] = field(default_factory=dict)
    group_ordinals: dict[str, int] = field(default_factory=dict)
    floors: dict[str, int] = field(default_factory=dict)

    def check(self, result: dict[Key, Value | _Marker] | ErrorCode) -> str | None:
        """Return why ``result`` (values or TOMBSTONE by key, or the read's error code) is
        impossible, or None when the model allows it."""
        if isinstance(result, ErrorCode):
            if not any(result in options for options in self.outcomes.values()):
                return f"read failed with {result.name}, which no selected key can cause"
            return None
        for key, options in self.outcomes.items():
            got = result.get(key, ABSENT)
            if got not in options:
                return f"{key}: got {got}, expected one of {options}"
        extra = [key for key in result if key not in self.outcomes]
        if extra:
            return f"keys the model never saw written: {extra}"
        return None


@dataclass
class _Op:
    """An accepted op the model tracks until it is known to have finished."""

    kind: str  # "write" | "other"
    attribute: str = ""
    keys: tuple[Key, ...] = ()
    schema: tuple[object, ...] | None = None


class StageModel:
    """Reference model of one stage's ordinals, floors, prims, deletes and reads."""

    def __init__(self) -> None:
        self.floors = Floors()
        self.history: dict[Key, list[Change]] = {}
        self.prims: set[str] = set()  # prims that exist (applied state)
        self.known: set[str] = set()  # attributes with a column (applied state)
        self.schemas: dict[str, tuple[object, ...]] = {}  # each attribute's column schema
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
        """Whether an applied write gave the key a row."""
        return any(c.is_write for c in self._applied_changes(key))

    def live(self, key: Key) -> bool:
        """Whether the key's newest applied change is a write (the prim carries it)."""
        changes = self._applied_changes(key)
        return bool(changes) and max(changes, key=lambda c: (c.ordinal, c.seq)).is_write

    def live_attributes(self, paths: Sequence[str]) -> set[str]:
        """Attributes that some of ``paths`` carry (what a whole-prim delete deletes)."""
        return {a for (a, p) in self.history if p in paths and self.live((a, p))}

    def has_pending_writes(self) -> bool:
        """Whether a write is not known to have finished."""
        return any(op.kind == "write" for op in self.pending.values())

    # -- writes --------------------------------------------------------------------------

    def write_errors(
        self,
        attribute: str,
        schema: tuple[object, ...],
        ordinal: int,
        plan: WritePlan | None,
        insert: bool,
    ) -> set[ErrorCode]:
        """Status codes a write may be rejected with at enqueue (empty: must be accepted).

        ``schema`` is the layout the write carries (dtype, lanes, semantic). A schema other
        than the attribute's column's is refused when a target prim carries the attribute.
        """
        errors: set[ErrorCode] = set()
        if ordinal <= self.floors.effective(attribute):
            errors.add(ErrorCode.WRITE_FLOOR_VIOLATION)
        if plan is None:
            errors.add(ErrorCode.INVALID_ARGUMENT)
            return errors
        known = self.schemas.get(attribute)
        if (
            known is not None
            and known != schema
            and any(self.live((attribute, prim)) for prim, _ in plan.targets)
        ):
            errors.add(ErrorCode.INVALID_ARGUMENT)
        if insert and any(prim in self.prims for prim, _ in plan.targets):
            errors.add(ErrorCode.PRIM_NOT_FOUND)
        return errors

    def creates_column(self, attribute: str, schema: tuple[object, ...], plan: WritePlan) -> bool:
        """Whether an accepted write would create a second column for ``attribute``."""
        known = self.schemas.get(attribute)
        return known is not None and known != schema and bool(plan.targets)

    def touches_pending(self, prims: Iterable[str]) -> bool:
        """Whether a pending write targets one of ``prims`` (INSERT/delete would race it)."""
        wanted = set(prims)
        return any(p in wanted for op in self.pending.values() for _, p in op.keys)

    def schema_is_racy(self, attribute: str, schema: tuple[object, ...]) -> bool:
        """Whether a pending write may create ``attribute`` with another schema."""
        return any(
            op.kind == "write" and op.attribute == attribute and op.schema != schema
            for op in self.pending.values()
        )

    def accept_write(
        self,
        op: int,
        attribute: str,
        schema: tuple[object, ...],
        ordinal: int,
        plan: WritePlan,
        payload: Sequence[Value],
    ) -> None:
        """Record an accepted write (op id ``op``) whose execution is still pending."""
        seq = self._next_seq()
        keys = []
        for i, (prim, row) in enumerate(plan.targets):
            key = (attribute, prim)
            # A query may name a prim twice: the later element of the same write wins.
            self.history.setdefault(key, []).append(Change(ordinal, seq + i, op, payload[row]))
            keys.append(key)
        self.pending[op] = _Op("write", attribute, tuple(keys), schema)

    # -- deletes -------------------------------------------------------------------------

    def delete_errors(
        self, paths: Sequence[str], attributes: Sequence[str], ordinal: int
    ) -> set[ErrorCode]:
        """Codes a delete may be rejected with (an empty ``attributes`` deletes whole prims,
        checked against the attributes the prims carry)."""
        checked = attributes or self.live_attributes(paths)
        if any(ordinal <= self.floors.effective(a) for a in checked):
            return {ErrorCode.WRITE_FLOOR_VIOLATION}
        return set()

    def apply_delete(
        self, op: int, paths: Sequence[str], attributes: Sequence[str], ordinal: int
    ) -> None:
        """Record an accepted delete that already finished (callers wait deletes at once,
        with no write pending): tombstones for keys with rows; whole prims stop existing."""
        whole = not attributes
        names = sorted(self.live_attributes(paths)) if whole else list(dict.fromkeys(attributes))
        seq = self._next_seq()
        for a in names:
            for prim in dict.fromkeys(paths):
                key = (a, prim)
                if self.has_row(key):
                    self.history[key].append(Change(ordinal, seq, op, TOMBSTONE))
        if whole:
            self.prims.difference_update(paths)

    # -- floors --------------------------------------------------------------------------

    def accept_advance(
        self, op: int, ordinal: int, scope: Scope = Scope.ALL, listed: Sequence[str] = ()
    ) -> None:
        """Record an accepted advance (``EXCLUDE`` only with no write pending)."""
        self.floors.advance(ordinal, scope, listed, self.known)
        self.pending[op] = _Op("other")

    def accept_other(self, op: int) -> None:
        """Track an accepted op that changes no data (releases)."""
        self.pending[op] = _Op("other")

    def finished(self, op: int) -> None:
        """The engine reported op ``op`` finished (successfully)."""
        tracked = self.pending.pop(op, None)
        if tracked is None or tracked.kind != "write" or not tracked.keys:
            return
        self.schemas.setdefault(tracked.attribute, tracked.schema or ())
        self.known.add(tracked.attribute)
        self.prims.update(prim for _, prim in tracked.keys)

    # -- reads ---------------------------------------------------------------------------

    def _key_outcome(
        self, key: Key, applied: list[Change], floor: int, span: tuple[int, int] | None
    ) -> Outcome:
        """The outcome of ``key`` when exactly ``applied`` of its changes were applied."""
        if not any(c.is_write for c in applied):
            return ABSENT  # no row
        sealed = [c for c in applied if c.ordinal <= floor]
        newest = max(sealed, key=lambda c: (c.ordinal, c.seq)) if sealed else None
        if span is None:  # latest read
            if newest is None:
                return ErrorCode.WRITE_FLOOR_VIOLATION
            return ABSENT if newest.value is TOMBSTONE else newest.value
        start, end = span
        in_range = [c for c in applied if start <= c.ordinal <= end]
        if not in_range:
            return ABSENT
        if any(c.ordinal > floor for c in in_range):
            return ErrorCode.WRITE_FLOOR_VIOLATION
        if any(c.ordinal > end for c in applied):
            return ErrorCode.OUT_OF_RANGE
        assert newest is not None
        return newest.value

    def _key_outcomes(self, key: Key, floor: int, span: tuple[int, int] | None) -> set[Outcome]:
        changes = self.history.get(key, [])
        # Changes at or below the floor are applied by the time the read runs (it waits for
        # the advances, which wait for them); pending ones above it may or may not be.
        certain = [c for c in changes if self._applied(c) or c.ordinal <= floor]
        maybe = [c for c in changes if c not in certain]
        outcomes = set()
        for n in range(len(maybe) + 1):
            for subset in combinations(maybe, n):
                outcomes.add(self._key_outcome(key, certain + list(subset), floor, span))
        return outcomes

    def pending_changes(self, paths: Sequence[str], attributes: Sequence[str]) -> int:
        """The most uncertain changes of one key a read would enumerate."""
        return max(
            (
                sum(1 for c in self.history.get((a, p), ()) if not self._applied(c))
                for a in attributes
                for p in paths
            ),
            default=0,
        )

    def expect_read(
        self, paths: Sequence[str], attributes: Sequence[str], span: tuple[int, int] | None = None
    ) -> ReadExpectation:
        """What ``read_attributes(query(paths), attributes, range)`` may return: a latest
        read when ``span`` is None, else the range ``[start, end]``."""
        exp = ReadExpectation()
        for attribute in dict.fromkeys(attributes):
            floor = self.floors.effective(attribute)
            exp.floors[attribute] = floor
            sealed = [
                c.ordinal
                for (a, _), changes in self.history.items()
                if a == attribute
                for c in changes
                if c.ordinal <= floor
            ]
            if sealed:
                exp.group_ordinals[attribute] = max(sealed)
            for prim in dict.fromkeys(paths):
                key = (attribute, prim)
                if key in self.history:
                    exp.outcomes[key] = self._key_outcomes(key, floor, span)
        return exp

    def sealed_state(self) -> dict[Key, Value]:
        """Every key's newest sealed value (for end-of-run comparisons)."""
        out: dict[Key, Value] = {}
        for key in self.history:
            outcome = self._key_outcome(
                key, self._applied_changes(key), self.floors.effective(key[0]), None
            )
            if isinstance(outcome, tuple):
                out[key] = outcome
        return out
