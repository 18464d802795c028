"""Where an assistant turn's tokens come from: the torch engine, or a script (the expert)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import IM_END, encode, special_id
from arctic_swe.engine import TorchEngine
from arctic_swe.harness._errors import HarnessError
from arctic_swe.harness._trajectory import NOT_GENERATED
from load_router import GenerateRequest


@dataclass(frozen=True)
class SampledTurn:
    """The tokens of one turn (stop token included when ``finish_reason == "stop"``)."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    versions: tuple[int, ...]
    finish_reason: str


class TurnSampler(Protocol):
    """Produces the next assistant turn given the whole history as token ids."""

    async def sample(self, prompt_ids: Sequence[int], max_new_tokens: int) -> SampledTurn:
        """One turn; must stop at ``<|im_end|>`` (``finish_reason="stop"``) or the limit."""
        ...


class EngineSampler:
    """Samples from a :class:`TorchEngine` (temperature 1, full vocabulary, stop ``<|im_end|>``)."""

    def __init__(
        self, engine: TorchEngine, tokenizer: PreTrainedTokenizerFast, rollout_index: int = 0
    ) -> None:
        self.engine = engine
        self.stop_id = special_id(tokenizer, IM_END)
        self.rollout_index = rollout_index

    async def sample(self, prompt_ids: Sequence[int], max_new_tokens: int) -> SampledTurn:
        ids: Any = tuple(prompt_ids)  # attrs' tuple converter confuses mypy's generics
        request = GenerateRequest(
            rollout_index=self.rollout_index,
            prompt_ids=ids,
            max_new_tokens=max_new_tokens,
        )
        turn = await self.engine.generate_detailed(request, stop_token_ids=(self.stop_id,))
        return SampledTurn(turn.token_ids, turn.logprobs, turn.versions, turn.finish_reason)


class ScriptedSampler:
    """Replays fixed turn texts (the scripted expert): each is encoded and ends in ``<|im_end|>``.

    Log-probs are 0.0 and versions ``-1``: these tokens were written, not sampled.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerFast, turns: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.turns = list(turns)
        self.stop_id = special_id(tokenizer, IM_END)
        self.calls = 0

    async def sample(self, prompt_ids: Sequence[int], max_new_tokens: int) -> SampledTurn:
        if self.calls >= len(self.turns):
            raise HarnessError(f"the script has only {len(self.turns)} turns")
        ids = (*encode(self.tokenizer, self.turns[self.calls]), self.stop_id)
        self.calls += 1
        finish = "stop"
        if len(ids) > max_new_tokens:
            ids, finish = ids[:max_new_tokens], "max_tokens"
        return SampledTurn(ids, (0.0,) * len(ids), (NOT_GENERATED,) * len(ids), finish)
