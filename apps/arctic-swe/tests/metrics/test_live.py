"""Tests for ``arctic_swe.metrics._live``."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from arctic_swe.metrics import LiveDisplay, TensorBoardSink, UpdateMetrics, describe

Record = Callable[..., UpdateMetrics]


def test_plain_lines_when_not_a_terminal(make_record: Record) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=200)
    with LiveDisplay(3, console=console) as live:
        live.update(make_record(1, 0.25))
        live.update(make_record(2, 0.5))
    lines = buffer.getvalue().splitlines()
    assert lines == [describe(make_record(1, 0.25)), describe(make_record(2, 0.5))]
    assert "reward 0.500" in lines[1]


def test_the_line_labels_the_imputed_reward_and_counts_returns(make_record: Record) -> None:
    line = describe(make_record(4, 0.5, retired=3, reactivated=1))
    assert "imputed 0.600 retired 3 (back 1)" in line
    assert "adj" not in line


def test_progress_bar_on_a_terminal(make_record: Record) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200)
    with LiveDisplay(2, console=console) as live:
        assert live.rich
        live.update(make_record(2, 0.75))
    assert "reward 0.750" in buffer.getvalue()


def test_tensorboard_is_inert_when_disabled(make_record: Record, tmp_path: Path) -> None:
    sink = TensorBoardSink(tmp_path, enabled=False)
    assert not sink.active
    sink.write(make_record(1, 0.5))
    sink.close()
    assert list(tmp_path.iterdir()) == []
