"""Student's t against a numerical integral of its density (float64) and known table values."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_swe._student import incomplete_beta, mean_interval, t_cdf, t_quantile


def _density(x: float, df: float) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(x * x / df))


def _cdf_by_simpson(t: float, df: float, steps: int = 20_000) -> float:
    """0.5 + the integral of the density over [0, t] (composite Simpson, even steps)."""
    h = t / steps
    total = _density(0.0, df) + _density(t, df)
    total += sum((4 if i % 2 else 2) * _density(i * h, df) for i in range(1, steps))
    return 0.5 + total * h / 3


@settings(max_examples=40, deadline=None)
@given(
    t=st.floats(min_value=-8.0, max_value=8.0, allow_nan=False),
    df=st.sampled_from([1.0, 2.0, 3.0, 5.0, 15.0, 40.0]),
)
def test_cdf_matches_the_integral_of_the_density(t: float, df: float) -> None:
    assert t_cdf(t, df) == pytest.approx(_cdf_by_simpson(t, df), abs=1e-7)


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.706204736), (2, 4.302652730), (3, 3.182446305), (15, 2.131449546), (1e6, 1.959966)],
)
def test_quantile_matches_the_textbook_values(df: float, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(p=st.floats(min_value=0.01, max_value=0.99), df=st.sampled_from([1.0, 3.0, 7.0, 30.0]))
def test_quantile_inverts_the_cdf(p: float, df: float) -> None:
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)


def test_incomplete_beta_of_a_uniform_is_x() -> None:
    assert incomplete_beta(1.0, 1.0, 0.3) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="x must lie"):
        incomplete_beta(1.0, 1.0, 1.5)


def test_mean_interval_of_four_values() -> None:
    values = [0.1, -0.05, 0.2, 0.15]
    found = mean_interval(values)
    half = 3.182446305 * statistics.stdev(values) / 2
    assert found.mean == pytest.approx(statistics.fmean(values))
    assert (found.low, found.high) == pytest.approx((found.mean - half, found.mean + half))
    assert found.defined
    assert not found.excludes_zero()


def test_one_value_has_no_interval_and_bad_input_is_refused() -> None:
    single = mean_interval([0.3])
    assert not single.defined
    assert not single.excludes_zero()
    with pytest.raises(ValueError, match="no values"):
        mean_interval([])
    with pytest.raises(ValueError, match="confidence"):
        mean_interval([1.0, 2.0], confidence=1.0)
    assert mean_interval([0.2, 0.2, 0.2]).excludes_zero()  # no spread: the bounds are the mean
