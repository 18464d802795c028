"""Tests for ``arctic_swe.trainer._trainer`` on hand-built trajectories."""

from __future__ import annotations

import asyncio
import copy
import math

import attrs
import pytest
import torch
from transformers import Qwen3_5ForCausalLM

from arctic_swe.config import TrainerSection
from arctic_swe.engine import EngineConfig, TorchEngine
from arctic_swe.model import policy_config
from arctic_swe.trainer import BatchError, Trainer, TrainSample, build_fp32_policy
from load_router import GenerateRequest

VOCAB = 64


def _sample(
    ids: list[int], first_trainable: int, advantage: float, logprob: float = -1.0
) -> TrainSample:
    mask = tuple(i >= first_trainable for i in range(len(ids)))
    return TrainSample(
        token_ids=tuple(ids),
        loss_mask=mask,
        rollout_logprobs=tuple(logprob if m else 0.0 for m in mask),
        advantage=advantage,
    )


async def _engine_turn(model: Qwen3_5ForCausalLM, prompt: tuple[int, ...]) -> tuple:
    engine = TorchEngine(copy.deepcopy(model), EngineConfig(capacity=4, seed=3))
    try:
        turn = await engine.generate_detailed(
            GenerateRequest(rollout_index=0, prompt_ids=prompt, max_new_tokens=12)
        )
    finally:
        await engine.close()
    return turn


def test_recomputed_logprobs_match_the_engines(policy: Qwen3_5ForCausalLM) -> None:
    prompt = (5, 9, 11, 3, 7, 20, 2)
    turn = asyncio.run(_engine_turn(policy, prompt))
    ids = [*prompt, *turn.token_ids]
    sample = TrainSample(
        token_ids=tuple(ids),
        loss_mask=tuple(i >= len(prompt) for i in range(len(ids))),
        rollout_logprobs=(0.0,) * len(prompt) + tuple(turn.logprobs),
        advantage=0.0,
    )
    recomputed = Trainer(policy, TrainerSection()).recompute_logprobs(sample)
    generated = recomputed[len(prompt) - 1 :]
    torch.testing.assert_close(
        generated, torch.tensor(turn.logprobs, dtype=torch.float32), atol=2e-5, rtol=0
    )


def test_recompute_matches_a_plain_full_forward(policy: Qwen3_5ForCausalLM) -> None:
    ids = [1, 4, 9, 16, 25, 36, 49, 3, 8]
    trainer = Trainer(policy, TrainerSection())
    ours = trainer.recompute_logprobs(_sample(ids, 3, 0.0)).double()
    with torch.no_grad():
        logits = policy(input_ids=torch.tensor([ids])).logits[0, :-1].double()
    reference = torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
    torch.testing.assert_close(ours, reference, atol=1e-5, rtol=0)


def test_positive_advantage_raises_and_negative_lowers_the_sequence(
    policy: Qwen3_5ForCausalLM,
) -> None:
    good, bad = [2, 3, 5, 7, 11, 13, 17], [2, 3, 5, 19, 23, 29, 31]
    trainer = Trainer(policy, attrs.evolve(TrainerSection(), lr=1e-3))
    samples = [_sample(good, 3, 0.5), _sample(bad, 3, -0.5)]
    before = [trainer.recompute_logprobs(s)[2:].sum() for s in samples]
    for _ in range(3):
        stats = trainer.step(samples)
    after = [trainer.recompute_logprobs(s)[2:].sum() for s in samples]
    assert after[0] > before[0]
    assert after[1] < before[1]
    assert stats.step == 3
    assert stats.trainable_tokens == 8
    assert math.isfinite(stats.loss)
    assert stats.grad_norm > 0


def test_zero_advantages_leave_the_weights_unchanged(policy: Qwen3_5ForCausalLM) -> None:
    trainer = Trainer(policy, TrainerSection())
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    trainer.step([_sample([1, 2, 3, 4, 5], 2, 0.0), _sample([1, 2, 6, 7], 2, 0.0)])
    for name, value in policy.state_dict().items():
        assert torch.equal(value, before[name]), name


@pytest.mark.parametrize("skip", [False, True])
def test_an_empty_batch_after_a_real_one_replays_momentum_unless_skipped(
    policy: Qwen3_5ForCausalLM, skip: bool
) -> None:
    """Zero advantages give zero gradient, but AdamW still moves the weights by its momentum;
    ``skip_empty_steps`` keeps them where the last informative step left them."""
    trainer = Trainer(policy, TrainerSection(lr=1e-3, skip_empty_steps=skip))
    trainer.step([_sample([1, 2, 3, 4, 5], 2, 0.5), _sample([1, 2, 6, 7], 2, -0.5)])
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    stats = trainer.step([_sample([1, 2, 3, 4, 5], 2, 0.0), _sample([1, 2, 6, 7], 2, 0.0)])
    assert stats.grad_norm == 0.0
    assert trainer.steps == 2  # an update either way: the run's clock and version still advance
    moved = [k for k, v in policy.state_dict().items() if not torch.equal(v, before[k])]
    assert (moved == []) is skip


def _grads_after_step(micro: int, aggregation: str) -> dict[str, torch.Tensor]:
    model = build_fp32_policy(policy_config(VOCAB), seed=7)
    section = attrs.evolve(TrainerSection(), micro_batch_rollouts=micro, aggregation=aggregation)
    trainer = Trainer(model, section)
    trainer.optimizer.step = lambda *a, **k: None  # type: ignore[method-assign]  # keep grads
    samples = [
        _sample([1, 2, 3, 4, 5, 6, 7, 8], 2, 0.7),
        _sample([1, 9, 10], 1, -0.2),
        _sample([3, 4, 5, 6, 60, 61], 4, -0.5),
    ]
    trainer.step(samples)
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("aggregation", ["token_mean", "rollout_mean"])
def test_micro_batching_does_not_change_the_gradient(aggregation: str) -> None:
    whole, split = _grads_after_step(3, aggregation), _grads_after_step(1, aggregation)
    assert whole.keys() == split.keys()
    for name in whole:
        torch.testing.assert_close(split[name], whole[name], atol=1e-6, rtol=1e-4)


def test_token_mean_loss_matches_a_float64_reference(policy: Qwen3_5ForCausalLM) -> None:
    samples = [_sample([1, 2, 3, 4, 5, 6], 2, 0.25, -0.9), _sample([7, 8, 9], 1, -0.25, -1.3)]
    trainer = Trainer(policy, TrainerSection())
    current = [trainer.recompute_logprobs(s).double() for s in samples]
    total, count = 0.0, 0
    for sample, logprobs in zip(samples, current, strict=True):
        for t, trainable in enumerate(sample.loss_mask[1:]):
            if not trainable:
                continue
            omega = math.exp(float(logprobs[t]) - sample.rollout_logprobs[t + 1])
            kept = 0.0 <= omega <= 2.0
            total += -(omega * sample.advantage * float(logprobs[t])) if kept else 0.0
            count += 1
    stats = trainer.step(samples)
    assert stats.loss == pytest.approx(total / count, rel=1e-4, abs=1e-6)


def test_bad_batches_are_rejected_before_any_update(policy: Qwen3_5ForCausalLM) -> None:
    trainer = Trainer(policy, TrainerSection())
    with pytest.raises(BatchError, match="at least one"):
        trainer.step([])
    with pytest.raises(BatchError, match=r"\[0, 64\)"):
        trainer.step([_sample([1, 2, 99], 1, 1.0)])
    with pytest.raises(BatchError, match="ragged"):
        TrainSample((1, 2, 3), (False, True), (0.0, -1.0, -1.0), 1.0)
    with pytest.raises(BatchError, match="<= 0"):
        TrainSample((1, 2), (False, True), (0.0, 0.5), 1.0)
    with pytest.raises(BatchError, match="first token"):
        TrainSample((1, 2), (True, True), (-1.0, -1.0), 1.0)
    with pytest.raises(BatchError, match="finite"):
        TrainSample((1, 2), (False, True), (0.0, -1.0), float("nan"))
    assert trainer.steps == 0


def test_published_weights_leave_out_tied_aliases_and_load_into_an_engine(
    policy: Qwen3_5ForCausalLM,
) -> None:
    trainer = Trainer(copy.deepcopy(policy), TrainerSection())
    weights = trainer.weights()
    state = policy.state_dict()
    assert policy.config.tie_word_embeddings
    assert set(state) - set(weights) == {"lm_head.weight"}  # the alias of the embedding
    assert all(torch.equal(weights[name], state[name]) for name in weights)
    assert all(t.device.type == "cpu" for t in weights.values())

    async def refreshed_version() -> int:
        engine = TorchEngine(copy.deepcopy(policy), EngineConfig(capacity=2))
        try:
            await engine.refresh_weights(weights, 1)  # accepted without the alias
            return engine.version
        finally:
            await engine.close()

    assert asyncio.run(refreshed_version()) == 1
