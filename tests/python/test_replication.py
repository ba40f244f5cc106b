"""Replication over NATS JetStream (docs/replication.md): a primary in this process, replicas
in spawned processes, all on loopback through the primary's embedded server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import ovstage
import ovstage.replication as repl
import pytest
from helpers.replica_reader import snapshot

READER = Path(__file__).parent / "helpers" / "replica_reader.py"
PATHS = [f"/World/p{i}" for i in range(16)]
ATTRS = ["temp", "pts"]


def _write_random(stage: ovstage.Stage, rng: np.random.Generator, ordinal: int) -> None:
    d = ovstage.PathDictionary(stage)
    for attr in ATTRS:
        pick = [p for p in PATHS if rng.random() < 0.4]
        if not pick:
            continue
        with d.create_path_list_from_strings(pick) as lst, stage.query_from_path_list(lst) as q:
            if ordinal > 2 and rng.random() < 0.25:
                stage.delete_attributes(q, [attr], ordinal).wait()
            elif attr == "temp":
                vals = rng.random(len(pick)).astype(np.float32)
                stage.write_attribute(q, attr, ordinal, vals, is_array=False).wait()
            else:
                rows = [rng.random(int(rng.integers(1, 5))).astype(np.float32) for _ in pick]
                stage.write_attribute(q, attr, ordinal, rows, is_array=True).wait()
    if ordinal > 2 and rng.random() < 0.3:  # a whole prim ends
        with (
            d.create_path_list_from_strings([str(rng.choice(PATHS))]) as lst,
            stage.query_from_path_list(lst) as q,
        ):
            stage.delete_attributes(q, [], ordinal).wait()
    stage.advance_write_floor(ordinal).wait()


def _spawn_reader(url: str, name: str, ordinal: int, *extra: str) -> subprocess.Popen[str]:
    path = [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))
    return subprocess.Popen(
        [
            sys.executable,
            str(READER),
            url,
            name,
            str(ordinal),
            json.dumps(PATHS),
            json.dumps(ATTRS),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_replica_process_matches_primary(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    with ovstage.Stage("repl_e2e") as stage, repl.publish(stage, storage_dir=tmp_path) as pub:
        for o in range(1, 11):
            _write_random(stage, rng, o)
        # Started late: catches up from the stream, then follows live advances.
        child = _spawn_reader(pub.url, "repl_e2e", 20)
        for o in range(11, 21):
            _write_random(stage, rng, o)
        pub.wait_published(20)
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        got = json.loads(out)
        assert got["status"] == {"ordinal": 20, "lag": 0, "snapshot_ordinal": 0}
        want = snapshot(stage, PATHS, ATTRS, 20)
        assert want["temp"] and want["pts"]  # the comparison has values in it
        assert any(c[2] for c in want["changes"])  # and tombstones
        del got["status"]
        assert got == want
        assert pub.status.dropped == 0


def test_replica_killed_mid_stream_and_restarted_converges(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    with ovstage.Stage("repl_kill") as stage, repl.publish(stage, storage_dir=tmp_path) as pub:
        doomed = _spawn_reader(pub.url, "repl_kill", 1000)  # never reached: killed below
        for o in range(1, 16):
            _write_random(stage, rng, o)
        doomed.kill()
        doomed.communicate(timeout=30)
        for o in range(16, 26):
            _write_random(stage, rng, o)
        child = _spawn_reader(pub.url, "repl_kill", 25)
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        got = json.loads(out)
        del got["status"]
        assert got == snapshot(stage, PATHS, ATTRS, 25)


def test_late_replica_process_converges_via_snapshot(tmp_path: Path) -> None:
    rng = np.random.default_rng(13)
    with (
        ovstage.Stage("repl_snap") as stage,
        repl.publish(stage, storage_dir=tmp_path, max_msgs=12, snapshot_every=3) as pub,
    ):
        for o in range(1, 41):
            _write_random(stage, rng, o)
        st = pub.wait_published(40)
        assert st.snapshots > 0
        # The stream of 12 messages lost the first advances: the replica needs the snapshot.
        child = _spawn_reader(pub.url, "repl_snap", 40, "after-snapshot")
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        got = json.loads(out)
        status = got.pop("status")
        assert status["ordinal"] == 40 and status["lag"] == 0
        first = status["snapshot_ordinal"] + 1
        assert 2 < first <= 40  # started from a snapshot, not the (truncated) stream
        want = snapshot(stage, PATHS, ATTRS, 40, first)
        assert want["temp"] and want["pts"]
        assert got == want


def test_snapshot_on_request_and_bad_limits() -> None:
    with ovstage.Stage("repl_ask") as stage:
        with pytest.raises(ValueError, match="max_msgs"):
            repl.publish(stage, max_msgs=-1)
        with pytest.raises(ValueError, match="max_age"):
            repl.publish(stage, max_age=-1.0)
        with repl.publish(stage, max_msgs=6) as pub:
            rng = np.random.default_rng(17)
            for o in range(1, 11):
                _write_random(stage, rng, o)
            pub.wait_published(10)
            assert pub.status.snapshots == 0
            st = pub.snapshot(timeout=20)
            assert st.snapshots == 1 and st.snapshot_ordinal == 10
            with pytest.raises(ValueError, match="timeout"):
                pub.snapshot(timeout=0)
            with repl.Replica(pub.url, "repl_ask") as replica:
                rst = replica.wait_ordinal(10, timeout=30)
                assert rst.snapshot_ordinal == 10
                # Latest values (the history before a snapshot is not replicated).
                got, want = (
                    snapshot(replica.stage, PATHS, ATTRS, 10),
                    snapshot(stage, PATHS, ATTRS, 10),
                )
                assert {a: got[a] for a in ATTRS} == {a: want[a] for a in ATTRS}


def test_clear_errors() -> None:
    with ovstage.Stage("repl_err") as stage, repl.publish(stage) as pub:
        with ovstage.Stage("repl_err") as other:
            with pytest.raises(repl.ReplicationError, match="already published"):
                repl.publish(other, pub.url)
            with pytest.raises(repl.ReplicationError, match="scheme"):
                repl.publish(other, "http://127.0.0.1:4222")
            start = time.monotonic()
            with pytest.raises(repl.ReplicationError, match="cannot reach a NATS server"):
                repl.publish(other, "nats://127.0.0.1:1")
            assert time.monotonic() - start < 10
            with pytest.raises(repl.ReplicationError, match="cannot name a NATS stream"):
                repl.publish(other, pub.url, name="a.b")
        with pytest.raises(repl.ReplicationError, match='no stage "absent" is published'):
            repl.Replica(pub.url, "absent")
        with pytest.raises(ValueError, match="url"):
            repl.Replica("", "repl_err")


def test_primary_keeps_working_when_the_server_goes_away() -> None:
    with ovstage.Stage("repl_host") as host, ovstage.Stage("repl_gone") as stage:
        server = repl.publish(host)  # its embedded server carries the other stage's stream
        pub = repl.publish(stage, server.url, queue=4)
        _write_random(stage, np.random.default_rng(1), 1)
        pub.wait_published(1)
        server.close()  # the server stops
        rng = np.random.default_rng(2)
        start = time.monotonic()
        for o in range(2, 30):
            _write_random(stage, rng, o)
        assert time.monotonic() - start < 20  # advances never waited for the server
        deadline = time.monotonic() + 15
        while not (pub.status.last_error and pub.status.dropped):
            assert time.monotonic() < deadline, pub.status
            time.sleep(0.05)
        st = pub.status
        assert not st.connected and st.ordinal == 1 and st.sealed_ordinal == 29
        start = time.monotonic()
        pub.close()
        assert time.monotonic() - start < 15
