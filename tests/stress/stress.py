"""Stress test (``make stress``; not part of CI).

``OVSTAGE_STRESS_THREADS`` (default 8) Python threads hammer one stage for
``OVSTAGE_STRESS_SECONDS`` (default 30) with a random mix of writes (dense, ``count``,
``index_map``, ``mask``; waited, polled or fire-and-forget), INSERTs of fresh prims, INSERTs
onto existing prims, floor advances, latest reads with DLPack exports, query churn and raw
polls, deletes of thread-private prims, map sessions over the shared prims (several threads
map the same prims at once; some rows are changed, the rest commit the values the buffers
started with), clones of shared subtrees onto thread-private targets (several threads clone
one source at once), and clones of thread-private subtrees with relationship paths, read back
to check the rebasing. Every payload value encodes the write and row it came from, so:

* every enqueue result is checked against what is decidable under concurrency (an accepted
  write was above every floor whose advance had returned before it started; a
  ``WRITE_FLOOR_VIOLATION`` was at or below a floor some advance had asked for by the time it
  returned);
* every value a read returns must come from an accepted write that targeted that prim with
  that row, a map commit that kept it for that prim, or a clone that copied it from its
  source prim, at an ordinal at or below the group's floor; a map buffer starts with a value
  some write, commit or clone gave that prim;
* at the end everything is sealed and the whole stage must equal the model: per key, the
  accepted write or map commit with the highest (ordinal, op id), deleted keys are gone, and
  every cloned key holds a value its source prim had.

Exit status 1 on any violation; the figures are printed either way.
"""

from __future__ import annotations

import gc
import os
import random
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import ovstage
from ovstage import AttributeSemantic, ErrorCode, OvstageError, PrimMode

# Shared prims; some have children, so clones of them copy subtrees.
PRIMS = [f"/Stress/P{i}" for i in range(16)] + ["/Stress/P0/C", "/Stress/P1/C", "/Stress/P1/C/D"]
ATTRS = {"s": 1, "v": 3}  # attribute -> lanes (float64)
ROWS_PER_WRITE = 64  # value = uid * ROWS_PER_WRITE + row (exact in float64)
CLONE_SOURCES = ["/Stress/P0", "/Stress/P1", "/Stress/P1/C", "/Stress/P5"]


@dataclass
class WriteRecord:
    """A write or map commit as submitted: which prim takes which payload row (a map commit
    also keeps, in ``carried``, the values some buffer rows started with); ``op_id`` once
    accepted."""

    uid: int
    attribute: str
    ordinal: int
    targets: dict[str, int]
    op_id: int = 0
    state: str = "tentative"  # tentative | accepted | rejected
    carried: dict[str, int] = field(default_factory=dict)

    def codes(self) -> dict[str, int]:
        """The value (code) it gives each prim."""
        out = {p: self.uid * ROWS_PER_WRITE + r for p, r in self.targets.items()}
        out.update(self.carried)
        return out


@dataclass
class CloneRecord:
    """A clone as submitted: the source prim of every copy it makes."""

    ordinal: int
    sources: dict[str, str]  # copy -> source prim
    attributes: tuple[str, ...]  # what the copies carry once cloned
    state: str = "tentative"


@dataclass
class Shared:
    """State shared by the threads (guarded by ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    writes: dict[int, WriteRecord] = field(default_factory=dict)
    floor_started: int = 0  # highest ordinal any advance was asked for (set before the call)
    floor_done: int = 0  # highest ordinal of an advance whose enqueue returned
    max_ordinal: int = 0
    failures: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    fresh_prims: list[str] = field(default_factory=list)
    deleted: set[tuple[str, str]] = field(default_factory=set)  # keys deleted after their write
    # (attribute, prim, code) -> map commits that kept code for prim
    carriers: dict[tuple[str, str, int], list[WriteRecord]] = field(default_factory=dict)
    clone_of: dict[str, list[CloneRecord]] = field(default_factory=dict)  # copy -> clones
    clones: list[CloneRecord] = field(default_factory=list)

    def fail(self, message: str) -> None:
        with self.lock:
            if len(self.failures) < 20:
                self.failures.append(message)

    def valid_code(self, attribute: str, prim: str, code: int, floor: int | None) -> bool:
        """Whether some write, map commit or clone not rejected gave ``prim`` the value
        ``code`` at an ordinal at or below ``floor`` (any ordinal: None). Call with ``lock``."""
        uid, row = divmod(code, ROWS_PER_WRITE)
        record = self.writes.get(uid)
        if (
            record is not None
            and record.attribute == attribute
            and record.targets.get(prim) == row
            and record.state != "rejected"
            and (floor is None or record.ordinal <= floor)
        ):
            return True
        for carrier in self.carriers.get((attribute, prim, code), ()):
            if carrier.state != "rejected" and (floor is None or carrier.ordinal <= floor):
                return True
        return any(
            clone.state != "rejected"
            and (floor is None or clone.ordinal <= floor)
            and self.valid_code(attribute, clone.sources[prim], code, None)
            for clone in self.clone_of.get(prim, ())
        )


def value_of(uid: int, row: int, lanes: int) -> np.ndarray:
    """The payload row ``row`` of write ``uid`` (every lane holds the same code)."""
    return np.full(lanes, uid * ROWS_PER_WRITE + row, np.float64)


class Worker(threading.Thread):
    """One thread's random op mix."""

    def __init__(
        self, index: int, stage: ovstage.Stage, shared: Shared, deadline: float, seed: int
    ) -> None:
        super().__init__(name=f"stress-{index}")
        self.index = index
        self.stage = stage
        self.shared = shared
        self.deadline = deadline
        self.rng = random.Random(seed)
        self.paths = ovstage.PathDictionary(stage)
        self.kept: list[ovstage.Operation] = []
        self.forgotten: list[int] = []
        self.seq = 0

    # -- helpers -------------------------------------------------------------------------

    def next_uid(self) -> int:
        self.seq += 1
        return self.seq * 64 + self.index

    def count(self, what: str) -> None:
        with self.shared.lock:
            self.shared.counts[what] += 1

    def make_query(self) -> tuple[list[str], ovstage.Query]:
        prims = self.rng.sample(PRIMS, self.rng.randint(1, len(PRIMS)))
        with self.paths.create_path_list_from_strings(prims) as plist:
            return prims, self.stage.query_from_path_list(plist)

    # -- ops -----------------------------------------------------------------------------

    def write(self, prims: list[str], query: ovstage.Query) -> None:
        rng, shared = self.rng, self.shared
        attribute = rng.choice(list(ATTRS))
        lanes = ATTRS[attribute]
        uid = self.next_uid()
        with shared.lock:
            floor_before = shared.floor_done
            ordinal = shared.floor_started + rng.randint(-1, 6)
        ordinal = max(ordinal, 0)
        n = len(prims)
        mode = rng.choice(["dense", "count", "index_map", "mask"])
        kwargs: dict[str, object] = {}
        rows = n
        targets: dict[str, int] = {}
        if mode == "count":
            count = rng.randint(1, n)
            kwargs["count"] = rows = count
            targets = {prims[i]: i for i in range(count)}
        elif mode == "index_map":
            rows = rng.randint(1, 8)
            index_map = [rng.randrange(rows) for _ in range(n)]
            kwargs["index_map"] = index_map
            targets = {prims[i]: index_map[i] for i in range(n)}
        elif mode == "mask":
            bits = rng.getrandbits(n)
            kwargs["mask"], kwargs["count"] = [bits], n
            targets = {prims[i]: i for i in range(n) if bits >> i & 1}
        else:
            targets = {p: i for i, p in enumerate(prims)}
        payload = np.stack([value_of(uid, r, lanes) for r in range(rows)])
        if lanes == 1:
            payload = payload.reshape(rows)
        record = WriteRecord(uid, attribute, ordinal, targets)
        with shared.lock:
            shared.writes[uid] = record
        op = self.stage.write_attribute(
            query, attribute, ordinal, payload, is_array=False, **kwargs
        )
        with shared.lock:
            floor_after = shared.floor_started
            if op.ok:
                record.op_id, record.state = op.op_id, "accepted"
                shared.max_ordinal = max(shared.max_ordinal, ordinal)
            else:
                record.state = "rejected"
        if op.ok:
            if ordinal <= floor_before:
                shared.fail(f"write at {ordinal} accepted though floor {floor_before} was sealed")
            self.count(f"write {mode}")
            how = rng.randrange(3)
            if how == 0:
                op.wait()
            elif how == 1:
                self.kept.append(op)  # waited at the end
            else:  # fire and forget: only the raw op id is kept, released at the end
                self.forgotten.append(op.op_id)
        elif op.status == ErrorCode.WRITE_FLOOR_VIOLATION:
            if ordinal > floor_after:
                shared.fail(f"write at {ordinal} rejected WFV though no floor reached it")
            self.count("write rejected WFV")
        else:
            shared.fail(f"write rejected with {op.status}: {op.error_message()}")

    def insert(self) -> None:
        """INSERT a fresh prim (must succeed), or onto an existing one (must fail)."""
        fresh = self.rng.randrange(2) == 0
        prim = f"/Stress/T{self.index}/N{self.seq}" if fresh else self.rng.choice(PRIMS)
        uid = self.next_uid()
        with self.shared.lock:
            ordinal = self.shared.floor_started + 100
        with (
            self.paths.create_path_list_from_strings([prim]) as plist,
            self.stage.query_from_path_list(plist) as query,
        ):
            record = WriteRecord(uid, "s", ordinal, {prim: 0})
            with self.shared.lock:
                self.shared.writes[uid] = record
            op = self.stage.write_attribute(
                query, "s", ordinal, value_of(uid, 0, 1), is_array=False, prim_mode=PrimMode.INSERT
            )
            with self.shared.lock:
                floor_after = self.shared.floor_started
            if op.status == ErrorCode.WRITE_FLOOR_VIOLATION and ordinal <= floor_after:
                # Other threads advanced the floor past the margin meanwhile (a thread can be
                # descheduled for a long time): a legitimate rejection, as for write().
                record.state = "rejected"
                self.count("insert rejected WFV")
                return
            if fresh:
                if not op.ok:
                    self.shared.fail(f"INSERT of fresh {prim} rejected: {op.error_message()}")
                    record.state = "rejected"
                    return
                with self.shared.lock:
                    record.op_id, record.state = op.op_id, "accepted"
                    self.shared.max_ordinal = max(self.shared.max_ordinal, ordinal)
                    self.shared.fresh_prims.append(prim)
                op.wait()
                self.count("insert fresh")
                if self.rng.randrange(3) == 0:
                    # Only this thread writes the fresh prim: its delete is deterministic.
                    gone = self.stage.delete_attributes(query, ["s"], ordinal + 1)
                    if gone.ok:
                        gone.wait()
                        with self.shared.lock:
                            self.shared.deleted.add(("s", prim))
                            self.shared.max_ordinal = max(self.shared.max_ordinal, ordinal + 1)
                        self.count("delete fresh")
                    elif gone.status != ErrorCode.WRITE_FLOOR_VIOLATION:
                        self.shared.fail(f"delete of {prim} rejected: {gone.error_message()}")
            else:
                record.state = "rejected"
                if op.status != ErrorCode.PRIM_NOT_FOUND:
                    self.shared.fail(f"INSERT onto existing {prim}: status {op.status}")
                self.count("insert existing rejected")

    def advance(self) -> None:
        with self.shared.lock:
            ordinal = max(0, self.shared.floor_started + self.rng.randint(-2, 3))
            self.shared.floor_started = max(self.shared.floor_started, ordinal)
        op = self.stage.advance_write_floor(ordinal)
        with self.shared.lock:
            self.shared.floor_done = max(self.shared.floor_done, ordinal)
        if not op.ok:
            self.shared.fail(f"advance rejected: {op.error_message()}")
        elif self.rng.randrange(2) == 0:
            op.wait()
        else:
            self.forgotten.append(op.op_id)
        self.count("advance")

    def read(self, prims: list[str], query: ovstage.Query) -> None:
        names = self.rng.sample(list(ATTRS), self.rng.randint(1, len(ATTRS)))
        read = self.stage.read_attributes(query, names, ovstage.OrdinalRange.latest(0))
        try:
            with read:
                for group in read.groups():
                    with group:
                        self.check_group(group)
        except OvstageError as exc:
            if exc.code != ErrorCode.WRITE_FLOOR_VIOLATION:
                self.shared.fail(f"read failed with {exc}")
            self.count("read WFV")
            return
        self.count("read")

    def check_group(self, group: ovstage.ReadGroup) -> None:
        name = self.paths.token_to_string(group.attribute)
        lanes = ATTRS[name]
        floor = group.meta.attribute_write_floor_ordinal
        data = group.array().reshape(-1, lanes)
        versioned = np.from_dlpack(group.dlpack(0)).reshape(-1, lanes)
        if not np.array_equal(data, versioned):
            self.shared.fail("legacy and versioned exports differ")
        list_paths = self.paths.get_path_strings(group.prim_list)
        for local in range(group.prim_count):
            row = group.data_row_index(local) if group.has_data_index_map else local
            prim = list_paths[group.prim_index(local)]
            value = data[row]
            code = int(value[0])
            with self.shared.lock:
                ever = self.shared.valid_code(name, prim, code, None)
                sealed = self.shared.valid_code(name, prim, code, floor)
                floor_started = self.shared.floor_started
            if (value != value[0]).any() or not ever:
                self.shared.fail(f"{name}@{prim}: value {value} is from no write, commit or clone")
            elif not sealed or floor > floor_started:
                self.shared.fail(
                    f"{name}@{prim}: value {code} read under floor {floor} (highest requested "
                    f"{floor_started}) was given at no ordinal that low: unsealed data was served"
                )
        self.count("groups verified")

    def poll(self) -> None:
        for op in self.kept[-4:]:
            op.done()
        self.count("poll")

    def map_session(self, prims: list[str], query: ovstage.Query) -> None:
        """Map shared prims (other threads write, map and clone them meanwhile), check the
        buffers start with committed values, change some rows and commit."""
        rng, shared = self.rng, self.shared
        attribute = rng.choice(list(ATTRS))
        lanes = ATTRS[attribute]
        uid = self.next_uid()
        with shared.lock:
            floor_before = shared.floor_done
            ordinal = max(shared.floor_started + rng.randint(-1, 6), 0)
        mapped = self.stage.map_attribute(query, attribute, ordinal)
        with shared.lock:
            floor_after = shared.floor_started
        if mapped.handle == 0:
            status = mapped.op.status if mapped.op is not None else None
            if status != ErrorCode.WRITE_FLOOR_VIOLATION:
                shared.fail(f"map rejected with {status}")
            elif ordinal > floor_after:
                shared.fail(f"map at {ordinal} rejected WFV though no floor reached it")
            self.count("map rejected WFV")
            return
        if ordinal <= floor_before:
            shared.fail(f"map at {ordinal} accepted though floor {floor_before} was sealed")
        record = WriteRecord(uid, attribute, ordinal, {})
        group = mapped.fetch_next()
        if group is None:
            shared.fail("a map session has no group")
            mapped.unmap().wait()
            return
        listed = self.paths.get_path_strings(group.prim_list)
        if [listed[group.prim_index(k)] for k in range(group.prim_count)] != prims:
            shared.fail("a map group does not list the query's prims")
        with shared.lock:
            floor_now = shared.floor_started
        if group.meta.attribute_write_floor_ordinal > floor_now:
            shared.fail("a map group reports a floor no advance asked for")
        rows = np.from_dlpack(group.dlpack(0)).reshape(len(prims), lanes)
        for i, prim in enumerate(prims):
            code = int(rows[i][0])
            with shared.lock:
                valid = shared.valid_code(attribute, prim, code, None)
            if (rows[i] != rows[i][0]).any() or not valid:
                shared.fail(f"map buffer of {attribute}@{prim} starts with {rows[i]}, not a value")
            if rng.randrange(2):
                rows[i] = value_of(uid, i, lanes)
                record.targets[prim] = i
            else:
                record.carried[prim] = code
        with shared.lock:
            shared.writes[uid] = record
            for prim, code in record.carried.items():
                shared.carriers.setdefault((attribute, prim, code), []).append(record)
        if rng.randrange(2):
            commit = mapped.unmap_group(group)
            end = mapped.unmap()
        else:
            commit = end = mapped.unmap()
        record.op_id = commit.op_id
        try:
            commit.wait()
        except OvstageError as exc:
            with shared.lock:
                record.state = "rejected"
                floor_now = shared.floor_started
            if "WRITE_FLOOR_VIOLATION" not in exc.message:
                shared.fail(f"map commit failed: {exc}")
            elif ordinal > floor_now:
                shared.fail(f"map commit at {ordinal} failed WFV though no floor reached it")
            self.count("map commit failed WFV")
        else:
            with shared.lock:
                record.state = "accepted"
                shared.max_ordinal = max(shared.max_ordinal, ordinal)
            self.count("map commit")
        if end is not commit:
            end.wait()  # commits nothing more: the group was committed

    def clone_shared(self) -> None:
        """Clone a shared subtree (other threads write, map and clone it meanwhile) onto fresh
        thread-private targets; the copies must hold values their sources had."""
        rng, shared = self.rng, self.shared
        source = rng.choice(CLONE_SOURCES)
        subtree = [p for p in PRIMS if p == source or p.startswith(source + "/")]
        self.seq += 1
        targets = [f"/Stress/T{self.index}/K{self.seq}_{j}" for j in range(rng.randint(1, 2))]
        with shared.lock:
            floor_before = shared.floor_done
            ordinal = max(shared.floor_started + rng.randint(-1, 6), 0)
        copies = {t + p[len(source) :]: p for t in targets for p in subtree}
        record = CloneRecord(ordinal, copies, tuple(ATTRS))
        with shared.lock:
            for copy in copies:
                shared.clone_of.setdefault(copy, []).append(record)
        if self.run_clone(source, targets, record, floor_before):
            self.count("clone shared")

    def run_clone(
        self, source: str, targets: list[str], record: CloneRecord, floor_before: int
    ) -> bool:
        """Clone and wait; check a floor failure was due. True when it succeeded."""
        shared = self.shared
        op = self.stage.clone_async(source, targets, record.ordinal)
        try:
            op.wait()
        except OvstageError as exc:
            with shared.lock:
                record.state = "rejected"
                floor_now = shared.floor_started
            if "WRITE_FLOOR_VIOLATION" not in exc.message:
                shared.fail(f"clone of {source} failed: {exc}")
            elif record.ordinal > floor_now:
                shared.fail(f"clone at {record.ordinal} failed WFV though no floor reached it")
            self.count("clone failed WFV")
            return False
        if record.ordinal <= floor_before:
            shared.fail(
                f"clone at {record.ordinal} admitted though floor {floor_before} was sealed"
            )
        with shared.lock:
            record.state = "accepted"
            shared.max_ordinal = max(shared.max_ordinal, record.ordinal)
            shared.clones.append(record)
            shared.fresh_prims.extend(record.sources)
        return True

    def clone_private(self) -> None:
        """INSERT a private prim and child with a relationship to the child (inside) and to a
        shared prim (outside), clone it, seal the clone and read the copies back: values
        copied, the inside path rebased onto each copy, the outside one kept."""
        rng, shared, paths = self.rng, self.shared, self.paths
        self.seq += 1
        base = f"/Stress/T{self.index}/S{self.seq}"
        prims = [base, base + "/Hand"]
        uid = self.next_uid()
        with shared.lock:
            # Just above the floors (other threads' INSERTs count on floors rising slowly).
            ordinal = shared.floor_started + rng.randint(1, 4)
        ids = [paths.intern_path(p) for p in [*prims, PRIMS[3]]]
        rel = [np.array([ids[1], ids[2]], np.uint64), np.array([ids[0]], np.uint64)]
        record = WriteRecord(uid, "s", ordinal, {p: i for i, p in enumerate(prims)})
        with shared.lock:
            shared.writes[uid] = record
        with (
            paths.create_path_list_from_strings(prims) as plist,
            self.stage.query_from_path_list(plist) as query,
        ):
            values = np.array([uid * ROWS_PER_WRITE, uid * ROWS_PER_WRITE + 1], np.float64)
            relationship = AttributeSemantic.RELATIONSHIP_PATH_ID
            writes = [
                ovstage.WriteDesc("s", values, False),
                ovstage.WriteDesc("rel", rel, True, semantic=relationship),
            ]
            op = self.stage.write_attributes(query, writes, ordinal, prim_mode=PrimMode.INSERT)
            if not op.ok:
                with shared.lock:
                    record.state = "rejected"
                    floor_after = shared.floor_started
                if op.status != ErrorCode.WRITE_FLOOR_VIOLATION or ordinal > floor_after:
                    shared.fail(f"INSERT of private {base} rejected: {op.error_message()}")
                self.count("clone private: INSERT rejected WFV")
                return
            with shared.lock:
                record.op_id, record.state = op.op_id, "accepted"
                shared.max_ordinal = max(shared.max_ordinal, ordinal)
                shared.fresh_prims.extend(prims)
            op.wait()
        targets = [f"/Stress/T{self.index}/R{self.seq}_{j}" for j in range(rng.randint(1, 2))]
        clone_at = ordinal + rng.randint(1, 3)
        copies = {t + p[len(base) :]: p for t in targets for p in prims}
        clone = CloneRecord(clone_at, copies, ("s",))
        with shared.lock:
            for copy in copies:
                shared.clone_of.setdefault(copy, []).append(clone)
        if not self.run_clone(base, targets, clone, 0):
            return
        self.advance_to(clone_at)
        with (
            paths.create_path_list_from_strings(list(copies)) as plist,
            self.stage.query_from_path_list(plist) as query,
            self.stage.read_attributes(query, ["s", "rel"], ovstage.OrdinalRange.latest(0)) as read,
        ):
            got: dict[tuple[str, str], list[int]] = {}
            for group in read.groups():
                with group:
                    name = paths.token_to_string(group.attribute)
                    listed = paths.get_path_strings(group.prim_list)
                    for k in range(group.prim_count):
                        prim = listed[group.prim_index(k)]
                        if group.is_array:
                            got[(name, prim)] = [int(x) for x in group.array(k)]
                        else:
                            row = group.data_row_index(k) if group.has_data_index_map else k
                            got[(name, prim)] = [int(group.array()[row])]
        for t in targets:
            hand = paths.intern_path(t + "/Hand")
            want = {
                ("s", t): [uid * ROWS_PER_WRITE],
                ("s", t + "/Hand"): [uid * ROWS_PER_WRITE + 1],
                ("rel", t): [hand, ids[2]],
                ("rel", t + "/Hand"): [paths.intern_path(t)],
            }
            for key, value in want.items():
                if got.get(key) != value:
                    shared.fail(f"clone of {base}: {key} is {got.get(key)}, want {value}")
        self.count("clone private (rebasing checked)")

    def advance_to(self, ordinal: int) -> None:
        """Advance every floor to ``ordinal`` and wait (as advance() does, but to a given
        ordinal)."""
        with self.shared.lock:
            self.shared.floor_started = max(self.shared.floor_started, ordinal)
        op = self.stage.advance_write_floor(ordinal)
        with self.shared.lock:
            self.shared.floor_done = max(self.shared.floor_done, ordinal)
        op.wait()

    def run(self) -> None:
        try:
            prims, query = self.make_query()
            while time.monotonic() < self.deadline:
                r = self.rng.randrange(100)
                if r < 40:
                    self.write(prims, query)
                elif r < 50:
                    self.advance()
                elif r < 70:
                    self.read(prims, query)
                elif r < 74:
                    self.insert()
                elif r < 78:
                    self.poll()
                elif r < 84:
                    self.map_session(prims, query)
                elif r < 87:
                    self.clone_shared()
                elif r < 89:
                    self.clone_private()
                elif r < 95:
                    # Not waited: ops using the query finish first.
                    self.forgotten.append(query.release().op_id)
                    prims, query = self.make_query()
                    self.count("query churn")
                else:
                    gc.collect(0)
            query.release().wait()
            for op in self.kept:
                op.wait()
            for op_id in self.forgotten:
                code, errors, _ = self.stage.wait_op(op_id)
                if code != ErrorCode.OK or errors:
                    self.shared.fail(f"write op {op_id} failed: {code} {errors}")
                self.stage.release_op(op_id)
        except Exception as exc:  # report, do not kill the run silently
            self.shared.fail(f"{self.name}: {type(exc).__name__}: {exc}")


def verify_final(stage: ovstage.Stage, shared: Shared) -> int:
    """Seal everything and compare every key with the model; return the keys checked."""
    stage.advance_write_floor(shared.max_ordinal).wait()
    expected: dict[tuple[str, str], tuple[int, int, int]] = {}
    for record in shared.writes.values():
        if record.state != "accepted":
            continue
        for prim, code in record.codes().items():
            key = (record.attribute, prim)
            candidate = (record.ordinal, record.op_id, code)
            if key not in expected or candidate[:2] > expected[key][:2]:
                expected[key] = candidate
    paths = ovstage.PathDictionary(stage)
    got: dict[tuple[str, str], float] = {}
    every = PRIMS + shared.fresh_prims
    with (
        paths.create_path_list_from_strings(every) as plist,
        stage.query_from_path_list(plist) as query,
        stage.read_attributes(query, list(ATTRS), ovstage.OrdinalRange.latest(0)) as read,
    ):
        for group in read.groups():
            with group:
                name = paths.token_to_string(group.attribute)
                data = group.array().reshape(-1, ATTRS[name])
                list_paths = paths.get_path_strings(group.prim_list)
                for local in range(group.prim_count):
                    row = group.data_row_index(local) if group.has_data_index_map else local
                    got[(name, list_paths[group.prim_index(local)])] = float(data[row][0])
    for key in shared.deleted:
        expected.pop(key, None)
        if key in got:
            shared.fail(f"final {key}: deleted, but read back {got[key]}")
    for key, (_, _, code) in expected.items():
        if got.get(key) != float(code):
            shared.fail(f"final {key}: got {got.get(key)}, want {code}")
    # Copies are never written after their clone: each holds a value its source prim had.
    cloned = {(a, copy) for c in shared.clones for copy in c.sources for a in c.attributes}
    for attribute, copy in sorted(cloned):
        value = got.get((attribute, copy))
        if value is None or not shared.valid_code(attribute, copy, int(value), None):
            shared.fail(f"final {(attribute, copy)}: got {value}, which its source never had")
    extra = set(got) - set(expected) - shared.deleted - cloned
    if extra:
        shared.fail(f"final read has keys no accepted write made: {sorted(extra)[:5]}")
    return len(expected) + len(cloned)


def setup(stage: ovstage.Stage, shared: Shared) -> None:
    """Create every prim with both attributes (sealed at ordinal 1) before the threads run."""
    paths = ovstage.PathDictionary(stage)
    with (
        paths.create_path_list_from_strings(PRIMS) as plist,
        stage.query_from_path_list(plist) as query,
    ):
        for uid, (attribute, lanes) in enumerate(ATTRS.items(), start=1):
            payload = np.stack([value_of(uid, r, lanes) for r in range(len(PRIMS))])
            op = stage.write_attribute(
                query, attribute, 1, payload.reshape(len(PRIMS), -1).squeeze(), is_array=False
            )
            shared.writes[uid] = WriteRecord(
                uid, attribute, 1, {p: i for i, p in enumerate(PRIMS)}, op.op_id, "accepted"
            )
            op.wait()
    stage.advance_write_floor(1).wait()
    shared.floor_started = shared.floor_done = shared.max_ordinal = 1


def main() -> int:
    """Run the stress test; return the exit status."""
    threads = int(os.environ.get("OVSTAGE_STRESS_THREADS", "8"))
    seconds = float(os.environ.get("OVSTAGE_STRESS_SECONDS", "30"))
    seed = int(os.environ.get("OVSTAGE_STRESS_SEED", "7"))
    shared = Shared()
    stage = ovstage.Stage("stress")
    setup(stage, shared)
    start = time.monotonic()
    workers = [Worker(i, stage, shared, start + seconds, seed * 1000 + i) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.monotonic() - start
    del workers
    gc.collect()
    keys = verify_final(stage, shared)
    gc.collect()
    diag = stage._diagnostics()
    if (diag["ops"], diag["reads"], diag["groups"], diag["queries"], diag["maps"]) != (0,) * 5:
        shared.fail(f"live engine objects left after the run: {diag}")
    stage.destroy()
    total = sum(v for k, v in shared.counts.items() if k != "groups verified")
    print(f"stress: {threads} threads x {elapsed:.1f} s: {total} ops ({total / elapsed:.0f}/s)")
    for name, n in sorted(shared.counts.items()):
        print(f"  {name}: {n}")
    print(f"  final keys verified: {keys}; diagnostics at the end {diag}")
    for message in shared.failures:
        print("FAIL:", message)
    print("stress:", "OK" if not shared.failures else "FAILED")
    return 1 if shared.failures else 0


if __name__ == "__main__":
    sys.exit(main())
