"""Replay probes: which retired tasks to re-run, and what their scores say about forgetting.

Arctic-SWE, "Scale Findings": eviction-adjusted reward imputes 1.0 for retired tasks, so the 4B
model's retired tasks could fall from 0.95 to 0.85 while the metric moved 3.4 %. Probing retired
tasks directly, with scores kept apart from the training statistics, makes forgetting visible.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from deck_evictor._config import ReplayPolicy, RetireReason
from deck_evictor._records import ReplaySummary
from deck_evictor._tasks import TaskRecord


def select_probes(
    retired: Iterable[TaskRecord], policy: ReplayPolicy, update: int
) -> tuple[str, ...]:
    """Retired tasks due for a probe at ``update`` (pure: calling it twice gives the same answer).

    Nothing is due unless ``update % policy.every == 0``. Eligible tasks have a reason in
    ``policy.reasons`` and retired at least ``policy.min_age`` updates ago. The ``policy.size``
    least recently probed go first (never probed before probed; then earlier retirement first),
    so every retired task is revisited in turn; no randomness, so probing leaves the sampling
    sequence alone.
    """
    if update % policy.every != 0:
        return ()
    eligible = [
        record
        for record in retired
        if record.reason in policy.reasons and update - record.retired_update >= policy.min_age
    ]
    eligible.sort(key=lambda r: (r.last_probe_update, r.retired_update))
    return tuple(record.task_id for record in eligible[: policy.size])


def should_reactivate(record: TaskRecord, probe_rate: float, policy: ReplayPolicy) -> bool:
    """Whether this probe shows the retirement verdict no longer holds, under ``policy``."""
    if record.reason is RetireReason.EASY and policy.reactivate_below is not None:
        return probe_rate < policy.reactivate_below
    if record.reason is RetireReason.HARD and policy.reactivate_hard_at_or_above is not None:
        return probe_rate >= policy.reactivate_hard_at_or_above
    return False


def summarise(records: Iterable[TaskRecord], reasons: tuple[RetireReason, ...]) -> ReplaySummary:
    """Replay reward and mean forgetting over probed retired tasks with a reason in ``reasons``."""
    tasks = attempts = successes = 0
    rate_sum = forgetting_sum = 0.0
    for record in records:
        stat = record.forgetting()
        if stat is None or stat.reason not in reasons:
            continue
        tasks += 1
        attempts += stat.replay_attempts
        successes += stat.replay_successes
        rate_sum += stat.replay_rate
        forgetting_sum += stat.forgetting
    if tasks == 0:
        return ReplaySummary(0, 0, 0, math.nan, math.nan)
    return ReplaySummary(tasks, attempts, successes, rate_sum / tasks, forgetting_sum / tasks)
