"""Tests for ``arctic_swe._wilson`` (the interval of every sampled success rate)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe._wilson import wilson_interval


def test_a_hand_checked_value() -> None:
    # 8 of 32 (a 16-task pool x 2 samples), z = 1.96, worked by hand:
    # centre = (0.25 + 3.8416 / 64) / (1 + 3.8416 / 32) = 0.310025 / 1.12005 = 0.276796
    # half = 1.96 sqrt(0.25 * 0.75 / 32 + 3.8416 / 4096) / 1.12005 = 0.144273
    low, high = wilson_interval(8, 32)
    assert low == pytest.approx(0.132523, abs=1e-6)
    assert high == pytest.approx(0.421069, abs=1e-6)


@given(st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_bounds_lie_in_the_unit_interval_and_contain_the_estimate(case: tuple[int, int]) -> None:
    successes, n = case
    low, high = wilson_interval(successes, n)
    assert 0.0 <= low <= successes / n <= high <= 1.0
    assert (low == 0.0) == (successes == 0)
    assert (high == 1.0) == (successes == n)


def test_both_records_of_a_sampled_rate_share_one_definition() -> None:
    from pathlib import Path

    from arctic_swe.evaluate import PolicyEvaluation
    from arctic_swe.metrics import EvalRecord

    # the same 3 of 4 rollouts, held as fields by one record and computed by the other
    policy = PolicyEvaluation("p", Path("p"), "pool", 2, 2, 3, 4, {}, {})
    record = EvalRecord("pool", 0, 0, "pool", 0, {"a": "11", "b": "10"})
    assert policy.rate == record.rate == 0.75
    assert policy.interval == record.interval == wilson_interval(3, 4)
    assert PolicyEvaluation("p", Path("p"), "pool", 0, 1, 0, 0, {}, {}).rate == 0.0
