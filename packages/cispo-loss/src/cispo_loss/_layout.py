"""Token layouts: padded ``[B, T]`` batches and packed varlen ``[N]`` batches with ``cu_seqlens``.

Both reduce to the same thing for the loss: a flat view of the per-token tensors plus, for each
token, the index of the rollout it belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cispo_loss._checks import (
    check_cu_seqlens,
    check_cu_seqlens_shape,
    require_same_device,
    require_tensor,
)
from cispo_loss._errors import InputError


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each token sits: ``rollout_of_token[i]`` is the rollout of flat token ``i``."""

    token_shape: tuple[int, ...]
    num_rollouts: int
    rollout_of_token: torch.Tensor  # [num_tokens] int64


def resolve_layout(
    logprobs: torch.Tensor, cu_seqlens: torch.Tensor | None, *, check: bool = True
) -> Layout:
    """Build the layout of ``logprobs`` (``[B, T]`` padded, or ``[N]`` packed with ``cu_seqlens``).

    ``check=False`` trusts the values of ``cu_seqlens`` (start 0, end N, non-decreasing), whose
    check needs the device; its dtype and shape are still checked.
    """
    device = logprobs.device
    if cu_seqlens is None:
        if logprobs.dim() != 2:
            raise InputError(
                "logprobs",
                f"expected a padded [B, T] batch (or [N] with cu_seqlens), got shape {tuple(logprobs.shape)}",
            )
        batch, length = logprobs.shape
        if batch == 0 or length == 0:
            raise InputError("logprobs", f"empty batch: shape {tuple(logprobs.shape)}")
        rows = torch.arange(batch, device=device).repeat_interleave(length)
        return Layout((batch, length), batch, rows)
    require_tensor("cu_seqlens", cu_seqlens)
    require_same_device("cu_seqlens", cu_seqlens, device, "logprobs")
    if logprobs.dim() != 1:
        raise InputError(
            "logprobs",
            f"with cu_seqlens expected a packed [N] tensor, got shape {tuple(logprobs.shape)}",
        )
    if logprobs.numel() == 0:
        raise InputError("logprobs", "empty batch: no tokens")
    if check:
        lengths = check_cu_seqlens(cu_seqlens, logprobs.numel())
    else:
        check_cu_seqlens_shape(cu_seqlens)
        lengths = cu_seqlens[1:] - cu_seqlens[:-1]
    batch = lengths.numel()
    # output_size: the total is known, so repeat_interleave need not read it from the device
    rows = torch.arange(batch, device=device).repeat_interleave(
        lengths.to(torch.int64), output_size=logprobs.numel()
    )
    return Layout((logprobs.numel(),), batch, rows)


def per_rollout_sum(values: torch.Tensor, layout: Layout) -> torch.Tensor:
    """Sum flat per-token ``values`` into ``[num_rollouts]`` (differentiable)."""
    out = values.new_zeros(layout.num_rollouts)
    return out.index_add(0, layout.rollout_of_token, values)
