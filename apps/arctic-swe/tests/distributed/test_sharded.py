"""``ShardedTrainer`` on a one-rank gloo group in this process: it shares the in-process
trainer's loss path, so one FSDP2 rank takes exactly the in-process trainer's step."""

from __future__ import annotations

import copy
import socket
from collections.abc import Iterator

import attrs
import pytest
import torch
import torch.distributed as dist
from transformers import Qwen3_5ForCausalLM

from arctic_swe.config import TrainerSection
from arctic_swe.distributed import ShardedTrainer
from arctic_swe.trainer import Trainer, TrainSample

from .conftest import BATCH

SECTION = attrs.evolve(TrainerSection(), lr=1e-3, micro_batch_rollouts=2)


@pytest.fixture
def one_rank_group() -> Iterator[None]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def _flat(parameters: Iterator[torch.nn.Parameter] | list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).double() for p in parameters])


def test_one_rank_takes_the_in_process_trainers_step(
    policy: Qwen3_5ForCausalLM, one_rank_group: None
) -> None:
    reference = Trainer(copy.deepcopy(policy), SECTION)
    expected = reference.step(list(BATCH))
    sharded = ShardedTrainer(copy.deepcopy(policy), SECTION)
    stats = sharded.step(BATCH)
    weights = sharded.full_weights()
    assert weights is not None
    ours = _flat([weights[name] for name in reference.weights()])
    theirs = _flat(list(reference.weights().values()))
    assert float((ours - theirs).norm() / theirs.norm()) <= 1e-6
    assert stats.grad_norm == pytest.approx(expected.grad_norm, rel=1e-5)
    assert stats.trainable_tokens == expected.trainable_tokens
    assert stats.shard_tokens == (sum(len(s.token_ids) for s in BATCH),)
    assert not stats.skipped


def test_an_all_zero_advantage_batch_skips_the_optimizer_step(
    policy: Qwen3_5ForCausalLM, one_rank_group: None
) -> None:
    section = attrs.evolve(SECTION, skip_empty_steps=True)
    flat = [TrainSample(s.token_ids, s.loss_mask, s.rollout_logprobs, 0.0) for s in BATCH]
    sharded = ShardedTrainer(copy.deepcopy(policy), section)
    before = sharded.full_weights()
    stats = sharded.step(flat)
    after = sharded.full_weights()
    assert before is not None
    assert after is not None
    assert stats.skipped
    assert stats.step == 1
    assert all(torch.equal(before[k], after[k]) for k in before)
