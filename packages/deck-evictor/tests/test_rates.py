"""The two-state acquisition/loss estimator: recovery from simulated data, MLE optimality, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from deck_evictor import (
    EstimationError,
    InvalidResultError,
    count_transitions,
    estimate_rates,
    log_likelihood,
    simulate_histories,
)


@pytest.mark.parametrize(
    ("g", "d", "initial"), [(0.10, 0.02, 0.0), (0.05, 0.05, 0.5), (0.30, 0.01, 0.2)]
)
def test_recovers_known_g_and_d_from_simulated_histories(
    g: float, d: float, initial: float
) -> None:
    # 2,000 tasks x 60 steps gives >= ~10^4 transitions out of each state, so the standard error
    # is <= ~0.003; the stated tolerance is 4 standard errors (a false alarm rate ~6e-5 per value)
    # plus an absolute floor of 0.005.
    histories = simulate_histories(g, d, tasks=2000, steps=60, seed=11, initial_mastered=initial)
    estimate = estimate_rates(histories)
    assert abs(estimate.g - g) <= max(4 * estimate.g_stderr, 0.005)
    assert abs(estimate.d - d) <= max(4 * estimate.d_stderr, 0.005)
    assert estimate.ceiling == pytest.approx(g / (g + d), abs=0.03)
    assert estimate.epsilon == pytest.approx(1 - estimate.ceiling)


def test_ceiling_matches_the_simulated_long_run_mastered_share() -> None:
    g, d = 0.2, 0.05
    histories = simulate_histories(g, d, tasks=4000, steps=200, seed=3)
    long_run = float(np.mean([h[-1] for h in histories]))
    assert estimate_rates(histories).ceiling == pytest.approx(long_run, abs=0.03)
    assert long_run == pytest.approx(g / (g + d), abs=0.03)


def test_hand_counted_transitions_and_gaps() -> None:
    histories = {"a": [0, 0, 1, 1, 0], "b": [True, None, False, 1], "c": [None, 1]}
    counts = count_transitions(histories.values())
    # a: 00 01 11 10; b: (gap) 01; c: nothing
    assert (counts.n00, counts.n01, counts.n10, counts.n11) == (1, 2, 1, 1)
    estimate = estimate_rates(histories)
    assert (estimate.g, estimate.d) == (2 / 3, 1 / 2)
    assert estimate.log_likelihood == pytest.approx(
        2 * math.log(2 / 3) + math.log(1 / 3) + 2 * math.log(1 / 2)
    )


sequences = st.lists(st.lists(st.sampled_from([0, 1, None]), max_size=12), min_size=1, max_size=8)


@given(histories=sequences)
def test_closed_form_maximises_the_likelihood_against_a_float64_grid(
    histories: list[list[int | None]],
) -> None:
    """Slow, readable reference: evaluate l(g, d) on a grid and compare with the closed form."""
    counts = count_transitions(histories)
    try:
        estimate = estimate_rates(histories)
    except EstimationError:
        assert (
            counts.n00 + counts.n01 == 0
            or counts.n10 + counts.n11 == 0
            or (counts.n01 == 0 and counts.n10 == 0)
        )
        return
    grid = np.linspace(0.0, 1.0, 401, dtype=np.float64)
    # l separates into a g part and a d part, so the grid maximum is the sum of two 1-D maxima
    best = max(
        log_likelihood(counts, float(g), 0.5) - log_likelihood(counts, 0.5, 0.5) for g in grid
    )
    best += max(log_likelihood(counts, 0.5, float(d)) for d in grid)
    assert estimate.log_likelihood >= best - 1e-9
    for g, d in ((estimate.g + 0.01, estimate.d), (estimate.g, estimate.d - 0.01)):
        if 0 <= g <= 1 and 0 <= d <= 1:
            assert log_likelihood(counts, g, d) <= estimate.log_likelihood


def test_undefined_rates_raise_typed_errors() -> None:
    with pytest.raises(EstimationError, match="g is undefined"):
        estimate_rates([[1, 1, 1]])
    with pytest.raises(EstimationError, match="d is undefined"):
        estimate_rates([[0, 0, 0]])
    with pytest.raises(EstimationError, match="ceiling"):
        estimate_rates([[0, 0], [1, 1]])
    with pytest.raises(InvalidResultError):
        estimate_rates([[0, 2]])
    with pytest.raises(InvalidResultError):
        simulate_histories(1.5, 0.1, tasks=1, steps=2, seed=0)


def test_standard_errors_are_calibrated() -> None:
    """Across independent simulations ~95 % of estimates lie within 2 standard errors."""
    g, d = 0.15, 0.05
    inside_g = inside_d = 0
    runs = 40
    for seed in range(runs):
        estimate = estimate_rates(simulate_histories(g, d, tasks=300, steps=20, seed=seed))
        inside_g += abs(estimate.g - g) <= 2 * estimate.g_stderr
        inside_d += abs(estimate.d - d) <= 2 * estimate.d_stderr
    # Binomial(40, 0.95) falls below 32 with probability < 0.1 %.
    assert inside_g >= 32
    assert inside_d >= 32
