"""Tests for ``arctic_swe.metrics._summary`` against a readable reference."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from arctic_swe.metrics import UpdateMetrics, summarize, summary_table

Record = Callable[..., UpdateMetrics]


def test_a_climb_that_holds_and_one_that_collapses(make_record: Record) -> None:
    climb = [
        make_record(i, r, adjusted_reward=r)
        for i, r in enumerate([0.2, 0.3, 0.5, 0.7, 0.8, 0.85, 0.9, 0.9, 0.88, 0.9], 1)
    ]
    held = summarize(climb)
    assert held.window == 2
    assert held.first_window == pytest.approx(0.25)
    assert held.final_window == pytest.approx(0.89)
    assert held.held
    collapse = [
        make_record(i, r, adjusted_reward=r)
        for i, r in enumerate([0.2, 0.5, 0.7, 0.7, 0.6, 0.4, 0.2, 0.1, 0.1, 0.0], 1)
    ]
    assert not summarize(collapse).held


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_windows_match_a_brute_force_reference(make_record: Record, rewards: list[float]) -> None:
    summary = summarize([make_record(i, r, adjusted_reward=r) for i, r in enumerate(rewards, 1)])
    w = max(1, round(0.2 * len(rewards)))
    windows = [sum(rewards[i : i + w]) / w for i in range(len(rewards) - w + 1)]
    assert summary.peak_window == pytest.approx(max(windows))
    assert summary.final_window == pytest.approx(windows[-1])
    assert summary.held == (windows[-1] >= 0.9 * max(windows))
    batch = [sum(rewards[i : i + w]) / w for i in range(len(rewards) - w + 1)]
    assert summary.batch_final_window == pytest.approx(batch[-1])


def test_the_verdict_reads_the_pool_not_the_trained_batch(make_record: Record) -> None:
    """Mastered tasks retire, so the trained batch's reward falls while the pool holds."""
    records = [
        make_record(i, batch, adjusted_reward=pool)
        for i, (batch, pool) in enumerate(
            [(0.3, 0.3), (0.4, 0.4), (0.5, 0.6), (0.3, 0.8), (0.2, 0.85)], 1
        )
    ]
    summary = summarize(records)
    assert summary.held
    assert summary.final_window == pytest.approx(0.85)
    assert summary.batch_final_window == pytest.approx(0.2)


def test_wait_fraction_and_table(make_record: Record) -> None:
    summary = summarize([make_record(1, 0.5, wait_seconds=3.0, train_seconds=1.0)])
    assert summary.mean_wait_fraction == pytest.approx(0.75)
    console = Console(record=True, width=100)
    console.print(summary_table(summary))
    assert "75.0 %" in console.export_text()
    with pytest.raises(ValueError, match="no updates"):
        summarize([])
