"""The trainer's numerics figures: ω quantiles over a whole step and the layer-type audit."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from transformers import Qwen3_5ForCausalLM

from arctic_swe.config import TrainerSection
from arctic_swe.model import policy_config
from arctic_swe.trainer import (
    Trainer,
    TrainSample,
    audit_layer_types,
    audit_window,
    build_fp32_policy,
    omega_stats,
)
from hybrid_numerics import mismatch_audit

VOCAB = 64
LEVELS = {"p1": 0.01, "p5": 0.05, "p50": 0.5, "p95": 0.95, "p99": 0.99}


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """The audit's decode loops are many tiny ops: on a loaded 2-core machine two threads made
    them 10x slower than one (the loop runs with ``--threads 1`` too)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _samples_with_ratios(
    trainer: Trainer, ratios: list[list[float]], prompt: int = 3
) -> list[TrainSample]:
    """Samples whose rollout log-probs make ω of each trainable token the given ratio."""
    g = torch.Generator().manual_seed(1)
    out = []
    for row in ratios:
        ids = tuple(torch.randint(0, VOCAB, (prompt + len(row),), generator=g).tolist())
        mask = tuple(i >= prompt for i in range(len(ids)))
        probe = TrainSample(ids, mask, (0.0,) * len(ids), 0.0)
        train_lp = [0.0, *trainer.recompute_logprobs(probe).double().tolist()]
        rollout = [0.0] * prompt + [
            train_lp[prompt + i] - math.log(r) for i, r in enumerate(row)
        ]  # log π_rollout = log π_train - log ω
        out.append(TrainSample(ids, mask, tuple(rollout), 0.3 if len(out) % 2 else -0.3))
    return out


def test_step_quantiles_of_omega_match_numpy_over_all_micro_batches(
    policy: Qwen3_5ForCausalLM,
) -> None:
    trainer = Trainer(policy, TrainerSection(micro_batch_rollouts=1))  # 3 micro-batches
    ratios = [[0.5, 0.8, 1.0, 1.9], [1.1, 1.2], [0.7, 1.5, 0.95, 1.05, 1.3]]
    stats = trainer.step(_samples_with_ratios(trainer, ratios))
    flat = np.array([r for row in ratios for r in row])
    assert set(stats.omega) == {*LEVELS, "min", "max"}
    for key, level in LEVELS.items():  # rollout log-probs are stored in float32
        assert stats.omega[key] == pytest.approx(np.quantile(flat, level), rel=1e-5), key
    assert (stats.omega["min"], stats.omega["max"]) == pytest.approx((0.5, 1.9), rel=1e-5)


def test_omega_stats_of_nothing_is_empty() -> None:
    assert omega_stats([]) == {}
    assert omega_stats([torch.zeros(0, dtype=torch.float64)]) == {}


def _rollout(length: int, prompt: int) -> TrainSample:
    g = torch.Generator().manual_seed(2)
    ids = tuple(torch.randint(0, VOCAB, (length,), generator=g).tolist())
    mask = tuple(i >= prompt for i in range(length))
    return TrainSample(ids, mask, tuple(-1.0 if m else 0.0 for m in mask), 0.5)


def test_audit_window_prefills_the_prompt_and_scores_what_follows() -> None:
    ids, prompt_len = audit_window(_rollout(40, 7), max_tokens=16)
    assert (tuple(ids.shape), prompt_len) == ((1, 23), 7)
    ids, prompt_len = audit_window(_rollout(12, 7), max_tokens=16)  # shorter than the window
    assert (tuple(ids.shape), prompt_len) == ((1, 12), 7)
    with pytest.raises(ValueError, match="max_tokens"):
        audit_window(_rollout(12, 7), max_tokens=0)


def test_the_audit_is_mismatch_audit_on_the_trainers_model() -> None:
    """The figures equal a direct hybrid-numerics call on the same model and tokens, with the
    run's engine-side state dtype (bf16 under ``trainer.fp32_numerics = false``)."""
    sample = _rollout(20, 5)
    got = {}
    for fp32_state in (True, False):
        model = build_fp32_policy(policy_config(VOCAB), seed=7, fp32_state=fp32_state)
        got[fp32_state] = audit = audit_layer_types(model, sample, max_tokens=6)
        direct = mismatch_audit(
            copy.deepcopy(model),
            torch.tensor([sample.token_ids[:11]]),
            prompt_len=5,
            compare_bf16_state=False,
        )
        assert audit.overall == direct.overall
        assert audit.linear_attention == direct.by_layer_type["linear_attention"]
        assert audit.full_attention == direct.by_layer_type["full_attention"]
        assert audit.tokens == 6
        assert audit.seconds > 0
    assert got[True].overall < 1e-9  # FP32 numerics agree
    # the bf16 recurrent state shows in the Gated DeltaNet layers' share
    assert got[False].linear_attention > 10 * max(got[True].linear_attention, 1e-15)
