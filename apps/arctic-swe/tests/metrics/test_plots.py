"""Tests for ``arctic_swe.metrics._plots`` (real PNG files)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from arctic_swe.metrics import UpdateMetrics, plot_compare, plot_run

Record = Callable[..., UpdateMetrics]

PNG = b"\x89PNG\r\n\x1a\n"


def test_run_and_compare_plots_are_png_files(make_record: Record, tmp_path: Path) -> None:
    run = [make_record(i, i / 6) for i in range(1, 6)]
    other = [make_record(i, 0.3) for i in range(1, 4)]
    paths = plot_run(run, tmp_path / "plots") + plot_compare({"a": run, "b": other}, tmp_path)
    assert [p.name for p in paths] == [
        "curves.png",
        "reward.png",
        "compare_curves.png",
        "compare_reward.png",
    ]
    for path in paths:
        assert path.read_bytes()[:8] == PNG
        assert path.stat().st_size > 5000
