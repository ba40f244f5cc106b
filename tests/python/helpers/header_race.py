"""Writes of an array that another thread keeps changing (run by test_header_race.py).

``python header_race.py shape|dtype|dltensor SECONDS``: one thread reassigns the source's
header without pause while the main thread writes the source with ``write_attribute`` over A
prims, for at most SECONDS:

* ``shape``: ``arr.shape`` goes round (A, B) -> (B, A) -> (A * B,) (numpy frees the old dims
  on each assignment); the writes take the fast path;
* ``dtype``: ``arr.dtype`` flips between float32 (shape (A, B)) and float64 (shape (A, B/2)),
  which changes the shape too: a dtype read before a flip and a shape read after it describe
  an array that never existed;
* ``dltensor``: the source is a ``DLTensor`` over the float32 (A, B) array whose ``shape``
  field is given a fresh (A, B) or (B, A) ctypes array each time (the previous one is freed).

Only the float32 (A, B) state fits the column, so each write is either accepted with it or
rejected with the error of one of the other states. Those error texts are recorded first,
with nobody changing the array; under the race any other outcome (another error, an
exception) means a write saw a header the array never had. Prints one JSON line; a crash shows
as a non-zero exit status.
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import ovstage

A, B = 4, 6


def main(mode: str, seconds: float) -> None:
    sys.setswitchinterval(1e-6)  # hand the GIL back and forth as often as possible
    arr = np.arange(A * B, dtype=np.float32).reshape(A, B)
    source: object = arr
    stop = threading.Event()
    states: list[Callable[[], None]]
    if mode == "shape":
        states = [lambda s=s: setattr(arr, "shape", s) for s in [(A, B), (B, A), (A * B,)]]
    elif mode == "dtype":
        states = [lambda d=d: setattr(arr, "dtype", d) for d in [np.float32, np.float64]]
    else:
        tensor = ovstage.make_dltensor(arr)
        source = tensor
        states = [
            lambda s=s: setattr(tensor, "shape", (ctypes.c_int64 * 2)(*s)) for s in [(A, B), (B, A)]
        ]

    def change_forever() -> None:
        while not stop.is_set():
            for state in states:
                state()

    with ovstage.Stage("header-race") as stage:
        paths = ovstage.PathDictionary(stage)
        prims = [f"/Race/p{i}" for i in range(A)]
        with (
            paths.create_path_list_from_strings(prims) as plist,
            stage.query_from_path_list(plist) as query,
        ):
            stage.write_attribute(query, "x", 1, source, is_array=False).wait()
            expected = {}
            for state in states[1:]:
                state()
                op = stage.write_attribute(query, "x", 2, source, is_array=False)
                expected[op.error_message()] = 0
            states[0]()
            accepted, unexpected, writes = 0, [], 0
            thread = threading.Thread(target=change_forever, daemon=True)
            thread.start()
            deadline = time.monotonic() + seconds
            ordinal = 1
            while time.monotonic() < deadline and not unexpected:
                for _ in range(500):
                    ordinal += 1
                    writes += 1
                    try:
                        op = stage.write_attribute(query, "x", ordinal, source, is_array=False)
                    except Exception as exc:  # reported: no write of this array may raise
                        unexpected.append(f"raised {exc!r}")
                        continue
                    if op.ok:
                        accepted += 1
                        op.wait()
                    elif op.error_message() in expected:
                        expected[op.error_message()] += 1
                    else:
                        unexpected.append(op.error_message())
            stop.set()
            thread.join(10)
            states[0]()
            stage.advance_write_floor(ordinal).wait()
            read_back = []
            with stage.read_attributes(query, ["x"], ovstage.OrdinalRange.latest(ordinal)) as rd:
                for group in rd.groups():
                    with group:
                        read_back.append(group.array(0).reshape(-1).tolist())
    print(
        json.dumps(
            {
                "writes": writes,
                "accepted": accepted,
                "rejected": list(expected.values()),
                "unexpected": unexpected[:5],
                "read_back": read_back,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
