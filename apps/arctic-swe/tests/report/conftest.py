"""Run directories built by hand for the results-folder tests: a real config.toml, updates
(with a measured pool evaluation every few) and the evaluations log, rollout by rollout."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arctic_swe._wilson import wilson_interval
from arctic_swe.config import (
    EndReason,
    RunConfig,
    RunEnd,
    RunInputs,
    prepare_run_dir,
    write_run_end,
    write_run_inputs,
)
from arctic_swe.metrics import EVALUATIONS, EvalRecord, EvaluationLog, MetricsLog, UpdateMetrics

TASKS = ("pool-0000", "pool-0001", "pool-0002", "pool-0003")
SAMPLES = 2
EVERY = 2  # a pool evaluation every EVERY updates (and at update 0)


def update(step: int, reward: float, **changes: Any) -> UpdateMetrics:
    """One update whose rewards are ``reward`` (every other figure a plain constant)."""
    fields: dict[str, Any] = dict.fromkeys(UpdateMetrics.__dataclass_fields__, 0)
    fields.update(
        step=step, version=step, reward=reward, solved_rate=reward, adjusted_reward=reward,
        replay_reward=-1.0, wall_seconds=2.0 * step, grad_norm=0.5, rollouts=8, groups=4,
        terminations={"submitted": 8}, per_task_reward={}, engine_groups={},
    )  # fmt: skip
    fields.update(changes)
    return UpdateMetrics(**fields)


def evaluation(split: str, step: int, solved: int) -> EvalRecord:
    """An evaluation of ``step``'s weights with ``solved`` of the 8 cells solved, task by
    task in order."""
    cells = ["1" if index < solved else "0" for index in range(len(TASKS) * SAMPLES)]
    outcomes = {
        task: "".join(cells[SAMPLES * k : SAMPLES * (k + 1)]) for k, task in enumerate(TASKS)
    }
    return EvalRecord(split, step, step, f"{split}-eval", 7, outcomes, seconds=1.25)


def write_run(
    root: Path,
    rewards: Sequence[float],
    solved: Sequence[int],
    *,
    config: RunConfig | None = None,
    end: EndReason | None = None,
    inputs: tuple[Path, Path] | None = None,
) -> Path:
    """A run directory after ``len(rewards)`` updates: ``solved[k]`` is the k-th pool
    evaluation (update ``k * EVERY``), the held-out split solving one cell fewer; a
    checkpoint and weights beside them (which must never be collected)."""
    run = prepare_run_dir(root, config or RunConfig(), resume=False)
    metrics, evaluations = MetricsLog(run.metrics), EvaluationLog(root / EVALUATIONS)
    evaluated = dict(zip(range(0, len(rewards) + 1, EVERY), solved, strict=False))
    for step, wins in evaluated.items():
        evaluations.append(evaluation("pool", step, wins))
        evaluations.append(evaluation("heldout", step, max(0, wins - 1)))
    for step, reward in enumerate(rewards, 1):
        metrics.append(update(step, reward, **_pool_fields(step, evaluated.get(step))))
    if end is not None:
        planned = len(rewards) + (0 if end is EndReason.UPDATES else 4)
        write_run_end(run, RunEnd(end, len(rewards), planned, 1, len(TASKS)))
    if inputs is not None:
        deck, policy = inputs
        write_run_inputs(run, RunInputs(str(deck), "a" * 64, str(policy), "b" * 64))
    (run.checkpoints / "step-1").mkdir(parents=True)
    (run.checkpoints / "step-1" / "model.safetensors").write_bytes(b"\0" * 64)
    (root / "weights").mkdir()
    (root / "weights" / "model.safetensors").write_bytes(b"\0" * 64)
    return root


def _pool_fields(step: int, wins: int | None) -> dict[str, Any]:
    if wins is None:
        return {}
    rollouts = len(TASKS) * SAMPLES
    low, high = wilson_interval(wins, rollouts)
    return {
        "pool_success": wins / rollouts, "pool_success_low": low, "pool_success_high": high,
        "pool_eval_step": step, "pool_eval_version": step, "pool_eval_solved": wins,
        "pool_eval_rollouts": rollouts,
    }  # fmt: skip
