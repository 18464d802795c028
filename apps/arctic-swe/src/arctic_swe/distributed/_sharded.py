"""The FSDP2 trainer: one rank's share of a data-parallel, sharded CISPO step.

Arctic-SWE §3.3/§5 train on 2 GPUs with AdamW state in FP32, which does not fit one device for
Qwen3.5-4B; so parameters, gradients and optimizer state are sharded across the ranks with
``torch.distributed.fsdp.fully_shard`` (one FSDP group per decoder layer, one for the
embeddings, final norm and LM head). Each rank scores its token-balanced share of the global
batch through the in-process trainer's loss path (:func:`arctic_swe.trainer.score_tokens`,
:func:`arctic_swe.trainer.micro_batch_loss`), divided by the **global** normaliser — the
trainable-token (or rollout) count all-reduced over the ranks — and the reduce-scatter *sums*
the gradients (divide factor 1), so N ranks compute the gradient one rank would.

Precision: the parameters are FP32 masters on every rank (hybrid-numerics' policy with no
compute dtype, as in the in-process trainer); on CUDA the forward runs under bf16 autocast
while ``A_log``/``dt_bias``, gates' and norms' arithmetic and the recurrent state stay FP32 in the
patched kernels. On CPU everything is FP32.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard

from arctic_swe.config import TrainerSection
from arctic_swe.distributed._split import split_by_tokens
from arctic_swe.trainer import (
    TOKEN_MEANS,
    BatchError,
    PaddedBatch,
    TrainSample,
    autocast_for,
    loss_config,
    micro_batch_loss,
    micro_batches,
    pad_batch,
    score_tokens,
)
from arctic_swe.weights import tied_aliases
from cispo_loss import default_normalizer

#: The sample a rank with fewer micro-batches than the others runs (all tokens masked, so it
#: adds exactly zero to the loss and the gradient) to keep FSDP's collectives in step.
_FILLER = TrainSample(
    token_ids=(0, 0), loss_mask=(False, False), rollout_logprobs=(0.0, 0.0), advantage=0.0
)


class PolicyScorer(nn.Module):
    """The policy behind one ``forward``: ids ``[B, T]`` -> (log-probs, entropies) ``[B, T-1]``.

    FSDP2 unshards a module's parameters around its ``forward``; the loss path reads the LM
    head's weight directly (the chunked log-prob kernel), so the root FSDP group must be a
    module whose forward is the whole scoring path — this one.
    """

    def __init__(self, policy: nn.Module) -> None:
        super().__init__()
        self.policy = policy

    def forward(
        self, input_ids: torch.Tensor, targets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logprobs, entropy = score_tokens(self.policy, input_ids, targets)
        # fresh tensors, not views: FSDP2 hooks the outputs for its pre-backward all-gather
        return logprobs.clone(), entropy.clone()


@dataclass(frozen=True)
class ShardStats:
    """One distributed step, reduced over every rank (the same on all ranks)."""

    step: int
    loss: float
    grad_norm: float  # of the full (unsharded) gradient, before clipping
    mismatch_kl: float
    masked_frac: float
    entropy: float
    trainable_tokens: int
    rollouts: int
    seconds: float
    skipped: bool  # the optimizer step was skipped (skip_empty_steps, all advantages 0)
    shard_tokens: tuple[int, ...]  # tokens each rank scored (the balance of the split)


class ShardedTrainer:
    """One rank of the FSDP2 trainer; every public method is collective (all ranks call it).

    ``policy`` is this rank's full FP32 copy (every rank builds the same one, e.g. from the same
    checkpoint); it is sharded in place across ``dist``'s default group.
    """

    def __init__(self, policy: nn.Module, section: TrainerSection) -> None:
        if not dist.is_initialized():
            raise RuntimeError("ShardedTrainer needs an initialised torch.distributed group")
        self.section = section
        self.loss_config = loss_config(section)
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.device = next(policy.parameters()).device
        self.vocab_size = int(policy.get_output_embeddings().weight.shape[0])  # type: ignore[operator]
        self.config = policy.config
        self.aliases = tied_aliases(policy)
        self.mesh: DeviceMesh = init_device_mesh(self.device.type, (self.world_size,))
        self.scorer = PolicyScorer(policy)
        self.fsdp_modules = _shard(self.scorer, self.mesh)
        self.optimizer = torch.optim.AdamW(
            self.scorer.parameters(),
            lr=section.lr,
            betas=(section.beta1, section.beta2),
            weight_decay=section.weight_decay,
        )
        self.steps = 0

    # ------------------------------------------------------------------ the step
    def step(self, samples: Sequence[TrainSample]) -> ShardStats:
        """One AdamW step on the global batch ``samples`` (every rank passes the same list and
        scores only its token-balanced share)."""
        if not samples:
            raise BatchError("a step needs at least one sample")
        started = time.perf_counter()
        shards = split_by_tokens([len(s.token_ids) for s in samples], self.world_size)
        mine = [samples[i] for i in shards[self.rank]]
        batches = [
            pad_batch(chunk, self.vocab_size, self.device)
            for chunk in micro_batches(mine, self.section.micro_batch_rollouts)
        ]
        local_norm = sum(default_normalizer(b.loss_mask, config=self.loss_config) for b in batches)
        counts = self._all_reduce([float(local_norm), float(len(batches))], dist.ReduceOp.SUM)
        normalizer = max(counts[0], 1.0)
        rounds = int(self._all_reduce([float(len(batches))], dist.ReduceOp.MAX)[0])
        fillers = rounds - len(batches)
        batches += [pad_batch([_FILLER], self.vocab_size, self.device)] * fillers
        self.scorer.train()
        self.optimizer.zero_grad(set_to_none=True)
        sums = self._backward_all(batches, normalizer, real=rounds - fillers)
        norm = nn.utils.clip_grad_norm_(list(self.scorer.parameters()), self.section.grad_clip)
        grad_norm = float(_full(norm))
        skipped = self.section.skip_empty_steps and all(s.advantage == 0.0 for s in samples)
        if not skipped:
            self.optimizer.step()
        self.scorer.eval()
        self.steps += 1
        tokens = int(sums["trainable_tokens"])
        means = {k: sums[k] / tokens if tokens else 0.0 for k in TOKEN_MEANS}
        return ShardStats(
            step=self.steps,
            loss=sums["loss"],
            grad_norm=grad_norm,
            mismatch_kl=means["mismatch_kl"],
            masked_frac=means["masked_frac"],
            entropy=means["entropy_mean"],
            trainable_tokens=tokens,
            rollouts=len(samples),
            seconds=time.perf_counter() - started,
            skipped=skipped,
            shard_tokens=tuple(sum(len(samples[i].token_ids) for i in s) for s in shards),
        )

    def _backward_all(
        self, batches: list[PaddedBatch], normalizer: float, *, real: int
    ) -> dict[str, float]:
        """Forward/backward every micro-batch; gradients are reduced only after the last one.
        Returns the step's metric sums over all ranks."""
        keys = ("loss", "trainable_tokens", *TOKEN_MEANS)
        local = dict.fromkeys(keys, 0.0)
        for index, batch in enumerate(batches):
            last = index == len(batches) - 1
            for module in self.fsdp_modules:
                module.set_requires_gradient_sync(last, recurse=False)
            with autocast_for(self.device):
                logprobs, entropy = self.scorer(batch.input_ids, batch.targets)
            output = micro_batch_loss(logprobs, entropy, batch, self.loss_config, normalizer)
            loss: Any = output.loss
            loss.backward()
            if index < real:
                count = float(output.metrics["trainable_tokens"])
                local["loss"] += float(output.metrics["loss"])
                local["trainable_tokens"] += count
                for key in TOKEN_MEANS:
                    local[key] += float(output.metrics.get(key, 0.0)) * count
        reduced = self._all_reduce([local[k] for k in keys], dist.ReduceOp.SUM)
        return dict(zip(keys, reduced, strict=True))

    def _all_reduce(self, values: list[float], op: dist.ReduceOp.RedOpType) -> list[float]:
        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=op)
        return [float(v) for v in tensor.tolist()]

    # ------------------------------------------------------------------ weights
    def full_weights(self) -> dict[str, torch.Tensor] | None:
        """The consolidated weights on rank 0 (CPU, Hugging Face names, tied aliases left out,
        as :meth:`arctic_swe.trainer.Trainer.weights`); ``None`` on the other ranks."""
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
        )

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        state = get_model_state_dict(self.scorer, options=options)
        if self.rank != 0:
            return None
        prefix = "policy."
        weights = {
            name.removeprefix(prefix): tensor.detach().contiguous()
            for name, tensor in state.items()
            if isinstance(tensor, torch.Tensor)
        }
        return {k: v for k, v in weights.items() if k not in self.aliases}


def _shard(scorer: PolicyScorer, mesh: DeviceMesh) -> list[FSDPModule]:
    """``fully_shard`` each decoder layer, then the root (embeddings, norm, head)."""
    layers: Any = scorer.policy.get_submodule("model.layers")
    modules: list[FSDPModule] = []
    for layer in layers:
        modules.append(fully_shard(layer, mesh=mesh))
    modules.append(fully_shard(scorer, mesh=mesh))
    for module in modules:
        # Sum, not mean, over ranks: the loss is already divided by the global normaliser.
        # A plain SUM reduction (not NCCL's PREMUL_SUM, which gloo lacks) then a division by 1.
        module.set_gradient_divide_factor(1.0)
        module.set_force_sum_reduction_for_comms(True)
    return modules


def _full(value: torch.Tensor) -> torch.Tensor:
    """A DTensor's full value (clip_grad_norm_ over DTensor gradients returns one)."""
    full = getattr(value, "full_tensor", None)
    return full() if callable(full) else value
