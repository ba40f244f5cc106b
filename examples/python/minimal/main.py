"""Minimal ovstage walk-through: intern, write, seal, read, clone.

Writes carry an ordinal; data becomes readable once the write floor is advanced past it.
Every call that changes or produces data is an asynchronous enqueue returning an Operation.
"""

import numpy as np
import ovstage


def read_latest(
    stage: ovstage.Stage, query: ovstage.Query, attr: int, ordinal: int
) -> np.ndarray | None:
    """Read the sealed values of one attribute and return them in query order (None when
    nothing is sealed)."""
    with stage.read_attributes(query, [attr], ovstage.OrdinalRange.latest(ordinal)) as read:
        read.wait()
        values: np.ndarray | None = None
        for group in read.groups():
            with group:
                # np.from_dlpack views the stage's storage without a copy; the view keeps
                # that storage alive on its own, even after the group is released.
                values = np.from_dlpack(group.dlpack(0))
                print(f"read back ordinal {group.ordinal} {values}")
        return values


def read_resolved(
    stage: ovstage.Stage, query: ovstage.Query, attr: int, ordinal: int
) -> np.ndarray:
    """Read one fixed-size attribute and return each query prim's value, in query order.

    A group may carry more rows than it has prims (a clone widened the column): then
    ``data_row_index(k)`` names the row of local prim ``k``, and ``prim_index(k)`` its place in
    the query.
    """
    values = np.zeros(0, dtype=np.float32)
    with stage.read_attributes(query, [attr], ovstage.OrdinalRange.latest(ordinal)) as read:
        read.wait()
        for group in read.groups():
            with group:
                rows = np.from_dlpack(group.dlpack(0))
                values = np.zeros(group.prim_count, dtype=rows.dtype)
                for k in range(group.prim_count):
                    row = group.data_row_index(k) if group.has_data_index_map else k
                    values[group.prim_index(k)] = rows[row]
    return values


def main() -> None:
    with ovstage.Stage("minimal") as stage:
        paths = ovstage.PathDictionary(stage)
        temperature = paths.intern_token("temperature")
        prims = paths.create_path_list_from_strings(["/World/A", "/World/B", "/World/C"])
        with prims, stage.query_from_path_list(prims) as query:
            # 1. Write at ordinal 1 (enqueue returns at once), seal it, read it back.
            stage.write_attribute(
                query, temperature, 1, np.array([1, 2, 3], dtype=np.float32), is_array=False
            ).wait()
            stage.advance_write_floor(1).wait()
            read_latest(stage, query, temperature, 1)

            # 2. Write again, naming the attribute by string, at ordinal 2.
            stage.write_attribute(
                query, "temperature", 2, np.array([4, 5, 6], dtype=np.float32), is_array=False
            ).wait()
            stage.advance_write_floor(2).wait()
            read_latest(stage, query, temperature, 2)

            # 3. Ingest any DLPack producer (here NumPy) zero-copy, then read it back.
            producer = ovstage.DLTensor.from_dlpack(np.array([7, 8, 9], dtype=np.float32))
            stage.write_attribute(query, temperature, 3, producer, is_array=False).wait()
            stage.advance_write_floor(3).wait()
            values = read_latest(stage, query, temperature, 3)

            # 4. Clone /World/A (its values, and any descendants) to two environments at
            #    ordinal 4. The clones widen the column: the 3-prim query now reads a group
            #    with more rows than prims, placed through its data index map.
            stage.clone("/World/A", ["/World/A_env0", "/World/A_env1"], 4)
            stage.advance_write_floor(4).wait()
            print("after clone", read_resolved(stage, query, temperature, 4))
            envs = paths.create_path_list_from_strings(["/World/A_env0", "/World/A_env1"])
            with envs, stage.query_from_path_list(envs) as clones:
                print("clones", read_resolved(stage, clones, temperature, 4))
    # The NumPy view outlives the group and the stage: it holds its own reference.
    print("after destroy", values)


if __name__ == "__main__":
    main()
