"""Producer/consumer: a producer thread writes sensor frames ahead at its own rate while a
consumer thread reads the latest sealed frame at another rate.

The producer never waits for its writes: it enqueues a frame (two attributes at the frame's
ordinal, then a floor advance sealing it), keeps going, and now and then polls its pending
operations with ``done()`` (a non-blocking poll) and releases the finished ones. The consumer
asks for the write floor and reads the snapshot at it (``latest(floor)``); each read is one
consistent sealed frame, and the producer's newer, unsealed writes never make it fail. Only when
the producer seals a newer frame between the two calls is the snapshot gone (``OUT_OF_RANGE``),
and the consumer simply asks again.

Only deterministic facts are printed (totals, invariants, the final state), so the output is
the same on every run; how many frames the consumer happened to see depends on timing.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import ovstage

SENSORS = [f"/Robot/sensor{i}" for i in range(8)]
FRAMES = 120
PRODUCER_PERIOD_S = 0.002  # the producer's rate: one frame every 2 ms
CONSUMER_PERIOD_S = 0.005  # the consumer's rate: one look every 5 ms


def frame_values(frame: int) -> tuple[np.ndarray, np.ndarray]:
    """The sensor readings of a frame: a temperature and a position per sensor."""
    temperature = np.array([20.0 + frame + 0.5 * s for s in range(len(SENSORS))], np.float32)
    position = np.array([[frame, s, -frame] for s in range(len(SENSORS))], np.float32)
    return temperature, position


class Producer(threading.Thread):
    """Writes FRAMES frames at ordinals 1..FRAMES, running ahead of its operations."""

    def __init__(self, stage: ovstage.Stage, query: ovstage.Query, first_sealed: threading.Event):
        super().__init__(name="producer")
        self.stage, self.query, self.first_sealed = stage, query, first_sealed
        self.writes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            pending: list[ovstage.Operation] = []
            for frame in range(1, FRAMES + 1):
                temperature, position = frame_values(frame)
                pending.append(
                    self.stage.write_attribute(
                        self.query, "temperature", frame, temperature, is_array=False
                    )
                )
                pending.append(
                    self.stage.write_attribute(
                        self.query, "position", frame, position, is_array=False
                    )
                )
                pending.append(self.stage.advance_write_floor(frame))
                self.writes += 2
                if frame == 1:
                    pending.pop().wait()  # the consumer starts once something is sealed
                    self.first_sealed.set()
                # Poll without blocking; wait() on a finished op only releases it.
                still_pending = []
                for op in pending:
                    if op.done():
                        op.wait()
                    else:
                        still_pending.append(op)
                pending = still_pending
                time.sleep(PRODUCER_PERIOD_S)
            for op in pending:  # drain
                op.wait()
        except BaseException as exc:  # reported by main()
            self.error = exc


class Consumer(threading.Thread):
    """Reads the latest sealed frame until the producer is done."""

    def __init__(self, stage: ovstage.Stage, query: ovstage.Query, producer: Producer):
        super().__init__(name="consumer")
        self.stage, self.query, self.producer = stage, query, producer
        self.temperature = ovstage.PathDictionary(stage).intern_token("temperature")
        self.frames_seen: list[int] = []
        self.consistent = True
        self.error: BaseException | None = None

    def read_latest(self) -> dict[str, np.ndarray]:
        """Both attributes at the write floor (the latest sealed frame), copied out of the read
        groups."""
        attrs = ["temperature", "position"]
        while True:
            with self.stage.get_attribute_write_floor(None) as floor_query:
                floor = floor_query.fetch()
            out: dict[str, np.ndarray] = {}
            try:
                with self.stage.read_attributes(
                    self.query, attrs, ovstage.OrdinalRange.latest(floor)
                ) as read:
                    for group in read.groups():
                        with group:
                            name = attrs[0] if group.attribute == self.temperature else attrs[1]
                            out[name] = np.from_dlpack(group.dlpack(0)).copy()
                return out
            except ovstage.OvstageError as exc:
                if exc.code != ovstage.ErrorCode.OUT_OF_RANGE:
                    raise
                # A newer frame was sealed after we asked for the floor: ask again.

    def run(self) -> None:
        try:
            while self.producer.is_alive():
                values = self.read_latest()
                # Temperature of sensor 0 is 20 + frame: it names the frame this read saw.
                frame = round(float(values["temperature"][0]) - 20.0)
                expected_t, expected_p = frame_values(frame)
                self.consistent &= np.array_equal(values["temperature"], expected_t)
                # Both attributes are sealed by the same floor advance: same frame.
                self.consistent &= np.array_equal(values["position"], expected_p)
                self.frames_seen.append(frame)
                time.sleep(CONSUMER_PERIOD_S)
        except BaseException as exc:  # reported by main()
            self.error = exc


def main() -> None:
    config = ovstage.StageConfig(workers=2)
    with ovstage.Stage("producer-consumer", config=config) as stage:
        paths = ovstage.PathDictionary(stage)
        with (
            paths.create_path_list_from_strings(SENSORS) as prims,
            stage.query_from_path_list(prims) as query,
        ):
            first_sealed = threading.Event()
            producer = Producer(stage, query, first_sealed)
            consumer = Consumer(stage, query, producer)
            producer.start()
            first_sealed.wait(timeout=60)
            consumer.start()
            producer.join()
            consumer.join()
            for thread in (producer, consumer):
                if thread.error is not None:
                    raise thread.error
            final = consumer.read_latest()

    seen = consumer.frames_seen
    print(f"producer: {FRAMES} frames, {producer.writes} writes, all operations completed")
    print(f"consumer: read at least one frame: {len(seen) > 0}")
    print(f"consumer: frames never went backwards: {seen == sorted(seen)}")
    print(f"consumer: every read was one consistent sealed frame: {consumer.consistent}")
    print(f"final temperature: {final['temperature'].tolist()}")
    print(f"final position of sensor 7: {final['position'][7].tolist()}")


if __name__ == "__main__":
    main()
