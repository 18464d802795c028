"""Synthetic run directories for the ablation tests (real config.toml and metrics.jsonl)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arctic_swe.config import RunConfig, prepare_run_dir
from arctic_swe.metrics import MetricsLog, UpdateMetrics


def metrics_record(step: int, reward: float) -> UpdateMetrics:
    """One update whose pool (eviction-adjusted) and batch rewards are ``reward``."""
    fields: dict[str, Any] = dict.fromkeys(UpdateMetrics.__dataclass_fields__, 0)
    fields.update(
        step=step,
        reward=reward,
        adjusted_reward=reward,
        replay_reward=-1.0,
        terminations={},
        per_task_reward={},
        engine_groups={},
        wall_seconds=2.0,
    )
    return UpdateMetrics(**fields)


def write_run(root: Path, config: RunConfig, rewards: list[float]) -> Path:
    """A run directory as ``overfit`` leaves it after ``len(rewards)`` updates."""
    run = prepare_run_dir(root, config, resume=root.joinpath("config.toml").is_file())
    log = MetricsLog(run.metrics)
    for step, reward in enumerate(rewards, len(log.read()) + 1):
        log.append(metrics_record(step, reward))
    return root
