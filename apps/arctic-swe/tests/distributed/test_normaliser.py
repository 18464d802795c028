"""Why the distributed step all-reduces the normaliser (Arctic-SWE §5: token mean over the
*global* batch): a single-process replay of the 2-rank arithmetic, shard by shard.

Summing each shard's gradient taken with the global trainable-token count reproduces the
one-rank gradient and step; the naive alternative — each rank divides by its own count and
the ranks' gradients are averaged, which is what plain DDP/FSDP averaging gives — does not.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import attrs
import torch
from torch import nn

from arctic_swe.config import TrainerSection
from arctic_swe.distributed import split_by_tokens
from arctic_swe.trainer import Trainer, TrainSample, loss_config, pad_batch
from arctic_swe.trainer._trainer import micro_batch_loss, score_tokens

from .conftest import BATCH, VOCAB

SECTION = attrs.evolve(TrainerSection(), lr=1e-3)


def _gradient(
    policy: nn.Module, samples: Sequence[TrainSample], normaliser: float
) -> list[torch.Tensor]:
    model = copy.deepcopy(policy)
    batch = pad_batch(samples, VOCAB, torch.device("cpu"))
    logprobs, entropy = score_tokens(model, batch.input_ids, batch.targets)
    loss = micro_batch_loss(logprobs, entropy, batch, loss_config(SECTION), normaliser).loss
    loss.backward()  # type: ignore[no-untyped-call]
    return [
        p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()
    ]


def _step_with(policy: nn.Module, gradient: list[torch.Tensor]) -> list[torch.Tensor]:
    """The trainer's clip + AdamW step applied to ``gradient``; the parameters after it."""
    model = copy.deepcopy(policy)
    for parameter, grad in zip(model.parameters(), gradient, strict=True):
        parameter.grad = grad.clone()
    nn.utils.clip_grad_norm_(model.parameters(), SECTION.grad_clip)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=SECTION.lr,
        betas=(SECTION.beta1, SECTION.beta2),
        weight_decay=SECTION.weight_decay,
    )
    optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


def _relative(ours: list[torch.Tensor], reference: list[torch.Tensor]) -> float:
    """``||a - b|| / ||b||`` over all tensors as one vector (as the process tests measure)."""
    pairs = list(zip(ours, reference, strict=True))
    difference = sum(float((a.double() - b.double()).pow(2).sum()) for a, b in pairs)
    return (difference / sum(float(b.double().pow(2).sum()) for _, b in pairs)) ** 0.5


def _shards() -> list[list[TrainSample]]:
    return [
        [BATCH[i] for i in shard] for shard in split_by_tokens([len(s.token_ids) for s in BATCH], 2)
    ]


def test_the_shards_have_unequal_token_counts() -> None:
    counts = [sum(s.trainable_tokens for s in shard) for shard in _shards()]
    assert counts[0] != counts[1]  # otherwise the naive normaliser would be right by luck


def test_the_global_normaliser_reproduces_the_one_rank_step(policy: nn.Module) -> None:
    total = sum(s.trainable_tokens for s in BATCH)
    reference_grad = _gradient(policy, BATCH, total)
    summed = [
        sum(parts)
        for parts in zip(*(_gradient(policy, shard, total) for shard in _shards()), strict=True)
    ]
    assert _relative(summed, reference_grad) <= 1e-6
    trainer = Trainer(copy.deepcopy(policy), SECTION)
    trainer.step(list(BATCH))
    reference = [p.detach().clone() for p in trainer.model.parameters()]
    assert _relative(_step_with(policy, summed), reference) <= 1e-6


def test_a_per_rank_mean_normaliser_fails_the_same_check(policy: nn.Module) -> None:
    shards = _shards()
    per_rank = [
        _gradient(policy, shard, sum(s.trainable_tokens for s in shard)) for shard in shards
    ]
    averaged = [sum(parts) / len(shards) for parts in zip(*per_rank, strict=True)]
    reference_grad = _gradient(policy, BATCH, sum(s.trainable_tokens for s in BATCH))
    assert _relative(averaged, reference_grad) > 1e-2
    trainer = Trainer(copy.deepcopy(policy), SECTION)
    trainer.step(list(BATCH))
    reference = [p.detach().clone() for p in trainer.model.parameters()]
    assert _relative(_step_with(policy, averaged), reference) > 1e-6
