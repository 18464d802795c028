"""Slow, readable float64 references: the definitions the tests check the fast code against.

Public, so that anyone porting the objective can check their own implementation against it
(the README shows how). Nothing here is tuned: the log-probs materialise the full ``[T, V]``
logits, the loss walks rollouts and tokens in Python loops, one formula per line, straight from
the definitions in Arctic-SWE §3.1/§5 (and verl's dual-clip PPO for the ``ppo_clip`` ablation).
Use it to check a port, not to train.
"""

from __future__ import annotations

import math

import torch

from cispo_loss._config import LossConfig

_DEFAULT_LOSS = LossConfig()


def reference_token_logprobs(
    hidden: torch.Tensor,
    lm_head_weight: torch.Tensor,
    targets: torch.Tensor,
    *,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Naive full-logits log-probs and entropies (``[..., H]`` → two ``[...]`` tensors)."""
    logits = (hidden @ lm_head_weight.T).to(
        torch.promote_types(hidden.dtype, torch.float32)
    ) / temperature
    log_probs = torch.log_softmax(logits, dim=-1)
    picked = log_probs.gather(-1, targets.to(torch.int64).unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(dim=-1)
    return picked, entropy


def reference_group_advantages(
    rewards: list[float], group_ids: list[int], *, normalize_std: bool = False, eps: float = 1e-6
) -> list[float]:
    """``A_i = R_i - mean(R_group(i))`` (optionally divided by the group's population std + eps)."""
    advantages = []
    for reward, group in zip(rewards, group_ids, strict=True):
        members = [r for r, g in zip(rewards, group_ids, strict=True) if g == group]
        mean = sum(members) / len(members)
        advantage = reward - mean
        if normalize_std:
            std = math.sqrt(sum((r - mean) ** 2 for r in members) / len(members))
            advantage = advantage / (std + eps)
        advantages.append(advantage)
    return advantages


#: verl's cap on PPO's log-ratio: from ±20 on the ratio is the constant e^±20 (no gradient).
PPO_LOG_RATIO_CAP = 20.0


def _constant(logprob: torch.Tensor, value: float) -> torch.Tensor:
    """``value`` as a 0-d tensor in ``logprob``'s graph with zero gradient."""
    return logprob * 0.0 + value


def _token_policy_loss(
    logprob: torch.Tensor, rollout_logprob: float, advantage: float, config: LossConfig
) -> torch.Tensor:
    """One token's policy loss; ``logprob`` is a 0-d tensor carrying gradient."""
    # ω is a plain float: CISPO never differentiates it
    omega = math.exp(float(logprob.detach()) - rollout_logprob)
    if config.ratio_control == "mask":
        if omega < config.mask_low or omega > config.mask_high:
            return logprob * 0.0
        return -omega * advantage * logprob
    if config.ratio_control == "cispo_clip":
        coefficient = min(omega, 1.0 + config.clip_high)
        if config.clip_low is not None:  # None: MiniMax-M1's form, no lower bound
            coefficient = max(coefficient, 1.0 - config.clip_low)
        return -coefficient * advantage * logprob
    return _ppo_token_loss(logprob, rollout_logprob, advantage, config)


def _ppo_token_loss(
    logprob: torch.Tensor, rollout_logprob: float, advantage: float, config: LossConfig
) -> torch.Tensor:
    """PPO's surrogate (verl's form), one branch at a time: each active branch either carries
    the ratio's gradient or is a constant, so the gradient is zero wherever a bound acts."""
    log_ratio = float(logprob.detach()) - rollout_logprob
    if abs(log_ratio) >= PPO_LOG_RATIO_CAP:  # on the cap too: clamp's gradient is 0 there
        capped = max(min(log_ratio, PPO_LOG_RATIO_CAP), -PPO_LOG_RATIO_CAP)
        ratio = _constant(logprob, math.exp(capped))
    else:
        ratio = torch.exp(logprob - rollout_logprob)  # the ratio itself is differentiated
    r = float(ratio.detach())
    low = 0.0 if config.clip_low is None else 1.0 - config.clip_low
    clipped = min(max(r, low), 1.0 + config.clip_high)
    loss = -advantage * ratio
    # pessimism: the larger of the unclipped and clipped losses
    if clipped != r and -advantage * clipped > float(loss.detach()):
        loss = _constant(logprob, -advantage * clipped)
    # dual clip: a negative-advantage token's loss is capped at -A·c
    c = config.clip_ratio_c
    if c is not None and advantage < 0 and float(loss.detach()) > -advantage * c:
        loss = _constant(logprob, -advantage * c)
    return loss


def reference_cispo_loss(
    logprobs: list[torch.Tensor],
    rollout_logprobs: list[list[float]],
    advantages: list[float],
    *,
    config: LossConfig = _DEFAULT_LOSS,
    normalizer: float | None = None,
    ref_logprobs: list[list[float]] | None = None,
    entropy: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """The loss over a list of rollouts, each given by its **trainable** tokens only.

    ``logprobs[i]`` is a 1-D tensor (with gradient) of rollout ``i``'s trainable-token log-probs,
    ``rollout_logprobs[i]`` the engine's values for the same tokens, ``advantages[i]`` its advantage.
    """
    total_tokens = sum(len(lp) for lp in logprobs)
    rollouts_with_tokens = sum(1 for lp in logprobs if len(lp) > 0)
    if normalizer is None:
        normalizer = float(
            max(total_tokens if config.aggregation == "token_mean" else rollouts_with_tokens, 1)
        )
    loss = torch.zeros((), dtype=logprobs[0].dtype)
    for i, rollout in enumerate(logprobs):
        rollout_sum = torch.zeros((), dtype=rollout.dtype)
        for t in range(len(rollout)):
            token = _token_policy_loss(rollout[t], rollout_logprobs[i][t], advantages[i], config)
            if config.kl_coef > 0 and ref_logprobs is not None:
                d = ref_logprobs[i][t] - rollout[t]
                token = token + config.kl_coef * (torch.exp(d) - d - 1.0)
            if config.entropy_coef != 0 and entropy is not None:
                token = token - config.entropy_coef * entropy[i][t]
            rollout_sum = rollout_sum + token
        if config.aggregation == "rollout_mean" and len(rollout) > 0:
            rollout_sum = rollout_sum / len(rollout)
        loss = loss + rollout_sum
    return loss / normalizer


def reference_mismatch_kl(
    logprobs: list[list[float]], rollout_logprobs: list[list[float]]
) -> float:
    """Mean over trainable tokens of ``ω - log ω - 1`` with ``ω = π_train/π_rollout``."""
    terms = []
    for train_row, rollout_row in zip(logprobs, rollout_logprobs, strict=True):
        for lp, rlp in zip(train_row, rollout_row, strict=True):
            log_omega = lp - rlp
            terms.append(math.exp(log_omega) - log_omega - 1.0)
    return sum(terms) / len(terms) if terms else float("nan")
