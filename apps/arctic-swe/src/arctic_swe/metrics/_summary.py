"""The stress test's verdict figures and the end-of-run summary table (rich)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table

from arctic_swe.metrics._record import UpdateMetrics


@dataclass(frozen=True)
class RunSummary:
    """Headline figures of a run.

    ``first_window``/``final_window``/``peak_window``: mean **pool** reward over the first, the
    last and the best window of ``window`` consecutive updates (20 % of the run, at least 1).
    The pool reward is the deck's eviction-adjusted reward (every task's latest group success
    rate, retired-easy tasks at their retirement rate): the trained batch's own reward drifts
    down as mastered tasks retire, so it cannot say whether the pool is held. ``held`` is the
    no-collapse criterion ``final_window >= 0.9 * peak_window``; ``batch_first_window`` /
    ``batch_final_window`` are the same windows of the trained batches' reward.
    """

    updates: int
    window: int
    first_window: float
    final_window: float
    peak_window: float
    held: bool
    mean_wait_fraction: float  # trainer time spent waiting / (waiting + compute)
    stale_dropped: int
    dropped_rollouts: int
    mean_mismatch_kl: float
    wall_seconds: float
    batch_first_window: float = 0.0
    batch_final_window: float = 0.0


def _window_means(values: Sequence[float], window: int) -> list[float]:
    return [sum(values[i : i + window]) / window for i in range(len(values) - window + 1)]


def summarize(records: Sequence[UpdateMetrics]) -> RunSummary:
    """Summary of a non-empty run."""
    if not records:
        raise ValueError("no updates to summarize")
    rewards = [r.adjusted_reward for r in records]
    window = max(1, round(0.2 * len(records)))
    means = _window_means(rewards, window)
    batch = _window_means([r.reward for r in records], window)
    wait = sum(r.wait_seconds for r in records)
    busy = wait + sum(r.train_seconds for r in records)
    return RunSummary(
        updates=len(records),
        window=window,
        first_window=means[0],
        final_window=means[-1],
        peak_window=max(means),
        held=means[-1] >= 0.9 * max(means),
        mean_wait_fraction=wait / busy if busy > 0 else 0.0,
        stale_dropped=sum(r.stale_dropped for r in records),
        dropped_rollouts=sum(r.dropped_rollouts for r in records),
        mean_mismatch_kl=sum(r.mismatch_kl for r in records) / len(records),
        wall_seconds=sum(r.wall_seconds for r in records),
        batch_first_window=batch[0],
        batch_final_window=batch[-1],
    )


def summary_table(summary: RunSummary, title: str = "arctic-swe overfit") -> Table:
    """A two-column rich table of :class:`RunSummary`."""
    table = Table(title=title, show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("updates", f"{summary.updates}"),
        (f"pool reward (eviction-adjusted), first {summary.window}", f"{summary.first_window:.3f}"),
        (f"pool reward, last {summary.window}", f"{summary.final_window:.3f}"),
        (f"pool reward, peak {summary.window}-window", f"{summary.peak_window:.3f}"),
        ("held (last >= 0.9 x peak)", "yes" if summary.held else "NO"),
        ("trainer time waiting", f"{100 * summary.mean_wait_fraction:.1f} %"),
        ("stale groups dropped", f"{summary.stale_dropped}"),
        ("rollouts lost to failures", f"{summary.dropped_rollouts}"),
        ("mean mismatch KL", f"{summary.mean_mismatch_kl:.2e}"),
        ("wall time", f"{summary.wall_seconds:.0f} s"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table
