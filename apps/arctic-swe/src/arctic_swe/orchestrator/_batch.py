"""Groups -> training samples (ARCHITECTURE.md §4 step 5): group-centred advantages, no std
division, after the invalid-trajectory reward override (``trainer.invalid_reward``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from arctic_swe.harness import Trajectory
from arctic_swe.orchestrator._groups import GroupOutcome
from arctic_swe.trainer import TrainSample
from cispo_loss import RewardShaping, group_advantages, shape_rewards


@dataclass(frozen=True)
class BatchTally:
    """Rollout-level figures of one training batch."""

    rollouts: int
    reward: float  # mean gated reward
    solved_rate: float
    generated_tokens: int
    generate_seconds: float
    tool_seconds: float
    grade_seconds: float
    terminations: dict[str, int]
    per_task_reward: dict[str, float]


#: Gate reasons of an episode ended by the format gate (swe-formatcheck's ``EpisodeGate``): the
#: "invalid trajectories" whose reward ``trainer.invalid_reward`` overrides (Arctic-SWE §5).
FORMAT_GATE_ENDINGS = frozenset({"invalid_format", "duplicate_call"})


def training_rewards(trajectories: Sequence[Trajectory], invalid_reward: float) -> torch.Tensor:
    """``[N]`` float64 rewards the advantages are computed from: each trajectory's gated reward,
    with ``invalid_reward`` in place of it for every episode the format gate ended.

    Budget endings and failed submits keep their gated reward (0): they broke no format rule,
    and a -1 there would make an early empty submit (0) beat exploring to the budget. Under the
    ungated ablation (``harness.gated_reward = false``) the gate never ends an episode on a
    format violation, so no trajectory is overridden and ``invalid_reward`` has no effect.
    """
    rewards = torch.tensor([t.reward for t in trajectories], dtype=torch.float64)
    valid = torch.tensor([t.termination not in FORMAT_GATE_ENDINGS for t in trajectories])
    return shape_rewards(rewards, valid=valid, config=RewardShaping(invalid_reward=invalid_reward))


def build_samples(groups: Sequence[GroupOutcome], invalid_reward: float = 0.0) -> list[TrainSample]:
    """One :class:`TrainSample` per trajectory, advantage ``R_i - mean(R_group)`` with ``R`` the
    :func:`training_rewards` (``invalid_reward``: ``trainer.invalid_reward``)."""
    trajectories = [t for g in groups for t in g.trajectories]
    if not trajectories:
        return []
    rewards = training_rewards(trajectories, invalid_reward)
    ids = torch.tensor([k for k, g in enumerate(groups) for _ in g.trajectories])
    advantages = group_advantages(rewards, ids).tolist()
    return [
        TrainSample(t.token_ids, t.loss_mask, t.logprobs, float(a))
        for t, a in zip(trajectories, advantages, strict=True)
    ]


def token_versions(groups: Sequence[GroupOutcome]) -> list[tuple[int, ...]]:
    """The per-token policy versions of each trajectory, in :func:`build_samples`' order."""
    return [tuple(t.versions) for g in groups for t in g.trajectories]


def tally(groups: Sequence[GroupOutcome]) -> BatchTally:
    """Reward, terminations and time spent of the rollouts in ``groups``."""
    trajectories = [t for g in groups for t in g.trajectories]
    n = len(trajectories)
    per_task = {
        g.task_id: sum(t.reward for t in g.trajectories) / len(g.trajectories)
        for g in groups
        if g.trajectories
    }
    return BatchTally(
        rollouts=n,
        reward=sum(t.reward for t in trajectories) / n if n else 0.0,
        solved_rate=sum(t.solved for t in trajectories) / n if n else 0.0,
        generated_tokens=sum(t.generated_tokens for t in trajectories),
        generate_seconds=sum(t.generate_seconds for t in trajectories),
        tool_seconds=sum(t.tool_seconds for t in trajectories),
        grade_seconds=sum(t.grade_seconds for t in trajectories),
        terminations=dict(Counter(t.termination for t in trajectories)),
        per_task_reward=per_task,
    )
