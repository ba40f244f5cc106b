"""Fork safety : the Go runtime does not survive ``fork()``.

A forked child that touches ovstage must get a clear ``OvstageError`` at once (not a hang), may
still read views it inherited, and must be able to exit normally; the parent keeps working.
``multiprocessing`` with the ``spawn`` start method works.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
import warnings
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, OvstageError

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

# Run in a fresh interpreter so the forked child can exit normally (finalizers, atexit and
# garbage collection all run in it) without involving pytest's own process state.
FORK_SCRIPT = textwrap.dedent(
    """
    import os, sys, time, warnings
    import numpy as np
    import ovstage
    from ovstage import ErrorCode, OvstageError, OrdinalRange

    warnings.simplefilter("ignore", DeprecationWarning)  # fork() of a threaded process
    stage = ovstage.Stage("parent")
    paths = ovstage.PathDictionary(stage)
    plist = paths.create_path_list_from_strings(["/A", "/B", "/C"])
    query = stage.query_from_path_list(plist)
    stage.write_attribute(query, "t", 1, np.array([1, 2, 3], np.float32), is_array=False).wait()
    stage.advance_write_floor(1).wait()
    read = stage.read_attributes(query, ["t"], OrdinalRange.latest(1))
    group = read.fetch_next()
    view = group.array()
    pending = stage.write_attribute(query, "t", 2, np.zeros(3, np.float32), is_array=False)

    pid = os.fork()
    if pid == 0:
        calls = {
            "write": lambda: stage.write_attribute(
                query, "t", 3, np.zeros(3, np.float32), is_array=False).wait(),
            "advance, not waited": lambda: stage.advance_write_floor(5),
            "read": lambda: stage.read_attributes(query, ["t"], OrdinalRange.latest(1)),
            "wait": lambda: pending.wait(),
            "fetch": lambda: read.fetch_next(),
            "group": lambda: group.release(),
            "dictionary": lambda: paths.intern_token("child"),
            "new stage": lambda: ovstage.Stage("child"),
            "destroy": lambda: stage.destroy(),
        }
        for name, call in calls.items():
            start = time.monotonic()
            try:
                call()
            except OvstageError as exc:
                took = time.monotonic() - start
                ok = exc.code == ErrorCode.NOT_SUPPORTED and "fork" in exc.message
                print(f"child {name}: {'ok' if ok and took < 1 else 'BAD'} "
                      f"{exc.code} {took:.3f}s", flush=True)
            else:
                print(f"child {name}: BAD (no error)", flush=True)
        print("child view:", view.tolist(), flush=True)
        sys.exit(0)  # a normal exit: finalizers of every inherited object run

    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            print("parent: child hung", flush=True)
            sys.exit(1)
        time.sleep(0.01)
    print("parent: child exit", os.waitstatus_to_exitcode(status), flush=True)
    pending.wait()
    group.release()
    read.release().wait()
    stage.advance_write_floor(2).wait()
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(2)) as again:
        with again.fetch_next() as g:
            print("parent values:", g.array().tolist(), flush=True)
    query.release().wait()
    plist.release()
    stage.destroy()
    """
)


def test_forked_child_gets_a_clear_error_at_once_and_exits_normally() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    child_lines = [line for line in out.splitlines() if line.startswith("child ")]
    assert len(child_lines) == 10, out
    assert all(": ok 6 " in line for line in child_lines[:-1]), out
    assert "child view: [1.0, 2.0, 3.0]" in out  # inherited views stay readable
    assert "parent: child exit 0" in out
    assert "parent values: [0.0, 0.0, 0.0]" in out  # the parent is unaffected


def _fork_child_touches(stage: ovstage.Stage, conn: Any) -> None:
    try:
        stage.advance_write_floor(1)
    except OvstageError as exc:
        conn.send((exc.code, exc.message))
    else:
        conn.send((0, "no error"))


def test_multiprocessing_fork_child_gets_a_clear_error() -> None:
    ctx = multiprocessing.get_context("fork")
    with ovstage.Stage("mp-fork") as stage:
        parent_conn, child_conn = ctx.Pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork() of a threaded process
            proc = ctx.Process(target=_fork_child_touches, args=(stage, child_conn))
            proc.start()
        assert parent_conn.poll(30), "the forked child did not answer (hung?)"
        code, message = parent_conn.recv()
        proc.join(30)
        assert proc.exitcode == 0
        assert code == ErrorCode.NOT_SUPPORTED
        assert "spawn" in message
        stage.advance_write_floor(1).wait()  # the parent still works


def _spawn_worker(prims: list[str], values: list[float]) -> list[float]:
    """Run in a spawned process: write, seal and read back through a stage of its own."""
    with ovstage.Stage("spawned") as stage:
        paths = ovstage.PathDictionary(stage)
        with (
            paths.create_path_list_from_strings(prims) as plist,
            stage.query_from_path_list(plist) as query,
        ):
            data = np.array(values, np.float32)
            stage.write_attribute(query, "t", 1, data, is_array=False).wait()
            stage.advance_write_floor(1).wait()
            with stage.read_attributes(query, ["t"], ovstage.OrdinalRange.latest(1)) as read:
                read.wait()
                with read.fetch_next() as group:
                    return [float(x) for x in group.array()]


def test_multiprocessing_spawn_works() -> None:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        futures = [
            pool.submit(_spawn_worker, ["/A", "/B"], [float(i), float(i + 1)]) for i in range(4)
        ]
        results = [f.result(timeout=120) for f in futures]
    assert results == [[float(i), float(i + 1)] for i in range(4)]
