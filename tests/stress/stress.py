"""Stress test (``make stress``; not part of CI).

``OVSTAGE_STRESS_THREADS`` (default 8) Python threads hammer one stage for
``OVSTAGE_STRESS_SECONDS`` (default 30) with a random mix of writes (dense, ``count``,
``index_map``, ``mask``; waited, polled or fire-and-forget), INSERTs of fresh prims, INSERTs
onto existing prims, floor advances, latest reads with DLPack exports, query churn and raw
polls, and deletes of thread-private prims. Every payload value encodes the write and row it
came from, so:

* every enqueue result is checked against what is decidable under concurrency (an accepted
  write was above every floor whose advance had returned before it started; a
  ``WRITE_FLOOR_VIOLATION`` was at or below a floor some advance had asked for by the time it
  returned);
* every value a read returns must come from an accepted write that targeted that prim with
  that row, at an ordinal at or below the group's floor;
* at the end everything is sealed and the whole stage must equal the model: per key, the
  accepted write with the highest (ordinal, op id), and deleted keys are gone.

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
from ovstage import ErrorCode, OvstageError, PrimMode

PRIMS = [f"/Stress/P{i}" for i in range(16)]
ATTRS = {"s": 1, "v": 3}  # attribute -> lanes (float64)
ROWS_PER_WRITE = 64  # value = uid * ROWS_PER_WRITE + row (exact in float64)


@dataclass
class WriteRecord:
    """A write as submitted: which prim takes which payload row; ``op_id`` once accepted."""

    uid: int
    attribute: str
    ordinal: int
    targets: dict[str, int]
    op_id: int = 0
    state: str = "tentative"  # tentative | accepted | rejected


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

    def fail(self, message: str) -> None:
        with self.lock:
            if len(self.failures) < 20:
                self.failures.append(message)


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
            uid, src_row = divmod(code, ROWS_PER_WRITE)
            with self.shared.lock:
                record = self.shared.writes.get(uid)
                floor_started = self.shared.floor_started
            if (value != value[0]).any() or record is None or record.attribute != name:
                self.shared.fail(f"{name}@{prim}: value {value} is from no write")
            elif record.targets.get(prim) != src_row or record.state == "rejected":
                self.shared.fail(f"{name}@{prim}: value from write {uid} that did not write it")
            elif not record.ordinal <= floor <= floor_started:
                self.shared.fail(
                    f"{name}@{prim}: write at {record.ordinal} read under floor {floor} "
                    f"(highest requested {floor_started}): unsealed data was served"
                )
        self.count("groups verified")

    def poll(self) -> None:
        for op in self.kept[-4:]:
            op.done()
        self.count("poll")

    def run(self) -> None:
        try:
            prims, query = self.make_query()
            while time.monotonic() < self.deadline:
                r = self.rng.randrange(100)
                if r < 45:
                    self.write(prims, query)
                elif r < 55:
                    self.advance()
                elif r < 80:
                    self.read(prims, query)
                elif r < 85:
                    self.insert()
                elif r < 90:
                    self.poll()
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
    expected: dict[tuple[str, str], tuple[int, int, int, int]] = {}
    for record in shared.writes.values():
        if record.state != "accepted":
            continue
        for prim, row in record.targets.items():
            key = (record.attribute, prim)
            candidate = (record.ordinal, record.op_id, record.uid, row)
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
    for key, (_, _, uid, row) in expected.items():
        want = float(uid * ROWS_PER_WRITE + row)
        if got.get(key) != want:
            shared.fail(f"final {key}: got {got.get(key)}, want {want} (write {uid} row {row})")
    extra = set(got) - set(expected) - shared.deleted
    if extra:
        shared.fail(f"final read has keys no accepted write made: {sorted(extra)[:5]}")
    return len(expected)


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
    if (diag["ops"], diag["reads"], diag["groups"], diag["queries"]) != (0, 0, 0, 0):
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
