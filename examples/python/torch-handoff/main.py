"""Torch handoff: a producer writes observations per ordinal, a consumer trains a tiny model on
the sealed data through zero-copy torch views.

The producer writes, at each ordinal, an observation (4 floats) and a reward for each of 64
environments from torch tensors, in one batch, and seals the ordinal. The consumer reads each
sealed ordinal and hands both columns to torch with ``torch.from_dlpack(group.dlpack(0))``: the
tensors are the stage's own memory (no copy), and they stay valid after the group is released,
after later writes and after the stage is destroyed. It keeps the views of the last few ordinals
in a list (a replay buffer) and takes optimizer steps of a ``torch.nn.Linear`` on them, which
learns the rule the producer's rewards follow.

Only deterministic facts are printed (the learned weights rounded, invariants), so the output is
the same on every run.
"""

from __future__ import annotations

import ovstage
import torch
from ovstage import OrdinalRange, WriteDesc

ENVIRONMENTS = [f"/World/env{i}" for i in range(64)]
OBSERVATION = 4
ORDINALS = 150
REPLAY = 8  # the consumer keeps the views of this many ordinals
# The rule behind the producer's rewards, which the model learns.
TRUE_WEIGHT = [1.0, -2.0, 0.5, 3.0]
TRUE_BIAS = 0.5


def produce(
    stage: ovstage.Stage, query: ovstage.Query, ordinal: int, rng: torch.Generator
) -> None:
    """Write one ordinal's observations and rewards (torch tensors), then seal it."""
    observation = torch.randn(len(ENVIRONMENTS), OBSERVATION, generator=rng)
    reward = observation @ torch.tensor(TRUE_WEIGHT) + TRUE_BIAS
    stage.write_attributes(
        query,
        [WriteDesc("observation", observation, False), WriteDesc("reward", reward, False)],
        ordinal,
    ).wait()
    stage.advance_write_floor(ordinal).wait()


def sealed_view(
    stage: ovstage.Stage, query: ovstage.Query, attribute: str, ordinal: int
) -> tuple[torch.Tensor, bool]:
    """A zero-copy torch view of ``attribute`` sealed at ``ordinal``, and whether it is the
    column's memory itself (its data pointer is the group tensor's)."""
    with stage.read_attributes(query, [attribute], OrdinalRange.latest(ordinal)) as read:
        group = read.fetch_next()
        assert group is not None, f"no sealed {attribute} at {ordinal}"
        with group:
            view = torch.from_dlpack(group.dlpack(0))
            column = group.tensor(0)
            same_memory = view.data_ptr() == (column.data or 0) + column.byte_offset
    return view, same_memory  # the view outlives the group and the read


def main() -> None:
    torch.manual_seed(0)
    rng = torch.Generator().manual_seed(1)
    model = torch.nn.Linear(OBSERVATION, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    replay: list[tuple[torch.Tensor, torch.Tensor]] = []
    zero_copy = True
    first_loss = 0.0
    with ovstage.Stage("torch-handoff") as stage:
        dictionary = ovstage.PathDictionary(stage)
        with (
            dictionary.create_path_list_from_strings(ENVIRONMENTS) as prims,
            stage.query_from_path_list(prims) as query,
        ):
            for ordinal in range(1, ORDINALS + 1):
                produce(stage, query, ordinal, rng)
                observation, same_obs = sealed_view(stage, query, "observation", ordinal)
                reward, same_reward = sealed_view(stage, query, "reward", ordinal)
                zero_copy = zero_copy and same_obs and same_reward
                replay.append((observation, reward))
                del replay[:-REPLAY]
                for batch, target in replay:  # a training step on each kept batch
                    loss = torch.nn.functional.mse_loss(model(batch).squeeze(1), target)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    first_loss = first_loss or loss.item()
            kept = [(o.clone(), r.clone()) for o, r in replay]
    # The stage is gone; the kept views still hold the sealed values.
    unchanged = all(
        torch.equal(o, ko) and torch.equal(r, kr)
        for (o, r), (ko, kr) in zip(replay, kept, strict=True)
    )
    with torch.no_grad():
        final = float(torch.nn.functional.mse_loss(model(replay[-1][0]).squeeze(1), replay[-1][1]))
    weight = [round(w, 1) for w in model.weight.detach().reshape(-1).tolist()]
    print(f"producer: {ORDINALS} ordinals of {len(ENVIRONMENTS)} observations, written from torch")
    print(f"consumer: every batch was a zero-copy view of the sealed column: {zero_copy}")
    print(f"consumer: kept the views of the last {len(replay)} ordinals in its replay list")
    print(f"model: loss fell by more than 1000x: {final < first_loss / 1000}")
    print(f"model: learned weight {weight}, bias {round(model.bias.item(), 1)}")
    print(f"after Stage.destroy(): kept views unchanged: {unchanged}")
    print(f"model: loss on the last batch < 1e-3: {final < 1e-3}")


if __name__ == "__main__":
    main()
