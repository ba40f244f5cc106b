"""Replication of a stage to other processes and machines over NATS JetStream.

Our own API (the reference library has none; not in ``ovstage.__all__``); the design is in
``docs/replication.md``. A primary publishes what each floor advance seals::

    pub = ovstage.replication.publish(stage)          # embedded NATS server on loopback
    replica = ovstage.replication.Replica(pub.url, stage.name)
    replica.stage.read_attributes(...)                # the whole read API, local reads

Publishing never blocks the producer: advances wait in a bounded queue, and what cannot be
published is reported by :attr:`Publisher.status`, not by stalling writes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ._config import StageConfig
from ._errors import OvstageError
from ._lib import call, native
from ._stage import Stage

__all__ = [
    "Publisher",
    "PublisherStatus",
    "Replica",
    "ReplicaStatus",
    "ReplicationError",
    "publish",
]


class ReplicationError(OvstageError):
    """A publisher or replica could not start: bad URL or name, unreachable server, a stage
    name another publisher holds, or no such published stage."""


def _start(fn: Any, *args: Any) -> int:
    try:
        return int(call(fn, *args))
    except OvstageError as exc:
        raise ReplicationError(exc.code, exc.message) from None


S = TypeVar("S")


def _status(fn: Any, oid: int, what: str) -> dict[str, Any]:
    if oid == 0:
        raise ReplicationError(2, f"the {what} is closed")
    status: dict[str, Any] = json.loads(call(fn, oid))
    return status


def _poll(get: Callable[[], S], done: Callable[[S], bool], timeout: float, what: str) -> S:
    """Poll ``get()`` until ``done`` holds (a few ms apart); ``TimeoutError`` after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        st = get()
        if done(st):
            return st
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout}s: {st}")
        time.sleep(0.005)


@dataclass(frozen=True)
class PublisherStatus:
    """A snapshot of a publisher's progress."""

    url: str
    stream: str
    connected: bool
    #: Advances waiting to be published.
    queued: int
    #: Advances published, and the floor of the newest one.
    advances: int
    ordinal: int
    #: The floor of the newest advance the stage sealed (published or not).
    sealed_ordinal: int
    #: Sealed payload bytes published.
    bytes: int
    #: Advances dropped because the queue was full (replicas stop at such a gap).
    dropped: int
    #: Snapshots stored, and the floor of the newest one.
    snapshots: int
    snapshot_ordinal: int
    #: The newest failure ("" once publishing succeeds again).
    last_error: str


@dataclass(frozen=True)
class ReplicaStatus:
    """A snapshot of a replica's progress and lag."""

    url: str
    stream: str
    connected: bool
    #: The floor of the newest applied advance, and how many were applied.
    ordinal: int
    advances: int
    #: The floor of the newest advance in the stream.
    primary_ordinal: int
    lag_ordinals: int
    #: How much earlier the primary sealed the applied advance than its newest one.
    lag_seconds: float
    #: The floor of the snapshot the replica started from (0: it read the stream from its
    #: start).
    snapshot_ordinal: int
    #: The replica stopped applying (a gap or a failed write); last_error says why.
    failed: bool
    last_error: str


class Publisher:
    """Publishes a stage's floor advances; made by :func:`publish`. Close it (or use it as a
    context manager); destroying the stage closes it too."""

    def __init__(self, stage: Stage, pid: int) -> None:
        self._stage = stage
        self._id = pid
        #: The NATS server URL replicas connect to (credentials redacted).
        self.url: str = self.status.url
        stage._destroy_hooks.append(self.close)

    @property
    def status(self) -> PublisherStatus:
        """The publisher's progress (see :class:`PublisherStatus`)."""
        return PublisherStatus(**_status(native.PublisherStatus, self._id, "publisher"))

    def wait_published(self, ordinal: int, timeout: float = 10.0) -> PublisherStatus:
        """Wait until the advance to ``ordinal`` is published; raise ``TimeoutError``."""
        return _poll(
            lambda: self.status,
            lambda st: st.ordinal >= ordinal,
            timeout,
            f"advance to {ordinal} not published",
        )

    def snapshot(self, timeout: float = 30.0) -> PublisherStatus:
        """Store a snapshot of the stage's sealed state now (taken by an advance that raises no
        floor) and wait until it is stored; replicas that start after the stream dropped the
        advances they lack begin from the newest snapshot. Raises :class:`ReplicationError`."""
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if self._id == 0:
            raise ReplicationError(2, "the publisher is closed")
        try:
            call(native.SnapshotPublisher, self._id, float(timeout))
        except OvstageError as exc:
            raise ReplicationError(exc.code, exc.message) from None
        return self.status

    def close(self) -> None:
        """Publish what is queued (a few seconds at most), release the name, disconnect, and
        stop the embedded server if this publisher started one. Idempotent."""
        if self._id:
            pid, self._id = self._id, 0
            call(native.ClosePublisher, pid)
            if self.close in self._stage._destroy_hooks:
                self._stage._destroy_hooks.remove(self.close)

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def publish(
    stage: Stage,
    url: str | None = None,
    storage_dir: str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
    queue: int = 64,
    takeover: bool = False,
    max_msgs: int = 0,
    max_bytes: int = 0,
    max_age: float = 0.0,
    snapshot_every: int = 0,
) -> Publisher:
    """Publish what each floor advance of ``stage`` seals to the JetStream stream
    ``OVSTAGE_<name>`` (subjects ``ovstage.<name>.*``).

    ``url=None`` starts an embedded NATS server on 127.0.0.1 (random port) with JetStream files
    in ``storage_dir`` (a temporary directory when ``None``); otherwise ``url`` names an
    existing server or cluster (``nats://user:pass@host:4222``, ``tls://...``; credentials and
    TLS settings pass through). ``name`` defaults to the stage's name (letters, digits, ``_``,
    ``-``). ``queue`` bounds the advances waiting to be published. ``takeover`` replaces a
    crashed publisher's claim on the name. ``max_msgs``, ``max_bytes`` and ``max_age``
    (seconds) limit the stream, which then drops its oldest messages (0: no limit);
    ``snapshot_every`` stores a snapshot of the sealed state every that many advances (0: only
    on :meth:`Publisher.snapshot`), from which a replica starts when the stream no longer
    holds the advances it lacks. Raises :class:`ReplicationError`.
    """
    if not isinstance(stage, Stage):
        raise TypeError(f"stage must be an ovstage.Stage, got {type(stage).__name__}")
    if url is not None and not isinstance(url, str):
        raise TypeError(f"url must be a str or None, got {type(url).__name__}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str or None, got {type(name).__name__}")
    if not isinstance(queue, int) or isinstance(queue, bool) or queue < 1:
        raise ValueError(f"queue must be a positive int, got {queue!r}")
    for arg, value in (
        ("max_msgs", max_msgs),
        ("max_bytes", max_bytes),
        ("snapshot_every", snapshot_every),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{arg} must be an int >= 0, got {value!r}")
    if not isinstance(max_age, (int, float)) or isinstance(max_age, bool) or max_age < 0:
        raise ValueError(f"max_age must be a number of seconds >= 0, got {max_age!r}")
    sid = stage._require_live("publish")
    directory = "" if storage_dir is None else os.fspath(storage_dir)
    pid = _start(
        native.StartPublisher,
        sid,
        url or "",
        directory,
        name or "",
        queue,
        bool(takeover),
        max_msgs,
        max_bytes,
        float(max_age),
        snapshot_every,
    )
    return Publisher(stage, pid)


class Replica:
    """A local stage that follows a published stage: it applies each advance's changes in
    ordinal order through the engine's write path, then advances its own floors, so its
    sealed state at N equals the primary's at N. Read it through :attr:`stage` (the whole read
    API; do not write to it), created with ``config``. Close it, or use it as a context
    manager. Raises :class:`ReplicationError` when nobody publishes ``stage_name`` at ``url``."""

    def __init__(self, url: str, stage_name: str, *, config: StageConfig | None = None) -> None:
        if not isinstance(url, str) or not url:
            raise ValueError(f"url must be a non-empty str (Publisher.url), got {url!r}")
        if not isinstance(stage_name, str):
            raise TypeError(f"stage_name must be a str, got {type(stage_name).__name__}")
        #: The local stage the replica writes.
        self.stage = Stage(stage_name, config)
        try:
            self._id = _start(native.StartReplica, self.stage._id, url, stage_name)
        except BaseException:
            self.stage.destroy()
            raise
        self.stage._destroy_hooks.append(self._stop)

    @property
    def status(self) -> ReplicaStatus:
        """The replica's progress and lag (asks the server for the newest advance)."""
        return ReplicaStatus(**_status(native.ReplicaStatus, self._id, "replica"))

    def wait_ordinal(self, ordinal: int, timeout: float = 10.0) -> ReplicaStatus:
        """Wait until the replica applied the advance to ``ordinal``; raise ``TimeoutError``,
        or :class:`ReplicationError` when the replica stopped."""

        def done(st: ReplicaStatus) -> bool:
            if st.failed and st.ordinal < ordinal:
                raise ReplicationError(12, f"replica stopped at {st.ordinal}: {st.last_error}")
            return st.ordinal >= ordinal

        return _poll(lambda: self.status, done, timeout, f"replica did not reach {ordinal}")

    def _stop(self) -> None:
        if self._id:
            rid, self._id = self._id, 0
            call(native.CloseReplica, rid)

    def close(self) -> None:
        """Stop following the stream and destroy the local stage. Idempotent."""
        self._stop()
        self.stage.destroy()

    def __enter__(self) -> Replica:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
