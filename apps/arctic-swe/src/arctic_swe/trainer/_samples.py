"""What the trainer consumes: one rollout as exact token ids with its rollout log-probs.

A harness ``Trajectory`` maps onto :class:`TrainSample` field for field; the trainer never sees
text, so it can never retokenise (ARCHITECTURE.md §6).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from arctic_swe.trainer._errors import BatchError


@dataclass(frozen=True)
class TrainSample:
    """One rollout of a group, ready for the loss.

    * ``token_ids`` — the whole sequence ``[T]``: prompt, generated turns, tool observations.
    * ``loss_mask`` — ``[T]``, True on tokens the policy generated (the only trainable ones).
    * ``rollout_logprobs`` — ``[T]``, log π_rollout of each generated token (anything, e.g. 0,
      elsewhere).
    * ``advantage`` — the group-centred advantage of this rollout (cispo_loss.group_advantages).
    """

    token_ids: tuple[int, ...]
    loss_mask: tuple[bool, ...]
    rollout_logprobs: tuple[float, ...]
    advantage: float

    def __post_init__(self) -> None:
        length = len(self.token_ids)
        if length < 2:
            raise BatchError(f"a sample needs at least 2 tokens, got {length}")
        if len(self.loss_mask) != length or len(self.rollout_logprobs) != length:
            raise BatchError(
                f"ragged sample: {length} ids, {len(self.loss_mask)} mask, "
                f"{len(self.rollout_logprobs)} log-probs"
            )
        if self.loss_mask[0]:
            raise BatchError("the first token cannot be trainable (nothing predicts it)")
        if not math.isfinite(self.advantage):
            raise BatchError(f"advantage must be finite, got {self.advantage}")
        if any(
            m and not (lp <= 0.0)
            for m, lp in zip(self.loss_mask, self.rollout_logprobs, strict=True)
        ):
            raise BatchError("rollout log-probs of trainable tokens must be finite and <= 0")

    @property
    def trainable_tokens(self) -> int:
        return sum(self.loss_mask)


@dataclass(frozen=True)
class PaddedBatch:
    """A right-padded micro-batch; position ``t`` of the shifted tensors scores token ``t+1``."""

    input_ids: torch.Tensor  # [B, T] long
    targets: torch.Tensor  # [B, T-1] long
    loss_mask: torch.Tensor  # [B, T-1] bool
    rollout_logprobs: torch.Tensor  # [B, T-1] float32
    advantages: torch.Tensor  # [B] float32


def pad_batch(samples: Sequence[TrainSample], vocab_size: int, device: torch.device) -> PaddedBatch:
    """Right-pad ``samples`` (pad id 0, masked out); causal layers never let padding reach
    real positions, so no attention mask is needed."""
    if not samples:
        raise BatchError("empty micro-batch")
    width = max(len(s.token_ids) for s in samples)
    ids = torch.zeros(len(samples), width, dtype=torch.long)
    mask = torch.zeros(len(samples), width, dtype=torch.bool)
    logprobs = torch.zeros(len(samples), width, dtype=torch.float32)
    for row, sample in enumerate(samples):
        n = len(sample.token_ids)
        ids[row, :n] = torch.tensor(sample.token_ids, dtype=torch.long)
        mask[row, :n] = torch.tensor(sample.loss_mask, dtype=torch.bool)
        logprobs[row, :n] = torch.tensor(sample.rollout_logprobs, dtype=torch.float32)
    if int(ids.min()) < 0 or int(ids.max()) >= vocab_size:
        raise BatchError(f"token ids must lie in [0, {vocab_size})")
    advantages = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    return PaddedBatch(
        input_ids=ids.to(device),
        targets=ids[:, 1:].to(device),
        loss_mask=mask[:, 1:].to(device),
        rollout_logprobs=logprobs[:, 1:].to(device),
        advantages=advantages.to(device),
    )
