"""Hypothesis strategies for the router: simulator configs and heavy-tailed rollout workloads.

Agentic rollouts are heavy-tailed (Arctic-SWE §3.3): most finish in a few turns, a few run for
very long and hold their engine's slots. :func:`rollout_lengths` draws from a Pareto law by its
inverse CDF, so hypothesis shrinks a length toward the shortest one (``minimum``) rather than
toward an arbitrary value.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
from hypothesis import strategies as st

from load_router._errors import InvalidArgumentError
from load_router._sim_config import POLICY_NAMES, SimConfig


@attrs.frozen
class Workload:
    """Groups of rollouts to run through a scheduler: ``groups[i][j]`` is rollout ``j``'s length
    (in ticks or tokens) of group ``i``; every group has ``len(groups[i])`` rollouts."""

    groups: tuple[tuple[int, ...], ...]

    @property
    def largest_group(self) -> int:
        return max((len(g) for g in self.groups), default=0)


_UNIT = 2**16


def _pareto(u: float, minimum: int, alpha: float, maximum: int) -> int:
    length: float = minimum * (1.0 - u) ** (-1.0 / alpha)
    return min(maximum, math.floor(length))


def rollout_lengths(
    *, minimum: int = 1, maximum: int = 10_000, alpha: float = 1.2
) -> st.SearchStrategy[int]:
    """Pareto(``alpha``) lengths in ``[minimum, maximum]`` (alpha ≤ 2: infinite variance).

    Quantiles are drawn on a grid of 2**16, so the longest length reached is
    ``minimum * 2**(16 / alpha)`` (about 10 000 times ``minimum`` at the default alpha) unless
    ``maximum`` clips it first.

    Raises :class:`~load_router.InvalidArgumentError` unless ``1 <= minimum <= maximum`` and ``alpha > 0``.
    """
    if not 1 <= minimum <= maximum:
        raise InvalidArgumentError(f"need 1 <= minimum <= maximum, got {minimum}, {maximum}")
    if not alpha > 0:
        raise InvalidArgumentError(f"alpha must be > 0, got {alpha!r}")
    # u = k / 2**16 from an integer k: integers shrink toward 0, so lengths shrink to `minimum`;
    # a small range keeps its top (the long tail) within reach of hypothesis's draws
    steps = st.integers(0, _UNIT - 1)
    return steps.map(lambda k: _pareto(k / _UNIT, minimum, alpha, maximum))


def workloads(
    *,
    max_groups: int = 12,
    max_group_size: int = 4,
    lengths: st.SearchStrategy[int] | None = None,
) -> st.SearchStrategy[Workload]:
    """Workloads of 1..``max_groups`` groups of 1..``max_group_size`` heavy-tailed rollouts.

    ``lengths`` defaults to ``rollout_lengths(maximum=200)``. Raises
    :class:`~load_router.InvalidArgumentError` for a bound below 1.
    """
    if max_groups < 1 or max_group_size < 1:
        raise InvalidArgumentError(
            f"max_groups and max_group_size must be >= 1, got {max_groups}, {max_group_size}"
        )
    per_rollout = lengths if lengths is not None else rollout_lengths(maximum=200)
    group = st.lists(per_rollout, min_size=1, max_size=max_group_size).map(tuple)
    return st.lists(group, min_size=1, max_size=max_groups).map(
        lambda groups: Workload(tuple(groups))
    )


@st.composite
def _sim_config(draw: st.DrawFn, overrides: dict[str, Any]) -> SimConfig:
    # fields other fields depend on: an override must bound the dependent draws
    group_size = overrides.get("group_size") or draw(st.integers(1, 4))
    updates = overrides.get("updates") or draw(st.integers(2, 4))
    fields: dict[str, Any] = {
        "policy": draw(st.sampled_from(POLICY_NAMES)),
        "engines": draw(st.integers(1, 4)),
        "group_size": group_size,
        "max_resident_per_engine": draw(
            st.one_of(st.none(), st.integers(group_size, 4 * group_size))
        ),
        "groups_per_update": draw(st.integers(1, 4)),
        "max_outstanding_groups": draw(st.integers(1, 8)),
        "updates": updates,
        "warmup_updates": draw(st.integers(0, updates - 1)),
        "max_off_policy": draw(st.integers(0, 4)),
        "kv_slots": draw(st.integers(1, 32)),
        "tasks": draw(st.integers(1, 20)),
        "task_length_sigma": draw(st.floats(0.0, 1.5)),
        "turns_median": draw(st.floats(1.0, 4.0)),
        "turns_sigma": draw(st.floats(0.0, 1.5)),
        "max_turns": draw(st.integers(1, 12)),
        "tokens_median": draw(st.floats(10.0, 200.0)),
        "tokens_sigma": draw(st.floats(0.0, 1.5)),
        "max_tokens_per_turn": draw(st.integers(16, 2048)),
        "invalidate_caches": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }
    fields.update(overrides)
    return SimConfig(**fields)


def sim_configs(**overrides: Any) -> st.SearchStrategy[SimConfig]:
    """Valid, small :class:`~load_router.SimConfig` s (each simulates in milliseconds).

    Heavy-tailed turns and tokens per turn (log-normal sigmas up to 1.5), any policy, with or
    without a resident cap. Keyword ``overrides`` pin fields (``sim_configs(policy="least-loaded")``);
    an unknown field raises :class:`~load_router.InvalidArgumentError` here rather than at draw time.
    """
    unknown = sorted(set(overrides) - {a.name for a in attrs.fields(SimConfig)})
    if unknown:
        raise InvalidArgumentError(f"SimConfig has no field(s) {unknown}")
    return _sim_config(overrides)
