"""The simulated engine's processor sharing against hand-computed finish times."""

from __future__ import annotations

import math

import attrs
import pytest

from load_router import SimConfig
from load_router._sim_parts import SimEngine, SimRollout

CFG = SimConfig(peak_tokens_per_s=100.0, knee=0.0, kv_slots=2, thrash_exponent=1.0)


def rollout(*tokens: int) -> SimRollout:
    return SimRollout([(t, 1.0) for t in tokens], prompt_tokens=10)


def test_two_sequences_share_the_engine_then_one_speeds_up() -> None:
    engine = SimEngine("e", CFG)
    short, long = rollout(100), rollout(300)
    engine.admit(short)
    engine.admit(long)
    engine.recompute_rate()
    assert engine.rate == 50.0  # 100 tok/s shared by two decoding sequences
    assert engine.next_completion() == pytest.approx(2.0)  # 100 tokens at 50 tok/s
    engine.advance(2.0)
    (done,) = engine.pop_finished(1e-9)
    assert done is short
    engine.finish_turn(short)
    engine.recompute_rate()
    assert engine.rate == 100.0
    # the long one has 200 tokens left at 100 tok/s
    assert engine.next_completion() == pytest.approx(4.0)
    assert engine.tokens_total == pytest.approx(200.0)


def test_thrashing_beyond_kv_slots_slows_everyone() -> None:
    engine = SimEngine("e", CFG)
    for _ in range(4):
        engine.admit(rollout(10))
    engine.recompute_rate()
    assert engine.rate == pytest.approx(100.0 / 4 * (2 / 4) ** 1.0)


def test_refresh_splits_a_turn_between_versions_and_charges_reprefill() -> None:
    engine = SimEngine("e", CFG)
    seq = rollout(100, 50)
    engine.admit(seq)
    engine.recompute_rate()
    resume = engine.begin_refresh(0.4, version=1)  # 40 tokens decoded under version 0
    assert engine.rate == 0.0
    assert resume == pytest.approx(0.4 + CFG.weight_load_s + 10 / CFG.prefill_tokens_per_s)
    assert math.isinf(engine.next_completion())
    engine.end_refresh(resume, 1)
    engine.advance(resume + 0.6)
    engine.pop_finished(1e-9)
    engine.finish_turn(seq)
    assert seq.versions.runs == ((0, 40), (1, 60))
    assert engine.stale_cache_tokens == 0


def test_keeping_caches_counts_stale_tokens() -> None:
    engine = SimEngine("e", attrs.evolve(CFG, invalidate_caches=False))
    seq = rollout(100)
    engine.admit(seq)
    engine.recompute_rate()
    resume = engine.begin_refresh(0.5, version=1)
    assert resume == pytest.approx(0.5 + CFG.weight_load_s)  # no re-prefill
    engine.end_refresh(resume, 1)
    engine.advance(resume + 0.5)
    engine.pop_finished(1e-9)
    engine.finish_turn(seq)
    assert engine.stale_cache_tokens == 50  # decoded after the refresh from the old cache
