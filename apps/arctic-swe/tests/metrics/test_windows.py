"""Tests for ``arctic_swe.metrics._windows``: the thinning of near-identical weights
(hypothesis), pooled windows and the paired change on hand-made evaluations."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.metrics import thin
from arctic_swe.metrics._windows import paired_change, window

from .conftest import evaluations


@given(st.sets(st.integers(0, 200), max_size=30), st.integers(0, 20))
def test_thinning_keeps_evaluations_half_a_cadence_apart(steps: set[int], every: int) -> None:
    records = evaluations({step: ["1"] for step in steps})
    kept, left_out = thin(records, every)
    kept_steps = [r.step for r in kept]
    assert kept_steps == sorted(kept_steps)
    assert sorted([*kept_steps, *left_out]) == sorted(steps)
    trained = [s for s in kept_steps if s > 0]  # update 0 is never an anchor
    assert all(2 * (b - a) >= every for a, b in itertools.pairwise(trained))
    for step in left_out:  # each one lies under half the cadence after a kept trained one
        previous = max(s for s in trained if s < step)
        assert 2 * (step - previous) < every
    if steps:
        assert kept_steps[0] == min(steps)  # the earliest (update 0, when there) is kept
    if len(steps - {0}) > 0:  # the first trained one, whatever its distance to update 0
        assert min(steps - {0}) in kept_steps


def test_a_short_runs_final_evaluation_is_not_thinned_against_the_warm_start() -> None:
    kept, left_out = thin(evaluations({0: ["1"], 4: ["1"]}), 9)
    assert ([r.step for r in kept], left_out) == ([0, 4], ())


def test_the_grid_is_kept_and_a_late_extra_evaluation_too() -> None:
    grid = {step: ["1"] for step in range(0, 109, 9)}
    assert thin(evaluations(grid | {110: ["1"]}), 9)[1] == (110,)  # 2 < 4.5 after 108
    assert thin(evaluations(grid | {113: ["1"]}), 9)[1] == ()  # 5 >= 4.5: its own weights
    assert thin(evaluations(grid | {110: ["1"]}), 0)[1] == ()  # cadence 0: nothing thinned


def test_a_window_pools_the_tasks_every_evaluation_holds() -> None:
    records = evaluations({9: ["11", "01", "00"], 18: ["10", "00"]})
    pooled = window(records)
    assert (pooled.steps, pooled.tasks, pooled.solved, pooled.rollouts) == ((9, 18), 2, 4, 8)
    assert pooled.rate == 0.5
    assert pooled.where() == "updates 9-18, 2 evaluations"
    assert window(records[:1]).where() == "update 9"


def test_the_paired_change_is_per_task() -> None:
    before = evaluations({0: ["00", "01", "11", "10"]})
    after = evaluations({27: ["11", "11", "11", "00"], 36: ["11", "01", "11", "00"]})
    change = paired_change(before, after, 0.95)
    assert change is not None
    assert change.paired
    # per task: 1 - 0, 0.75 - 0.5, 1 - 1, 0 - 0.5
    assert change.difference.mean == pytest.approx((1 + 0.25 + 0 - 0.5) / 4)
    assert (change.before.rate, change.after.rate) == (0.5, 0.6875)
    assert paired_change(before, [], 0.95) is None
    other = paired_change(before, evaluations({9: ["1"]}, stream="x"), 0.95)
    assert other is not None
    assert not other.paired
    assert not other.difference.defined  # one task in common: no interval
