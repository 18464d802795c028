"""Tests for ``arctic_swe.distributed._split``: the token-balanced (LPT) batch split."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.distributed import split_by_tokens

lengths_strategy = st.lists(st.integers(min_value=0, max_value=5000), max_size=64)
world_strategy = st.integers(min_value=1, max_value=9)


def shard_loads(lengths: list[int], shards: list[list[int]]) -> list[int]:
    """Total length on each rank of a split."""
    return [sum(lengths[i] for i in shard) for shard in shards]


@given(lengths_strategy, world_strategy)
def test_every_sample_lands_on_exactly_one_rank(lengths: list[int], world: int) -> None:
    shards = split_by_tokens(lengths, world)
    assert len(shards) == world
    placed = sorted(i for shard in shards for i in shard)
    assert placed == list(range(len(lengths)))
    assert all(shard == sorted(shard) for shard in shards)


@given(lengths_strategy, world_strategy)
def test_loads_are_balanced_within_one_sample(lengths: list[int], world: int) -> None:
    loads = shard_loads(lengths, split_by_tokens(lengths, world))
    assert sum(loads) == sum(lengths)
    assert max(loads) - min(loads) <= max(lengths, default=0)


@given(lengths_strategy, world_strategy)
def test_the_split_is_a_function_of_the_lengths(lengths: list[int], world: int) -> None:
    # every rank computes it on its own: it must not depend on anything else
    assert split_by_tokens(lengths, world) == split_by_tokens(list(lengths), world)


def _optimum(lengths: list[int], world: int) -> int:
    """The smallest possible heaviest load, by brute force (small cases only)."""
    return min(
        max(
            sum(n for n, r in zip(lengths, assignment, strict=True) if r == rank)
            for rank in range(world)
        )
        for assignment in itertools.product(range(world), repeat=len(lengths))
    )


@given(st.lists(st.integers(min_value=1, max_value=100), min_size=1, max_size=8), st.integers(2, 3))
def test_the_heaviest_rank_is_within_grahams_lpt_bound(lengths: list[int], world: int) -> None:
    # Graham (1969): LPT's makespan is at most (4/3 - 1/(3m)) times the optimum.
    lpt = max(shard_loads(lengths, split_by_tokens(lengths, world)))
    assert lpt * 3 * world <= (4 * world - 1) * _optimum(lengths, world)


def test_a_known_split() -> None:
    # 20 -> r0, 12 -> r1, 9 -> r1 (12 < 20), 7 -> r0 (20 < 21), 5 -> r1 (21 < 27)
    assert split_by_tokens([20, 12, 9, 7, 5], 2) == [[0, 3], [1, 2, 4]]


def test_fewer_samples_than_ranks_leaves_ranks_empty() -> None:
    assert split_by_tokens([7], 3) == [[0], [], []]
    assert split_by_tokens([], 2) == [[], []]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="world_size"):
        split_by_tokens([1], 0)
    with pytest.raises(ValueError, match=">= 0"):
        split_by_tokens([-1], 2)
