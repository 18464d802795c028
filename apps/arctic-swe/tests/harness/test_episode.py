"""Tests for ``arctic_swe.harness._episode`` through the real namespace sandbox.

The issue's acceptance tests: an expert trajectory scores 1 and an empty submit scores 0; a
malformed turn terminates at once with the gated reward; the history is never re-tokenised.
"""

import asyncio
import dataclasses
from collections.abc import Sequence

import attrs
import pytest
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import encode, observation_text
from arctic_swe.deck import DeckTask, StoredDeck
from arctic_swe.harness import (
    TINY_HARNESS,
    HarnessConfig,
    SampledTurn,
    ScriptedSampler,
    Trajectory,
    TurnSampler,
    prompt_text,
    run_episode,
)
from arctic_swe.warmstart import expert_turns
from swe_formatcheck import ToolCall, render_turn
from swe_sandbox import GradingError, NamespaceBackend, SandboxPool

SUBMIT = render_turn("Submit.", ToolCall("submit", {}))


def _episode(
    task: DeckTask,
    sampler: TurnSampler,
    tokenizer: PreTrainedTokenizerFast,
    backend: NamespaceBackend,
    config: HarnessConfig = TINY_HARNESS,
) -> tuple[Trajectory, str]:
    async def go() -> tuple[Trajectory, str]:
        async with SandboxPool(backend, max_concurrency=1) as pool, pool.sandbox(task.spec) as box:
            trajectory = await run_episode(task.spec, sampler, box, tokenizer, config)
            return trajectory, await box.diff()

    return asyncio.run(go())


def test_expert_trajectory_scores_one(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[0]
    sampler = ScriptedSampler(deck_tokenizer, expert_turns(task))
    trajectory, diff = _episode(task, sampler, deck_tokenizer, backend)
    assert trajectory.termination == "submitted"
    assert trajectory.raw_reward == 1.0
    assert trajectory.reward == 1.0
    assert trajectory.solved
    assert [t.tool for t in trajectory.turns] == [
        "execute_bash", "edit_via_str_replace", "execute_bash", "submit",
    ]  # fmt: skip
    assert all(not t.codes for t in trajectory.turns)
    assert task.old_line in trajectory.turns[0].observation  # type: ignore[operator]
    assert "passed" in trajectory.turns[2].observation  # type: ignore[operator]
    assert f"+    {task.new_line}" in diff


def test_empty_submit_scores_zero(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[1]
    trajectory, _ = _episode(
        task, ScriptedSampler(deck_tokenizer, [SUBMIT]), deck_tokenizer, backend
    )
    assert trajectory.termination == "submitted"
    assert trajectory.raw_reward == 0.0
    assert trajectory.reward == 0.0
    assert any("FAIL_TO_PASS" in reason for reason in trajectory.grade_reasons)


def test_a_grading_failure_is_not_a_reward_of_zero(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    """Infrastructure, not the agent: the grader refuses a task command it cannot isolate, and
    the episode raises (the group drops the rollout) instead of recording reward 0."""
    task = small_deck.split("pool")[1]
    broken = dataclasses.replace(
        task, spec=attrs.evolve(task.spec, test_command="bash run_tests.sh")
    )
    with pytest.raises(GradingError, match="not a pytest call"):
        _episode(broken, ScriptedSampler(deck_tokenizer, [SUBMIT]), deck_tokenizer, backend)


def test_malformed_turn_terminates_with_the_gated_reward(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[0]
    fix = expert_turns(task)[:2]  # the correct edit, then a duplicated parameter
    evil = render_turn("ls", ToolCall("execute_bash", {"command": "ls"})).replace(
        "</function>", "<parameter=command>\nrm -rf tests\n</parameter>\n</function>"
    )
    config = HarnessConfig(max_turns=8, max_tokens=4096, max_new_tokens=200, invalid_reward=-1.0)
    sampler = ScriptedSampler(deck_tokenizer, [*fix, evil, SUBMIT])
    trajectory, diff = _episode(task, sampler, deck_tokenizer, backend, config)
    assert trajectory.termination == "invalid_format"
    assert trajectory.reward == -1.0
    assert trajectory.raw_reward is None  # never graded
    assert len(trajectory.turns) == 3
    assert sampler.calls == 3  # terminated at once: the submit was never sampled
    last = trajectory.turns[-1]
    assert last.codes == ("duplicate_parameter",)
    assert last.observation is None  # the call never ran
    assert last.observation_start == last.observation_end == len(trajectory.token_ids)
    assert task.new_line in diff  # the fix is there, yet the reward is gated


def test_duplicate_call_and_budgets_terminate(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[2]
    ls = render_turn("Look.", ToolCall("execute_bash", {"command": "ls"}))
    dup, _ = _episode(task, ScriptedSampler(deck_tokenizer, [ls, ls]), deck_tokenizer, backend)
    assert (dup.termination, dup.reward, len(dup.turns)) == ("duplicate_call", 0.0, 2)
    turns = HarnessConfig(max_turns=2, max_tokens=4096, max_new_tokens=200)
    out, _ = _episode(
        task, ScriptedSampler(deck_tokenizer, expert_turns(task)), deck_tokenizer, backend, turns
    )
    assert (out.termination, out.reward, len(out.turns)) == ("turn_budget", 0.0, 2)
    prompt = len(encode(deck_tokenizer, prompt_text(task.spec, turns)))
    tokens = HarnessConfig(max_turns=8, max_tokens=prompt + 60, max_new_tokens=200)
    cut, _ = _episode(
        task, ScriptedSampler(deck_tokenizer, expert_turns(task)), deck_tokenizer, backend, tokens
    )
    assert cut.termination == "token_budget"
    assert cut.reward == 0.0
    assert len(cut.token_ids) <= prompt + 60 + 200


class _Recorder:
    """Wraps a sampler and keeps every turn it produced (what the engine generated)."""

    def __init__(self, inner: TurnSampler) -> None:
        self.inner = inner
        self.turns: list[SampledTurn] = []
        self.prompts: list[tuple[int, ...]] = []

    async def sample(self, prompt_ids: Sequence[int], max_new_tokens: int) -> SampledTurn:
        self.prompts.append(tuple(prompt_ids))
        turn = await self.inner.sample(prompt_ids, max_new_tokens)
        self.turns.append(turn)
        return turn


def test_history_is_generated_plus_observation_tokens_never_retokenised(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[0]
    recorder = _Recorder(ScriptedSampler(deck_tokenizer, expert_turns(task)))
    trajectory, _ = _episode(task, recorder, deck_tokenizer, backend)
    ids = trajectory.token_ids
    assert list(ids[: trajectory.prompt_length]) == encode(
        deck_tokenizer, prompt_text(task.spec, TINY_HARNESS)
    )
    expected = list(ids[: trajectory.prompt_length])
    for turn, sampled, prompt in zip(
        trajectory.turns, recorder.turns, recorder.prompts, strict=True
    ):
        assert prompt == tuple(expected)  # the engine saw exactly the history so far
        assert ids[turn.start : turn.end] == sampled.token_ids
        expected += sampled.token_ids
        if turn.observation is not None:
            frame = encode(deck_tokenizer, observation_text(turn.observation))
            assert list(ids[turn.observation_start : turn.observation_end]) == frame
            expected += frame
    assert list(ids) == expected
    generated = {i for t in trajectory.turns for i in range(t.start, t.end)}
    assert [i for i, m in enumerate(trajectory.loss_mask) if m] == sorted(generated)
