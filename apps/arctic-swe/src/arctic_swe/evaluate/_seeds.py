"""Fixed sampling streams of an evaluation: one per (task, sample, turn).

An engine's default stream follows its request counter, so with several rollouts in flight the
seed a turn gets depends on which rollout asked first — sandbox timing. Here every turn's seed
is derived from the evaluation seed, the task's position in the split and the sample number
alone, so the same policy evaluated twice draws the same random numbers in every turn (the
measured pool curve of ``arctic-swe overfit`` compares like with like, Arctic-SWE §3.1), and a
rollout's stream does not depend on how many samples were asked for.

The named streams (``pool``, ``heldout``, ``check``) are in :mod:`arctic_swe._streams`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transformers import PreTrainedTokenizerFast

from arctic_swe._streams import CHECK_STREAM, HELDOUT_STREAM, POOL_STREAM, STREAMS, stream_seed
from arctic_swe.chat import IM_END, special_id
from arctic_swe.engine import TorchEngine, derive_seed
from arctic_swe.harness import SampledTurn
from load_router import GenerateRequest

__all__ = [
    "CHECK_STREAM",
    "HELDOUT_STREAM",
    "POOL_STREAM",
    "STREAMS",
    "SeededSampler",
    "rollout_seed",
    "rollout_seeds",
    "stream_seed",
]


def rollout_seed(seed: int, task_index: int, sample: int) -> int:
    """The stream of sample ``sample`` of the ``task_index``-th task of an evaluation."""
    return derive_seed(derive_seed(seed, task_index), sample)


def rollout_seeds(seed: int, tasks: int, samples: int) -> list[int]:
    """Seeds of the jobs ``[task 0 x samples, task 1 x samples, ...]`` in that order."""
    return [rollout_seed(seed, t, s) for t in range(tasks) for s in range(samples)]


class SeededSampler:
    """The harness's ``TurnSampler`` on a :class:`TorchEngine` (temperature 1, full
    vocabulary, stop ``<|im_end|>``) whose turn ``t`` samples with
    ``derive_seed(rollout_seed, t)``."""

    def __init__(
        self,
        engine: TorchEngine,
        tokenizer: PreTrainedTokenizerFast,
        rollout_index: int,
        seed: int,
    ) -> None:
        self.engine = engine
        self.stop_id = special_id(tokenizer, IM_END)
        self.rollout_index = rollout_index
        self.seed = seed
        self.turns = 0

    async def sample(self, prompt_ids: Sequence[int], max_new_tokens: int) -> SampledTurn:
        ids: Any = tuple(prompt_ids)  # attrs' tuple converter confuses mypy's generics
        request = GenerateRequest(
            rollout_index=self.rollout_index, prompt_ids=ids, max_new_tokens=max_new_tokens
        )
        seed = derive_seed(self.seed, self.turns)
        self.turns += 1
        turn = await self.engine.generate_detailed(
            request, stop_token_ids=(self.stop_id,), seed=seed
        )
        return SampledTurn(turn.token_ids, turn.logprobs, turn.versions, turn.finish_reason)
