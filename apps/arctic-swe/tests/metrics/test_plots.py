"""Tests for ``arctic_swe.metrics._plots`` (real PNG files)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from arctic_swe.metrics import UpdateMetrics, plot_compare, plot_numerics, plot_run

Record = Callable[..., UpdateMetrics]

PNG = b"\x89PNG\r\n\x1a\n"


def test_run_and_compare_plots_are_png_files(make_record: Record, tmp_path: Path) -> None:
    run = [make_record(i, i / 6) for i in range(1, 6)]
    other = [make_record(i, 0.3) for i in range(1, 4)]
    paths = plot_run(run, tmp_path / "plots") + plot_compare({"a": run, "b": other}, tmp_path)
    assert [p.name for p in paths] == [
        "curves.png",
        "reward.png",
        "numerics.png",
        "compare_curves.png",
        "compare_reward.png",
        "compare_numerics.png",
    ]
    for path in paths:
        assert path.read_bytes()[:8] == PNG
        assert path.stat().st_size > 5000


def test_the_pool_success_panel_and_headline_draw_the_interval(
    make_record: Record, tmp_path: Path
) -> None:
    from dataclasses import fields

    from arctic_swe.metrics import PANELS

    names = {f.name for f in fields(UpdateMetrics)}
    assert {"pool_success", "replay_adjusted"} <= {name for name, _ in PANELS} <= names
    measured = {"pool_success": 0.5, "pool_success_low": 0.3, "pool_success_high": 0.7,
                "pool_eval_step": 2, "pool_eval_rollouts": 16, "pool_eval_solved": 8}  # fmt: skip
    run = [make_record(1, 0.2), make_record(2, 0.4, **measured), make_record(3, 0.4)]
    old = [make_record(i, 0.3) for i in range(1, 4)]  # no evaluations: no pool line, no error
    for path in plot_run(run, tmp_path / "a") + plot_compare({"new": run, "old": old}, tmp_path):
        assert path.read_bytes()[:8] == PNG


def test_numerics_panels_plot_measured_updates_and_skip_the_rest(
    make_record: Record, tmp_path: Path
) -> None:
    """ω quantiles every update, the layer-type audit every other one (the rest -1), and a
    run from before these fields (all -1): one figure, no error."""
    omega = {"omega_p1": 0.9, "omega_p5": 0.95, "omega_p50": 1.0, "omega_p95": 1.05,
             "omega_p99": 1.1, "omega_min": 0.8, "omega_max": 1.3}  # fmt: skip
    audit = {"kl_linear_attention": 1e-8, "kl_full_attention": 0.0, "kl_audit_overall": 2e-8}
    measured = [make_record(i, 0.5, **omega, **(audit if i % 2 else {})) for i in range(1, 6)]
    old = [make_record(i, 0.3) for i in range(1, 4)]
    path = plot_numerics({"new": measured, "old": old}, tmp_path / "n.png")
    assert path.read_bytes()[:8] == PNG
    assert path.stat().st_size > 5000
    alone = plot_numerics({"old": old}, tmp_path / "old.png")
    assert alone.read_bytes()[:8] == PNG
