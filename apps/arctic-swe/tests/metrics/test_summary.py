"""Tests for ``arctic_swe.metrics._summary`` against a readable reference: the measured pool
verdict on synthetic evaluations, and the imputed eviction-adjusted windows kept beside it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from arctic_swe._wilson import wilson_interval
from arctic_swe.metrics import (
    UpdateMetrics,
    comparison_row,
    comparison_table,
    pool_verdict,
    summarize,
    summary_table,
)

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
    assert held.adjusted_held
    assert held.held is None  # no update was evaluated: the verdict is "not measured"
    collapse = [
        make_record(i, r, adjusted_reward=r)
        for i, r in enumerate([0.2, 0.5, 0.7, 0.7, 0.6, 0.4, 0.2, 0.1, 0.1, 0.0], 1)
    ]
    assert not summarize(collapse).adjusted_held


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_windows_match_a_brute_force_reference(make_record: Record, rewards: list[float]) -> None:
    summary = summarize([make_record(i, r, adjusted_reward=r) for i, r in enumerate(rewards, 1)])
    w = max(1, round(0.2 * len(rewards)))
    windows = [sum(rewards[i : i + w]) / w for i in range(len(rewards) - w + 1)]
    assert summary.peak_window == pytest.approx(max(windows))
    assert summary.final_window == pytest.approx(windows[-1])
    assert summary.adjusted_held == (windows[-1] >= 0.9 * max(windows))
    batch = [sum(rewards[i : i + w]) / w for i in range(len(rewards) - w + 1)]
    assert summary.batch_final_window == pytest.approx(batch[-1])


def test_the_imputed_windows_read_the_pool_not_the_trained_batch(make_record: Record) -> None:
    """Mastered tasks retire, so the trained batch's reward falls while the pool holds."""
    records = [
        make_record(i, batch, adjusted_reward=pool)
        for i, (batch, pool) in enumerate(
            [(0.3, 0.3), (0.4, 0.4), (0.5, 0.6), (0.3, 0.8), (0.2, 0.85)], 1
        )
    ]
    summary = summarize(records)
    assert summary.adjusted_held
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


def _evaluated(make_record: Record, updates: int, every: int, solved: list[int], n: int = 32,
               **changes: object) -> list[UpdateMetrics]:  # fmt: skip
    """``updates`` records; update ``k * every`` carries the k-th evaluation (solved of n)."""
    records, hits = [], iter(solved)
    for step in range(1, updates + 1):
        fields: dict[str, object] = dict(changes)
        if step % every == 0:
            wins = next(hits)
            low, high = wilson_interval(wins, n)
            fields.update(pool_success=wins / n, pool_success_low=low, pool_success_high=high,
                          pool_eval_step=step, pool_eval_version=step, pool_eval_solved=wins,
                          pool_eval_rollouts=n)  # fmt: skip
        records.append(make_record(step, 0.5, **fields))
    return records


def test_the_verdict_reads_the_measured_pool_not_the_imputed_figure(make_record: Record) -> None:
    """The imputed figure climbs and stays (retired tasks count 1.0) while the measured pool
    success collapses over the last third: the verdict says NOT held."""
    records = _evaluated(make_record, 36, 6, [8, 16, 24, 26, 10, 6], adjusted_reward=0.9)
    summary = summarize(records)
    assert summary.adjusted_held  # the imputed figure would have said "held"
    pool = summary.pool
    assert pool is not None
    assert summary.held is False
    assert (pool.evaluations, pool.window) == (6, 2)  # updates 30 and 36 are the last third
    assert (pool.first.steps, pool.first.rate) == ((6,), pytest.approx(8 / 32))
    assert (pool.peak.steps, pool.peak.rate) == ((18, 24), pytest.approx(25 / 32))
    assert (pool.final.steps, pool.final.rate) == ((30, 36), pytest.approx(8 / 32))
    assert (pool.final.low, pool.final.high) == wilson_interval(16, 64)
    held = summarize(_evaluated(make_record, 36, 6, [8, 16, 24, 26, 24, 23]))
    assert held.held is True  # 23.5 >= 0.9 x 25


@given(st.lists(st.integers(0, 32), min_size=1, max_size=12), st.integers(1, 4))
def test_pool_verdict_matches_a_brute_force_reference(
    make_record: Record, solved: list[int], every: int
) -> None:
    updates = every * len(solved)
    verdict = pool_verdict(_evaluated(make_record, updates, every, solved))
    assert verdict is not None
    steps = [every * (i + 1) for i in range(len(solved))]
    tail = [s for s in steps if s > 2 * updates / 3]  # evaluations in the last third
    w = max(1, len(tail))
    rates = [x / 32 for x in solved]
    means = [sum(rates[i : i + w]) / w for i in range(len(rates) - w + 1)]
    assert verdict.window == w
    assert verdict.peak.rate == pytest.approx(max(means))
    assert verdict.final.rate == pytest.approx(means[-1])
    assert verdict.final.steps == tuple(steps[-w:])
    if abs(means[-1] - 0.9 * max(means)) > 1e-9:  # away from the boundary's rounding
        assert verdict.held == (means[-1] >= 0.9 * max(means))
    for figure in (verdict.first, verdict.peak, verdict.final):
        assert 0.0 <= figure.low <= figure.solved / figure.rollouts <= figure.high <= 1.0


def test_tables_say_not_measured_and_show_replay_adjusted(make_record: Record) -> None:
    old = [make_record(i, 0.5) for i in range(1, 6)]  # a log from before the measurement
    measured = _evaluated(make_record, 6, 3, [4, 20], replay_adjusted=0.7)
    console = Console(record=True, width=160)
    console.print(summary_table(summarize(old)))
    text = console.export_text()
    for words in ("not measured", "not logged", "(imputed)"):
        assert words in text
    console = Console(record=True, width=160)
    console.print(summary_table(summarize(measured)))
    console.print(comparison_table([comparison_row("old", old), comparison_row("new", measured)]))
    text = console.export_text()
    assert "0.625 [0.45-0.77]" in text  # 20 / 32 with its Wilson interval
    assert "held (final >= 0.9 x peak, last third)" in text
    assert summarize(measured).replay_final_window == pytest.approx(0.7)
