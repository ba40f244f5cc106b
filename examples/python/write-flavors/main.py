"""Write flavors: a batch write, sparse writes, ragged arrays and the CPU-ahead pattern.

Reads hand out typed tensors: scalar lanes plus component axes, so a float3 column reads as
(N, 3) and a MATRIX column as (N, 4, 4); writes take that form or the tuple in lanes.

Every write names an ordinal; a read sees it once the write floor is advanced past it (sealing).
Writes are asynchronous enqueues returning an Operation; the payload is copied before the call
returns, so buffers can be reused at once.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import ovstage
from ovstage import AttributeSemantic, ErrorCode, OrdinalRange, OvstageError, WriteDesc

PRIMS = ["/World/A", "/World/B", "/World/C", "/World/D"]


def read_latest(
    stage: ovstage.Stage, query: ovstage.Query, attribute: str, ordinal: int
) -> list[Any]:
    """The sealed values of ``attribute`` on PRIMS, in order (None where a prim has none)."""
    dictionary = ovstage.PathDictionary(stage)
    found: dict[str, Any] = {}
    with stage.read_attributes(query, [attribute], OrdinalRange.latest(ordinal)) as read:
        read.wait()
        for group in read.groups():
            with group:
                list_paths = dictionary.get_path_strings(group.prim_list)
                fixed = None if group.is_array else np.from_dlpack(group.dlpack(0))
                for local in range(group.prim_count):
                    row = group.data_row_index(local) if group.has_data_index_map else local
                    path = list_paths[group.prim_index(local)]
                    found[path] = (
                        group.array(row).tolist() if fixed is None else fixed[row].tolist()
                    )
    return [found.get(path) for path in PRIMS]


def typed_shapes(
    stage: ovstage.Stage, query: ovstage.Query, attribute: str, ordinal: int
) -> list[tuple[int, ...]]:
    """The shapes a read hands out: scalar lanes plus component axes ((N, 3), (N, 4, 4)),
    one tensor per prim for ragged columns."""
    with stage.read_attributes(query, [attribute], OrdinalRange.latest(ordinal)) as read:
        shapes = []
        for group in read.groups():
            with group:
                shapes += [group.array(i).shape for i in range(group.tensor_count)]
        return shapes


def show(stage: ovstage.Stage, query: ovstage.Query, attribute: str, ordinal: int) -> None:
    print(f"  {attribute:<11} {read_latest(stage, query, attribute, ordinal)}")


def seal(stage: ovstage.Stage, ordinal: int) -> None:
    stage.advance_write_floor(ordinal).wait()


def main() -> None:
    with ovstage.Stage("write-flavors") as stage:
        dictionary = ovstage.PathDictionary(stage)
        with (
            dictionary.create_path_list_from_strings(PRIMS) as prims,
            stage.query_from_path_list(prims) as query,
        ):
            # 1. One batch, one op: three attributes of different kinds at ordinal 1.
            labels = [np.frombuffer(s.encode(), np.uint8) for s in ("alpha", "b", "", "delta")]
            op = stage.write_attributes(
                query,
                [
                    WriteDesc("temperature", np.array([20, 21, 22, 23], np.float32), False),
                    WriteDesc(
                        "position",
                        np.arange(12, dtype=np.float32).reshape(4, 3),  # folded to float3
                        False,
                        semantic=AttributeSemantic.POINT,
                    ),
                    WriteDesc("label", labels, True, semantic=AttributeSemantic.STRING),
                    WriteDesc(
                        "xform",
                        np.stack([np.eye(4)] * 4),  # (4, 4, 4): folded to 16 lanes per prim
                        False,
                        semantic=AttributeSemantic.MATRIX,
                    ),
                ],
                1,
            )
            op.wait()
            seal(stage, 1)
            print("batch write at ordinal 1 (one op)")
            show(stage, query, "temperature", 1)
            show(stage, query, "position", 1)
            text = [bytes(row).decode() for row in read_latest(stage, query, "label", 1)]
            print(f"  {'label':<11} {text}")
            # Reads come back typed: a float3 column is (N, 3), a MATRIX column (N, 4, 4).
            for attribute in ("temperature", "position", "xform"):
                print(f"  {attribute} reads as {typed_shapes(stage, query, attribute, 1)}")

            # 2. Sparse writes. index_map gathers payload rows: element i reads row map[i].
            stage.write_attribute(
                query,
                "temperature",
                2,
                np.array([100, 200], np.float32),
                is_array=False,
                index_map=[1, 1, 0],  # A <- row 1, B <- row 1, C <- row 0; D untouched
            ).wait()
            seal(stage, 2)
            print("index_map [1, 1, 0] at ordinal 2")
            show(stage, query, "temperature", 2)

            # mask selects which of the first `count` elements are written (bit i of word i/64).
            stage.write_attribute(
                query,
                "temperature",
                3,
                np.array([-1, -2, -3, -4], np.float32),
                is_array=False,
                mask=[0b1010],  # B and D
                count=4,
            ).wait()
            seal(stage, 3)
            print("mask 0b1010 at ordinal 3")
            show(stage, query, "temperature", 3)

            # count addresses the leading prims of the query.
            stage.write_attribute(
                query, "temperature", 4, np.array([7, 8], np.float32), is_array=False, count=2
            ).wait()
            seal(stage, 4)
            print("count 2 at ordinal 4")
            show(stage, query, "temperature", 4)

            # 3. Ragged arrays (is_array=True): one packed tensor of uniform rows ...
            stage.write_attribute(
                query, "weights", 5, np.arange(8, dtype=np.int32), is_array=True
            ).wait()
            # ... or one tensor per row, any lengths.
            rows = [np.arange(n, dtype=np.int32) + 10 * n for n in (2, 3, 1, 0)]
            stage.write_attribute(query, "samples", 5, rows, is_array=True).wait()
            seal(stage, 5)
            print("ragged arrays at ordinal 5")
            show(stage, query, "weights", 5)
            show(stage, query, "samples", 5)
            print(f"  samples rows read as {typed_shapes(stage, query, 'samples', 5)}")

            # 4. CPU ahead: submit several ordinals without waiting, seal the last, then drain
            # the ops with timeout=0 polls; each finished op is released by its wait().
            pending = []
            for ordinal in range(6, 10):
                values = np.full(4, ordinal * 10, np.float32)
                pending.append(
                    stage.write_attribute(query, "temperature", ordinal, values, is_array=False)
                )
            pending.append(stage.advance_write_floor(9))
            submitted = len(pending)
            drained = 0
            while pending:
                still = []
                for op in pending:
                    try:
                        op.wait(0)  # poll: raises TIMEOUT while running, op stays waitable
                    except OvstageError as exc:
                        if exc.code != ErrorCode.TIMEOUT:
                            raise
                        still.append(op)
                    else:
                        drained += 1
                pending = still
                if pending:
                    time.sleep(0.001)  # the CPU would do other work here
            print(f"CPU ahead: submitted {submitted} ops for ordinals 6..9, drained {drained}")
            show(stage, query, "temperature", 9)


if __name__ == "__main__":
    main()
