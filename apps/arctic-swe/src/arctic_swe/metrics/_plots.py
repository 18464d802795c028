"""PNG curves of a run and run-vs-run comparisons (matplotlib, Agg backend, no display)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from arctic_swe.metrics._record import UpdateMetrics

#: (figure, panel title) of the run plot, one panel each.
PANELS: tuple[tuple[str, str], ...] = (
    ("reward", "trained-batch reward (gated)"),
    ("adjusted_reward", "pool reward (eviction-adjusted)"),
    ("replay_reward", "replay reward"),
    ("entropy", "entropy"),
    ("mismatch_kl", "mismatch KL"),
    ("masked_frac", "masked fraction"),
    ("lag_mean", "mean policy lag"),
    ("stale_dropped", "stale drops"),
    ("wait_seconds", "trainer waiting (s)"),
)


def _series(records: Sequence[UpdateMetrics], name: str) -> tuple[list[int], list[float]]:
    steps = [r.step for r in records]
    values = [float(getattr(r, name)) for r in records]
    if name == "replay_reward":  # -1 means "no probe yet"
        pairs = [(s, v) for s, v in zip(steps, values, strict=True) if v >= 0]
        return [s for s, _ in pairs], [v for _, v in pairs]
    return steps, values


def plot_run(records: Sequence[UpdateMetrics], out_dir: Path) -> list[Path]:
    """Write ``curves.png`` (every panel) and ``reward.png`` (the headline curve)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        _plot_grid({"run": records}, out_dir / "curves.png"),
        _plot_reward({"run": records}, out_dir / "reward.png"),
    ]


def plot_compare(runs: Mapping[str, Sequence[UpdateMetrics]], out_dir: Path) -> list[Path]:
    """Overlay several runs (``arctic-swe compare``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        _plot_grid(runs, out_dir / "compare_curves.png"),
        _plot_reward(runs, out_dir / "compare_reward.png"),
    ]


def _plot_grid(runs: Mapping[str, Sequence[UpdateMetrics]], path: Path) -> Path:
    figure, axes = plt.subplots(3, 3, figsize=(13, 9))
    for axis, (name, title) in zip(axes.flat, PANELS, strict=True):
        for label, records in runs.items():
            steps, values = _series(records, name)
            axis.plot(steps, values, marker=".", label=label)
        axis.set_title(title)
        axis.set_xlabel("update")
        axis.grid(alpha=0.3)
    if len(runs) > 1:
        axes.flat[0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def _plot_reward(runs: Mapping[str, Sequence[UpdateMetrics]], path: Path) -> Path:
    figure, axis = plt.subplots(figsize=(7, 4))
    for label, records in runs.items():
        steps, values = _series(records, "reward")
        axis.plot(steps, values, marker=".", label=f"{label}: trained batch")
        steps, values = _series(records, "adjusted_reward")
        axis.plot(steps, values, linestyle="--", label=f"{label}: pool (eviction-adjusted)")
    axis.set_xlabel("update")
    axis.set_ylabel("reward")
    axis.set_ylim(-0.02, 1.02)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path
