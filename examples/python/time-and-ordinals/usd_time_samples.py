"""Time samples of a USD scene become ordinals; a consumer reads which prims changed.

A USD attribute may hold values at several time codes. ovstage holds one value per key at a
time and orders changes by ordinal, so the application picks the times it wants to sample and
the ordinal each sample is written at: ``population.open_usd_with_desc`` populates the scene
sampled at time 0 s at ordinal 1, then ``population.update_from_usd_time(stage, ordinal,
seconds)`` re-samples every time-varying property in scope at ``seconds`` and writes it at
``ordinal``. Times are in seconds (the scene's ``timeCodesPerSecond`` converts them).

Re-sampling rewrites every time-sampled property, changed or not (the fan's speed stops
changing after 0.2 s but is still written at each step); properties without time samples
(the box) are never rewritten. A consumer that polls now and then reads
``OrdinalRange.between(last_seen + 1, floor)`` and sees each key that was written in that
range once, with its latest value, and converts ordinals back to times with the application's
own table (ovstage knows nothing about time).

Needs usd-core (``pip install 'ovstage-go[usd]'``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import ovstage
from ovstage import OrdinalRange, population
from ovstage.population import Desc, PrimPredicate, PropertyPredicate, Selector

SCENE = """#usda 1.0
(
    startTimeCode = 0
    endTimeCode = 4
    timeCodesPerSecond = 10
)

def Xform "World"
{
    def Xform "Ball"
    {
        double3 xformOp:translate.timeSamples = {
            0: (0, 0, 2),
            1: (0, 0, 1.5),
            2: (0, 0, 0.5),
            3: (0, 0, 1),
            4: (0, 0, 1.25),
        }
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }

    def Xform "Fan"
    {
        custom float sim:speed.timeSamples = {
            0: 0,
            2: 10,
        }
    }

    def Xform "Box"
    {
        custom float sim:speed = 3
    }
}
"""

COLUMNS = ["xformOp:translate", "sim:speed"]
#: What population reads: those two properties of every prim under /World.
DESC = Desc(
    selectors=[
        Selector(
            PrimPredicate.is_under_path("/World"),
            PropertyPredicate.has_name(*COLUMNS),
        )
    ]
)
SECONDS_PER_FRAME = 0.1
FRAMES = 5  # times 0.0 .. 0.4 s
#: Ordinals after which the consumer looks at the stage.
CONSUMER_POLLS = {1, 3, 4, 5}


def changes(stage: ovstage.Stage, query: ovstage.Query, start: int, end: int) -> list[str]:
    """One line per key written in [start, end], sorted (group order is unspecified)."""
    dictionary = ovstage.PathDictionary(stage)
    lines = []
    with stage.read_attributes(query, COLUMNS, OrdinalRange.between(start, end)) as read:
        for group in read.groups():
            with group:
                name = dictionary.token_to_string(group.attribute)
                listed = dictionary.get_path_strings(group.prim_list)
                data: Any = np.from_dlpack(group.dlpack(0))
                for k in range(group.prim_count):
                    row = group.data_row_index(k) if group.has_data_index_map else k
                    value = np.round(data[row], 3).tolist()
                    lines.append(f"{listed[group.prim_index(k)]} {name} = {value}")
    return sorted(lines)


def main() -> None:
    time_of: dict[int, float] = {}  # the application's ordinal -> seconds table
    with ovstage.Stage("usd-time-samples") as stage:
        # Frame 0 is the population itself; each later frame is one re-sample.
        population.open_usd_from_string_with_desc(stage, SCENE, 1, 0.0, DESC)
        time_of[1] = 0.0
        with stage.query() as everything:
            last_seen = 0
            for ordinal in range(1, FRAMES + 1):
                if ordinal > 1:
                    seconds = round((ordinal - 1) * SECONDS_PER_FRAME, 6)
                    population.update_from_usd_time(stage, ordinal, seconds)
                    time_of[ordinal] = seconds
                stage.advance_write_floor(ordinal).wait()  # seal the frame
                if ordinal not in CONSUMER_POLLS:
                    continue  # the consumer is busy: its next poll covers this frame too
                print(
                    f"consumer at t={time_of[ordinal]:.1f}s: changes in "
                    f"[{last_seen + 1}, {ordinal}]"
                )
                for line in changes(stage, everything, last_seen + 1, ordinal):
                    print(f"  {line}")
                last_seen = ordinal
        print("ordinal -> time: " + ", ".join(f"{o}={t:.1f}s" for o, t in time_of.items()))


if __name__ == "__main__":
    main()
