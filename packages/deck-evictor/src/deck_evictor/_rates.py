r"""Acquisition/loss rates of the two-state mastery model and the ceiling they imply (Arctic-SWE §1).

Model. Each task is, at every observation step t, either unmastered (0) or mastered (1). Between
consecutive steps an unmastered task becomes mastered with probability g (acquisition) and a
mastered task becomes unmastered with probability d (loss), independently across tasks and steps:
a two-state Markov chain. The expected mastered share q obeys q' = q + g(1 - q) - d q, the
discrete form of the seed's dq/du = g(1 - q) - d q, whose fixed point is the mastery ceiling
``1 - ε = g / (g + d)``, ``ε = d / (g + d)``.

Assumption (stated, not hidden): the observation *is* the state — a success at step t means the
task is mastered at t. There is no emission noise. Real per-rollout successes are noisy (a
mastered task can fail one rollout), which this model reads as loss followed by re-acquisition
and so biases both g and d upwards; feed it denoised observations (e.g. "group all-correct" or
"replay rate ≥ threshold" per update) to stay close to the assumption. A hidden-Markov variant
with emission probabilities would relax it at the price of an iterative (EM) fit.

Likelihood. Conditioning on each sequence's first observation (the initial state is a nuisance
parameter that carries no information about g or d), with n_ab the number of a→b transitions
between *consecutive* observed steps over all tasks::

    L(g, d) = g^{n01} (1 - g)^{n00} d^{n10} (1 - d)^{n11}
    l(g, d) = n01 log g + n00 log(1 - g) + n10 log d + n11 log(1 - d)

l separates in g and d; setting ∂l/∂g = n01/g - n00/(1 - g) = 0 gives ĝ = n01 / (n00 + n01), and
likewise d̂ = n10 / (n10 + n11). The observed Fisher information ∂²l/∂g² at ĝ is
-(n00 + n01) / (ĝ(1 - ĝ)), so se(ĝ) = sqrt(ĝ(1 - ĝ) / (n00 + n01)) (same for d). ``None`` marks
an unobserved step: transitions are only counted between adjacent observed steps.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import attrs
import numpy as np

from deck_evictor._errors import EstimationError, InvalidResultError

Observation = bool | int | None


@attrs.frozen
class TransitionCounts:
    """Transition counts ``n_ab`` (state a at step t, b at t+1) pooled over all histories."""

    n00: int
    n01: int
    n10: int
    n11: int


@attrs.frozen
class RateEstimate:
    """Maximum-likelihood g and d with standard errors and the implied mastery ceiling.

    Attributes:
        g / d: acquisition and loss probabilities per observation step.
        g_stderr / d_stderr: asymptotic standard errors from the Fisher information.
        ceiling: ``1 - ε = g / (g + d)``, the long-run mastered share of solvable tasks.
        epsilon: ``d / (g + d)``.
        counts: the transition counts the estimate rests on.
        log_likelihood: l(ĝ, d̂).
    """

    g: float
    d: float
    g_stderr: float
    d_stderr: float
    ceiling: float
    epsilon: float
    counts: TransitionCounts
    log_likelihood: float


def _state(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer) and value in (0, 1):
        return int(value)
    raise InvalidResultError(f"an observation must be a bool, 0, 1 or None, got {value!r}")


def count_transitions(histories: Iterable[Sequence[Observation]]) -> TransitionCounts:
    """Pool a→b transition counts between adjacent observed steps of every history."""
    counts = [[0, 0], [0, 0]]
    for history in histories:
        previous: int | None = None
        for value in history:
            state = _state(value)
            if previous is not None and state is not None:
                counts[previous][state] += 1
            previous = state
    return TransitionCounts(counts[0][0], counts[0][1], counts[1][0], counts[1][1])


def _xlogy(x: int, y: float) -> float:
    return 0.0 if x == 0 else x * math.log(y)


def log_likelihood(counts: TransitionCounts, g: float, d: float) -> float:
    """l(g, d) of the module docstring (``-inf`` where a seen transition has probability 0)."""
    terms = ((counts.n01, g), (counts.n00, 1 - g), (counts.n10, d), (counts.n11, 1 - d))
    if any(n > 0 and p <= 0.0 for n, p in terms):
        return -math.inf
    return sum(_xlogy(n, p) for n, p in terms)


def estimate_rates(
    histories: Iterable[Sequence[Observation]] | Mapping[str, Sequence[Observation]],
) -> RateEstimate:
    """Maximum-likelihood g and d from per-task mastery sequences (closed form, see module doc).

    Args:
        histories: one sequence per task of per-step observations (``True``/1 mastered,
            ``False``/0 not, ``None`` unobserved); a mapping's values are used.

    Raises:
        InvalidResultError: an observation that is not a bool, 0, 1 or None.
        EstimationError: no transition out of state 0 (g undefined), none out of state 1
            (d undefined), or no change of state at all (ceiling undefined).
    """
    source = histories.values() if isinstance(histories, Mapping) else histories
    counts = count_transitions(source)
    from_zero, from_one = counts.n00 + counts.n01, counts.n10 + counts.n11
    if from_zero == 0:
        raise EstimationError("no step starts unmastered: the acquisition rate g is undefined")
    if from_one == 0:
        raise EstimationError("no step starts mastered: the loss rate d is undefined")
    g, d = counts.n01 / from_zero, counts.n10 / from_one
    if g + d == 0.0:
        raise EstimationError("no task ever changed state: the ceiling g/(g+d) is undefined")
    return RateEstimate(
        g=g,
        d=d,
        g_stderr=math.sqrt(g * (1 - g) / from_zero),
        d_stderr=math.sqrt(d * (1 - d) / from_one),
        ceiling=g / (g + d),
        epsilon=d / (g + d),
        counts=counts,
        log_likelihood=log_likelihood(counts, g, d),
    )


def simulate_histories(
    g: float, d: float, *, tasks: int, steps: int, seed: int, initial_mastered: float = 0.0
) -> list[list[bool]]:
    """Sample ``tasks`` histories of ``steps`` observations from the two-state model.

    ``initial_mastered`` is the probability a task starts mastered. For tests and benchmarks.
    """
    for name, p in (("g", g), ("d", d), ("initial_mastered", initial_mastered)):
        if not 0.0 <= p <= 1.0:
            raise InvalidResultError(f"{name} must be a probability, got {p!r}")
    rng = np.random.default_rng(seed)
    state = rng.random(tasks) < initial_mastered
    columns = [state.copy()]
    for _ in range(steps - 1):
        flip = rng.random(tasks)
        state = np.where(state, flip >= d, flip < g)
        columns.append(state.copy())
    matrix = np.stack(columns, axis=1) if columns else np.zeros((tasks, 0), dtype=bool)
    return [[bool(v) for v in row] for row in matrix]
