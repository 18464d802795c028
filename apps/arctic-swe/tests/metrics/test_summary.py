"""Tests for ``arctic_swe.metrics._summary`` against a readable reference: the declared
verdict over a run's evaluations, and the imputed eviction-adjusted windows kept beside it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from arctic_swe.metrics import (
    CLIMBED_THEN_FELL,
    NOT_MEASURED,
    UpdateMetrics,
    VerdictRule,
    comparison_row,
    comparison_table,
    summarize,
    summary_table,
)

from .conftest import evaluations

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
    assert held.verdict.label == NOT_MEASURED  # no evaluation: the imputed climb is no verdict


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_windows_match_a_brute_force_reference(make_record: Record, rewards: list[float]) -> None:
    summary = summarize([make_record(i, r, adjusted_reward=r) for i, r in enumerate(rewards, 1)])
    w = max(1, round(0.2 * len(rewards)))
    windows = [sum(rewards[i : i + w]) / w for i in range(len(rewards) - w + 1)]
    assert summary.first_window == pytest.approx(windows[0])
    assert summary.final_window == pytest.approx(windows[-1])
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


#: Eight tasks x 2 samples: 0 solved at update 0, all solved by update 12, then ``final``.
def _run_evaluations(final: str) -> dict[int, list[str]]:
    return {0: ["00"] * 8, 6: ["01"] * 8, 12: ["11"] * 8, 18: ["11"] * 8, 24: ["11"] * 8,
            30: [final] * 8, 36: [final] * 8}  # fmt: skip


def test_the_verdict_reads_the_evaluations_not_the_imputed_figure(make_record: Record) -> None:
    """The imputed figure stays high (retired tasks count 1.0) while the evaluated pool falls
    over the final window: the verdict says it climbed, then fell."""
    records = [make_record(step, 0.5, adjusted_reward=0.9) for step in range(1, 37)]
    rule = VerdictRule(updates=36, every=6)
    summary = summarize(records, evaluations(_run_evaluations("01")), rule)
    assert summary.verdict.label == CLIMBED_THEN_FELL
    assert summary.verdict.final is not None
    assert summary.verdict.final.steps == (30, 36)
    assert summary.final_window == pytest.approx(0.9)
    assert summarize(records).verdict.rule == VerdictRule(updates=36)  # the default rule


def test_tables_say_not_measured_and_show_the_verdict(make_record: Record) -> None:
    old = [make_record(i, 0.5) for i in range(1, 6)]  # a log from before the measurement
    measured = [make_record(step, 0.5, replay_adjusted=0.7) for step in range(1, 37)]
    evals = evaluations(_run_evaluations("11"))
    rule = VerdictRule(updates=36, every=6)
    console = Console(record=True, width=200)
    console.print(summary_table(summarize(old)))
    text = console.export_text()
    for words in ("not measured", "not logged", "(imputed)", "no pool evaluation"):
        assert words in text
    console = Console(record=True, width=250)
    console.print(summary_table(summarize(measured, evals, rule)))
    console.print(
        comparison_table([comparison_row("old", old), comparison_row("new", measured, evals, rule)])
    )
    text = console.export_text()
    assert "0.000 → 1.000: +1.000" in text  # update 0 → final, paired per task
    assert "t over 8 tasks, paired, 95 %" in text
    assert "climbed and held" in text
    assert "reference (updates 13-24) → final" in text
    assert "0.9 x peak" not in text
    assert summarize(measured).replay_final_window == pytest.approx(0.7)
