"""Tests for ``arctic_swe.metrics._health``: the training-health figures against readable
references (a streak found by ``itertools.groupby``, endings summed by hand), and the blocks of
:func:`ending_windows` partitioning the run."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.metrics import (
    RunHealth,
    Streak,
    ending_windows,
    longest_streak,
    run_health,
    trailing_zero_gradient,
    zero_gradient,
)

from .conftest import record


def _reference_streak(flat: list[bool]) -> Streak | None:
    """The longest run of ``True`` (the earliest of equal ones), by grouping (steps from 1)."""
    best: Streak | None = None
    step = 1
    for value, group in itertools.groupby(flat):
        length = len(list(group))
        if value and (best is None or length > best.length):
            best = Streak(step, length)
        step += length
    return best


def _run(flat: list[bool]) -> list:  # type: ignore[type-arg]
    return [
        record(step, 0.0 if zero else 0.5, grad_norm=0.0 if zero else 0.3)
        for step, zero in enumerate(flat, 1)
    ]


@given(st.lists(st.booleans(), max_size=60))
def test_the_longest_zero_gradient_streak_matches_grouping(flat: list[bool]) -> None:
    records = _run(flat)
    assert longest_streak(records) == _reference_streak(flat)
    # the order the records come in does not matter (the log is read in update order anyway)
    assert longest_streak(list(reversed(records))) == _reference_streak(flat)
    assert run_health("r", records).zero_grad_updates == sum(flat)


def test_only_an_exactly_zero_norm_is_a_zero_gradient_update() -> None:
    assert zero_gradient(record(1, 0.0, grad_norm=0.0))
    assert not zero_gradient(record(1, 0.0, grad_norm=1e-12))


def test_endings_defenses_and_audit_ranges_are_summed_over_the_run() -> None:
    records = [
        record(1, 0.5, terminations={"submitted": 10, "invalid_format": 4, "duplicate_call": 2},
               masked_frac=0.0, lag_max=1),
        record(2, 0.2, terminations={"submitted": 6, "turn_budget": 9, "token_budget": 1},
               masked_frac=0.0017, lag_max=3, kl_linear_attention=2.6e-7,
               kl_full_attention=2.2e-13),
        record(3, 0.1, terminations={"turn_budget": 16}, masked_frac=0.0004, lag_max=2,
               kl_linear_attention=8.8e-10, kl_full_attention=2.4e-12),
    ]  # fmt: skip
    health = run_health("bf16", records)
    assert health == RunHealth(
        label="bf16",
        updates=3,
        rollouts=48,
        invalid_endings=6,
        budget_endings=26,
        zero_grad_updates=0,
        longest_zero_grad=None,
        masked_updates=2,
        max_masked_frac=0.0017,
        max_lag=3,
        kl_linear_range=(8.8e-10, 2.6e-7),
        kl_full_range=(2.2e-13, 2.4e-12),
    )


def test_a_run_without_an_audit_has_no_kl_range() -> None:
    health = run_health("old", [record(1, 0.5), record(2, 0.5)])  # fields default to -1
    assert health.kl_linear_range is None
    assert health.kl_full_range is None


@given(
    st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 8), st.booleans()), min_size=1, max_size=40
    ),
    st.integers(1, 12),
)
def test_windows_partition_the_run(rows: list[tuple[int, int, bool]], size: int) -> None:
    records = [
        record(step, 0.1 * (step % 5), terminations={"invalid_format": bad, "turn_budget": out},
               grad_norm=0.0 if zero else 1.0)
        for step, (bad, out, zero) in enumerate(rows, 1)
    ]  # fmt: skip
    windows = ending_windows(records, size)
    assert len(windows) == -(-len(records) // size)
    assert [w.first for w in windows] == list(range(1, len(records) + 1, size))
    assert windows[-1].last == len(records)
    assert all(w.last - w.first + 1 <= size for w in windows)
    health = run_health("r", records)
    assert sum(w.invalid_endings for w in windows) == health.invalid_endings
    assert sum(w.budget_endings for w in windows) == health.budget_endings
    assert sum(w.zero_grad_updates for w in windows) == health.zero_grad_updates
    assert sum(w.rollouts for w in windows) == health.rollouts
    first = records[: windows[0].last]
    assert windows[0].reward == pytest.approx(sum(r.reward for r in first) / len(first))


def test_a_window_holds_at_least_one_update() -> None:
    with pytest.raises(ValueError, match="at least one update"):
        ending_windows([record(1, 0.5)], 0)


def test_invalid_endings_are_the_endings_the_trainer_treats_as_invalid() -> None:
    """The health table counts what ``trainer.invalid_reward`` overrides (no second list)."""
    from arctic_swe.metrics._health import INVALID_ENDINGS
    from arctic_swe.orchestrator import FORMAT_GATE_ENDINGS

    assert frozenset(INVALID_ENDINGS) == FORMAT_GATE_ENDINGS


@given(st.lists(st.booleans(), max_size=40))
def test_the_trailing_streak_counts_back_from_the_last_update(flat: list[bool]) -> None:
    expected = len(flat) - len("".join("1" if z else "0" for z in flat).rstrip("1"))
    assert trailing_zero_gradient(_run(flat)) == expected
    assert trailing_zero_gradient(list(reversed(_run(flat)))) == expected
