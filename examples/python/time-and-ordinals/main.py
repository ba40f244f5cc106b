"""Time and ordinals: an application-kept ordinal<->time table, scoped write floors, and a
consumer that asks "what changed since my cursor?".

Ordinals are opaque ordering keys chosen by the application; ovstage never mints them and knows
nothing about time. This program steps a 30 Hz simulation, keeps its own table from ordinal to
simulation time, seals data with write floors, and reads changes with
``OrdinalRange.between(last_seen + 1, floor)``. ``usd_time_samples.py`` beside this file does
the same with the time samples of a USD scene (``population.update_from_usd_time``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

import numpy as np
import ovstage
from ovstage import OrdinalRange, Scope

PRIMS = ["/World/A", "/World/B", "/World/C"]
RATE_HZ = 30
#: Steps after which the consumer polls the floor.
CONSUMER_POLLS = {3, 4, 5, 7, 9}


class Timeline:
    """The application's ordinal <-> simulation-time table (ovstage has no notion of time)."""

    def __init__(self) -> None:
        self.ordinals: list[int] = []
        self.times: list[float] = []

    def add(self, ordinal: int, seconds: float) -> None:
        assert not self.ordinals or ordinal > self.ordinals[-1], "ordinals must increase"
        self.ordinals.append(ordinal)
        self.times.append(seconds)

    def time_of(self, ordinal: int) -> float:
        return self.times[self.ordinals.index(ordinal)]

    def ordinal_at(self, seconds: float) -> int:
        """The last ordinal at or before ``seconds``."""
        return self.ordinals[bisect.bisect_right(self.times, seconds) - 1]


def floor(stage: ovstage.Stage, attribute: str | None = None) -> int:
    """The write floor of ``attribute``, or the global floor (minimum over attributes)."""
    with stage.get_attribute_write_floor(attribute) as query:
        return query.fetch()


def oldest_preserved(stage: ovstage.Stage) -> int:
    """The retention frontier: change membership is exact at or above it."""
    with stage.get_oldest_preserved_ordinal() as query:
        return query.fetch()


def changes(stage: ovstage.Stage, query: ovstage.Query, start: int, end: int) -> list[str]:
    """One line per changed key in [start, end], sorted (group order is unspecified)."""
    dictionary = ovstage.PathDictionary(stage)
    lines = []
    with stage.read_attributes(query, ["pose", "color"], OrdinalRange.between(start, end)) as read:
        read.wait()
        for group in read.groups():
            with group:
                name = dictionary.token_to_string(group.attribute)
                list_paths = dictionary.get_path_strings(group.prim_list)
                data: Any = None if group.is_delete else np.from_dlpack(group.dlpack(0))
                for local in range(group.prim_count):
                    path = list_paths[group.prim_index(local)]
                    if group.is_delete:
                        lines.append(f"{path} {name} deleted")
                        continue
                    row = group.data_row_index(local) if group.has_data_index_map else local
                    value = [round(v, 2) for v in data[row].tolist()]
                    lines.append(f"{path} {name} = {value}")
    return sorted(lines)


def main() -> None:
    timeline = Timeline()
    with ovstage.Stage("time-and-ordinals") as stage:
        dictionary = ovstage.PathDictionary(stage)
        with (
            dictionary.create_path_list_from_strings(PRIMS) as prims,
            stage.query_from_path_list(prims) as query,
            dictionary.create_path_list_from_strings(PRIMS[1:2]) as b_list,
            stage.query_from_path_list(b_list) as only_b,
            dictionary.create_path_list_from_strings(PRIMS[2:]) as c_list,
            stage.query_from_path_list(c_list) as only_c,
        ):

            def write(
                attribute: str, ordinal: int, values: Any, target: ovstage.Query = query, **kw: Any
            ) -> None:
                payload = np.asarray(values, np.float32)
                stage.write_attribute(
                    target, attribute, ordinal, payload, is_array=False, **kw
                ).wait()

            # 1. Steps 1..3: physics writes "pose", rendering writes "color".
            for ordinal in (1, 2, 3):
                timeline.add(ordinal, ordinal / RATE_HZ)
                write("pose", ordinal, [[ordinal, 0, 0]] * 3)
                write("color", ordinal, [[ordinal / 10, 0, 0]] * 3)

            # 2. Scoped floors: physics seals its own attribute, rendering lags behind.
            stage.advance_write_floor(3, scope=Scope.INCLUDE, attributes=["pose"]).wait()
            print("after INCLUDE [pose] to 3:")
            print(f"  pose {floor(stage, 'pose')} color {floor(stage, 'color')}", end="")
            print(f" global {floor(stage)} (the minimum over attributes)")
            stage.advance_write_floor(3, scope=Scope.EXCLUDE, attributes=["pose"]).wait()
            print("after EXCLUDE [pose] to 3:")
            print(f"  pose {floor(stage, 'pose')} color {floor(stage, 'color')}", end="")
            print(f" global {floor(stage)}")

            # 3. Steps 4..9; the consumer only looks at the stage after some of them.
            last_seen = 0
            script: dict[int, Callable[[int], object]] = {
                4: lambda o: write("pose", o, [[4, 1, 0]] * 3),
                5: lambda o: write("pose", o, [[5, 5, 5]], count=1),  # only /World/A
                6: lambda o: stage.delete_attributes(only_b, ["color"], o).wait(),
                7: lambda o: write("color", o, [[0.7, 0.7, 0.7]], target=only_c),
                8: lambda o: stage.delete_attributes(only_c, [], o).wait(),  # whole prim
                9: lambda o: write("pose", o, [[9, 9, 9]] * 2, count=2),
            }
            for ordinal in range(3, 10):
                if ordinal > 3:
                    timeline.add(ordinal, ordinal / RATE_HZ)
                    script[ordinal](ordinal)
                    stage.advance_write_floor(ordinal).wait()  # seal the step
                if ordinal not in CONSUMER_POLLS:
                    continue  # the consumer is busy: the next poll covers this step too
                current = floor(stage)
                if current <= last_seen:
                    continue
                print(
                    f"consumer at t={timeline.time_of(current):.3f}s: "
                    f"changes in [{last_seen + 1}, {current}]"
                )
                for line in changes(stage, query, last_seen + 1, current):
                    print(f"  {line}")
                last_seen = current

            print(f"time 0.2s is ordinal {timeline.ordinal_at(0.2)}")
            print(f"oldest preserved ordinal {oldest_preserved(stage)}")


if __name__ == "__main__":
    main()
