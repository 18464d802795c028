"""Group-relative advantages and the reward-side ablation switches (Arctic-SWE §3.4, §5; Table 9).

Rewards are shaped first (invalid-trajectory override, optional length penalty), then centred
inside each group of rollouts that share a task: ``A_i = R_i - mean(R_group)``. The paper's
recipe does not divide by the group's standard deviation; the option exists for the ablation.
"""

from __future__ import annotations

import torch

from cispo_loss._checks import (
    as_bool_mask,
    require_finite,
    require_float,
    require_integer,
    require_shape,
    require_tensor,
)
from cispo_loss._config import LengthPenalty, RewardShaping
from cispo_loss._errors import InputError

_DEFAULT_SHAPING = RewardShaping()


def _check_rewards(rewards: torch.Tensor) -> None:
    require_tensor("rewards", rewards)
    require_float("rewards", rewards)
    if rewards.dim() != 1:
        raise InputError(
            "rewards", f"expected shape [N] (one reward per rollout), got {tuple(rewards.shape)}"
        )
    if rewards.numel() == 0:
        raise InputError("rewards", "empty batch: no rollouts")
    require_finite("rewards", rewards)


def group_advantages(
    rewards: torch.Tensor,
    group_ids: torch.Tensor,
    *,
    normalize_std: bool = False,
    eps: float = 1e-6,
) -> torch.Tensor:
    """Group-centred advantages, one per rollout.

    Args:
        rewards: ``[N]`` float, one scalar reward per rollout (already shaped).
        group_ids: ``[N]`` integer, the group (task / prompt) each rollout belongs to. Any
            integer labels; groups need not be contiguous or equal in size.
        normalize_std: divide by the group's population standard deviation plus ``eps``
            (GRPO / DAPO style; an ablation — the paper's recipe leaves it off).
        eps: added to the standard deviation so uniform groups give 0, not NaN.

    Returns:
        ``[N]`` advantages in the dtype of ``rewards``; the centring is done in float64, so they
        sum to zero inside each group up to that dtype's rounding. A group whose rewards are all
        equal (all-solved, all-failed, or a single rollout) gets advantage 0 for every member.
    """
    _check_rewards(rewards)
    require_tensor("group_ids", group_ids)
    require_integer("group_ids", group_ids)
    require_shape("group_ids", group_ids, tuple(rewards.shape), "rewards")
    if eps < 0:
        raise InputError("eps", f"must be >= 0, got {eps}")
    unique: tuple[torch.Tensor, torch.Tensor, torch.Tensor] = torch.unique(
        group_ids, return_inverse=True, return_counts=True
    )
    _, inverse, counts = unique
    wide = rewards.to(torch.float64)
    sums = torch.zeros(counts.numel(), dtype=torch.float64, device=rewards.device)
    means = sums.index_add(0, inverse, wide) / counts.to(torch.float64)
    centred = wide - means[inverse]
    if normalize_std:
        sq = torch.zeros_like(sums).index_add(0, inverse, centred * centred)
        std = (sq / counts.to(torch.float64)).sqrt()
        centred = centred / (std[inverse] + eps)
    return centred.to(rewards.dtype)


def length_penalty(lengths: torch.Tensor, penalty: LengthPenalty) -> torch.Tensor:
    """The soft over-long penalty (``<= 0``) for rollouts of ``lengths`` tokens, as float64 ``[N]``."""
    start = penalty.max_length - penalty.buffer
    over = (lengths.to(torch.float64) - start).clamp(min=0.0) / penalty.buffer
    return -penalty.coef * over.clamp(max=1.0)


def shape_rewards(
    rewards: torch.Tensor,
    *,
    valid: torch.Tensor | None = None,
    lengths: torch.Tensor | None = None,
    config: RewardShaping = _DEFAULT_SHAPING,
) -> torch.Tensor:
    """Apply the reward-side switches of Table 9 before :func:`group_advantages`.

    Args:
        rewards: ``[N]`` float rewards as graded.
        valid: ``[N]`` bool, False for trajectories the gate terminated (needed when
            ``config.invalid_reward`` is set).
        lengths: ``[N]`` integer generated-token counts (needed when ``config.length_penalty``
            is set).
        config: which switches are on; the default changes nothing.

    Returns:
        A new ``[N]`` tensor: ``rewards + length_penalty`` and then, for invalid trajectories,
        exactly ``invalid_reward`` (the override wins, so an invalid rollout is never rescued
        or further penalised by its length).
    """
    _check_rewards(rewards)
    shaped = rewards.to(torch.float64)
    if config.length_penalty is not None:
        if lengths is None:
            raise InputError("lengths", "required when config.length_penalty is set")
        require_tensor("lengths", lengths)
        require_integer("lengths", lengths)
        require_shape("lengths", lengths, tuple(rewards.shape), "rewards")
        if bool((lengths < 0).any()):
            raise InputError("lengths", "holds negative lengths")
        shaped = shaped + length_penalty(lengths, config.length_penalty)
    if config.invalid_reward is not None:
        if valid is None:
            raise InputError("valid", "required when config.invalid_reward is set")
        require_tensor("valid", valid)
        require_shape("valid", valid, tuple(rewards.shape), "rewards")
        is_valid = as_bool_mask("valid", valid)
        shaped = torch.where(is_valid, shaped, torch.full_like(shaped, config.invalid_reward))
    return shaped.to(rewards.dtype)
