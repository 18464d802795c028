"""PNG curves of a run and run-vs-run comparisons (matplotlib, Agg backend, no display)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from arctic_swe.metrics._record import UpdateMetrics

#: (figure, panel title) of the run plot, one panel each.
PANELS: tuple[tuple[str, str], ...] = (
    ("reward", "trained-batch reward (gated)"),
    ("adjusted_reward", "eviction-adjusted reward (imputed)"),
    ("replay_reward", "replay reward"),
    ("entropy", "entropy"),
    ("mismatch_kl", "mismatch KL"),
    ("masked_frac", "masked fraction"),
    ("lag_mean", "mean policy lag"),
    ("stale_dropped", "stale drops"),
    ("wait_seconds", "trainer waiting (s)"),
    # Measured pool evaluation (the verdict's figure, with its 95 % interval as a band)
    ("pool_success", "pool success (measured, 95% CI)"),
    ("replay_adjusted", "replay-adjusted reward"),
)


def _series(records: Sequence[UpdateMetrics], name: str) -> tuple[list[int], list[float]]:
    steps = [r.step for r in records]
    values = [float(getattr(r, name)) for r in records]
    if name in ("replay_reward", "replay_adjusted"):  # -1 means "no probe yet" / "not logged"
        pairs = [(s, v) for s, v in zip(steps, values, strict=True) if v >= 0]
        return [s for s, _ in pairs], [v for _, v in pairs]
    return steps, values


def plot_run(records: Sequence[UpdateMetrics], out_dir: Path) -> list[Path]:
    """Write ``curves.png`` (every panel), ``reward.png`` (the headline curve) and
    ``numerics.png`` (ω quantiles, mismatch KL by layer type)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        _plot_grid({"run": records}, out_dir / "curves.png"),
        _plot_reward({"run": records}, out_dir / "reward.png"),
        plot_numerics({"run": records}, out_dir / "numerics.png"),
    ]


def plot_compare(runs: Mapping[str, Sequence[UpdateMetrics]], out_dir: Path) -> list[Path]:
    """Overlay several runs (``arctic-swe compare``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        _plot_grid(runs, out_dir / "compare_curves.png"),
        _plot_reward(runs, out_dir / "compare_reward.png"),
        plot_numerics(runs, out_dir / "compare_numerics.png"),
    ]


def _pool_band(axis: Any, records: Sequence[UpdateMetrics], **style: Any) -> None:
    """The measured pool success of one run with its Wilson 95 % interval as a band, at the
    updates that were evaluated (the update that published the weights)."""
    kept = [r for r in records if r.pool_eval_rollouts > 0]
    if not kept:
        return
    steps = [r.pool_eval_step for r in kept]
    line = axis.plot(steps, [r.pool_success for r in kept], marker="o", **style)
    low, high = [r.pool_success_low for r in kept], [r.pool_success_high for r in kept]
    axis.fill_between(steps, low, high, alpha=0.2, color=line[0].get_color(), linewidth=0)


def _plot_grid(runs: Mapping[str, Sequence[UpdateMetrics]], path: Path) -> Path:
    rows = math.ceil(len(PANELS) / 3)
    figure, axes = plt.subplots(rows, 3, figsize=(13, 3 * rows))
    for axis in axes.flat[len(PANELS) :]:
        axis.set_visible(False)
    for axis, (name, title) in zip(axes.flat, PANELS, strict=False):
        for label, records in runs.items():
            if name == "pool_success":
                _pool_band(axis, records, label=label)
                continue
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
        # the headline: the measured pool success (every task, one version, fixed seeds)
        _pool_band(axis, records, label=f"{label}: pool success (measured, 95% CI)")
        steps, values = _series(records, "reward")
        axis.plot(steps, values, marker=".", alpha=0.6, label=f"{label}: trained batch")
        steps, values = _series(records, "adjusted_reward")
        axis.plot(steps, values, linestyle="--", alpha=0.6,
                  label=f"{label}: eviction-adjusted (imputed 1.0 for retired)")  # fmt: skip
    axis.set_xlabel("update")
    axis.set_ylabel("success / reward")
    axis.set_ylim(-0.02, 1.02)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


# Numerics: ω quantiles and mismatch by layer type (-1 in a record = not measured: skipped)
#: Floor of the log-scale KL panel (an audit can return exactly 0 with identical paths).
_KL_FLOOR = 1e-18


def _measured(records: Sequence[UpdateMetrics], name: str) -> tuple[list[int], list[float]]:
    pairs = [(r.step, float(getattr(r, name))) for r in records if getattr(r, name) >= 0]
    return [s for s, _ in pairs], [v for _, v in pairs]


def plot_numerics(runs: Mapping[str, Sequence[UpdateMetrics]], path: Path) -> Path:
    """Two panels: ω = π_train/π_rollout per update (median, the p5-p95 band, p1 and p99) and
    the audited mismatch KL by layer type (Gated DeltaNet vs softmax attention, log scale)."""
    figure, (omega_axis, kl_axis) = plt.subplots(1, 2, figsize=(12, 4))
    for index, (label, records) in enumerate(runs.items()):
        color = f"C{index}"
        steps, p50 = _measured(records, "omega_p50")
        omega_axis.plot(steps, p50, color=color, marker=".", label=f"{label}: p50")
        band = [r for r in records if r.omega_p5 >= 0]
        omega_axis.fill_between(
            [r.step for r in band], [r.omega_p5 for r in band], [r.omega_p95 for r in band],
            color=color, alpha=0.2, label=f"{label}: p5-p95",
        )  # fmt: skip
        for name, style in (("omega_p1", ":"), ("omega_p99", ":")):
            omega_axis.plot(*_measured(records, name), color=color, linestyle=style)
        for name, style in (
            ("kl_linear_attention", "-"), ("kl_full_attention", "--"), ("kl_audit_overall", ":"),
        ):  # fmt: skip
            steps, values = _measured(records, name)
            values = [max(v, _KL_FLOOR) for v in values]
            short = name.removeprefix("kl_").replace("_", " ")
            kl_axis.plot(steps, values, color=color, linestyle=style, marker=".",
                         label=f"{label}: {short}")  # fmt: skip
    omega_axis.set_title("ω quantiles (dotted: p1, p99)")
    kl_axis.set_title("mismatch KL by layer type (audit)")
    kl_axis.set_yscale("log")
    for axis in (omega_axis, kl_axis):
        axis.set_xlabel("update")
        axis.grid(alpha=0.3)
        if axis.has_data():
            axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path
