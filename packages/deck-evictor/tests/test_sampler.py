"""PassSampler: every pass is a permutation of the active tasks, and its state round-trips."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from deck_evictor._sampler import PassSampler


@given(n=st.integers(1, 40), k=st.integers(1, 12), draws=st.integers(1, 30), seed=st.integers(0, 9))
def test_passes_are_permutations_with_all_tasks_active(
    n: int, k: int, draws: int, seed: int
) -> None:
    sampler = PassSampler(n, seed)
    active = [True] * n
    by_pass: dict[int, list[int]] = {}
    for _ in range(draws):
        pass_before = sampler.pass_index
        chosen, new_pass_at = sampler.draw(k, active, n)
        assert len(chosen) == min(k, n)
        assert len(set(chosen)) == len(chosen)
        split = len(chosen) if new_pass_at is None else new_pass_at
        by_pass.setdefault(pass_before, []).extend(chosen[:split])
        by_pass.setdefault(sampler.pass_index, []).extend(chosen[split:])
    for index, members in by_pass.items():
        assert len(set(members)) == len(members), f"repeat within pass {index}"
        if index < sampler.pass_index and index >= 0:
            assert sorted(members) == list(range(n)), f"pass {index} incomplete"


@given(seed=st.integers(0, 2**63), n=st.integers(1, 30), warmup=st.integers(0, 10))
def test_state_round_trip_continues_the_same_sequence(seed: int, n: int, warmup: int) -> None:
    sampler = PassSampler(n, seed)
    active = [i % 3 != 0 for i in range(n)]
    count = sum(active)
    for _ in range(warmup):
        sampler.draw(4, active, count)
    clone = PassSampler.from_dict(json.loads(json.dumps(sampler.to_dict())), n)
    for _ in range(10):
        assert sampler.draw(4, active, count) == clone.draw(4, active, count)
