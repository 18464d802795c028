"""Tests for ``arctic_swe.harness._sampler``: the engine-driven episode records what the torch
engine generated (ids, log-probs, versions), and the scripted sampler replays its script."""

import asyncio
from collections.abc import Sequence

import pytest
import torch
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import IM_END, special_id
from arctic_swe.deck import StoredDeck
from arctic_swe.engine import EngineConfig, TorchEngine
from arctic_swe.harness import (
    NOT_GENERATED,
    EngineSampler,
    HarnessConfig,
    HarnessError,
    SampledTurn,
    ScriptedSampler,
    run_episode,
)
from arctic_swe.model import PolicyPreset, build_policy, policy_config
from swe_sandbox import NamespaceBackend, SandboxPool

SMALL = PolicyPreset(hidden_size=32, intermediate_size=64, head_dim=16, linear_key_head_dim=16,
                     linear_value_head_dim=16)  # fmt: skip


class _Spy(EngineSampler):
    def __init__(self, engine: TorchEngine, tokenizer: PreTrainedTokenizerFast) -> None:
        super().__init__(engine, tokenizer)
        self.seen: list[SampledTurn] = []

    async def sample(self, prompt_ids: Sequence[int], max_new_tokens: int) -> SampledTurn:
        turn = await super().sample(prompt_ids, max_new_tokens)
        self.seen.append(turn)
        return turn


def test_engine_episode_records_generated_tokens_logprobs_and_versions(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    torch.manual_seed(0)
    config = policy_config(len(deck_tokenizer), SMALL, eos_token_id=deck_tokenizer.eos_token_id)
    model = build_policy(config, seed=1)
    stop = special_id(deck_tokenizer, IM_END)
    task = small_deck.split("pool")[0]
    harness = HarnessConfig(max_turns=4, max_tokens=4096, max_new_tokens=12)

    async def go() -> tuple[object, _Spy]:
        engine = TorchEngine(
            model, EngineConfig(capacity=2, seed=3, stop_token_ids=(stop,)), version=7
        )
        spy = _Spy(engine, deck_tokenizer)
        try:
            async with (
                SandboxPool(backend, max_concurrency=1) as pool,
                pool.sandbox(task.spec) as box,
            ):
                return await run_episode(task.spec, spy, box, deck_tokenizer, harness), spy
        finally:
            await engine.close()

    trajectory, spy = asyncio.run(go())
    first = trajectory.turns[0]  # type: ignore[attr-defined]
    sampled = spy.seen[0]
    assert trajectory.token_ids[first.start : first.end] == sampled.token_ids  # type: ignore[attr-defined]
    assert trajectory.logprobs[first.start : first.end] == sampled.logprobs  # type: ignore[attr-defined]
    assert set(trajectory.versions[first.start : first.end]) == {7}  # type: ignore[attr-defined]
    assert all(lp <= 0.0 for lp in sampled.logprobs)
    # A random policy does not write a valid turn: the gate ends the episode on turn one.
    assert trajectory.termination == "invalid_format"  # type: ignore[attr-defined]
    assert trajectory.reward == 0.0  # type: ignore[attr-defined]
    if sampled.finish_reason == "max_tokens":
        assert "truncated" in first.codes


def test_scripted_sampler_replays_and_refuses_to_run_past_its_script(
    deck_tokenizer: PreTrainedTokenizerFast,
) -> None:
    sampler = ScriptedSampler(deck_tokenizer, ["<think>\nx\n</think>"])
    turn = asyncio.run(sampler.sample([1], 100))
    assert turn.token_ids[-1] == special_id(deck_tokenizer, IM_END)
    assert turn.finish_reason == "stop"
    assert set(turn.versions) == {NOT_GENERATED}
    with pytest.raises(HarnessError, match="only 1 turns"):
        asyncio.run(sampler.sample([1], 100))
    cut = asyncio.run(ScriptedSampler(deck_tokenizer, ["a b c d e f g"]).sample([1], 2))
    assert (len(cut.token_ids), cut.finish_reason) == (2, "max_tokens")
