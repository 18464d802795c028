"""Tests for ``arctic_swe.orchestrator._batch`` (advantages against a readable reference)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.harness import Trajectory
from arctic_swe.orchestrator import GroupOutcome, build_samples, tally


def _trajectory(task: str, reward: float, termination: str = "submitted") -> Trajectory:
    return Trajectory(
        task_id=task,
        prompt_length=3,
        token_ids=(1, 2, 3, 4, 5),
        loss_mask=(False, False, False, True, True),
        logprobs=(0.0, 0.0, 0.0, -0.5, -1.5),
        versions=(-1, -1, -1, 0, 0),
        turns=(),
        termination=termination,
        raw_reward=reward,
        reward=reward,
        generate_seconds=1.0,
        tool_seconds=0.5,
        grade_seconds=0.25,
    )


def _group(task: str, rewards: list[float]) -> GroupOutcome:
    return GroupOutcome(
        task_id=task,
        probe=False,
        trajectories=tuple(_trajectory(task, r) for r in rewards),
        record=None,
        dropped_rollouts=0,
        retries=0,
        seconds=1.0,
    )


@given(
    st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=5), min_size=1, max_size=4)
)
def test_advantages_are_group_centred_without_std(groups: list[list[float]]) -> None:
    outcomes = [_group(f"t{k}", rewards) for k, rewards in enumerate(groups)]
    samples = build_samples(outcomes)
    expected = [r - sum(rs) / len(rs) for rs in groups for r in rs]
    assert [s.advantage for s in samples] == pytest.approx(expected, abs=1e-12)
    assert all(s.token_ids == (1, 2, 3, 4, 5) for s in samples)
    assert all(s.rollout_logprobs[3:] == (-0.5, -1.5) for s in samples)


def test_tally_counts_rewards_terminations_and_time() -> None:
    bad = GroupOutcome("b", False, (_trajectory("b", 0.0, "invalid_format"),), None, 1, 0, 1.0)
    figures = tally([_group("a", [1.0, 0.0, 1.0]), bad])
    assert figures.rollouts == 4
    assert figures.reward == pytest.approx(0.5)
    assert figures.terminations == {"submitted": 3, "invalid_format": 1}
    assert figures.per_task_reward == {"a": pytest.approx(2 / 3), "b": 0.0}
    assert figures.generated_tokens == 8
    assert figures.tool_seconds == pytest.approx(2.0)


def test_empty_batches() -> None:
    assert build_samples([]) == []
    assert tally([]).reward == 0.0
