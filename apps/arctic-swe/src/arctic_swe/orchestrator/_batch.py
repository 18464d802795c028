"""Groups -> training samples (ARCHITECTURE.md §4 step 5): group-centred advantages, no std division."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from arctic_swe.orchestrator._groups import GroupOutcome
from arctic_swe.trainer import TrainSample
from cispo_loss import group_advantages


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


def build_samples(groups: Sequence[GroupOutcome]) -> list[TrainSample]:
    """One :class:`TrainSample` per trajectory, advantage ``R_i - mean(R_group)``."""
    trajectories = [t for g in groups for t in g.trajectories]
    if not trajectories:
        return []
    rewards = torch.tensor([t.reward for t in trajectories], dtype=torch.float64)
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
