"""Tests for ``arctic_swe._streams``: the named evaluation streams are disjoint, the ``pool``
streams are the ones in-run evaluations always drew, and an unknown name is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe._streams import STREAMS, stream_seed
from arctic_swe.evaluate import rollout_seeds


@given(st.integers(0, 2**40))
def test_the_pool_stream_is_the_run_seed_itself(seed: int) -> None:
    assert stream_seed(seed, "pool") == seed


@given(st.integers(0, 2**40), st.integers(1, 8), st.integers(1, 4))
def test_named_streams_draw_disjoint_rollout_seeds(seed: int, tasks: int, samples: int) -> None:
    drawn = [set(rollout_seeds(stream_seed(seed, name), tasks, samples)) for name in STREAMS]
    assert sum(len(d) for d in drawn) == len(set().union(*drawn))  # no seed in two streams


def test_the_check_stream_of_one_seed_is_not_the_pool_stream_of_another() -> None:
    pool_bases = {stream_seed(seed, "pool") for seed in range(10_000)}
    assert not pool_bases & {stream_seed(seed, "check") for seed in range(10_000)}


def test_an_unknown_stream_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown stream 'train'"):
        stream_seed(0, "train")
