"""Build metrics records for the tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from arctic_swe.metrics import POOL_SPLIT, EvalRecord, UpdateMetrics


def record(step: int, reward: float, **changes: Any) -> UpdateMetrics:
    base: dict[str, Any] = {
        "step": step,
        "version": step,
        "wall_seconds": 2.0,
        "reward": reward,
        "solved_rate": reward,
        "adjusted_reward": min(1.0, reward + 0.1),
        "replay_reward": -1.0 if step < 3 else 0.8,
        "entropy": 1.5,
        "mismatch_kl": 1e-6,
        "masked_frac": 0.0,
        "loss": -0.01,
        "grad_norm": 0.5,
        "lag_mean": 0.5,
        "lag_max": 1,
        "stale_dropped": 0,
        "dropped_rollouts": 0,
        "requeued_groups": 0,
        "groups": 4,
        "rollouts": 16,
        "trainable_tokens": 500,
        "generated_tokens": 520,
        "wait_seconds": 0.5,
        "train_seconds": 1.5,
        "refresh_seconds": 0.1,
        "tokens_per_second": 260.0,
        "generate_seconds": 10.0,
        "tool_seconds": 1.0,
        "grade_seconds": 0.5,
        "retired": 0,
        "active_tasks": 16,
        "terminations": {"submitted": 12, "invalid_format": 4},
        "per_task_reward": {"pool-0000": reward},
    }
    base.update(changes)
    return UpdateMetrics(**base)


def evaluations(
    cells: Mapping[int, Sequence[str]], split: str = POOL_SPLIT, stream: str = "s", seed: int = 0
) -> list[EvalRecord]:
    """One evaluation per step of ``cells`` (step -> task ``i``'s outcomes, ``"01"``: sample 0
    failed, sample 1 solved), tasks named ``task-i``."""
    return [
        EvalRecord(split, step, step, stream, seed, {f"task-{i}": c for i, c in enumerate(row)})
        for step, row in cells.items()
    ]


@pytest.fixture(scope="session")
def make_record() -> Callable[..., UpdateMetrics]:
    return record


def evaluation(
    split: str, step: int, solved: int, tasks: int = 4, samples: int = 4, seed: int = 0
) -> EvalRecord:
    """An evaluation of ``tasks`` tasks x ``samples`` samples with the first ``solved`` cells
    (task by task, in sample order) solved."""
    cells = "1" * solved + "0" * (tasks * samples - solved)
    outcomes = {f"pool-{k:04d}": cells[k * samples : (k + 1) * samples] for k in range(tasks)}
    return EvalRecord(
        split=split, step=step, version=step, stream="pool", seed=seed, outcomes=outcomes
    )
