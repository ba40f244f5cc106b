"""Process-level scenarios run in a fresh interpreter by test_processes.py.

``python processes.py fork``: a stage is used in a ``fork()``-ed child; every call must raise
a clear ``OvstageError`` at once (the Go runtime does not survive ``fork``). Prints one JSON
line with the child's results.

``python processes.py spawn``: children started with the ``spawn`` and ``forkserver`` methods
create their own stage, write, seal and read. Prints one JSON line per method.

``python processes.py sigint``: prints ``ready`` once a write is held by the write gate, then
blocks in ``Operation.wait()``; on SIGINT prints ``interrupted``, releases the gate and exits
cleanly. It installs SIGINT's handler itself: started from a shell that ignores SIGINT (a
background job), CPython leaves it ignored.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
import time
from typing import Any

import numpy as np
import ovstage
from ovstage import OrdinalRange, gates


def make_stage(name: str) -> tuple[ovstage.Stage, ovstage.PathList, ovstage.Query]:
    stage = ovstage.Stage(name)
    paths = ovstage.PathDictionary(stage)
    plist = paths.create_path_list_from_strings(["/A", "/B"])
    return stage, plist, stage.query_from_path_list(plist)


def write_and_read(
    stage: ovstage.Stage, query: ovstage.Query, values: list[float], ordinal: int = 1
) -> list[float]:
    stage.write_attribute(query, "t", ordinal, np.array(values, np.float32), is_array=False).wait()
    stage.advance_write_floor(ordinal).wait()
    out: list[float] = []
    with stage.read_attributes(query, ["t"], OrdinalRange.latest(ordinal)) as read:
        for group in read.groups():
            with group:
                out.extend(group.array(0).tolist())
    return out


def fork_scenario() -> None:
    stage, plist, query = make_stage("parent")
    write_and_read(stage, query, [1.0, 2.0])
    held = stage.write_attribute(query, "t", 2, np.zeros(2, np.float32), is_array=False)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: every use must fail fast with a clear error
        results: dict[str, Any] = {}
        start = time.monotonic()
        actions = {
            "write_attribute": lambda: stage.write_attribute(
                query, "t", 3, np.zeros(2, np.float32), is_array=False
            ),
            "operation_wait": lambda: held.wait(),
            "read_attributes": lambda: stage.read_attributes(query, ["t"], OrdinalRange.latest(1)),
            "new_stage": lambda: ovstage.Stage("child"),
            "intern_token": lambda: ovstage.PathDictionary(stage).intern_token("x"),
        }
        for name, action in actions.items():
            try:
                action()
                results[name] = "no error"
            except ovstage.OvstageError as exc:
                results[name] = [int(exc.code), exc.message]
        results["elapsed_s"] = time.monotonic() - start
        os.write(wfd, json.dumps(results).encode())
        os._exit(0)
    os.close(wfd)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            print(json.dumps({"hung": True}))
            return
        time.sleep(0.01)
    data = b""
    while chunk := os.read(rfd, 65536):
        data += chunk
    results = json.loads(data)
    results["exit_status"] = status
    # The parent is unaffected.
    held.wait()
    results["parent_after_fork"] = write_and_read(stage, query, [5.0, 6.0], ordinal=4)
    query.release().wait()
    plist.release()
    stage.destroy()
    print(json.dumps(results))


def spawn_child(queue: Any) -> None:
    stage, plist, query = make_stage("child")
    values = write_and_read(stage, query, [float(os.getpid() % 1000), 7.0])
    query.release().wait()
    plist.release()
    stage.destroy()
    queue.put({"pid": os.getpid(), "values": values})


def spawn_scenario() -> None:
    stage, plist, query = make_stage("parent")  # the parent already runs the Go runtime
    write_and_read(stage, query, [1.0, 2.0])
    for method in ("spawn", "forkserver"):
        ctx = multiprocessing.get_context(method)
        queue = ctx.Queue()
        proc = ctx.Process(target=spawn_child, args=(queue,))
        proc.start()
        result = queue.get(timeout=120)
        proc.join(timeout=120)
        ok = result["values"] == [float(result["pid"] % 1000), 7.0]
        print(json.dumps({"method": method, "ok": ok, "exitcode": proc.exitcode}))
    query.release().wait()
    plist.release()
    stage.destroy()


def sigint_scenario() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    stage, plist, query = make_stage("sigint")
    gates.write_gate.reset()
    gates.write_gate.enable()
    op = stage.write_attribute(query, "t", 1, np.zeros(2, np.float32), is_array=False)
    assert gates.write_gate.wait_until_entered()
    print("ready", flush=True)
    try:
        op.wait()
        print("completed", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    gates.write_gate.reset()
    op.wait()  # still waitable after the interrupt
    query.release().wait()
    plist.release()
    stage.destroy()
    print("clean exit", flush=True)


if __name__ == "__main__":
    {"fork": fork_scenario, "spawn": spawn_scenario, "sigint": sigint_scenario}[sys.argv[1]]()
