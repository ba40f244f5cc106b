"""A small pure-Python reference model of an ovstage stage (spec §1.7-§1.10, §3.8, §3.10).

The model knows nothing of the engine. It keeps, per key ``(attribute, prim)``, the list of
changes accepted so far (ordinal, submission sequence, value), the requested write floor, and
which accepted ops are known to have finished. From that it predicts:

* **write admission** at enqueue: the set of status codes a write may be rejected with
  (``WRITE_FLOOR_VIOLATION`` when the ordinal is at or below the requested floor,
  ``INVALID_ARGUMENT`` for addressing errors, ``PRIM_NOT_FOUND`` for INSERT onto an existing
  prim, ...). When several apply, the engine may report any one of them (precedence is not
  specified), so the model returns all of them; an empty set means "must be accepted";
* **latest reads** with sealed-snapshot semantics: each key returns its newest change (by
  ordinal, then submission order) at or below the floor; a key whose every change is above the
  floor fails the whole read with ``WRITE_FLOOR_VIOLATION`` once the engine has applied it. A
  change that the engine may not have applied yet (its op is not known to have finished) makes
  the key *uncertain*: the read may either skip the key or fail with ``WRITE_FLOOR_VIOLATION``.

Ops are assumed to succeed when they execute: callers keep that true by avoiding the races
the model cannot decide (an INSERT racing a pending write to the same prim, two pending writes
creating one attribute with different schemas); see ``test_model_stateful.py``.

Extending the model (issue 3 features):
* deletes are changes whose ``value`` is :data:`TOMBSTONE`; :meth:`StageModel.latest` already
  treats a newest tombstone as "no value" (a tombstone group, or the key absent);
* scoped floors only need :class:`Floors` to gain per-attribute floors (``effective`` already
  takes the attribute);
* range reads select keys by ``Change.ordinal`` in ``[start, end]`` over the same histories.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from ovstage import ErrorCode

__all__ = [
    "TOMBSTONE",
    "Change",
    "Floors",
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


class _Tombstone(Enum):
    TOMBSTONE = "tombstone"


#: The value of a delete change (no delete op exists yet; kept for issue 3).
TOMBSTONE = _Tombstone.TOMBSTONE


@dataclass(frozen=True)
class Change:
    """One accepted change of a key: ``value`` at ``ordinal``; ``seq`` orders equal ordinals."""

    ordinal: int
    seq: int
    op: int
    value: Value | _Tombstone


@dataclass
class Floors:
    """Requested write floors: what every accepted ``advance_write_floor`` asked for.

    Only ``Scope.ALL`` exists in the engine today, so one global floor is enough;
    ``effective(attribute)`` is the hook for per-attribute floors.
    """

    global_floor: int = 0

    def effective(self, attribute: str) -> int:
        """The floor that applies to ``attribute``."""
        del attribute
        return self.global_floor

    def advance_all(self, ordinal: int) -> None:
        """``advance_write_floor(ordinal, Scope.ALL)``: floors only rise."""
        self.global_floor = max(self.global_floor, ordinal)


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
    """What a latest read over some keys may return.

    ``values`` holds the keys that must come back with that value. ``must_fail`` lists keys
    that force ``WRITE_FLOOR_VIOLATION``; ``uncertain`` keys may be absent or force it.
    ``group_ordinals`` is each attribute's newest sealed ordinal (a group's ``ordinal``).
    """

    values: dict[tuple[str, str], Value] = field(default_factory=dict)
    must_fail: set[tuple[str, str]] = field(default_factory=set)
    uncertain: set[tuple[str, str]] = field(default_factory=set)
    group_ordinals: dict[str, int] = field(default_factory=dict)
    floor: int = 0

    def check(self, outcome: dict[tuple[str, str], Value] | ErrorCode) -> str | None:
        """Return why ``outcome`` (values by key, or the read's error) is wrong, or None."""
        if isinstance(outcome, ErrorCode):
            if outcome != ErrorCode.WRITE_FLOOR_VIOLATION:
                return f"read failed with {outcome.name}; only WRITE_FLOOR_VIOLATION is possible"
            if not self.must_fail and not self.uncertain:
                return "read failed with WRITE_FLOOR_VIOLATION but every selected key is sealed"
            return None
        if self.must_fail:
            return f"read succeeded but these keys have no sealed value: {sorted(self.must_fail)}"
        if outcome != self.values:
            missing = {k: v for k, v in self.values.items() if outcome.get(k) != v}
            extra = {k: v for k, v in outcome.items() if k not in self.values}
            return f"values differ: expected {missing} but got {extra or outcome}"
        return None


@dataclass
class _Op:
    """An accepted op the model tracks until it is known to have finished."""

    kind: str  # "write" | "advance"
    attribute: str = ""
    keys: tuple[tuple[str, str], ...] = ()
    schema: tuple[object, ...] | None = None


class StageModel:
    """Reference model of one stage's ordinals, floors, prims and latest reads."""

    def __init__(self) -> None:
        self.floors = Floors()
        self.history: dict[tuple[str, str], list[Change]] = {}
        self.prims_done: set[str] = set()  # prims created by finished writes
        self.prims_maybe: set[str] = set()  # prims touched by writes not known finished
        self.schemas: dict[str, tuple[object, ...]] = {}  # schema of columns known to exist
        self.pending: dict[int, _Op] = {}
        self._seq = 0

    # -- ops -----------------------------------------------------------------------------

    def next_seq(self) -> int:
        """A fresh submission sequence number (orders same-ordinal changes)."""
        self._seq += 1
        return self._seq

    def write_errors(
        self,
        attribute: str,
        schema: tuple[object, ...],
        ordinal: int,
        plan: WritePlan | None,
        insert: bool,
    ) -> set[ErrorCode]:
        """Status codes a write may be rejected with at enqueue (empty: must be accepted).

        ``schema`` identifies the column layout the write would create (dtype, lanes, ...).
        """
        errors: set[ErrorCode] = set()
        if ordinal <= self.floors.effective(attribute):
            errors.add(ErrorCode.WRITE_FLOOR_VIOLATION)
        known = self.schemas.get(attribute)
        if known is not None and known != schema:
            errors.add(ErrorCode.INVALID_ARGUMENT)
        if plan is None:
            errors.add(ErrorCode.INVALID_ARGUMENT)
        elif insert and any(prim in self.prims_done for prim, _ in plan.targets):
            errors.add(ErrorCode.PRIM_NOT_FOUND)
        return errors

    def insert_is_racy(self, plan: WritePlan) -> bool:
        """Whether an INSERT's outcome depends on pending writes (avoid such inserts)."""
        return any(prim in self.prims_maybe for prim, _ in plan.targets)

    def schema_is_racy(self, attribute: str, schema: tuple[object, ...]) -> bool:
        """Whether a pending write may create ``attribute`` with a different schema."""
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
        seq = self.next_seq()
        keys = []
        for i, (prim, row) in enumerate(plan.targets):
            key = (attribute, prim)
            # A query may name a prim twice: the later element of the same write wins.
            change = Change(ordinal, seq * _MAX_TARGETS + i, op, payload[row])
            self.history.setdefault(key, []).append(change)
            keys.append(key)
            self.prims_maybe.add(prim)
        self.pending[op] = _Op("write", attribute, tuple(keys), schema)

    def accept_advance(self, op: int, ordinal: int) -> None:
        """Record an accepted ``advance_write_floor(ordinal, Scope.ALL)``."""
        self.floors.advance_all(ordinal)
        self.pending[op] = _Op("advance")

    def finished(self, op: int) -> None:
        """The engine reported op ``op`` finished (successfully)."""
        tracked = self.pending.pop(op, None)
        if tracked is None or tracked.kind != "write" or not tracked.keys:
            return
        self.schemas.setdefault(tracked.attribute, tracked.schema or ())
        for _, prim in tracked.keys:
            self.prims_done.add(prim)
        self.prims_maybe = {prim for other in self.pending.values() for _, prim in other.keys}

    # -- reads ---------------------------------------------------------------------------

    def _applied(self, change: Change) -> bool:
        return change.op not in self.pending

    def latest(self, key: tuple[str, str]) -> Change | None:
        """The newest change of ``key`` at or below its floor (None: no sealed change)."""
        floor = self.floors.effective(key[0])
        sealed = [c for c in self.history.get(key, ()) if c.ordinal <= floor]
        return max(sealed, key=lambda c: (c.ordinal, c.seq)) if sealed else None

    def expect_read(self, paths: Sequence[str], attributes: Sequence[str]) -> ReadExpectation:
        """What ``read_attributes(query(paths), attributes, latest(N))`` may return."""
        exp = ReadExpectation()
        for attribute in dict.fromkeys(attributes):
            floor = self.floors.effective(attribute)
            exp.floor = floor
            sealed_ordinals = [
                c.ordinal
                for (a, _), changes in self.history.items()
                if a == attribute
                for c in changes
                if c.ordinal <= floor
            ]
            if sealed_ordinals:
                exp.group_ordinals[attribute] = max(sealed_ordinals)
            for prim in dict.fromkeys(paths):
                key = (attribute, prim)
                changes = self.history.get(key)
                if not changes:
                    continue
                newest = self.latest(key)
                if newest is not None:
                    if newest.value is not TOMBSTONE:
                        exp.values[key] = newest.value  # type: ignore[assignment]
                elif any(self._applied(c) for c in changes):
                    exp.must_fail.add(key)
                else:
                    exp.uncertain.add(key)
        return exp

    def sealed_state(self) -> dict[tuple[str, str], Value]:
        """Every key's newest sealed value (for end-of-run comparisons)."""
        out: dict[tuple[str, str], Value] = {}
        for key in self.history:
            newest = self.latest(key)
            if newest is not None and newest.value is not TOMBSTONE:
                out[key] = newest.value  # type: ignore[assignment]
        return out
