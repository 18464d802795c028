"""``trainer.invalid_reward`` from episode to loss: real episodes (namespace sandbox, scripted
turns) -> :func:`training_rewards` -> group-centred advantages -> the trainer's CISPO loss,
each checked against a readable float64 reference."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers import PreTrainedTokenizerFast

from arctic_swe.config import TrainerSection
from arctic_swe.deck import DeckTask, StoredDeck
from arctic_swe.harness import HarnessConfig, ScriptedSampler, Trajectory, run_episode
from arctic_swe.model import policy_config
from arctic_swe.orchestrator import (
    FORMAT_GATE_ENDINGS,
    GroupOutcome,
    build_samples,
    training_rewards,
)
from arctic_swe.trainer import Trainer, build_fp32_policy
from swe_formatcheck import ToolCall, render_turn
from swe_sandbox import NamespaceBackend, SandboxPool

ENDINGS = ("submitted", "invalid_format", "duplicate_call", "token_budget", "turn_budget")
SUBMIT = render_turn("Submit.", ToolCall("submit", {}))
LS = render_turn("Look.", ToolCall("execute_bash", {"command": "ls"}))
BROKEN = "<tool_call>\n<function=execute_bash>\n"  # unclosed envelope: invalid_format


@pytest.fixture
def one_thread() -> Iterator[None]:
    """The tiny policy's ops are too small to split: one thread is faster (and far faster on
    a loaded 2-core machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _trajectory(reward: float, termination: str) -> Trajectory:
    return Trajectory(
        task_id="t",
        prompt_length=2,
        token_ids=(1, 2, 3, 4),
        loss_mask=(False, False, True, True),
        logprobs=(0.0, 0.0, -0.5, -1.0),
        versions=(-1, -1, 0, 0),
        turns=(),
        termination=termination,
        raw_reward=reward,
        reward=reward,
    )


def _group(task: str, trajectories: list[Trajectory]) -> GroupOutcome:
    return GroupOutcome(task, False, tuple(trajectories), None, 0, 0, 1.0)


@given(
    st.lists(
        st.lists(st.tuples(st.sampled_from([0.0, 1.0]), st.sampled_from(ENDINGS)), min_size=1),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from([0.0, -1.0]),
)
def test_advantages_use_the_override_for_format_gate_endings_only(
    groups: list[list[tuple[float, str]]], invalid_reward: float
) -> None:
    outcomes = [
        _group(f"t{k}", [_trajectory(r if e == "submitted" else 0.0, e) for r, e in rows])
        for k, rows in enumerate(groups)
    ]
    shaped = [
        [invalid_reward if e in FORMAT_GATE_ENDINGS else (r if e == "submitted" else 0.0)
         for r, e in rows]
        for rows in groups
    ]  # fmt: skip
    expected = [r - sum(rs) / len(rs) for rs in shaped for r in rs]
    samples = build_samples(outcomes, invalid_reward)
    assert [s.advantage for s in samples] == pytest.approx(expected, abs=1e-12)


def test_budget_endings_and_failed_submits_keep_their_reward() -> None:
    rows = [_trajectory(0.0, e) for e in ("token_budget", "turn_budget", "submitted")]
    assert training_rewards(rows, -1.0).tolist() == [0.0, 0.0, 0.0]
    rows = [_trajectory(0.0, e) for e in ("invalid_format", "duplicate_call")]
    assert training_rewards(rows, -1.0).tolist() == [-1.0, -1.0]


def _episodes(
    task: DeckTask,
    scripts: list[list[str]],
    tokenizer: PreTrainedTokenizerFast,
    backend: NamespaceBackend,
    config: HarnessConfig,
) -> list[Trajectory]:
    async def go() -> list[Trajectory]:
        out = []
        async with SandboxPool(backend, max_concurrency=1) as pool:
            for script in scripts:
                async with pool.sandbox(task.spec) as box:
                    sampler = ScriptedSampler(tokenizer, script)
                    out.append(await run_episode(task.spec, sampler, box, tokenizer, config))
        return out

    return asyncio.run(go())


def _reference_loss(trainer: Trainer, samples: list) -> float:
    """CISPO + IcePop [0, 2], token mean, in float64 from the trainer's own log-probs."""
    total, tokens = 0.0, 0
    for sample in samples:
        logprobs = trainer.recompute_logprobs(sample).double()
        for t, lp in enumerate(logprobs.tolist(), start=1):
            if not sample.loss_mask[t]:
                continue
            omega = torch.tensor(lp - sample.rollout_logprobs[t]).exp().item()
            tokens += 1
            if 0.0 <= omega <= 2.0:
                total += -omega * sample.advantage * lp
    return total / tokens


@pytest.mark.usefixtures("one_thread")
def test_a_gated_batch_of_real_episodes_carries_minus_one_into_the_loss(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[0]
    config = HarnessConfig(max_turns=8, max_tokens=4096, max_new_tokens=200)
    scripts = [[SUBMIT], [LS, BROKEN], [LS, LS], [LS, SUBMIT]]
    episodes = _episodes(task, scripts, deck_tokenizer, backend, config)
    assert [e.termination for e in episodes] == [
        "submitted", "invalid_format", "duplicate_call", "submitted",
    ]  # fmt: skip
    assert [e.reward for e in episodes] == [0.0, 0.0, 0.0, 0.0]  # the harness's gated reward
    group = [_group(task.instance_id, episodes)]
    # invalid_reward = 0: every reward 0, an empty batch; -1: the clean failures rank above
    # the format breakers (rewards 0, -1, -1, 0: mean -0.5)
    assert [s.advantage for s in build_samples(group, 0.0)] == [0.0] * 4
    samples = build_samples(group, -1.0)
    assert [s.advantage for s in samples] == pytest.approx([0.5, -0.5, -0.5, 0.5])
    model = build_fp32_policy(policy_config(len(deck_tokenizer)), seed=3)
    trainer = Trainer(model, TrainerSection())
    expected = _reference_loss(trainer, samples)
    stats = trainer.step(samples)
    assert stats.loss == pytest.approx(expected, rel=1e-4, abs=1e-9)


def test_ungated_episodes_are_never_overridden(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    """harness.gated_reward = false: the gate shows the error and the episode goes on, so no
    ending is a format-gate ending and invalid_reward = -1 changes nothing."""
    task = small_deck.split("pool")[0]
    config = HarnessConfig(max_turns=8, max_tokens=4096, max_new_tokens=200, gated_reward=False)
    scripts = [[BROKEN, LS, LS, SUBMIT]]
    episodes = _episodes(task, scripts, deck_tokenizer, backend, config)
    assert [e.termination for e in episodes] == ["submitted"]  # neither turn 1 nor 3 ended it
    assert [e.raw_reward for e in episodes] == [0.0]  # graded although a turn was malformed
    assert training_rewards(episodes, -1.0).tolist() == [e.reward for e in episodes]
