"""Tests for ``arctic_swe.evaluate._seeds``: every rollout's stream is fixed by its task, its
sample number and the seed alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.evaluate import rollout_seed, rollout_seeds


@given(st.integers(0, 2**31), st.integers(1, 6), st.integers(1, 5), st.integers(1, 5))
def test_seeds_do_not_depend_on_how_many_samples_were_asked(
    seed: int, tasks: int, fewer: int, extra: int
) -> None:
    small, large = rollout_seeds(seed, tasks, fewer), rollout_seeds(seed, tasks, fewer + extra)
    assert len(small) == tasks * fewer
    for task in range(tasks):  # job order: task 0's samples, then task 1's, ...
        shared = large[task * (fewer + extra) : task * (fewer + extra) + fewer]
        assert small[task * fewer : (task + 1) * fewer] == shared
    assert len(set(large)) == len(large)  # every rollout its own stream
    assert small == rollout_seeds(seed, tasks, fewer)


def test_seed_task_and_sample_each_change_the_stream() -> None:
    base = rollout_seed(0, 0, 0)
    assert len({base, rollout_seed(1, 0, 0), rollout_seed(0, 1, 0), rollout_seed(0, 0, 1)}) == 4
    assert 0 <= base < 2**63
