"""The CISPO objective with IcePop masking (Arctic-SWE §5) and its Table 9 ablations.

Per trainable token ``t`` of rollout ``i`` with advantage ``A_i``::

    ω_t   = exp(log π_train(a_t) - log π_rollout(a_t))
    l_t   = -sg(ω_t) · A_i · log π_train(a_t)     if mask_low <= ω_t <= mask_high, else 0

and the loss is ``Σ_t l_t / normalizer``. With ``normalizer`` the *global* number of trainable
tokens (all micro-batches, all data-parallel ranks), summing the per-call gradients reproduces the
full-batch gradient exactly — no re-weighting by micro-batch size.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cispo_loss._checks import (
    as_bool_mask,
    require_finite,
    require_float,
    require_same_device,
    require_shape,
    require_tensor,
)
from cispo_loss._config import LossConfig
from cispo_loss._errors import InputError
from cispo_loss._layout import Layout, per_rollout_sum, resolve_layout
from cispo_loss._loss_metrics import (
    LossMetrics,
    MetricInputs,
    MetricsLevel,
    check_level,
    loss_metrics,
)

_DEFAULT_LOSS = LossConfig()

#: exp() arguments are clamped here where ω carries gradient (PPO clip, k3 KL): a log-ratio of 20
#: is already ω ≈ 4.9e8, and an unclamped overflow would turn a zero gradient into 0·inf = NaN.
#: The clamp is verl's (``[-20, 20]``) and, like verl's, has zero gradient where it is active.
_MAX_LOG_RATIO = 20.0


@dataclass(frozen=True, slots=True)
class LossOutput:
    """What :func:`cispo_loss` returns.

    Attributes:
        loss: 0-d tensor with gradient; call ``loss.backward()``.
        metrics: a read-only mapping of plain floats (see the README's metric table), copied to
            the host on first read; empty for ``metrics="none"``.
    """

    loss: torch.Tensor
    metrics: LossMetrics


@dataclass(frozen=True, slots=True)
class _Tokens:
    """The flat, sanitised per-token view of one call (non-trainable positions hold 0)."""

    mask: torch.Tensor
    logprobs: torch.Tensor
    rollout_logprobs: torch.Tensor
    log_ratio: torch.Tensor  # detached, unclamped: log ω
    advantages: torch.Tensor
    ref_logprobs: torch.Tensor | None
    entropy: torch.Tensor | None


def _check_same_layout(name: str, tensor: torch.Tensor | None, logprobs: torch.Tensor) -> None:
    if tensor is None:
        return
    require_tensor(name, tensor)
    require_same_device(name, tensor, logprobs.device, "logprobs")
    require_shape(name, tensor, tuple(logprobs.shape), "logprobs")


def _per_token_advantages(
    advantages: torch.Tensor, logprobs: torch.Tensor, layout: Layout
) -> torch.Tensor:
    require_tensor("advantages", advantages)
    require_same_device("advantages", advantages, logprobs.device, "logprobs")
    require_float("advantages", advantages)
    # Per rollout first: in the packed layout a [B] tensor with B == N is read as per rollout.
    if tuple(advantages.shape) == (layout.num_rollouts,):
        return advantages.detach()[layout.rollout_of_token]
    if tuple(advantages.shape) == tuple(logprobs.shape):
        return advantages.detach().reshape(-1)
    raise InputError(
        "advantages",
        f"shape {tuple(advantages.shape)} matches neither one value per rollout "
        f"({layout.num_rollouts},) nor one per token {tuple(logprobs.shape)}",
    )


def _bool_mask(loss_mask: torch.Tensor, config: LossConfig) -> torch.Tensor:
    if config.check_inputs or loss_mask.dtype == torch.bool:
        return as_bool_mask("loss_mask", loss_mask)
    return loss_mask != 0  # unchecked: the 0/1 check would be a device sync


def _require_non_positive_rollout(rollout: torch.Tensor, mask: torch.Tensor, tol: float) -> None:
    positive = int(((rollout > tol) & mask).sum())
    if positive:
        raise InputError(
            "rollout_logprobs",
            f"holds {positive} value(s) > {tol:g} at trainable positions "
            f"(log-probs must be <= 0; rollout_logprob_tol={tol:g} allows rounding above 0)",
        )


def _clamp_rounding(rollout: torch.Tensor, tol: float) -> torch.Tensor:
    """Clamp the rounding artefacts in ``(0, tol]`` to 0 (where(), so no device sync)."""
    if tol <= 0:
        return rollout
    tiny = (rollout > 0) & (rollout <= tol)
    return torch.where(tiny, torch.zeros((), dtype=rollout.dtype, device=rollout.device), rollout)


def _sanitise(
    logprobs: torch.Tensor,
    rollout_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    entropy: torch.Tensor | None,
    layout: Layout,
    config: LossConfig,
) -> _Tokens:
    """Validate, flatten and zero the non-trainable positions (whatever garbage they held)."""
    require_float("logprobs", logprobs)
    for name, tensor in (("rollout_logprobs", rollout_logprobs), ("loss_mask", loss_mask)):
        _check_same_layout(name, tensor, logprobs)
    _check_same_layout("ref_logprobs", ref_logprobs, logprobs)
    _check_same_layout("entropy", entropy, logprobs)
    require_float("rollout_logprobs", rollout_logprobs)
    mask = _bool_mask(loss_mask, config).reshape(-1)
    adv = _per_token_advantages(advantages, logprobs, layout)
    dtype = torch.promote_types(logprobs.dtype, torch.float32)
    flat = {
        "logprobs": logprobs.reshape(-1),
        "rollout_logprobs": rollout_logprobs.detach().reshape(-1),
        "advantages": adv,
    }
    if ref_logprobs is not None:
        flat["ref_logprobs"] = ref_logprobs.detach().reshape(-1)
    if entropy is not None:
        flat["entropy"] = entropy.reshape(-1)
    if config.check_inputs:
        for name, tensor in flat.items():
            require_finite(name, tensor, where=mask)
        _require_non_positive_rollout(flat["rollout_logprobs"], mask, config.rollout_logprob_tol)
    flat["rollout_logprobs"] = _clamp_rounding(flat["rollout_logprobs"], config.rollout_logprob_tol)
    # where() (not multiplication) so NaN/inf at padding can reach neither the loss nor a gradient.
    clean = {
        k: torch.where(mask, v.to(dtype), torch.zeros((), dtype=dtype, device=v.device))
        for k, v in flat.items()
    }
    return _Tokens(
        mask=mask,
        logprobs=clean["logprobs"],
        rollout_logprobs=clean["rollout_logprobs"],
        log_ratio=(clean["logprobs"].detach() - clean["rollout_logprobs"]),
        advantages=clean["advantages"],
        ref_logprobs=clean.get("ref_logprobs"),
        entropy=clean.get("entropy"),
    )


def _policy_term(
    tok: _Tokens, config: LossConfig
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token policy loss and the low/high flags of tokens the ratio control acted on."""
    low, high = config.ratio_range
    omega = tok.log_ratio.exp()  # detached; inf where the log-ratio overflows (then masked)
    adv, lp = tok.advantages, tok.logprobs
    if config.ratio_control == "mask":
        below, above = omega < low, omega > high
        coef = torch.where(below | above, torch.zeros_like(omega), omega)
        return -coef * adv * lp, below, above
    if config.ratio_control == "cispo_clip":
        coef = omega.clamp(min=low, max=high)
        return -coef * adv * lp, omega < low, omega > high
    return _ppo_term(tok, config)


def _ppo_term(tok: _Tokens, config: LossConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's pessimistic surrogate, optionally dual-clipped, with the ratio differentiated.

    Every intervention is a branch whose value is constant in ``logprobs`` — the clamped log-ratio
    (verl's ``[-20, 20]`` cap), the clipped ratio and the dual-clip constant — so the gradient is
    exactly zero wherever one of them is the active branch, and the value and gradient agree.
    """
    low, high = config.ratio_range
    adv, log_ratio = tok.advantages, tok.log_ratio
    capped = (tok.logprobs - tok.rollout_logprobs).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    ratio = capped.exp()
    clipped = ratio.clamp(min=None if config.clip_low is None else low, max=high)
    loss = torch.maximum(-adv * ratio, -adv * clipped)
    omega = log_ratio.exp()
    below = ((omega < low) & (adv < 0)) | (log_ratio < -_MAX_LOG_RATIO)
    above = ((omega > high) & (adv > 0)) | (log_ratio > _MAX_LOG_RATIO)
    if config.clip_ratio_c is not None:
        # dual clip (verl): a negative-advantage token's loss stops growing at -A·c
        dual = torch.minimum(loss, -adv * config.clip_ratio_c)
        loss = torch.where(adv < 0, dual, loss)
        above = above | ((adv < 0) & (omega > config.clip_ratio_c))
    return loss, below, above


def _k3_kl(tok: _Tokens) -> torch.Tensor:
    """k3 estimator of KL(π_train ‖ π_ref) per token: ``e^d - d - 1`` with ``d = ref - logprob``."""
    assert tok.ref_logprobs is not None
    d = (tok.ref_logprobs - tok.logprobs).clamp(min=-_MAX_LOG_RATIO, max=_MAX_LOG_RATIO)
    return d.exp() - d - 1.0


def default_normalizer(
    loss_mask: torch.Tensor,
    *,
    config: LossConfig = _DEFAULT_LOSS,
    cu_seqlens: torch.Tensor | None = None,
) -> int:
    """This call's share of the global normalizer: trainable tokens, or rollouts with any.

    Sum this over every micro-batch and data-parallel rank (``all_reduce``) and pass the total as
    ``normalizer`` to each :func:`cispo_loss` call of the step.
    """
    require_tensor("loss_mask", loss_mask)
    mask = as_bool_mask("loss_mask", loss_mask)
    if config.aggregation == "token_mean":
        return int(mask.sum())
    layout = resolve_layout(mask, cu_seqlens)
    per_rollout = per_rollout_sum(mask.reshape(-1).to(torch.int64), layout)
    return int((per_rollout > 0).sum())


def _aggregate(
    per_token: torch.Tensor, tok: _Tokens, layout: Layout, config: LossConfig
) -> torch.Tensor:
    """Sum of ``per_token`` over the batch in the configured aggregation (before the normalizer)."""
    per_token = torch.where(tok.mask, per_token, torch.zeros_like(per_token))
    if config.aggregation == "token_mean":
        return per_token.sum()
    counts = per_rollout_sum(tok.mask.to(per_token.dtype), layout)
    return (per_rollout_sum(per_token, layout) / counts.clamp(min=1)).sum()


def _resolve_normalizer(
    normalizer: float | int | torch.Tensor | None, tok: _Tokens, layout: Layout, config: LossConfig
) -> float | torch.Tensor:
    """The denominator: a float, or a 0-d tensor left on its device (no sync) when that is free."""
    if normalizer is None:  # this call's own count, kept on the device
        if config.aggregation == "token_mean":
            count = tok.mask.sum()
        else:
            count = (per_rollout_sum(tok.mask.to(torch.int64), layout) > 0).sum()
        return count.clamp(min=1).to(tok.logprobs.dtype)
    if isinstance(normalizer, torch.Tensor):
        if normalizer.numel() != 1:
            raise InputError(
                "normalizer", f"expected one number, got shape {tuple(normalizer.shape)}"
            )
        if not config.check_inputs:  # trusted: divide by it where it lies
            return normalizer.detach().reshape(()).to(tok.logprobs.dtype)
    value = float(normalizer)
    if not value > 0 or value == float("inf"):
        raise InputError("normalizer", f"must be a finite number > 0, got {value!r}")
    return value


def cispo_loss(
    logprobs: torch.Tensor,
    rollout_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    *,
    config: LossConfig = _DEFAULT_LOSS,
    normalizer: float | int | torch.Tensor | None = None,
    cu_seqlens: torch.Tensor | None = None,
    ref_logprobs: torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
    metrics: MetricsLevel = "full",
) -> LossOutput:
    """The CISPO loss with IcePop masking (Arctic-SWE §5) on one micro-batch.

    Args:
        logprobs: trainer log-probs of the sampled tokens, with gradient — ``[B, T]`` padded, or
            ``[N]`` packed when ``cu_seqlens`` is given (e.g. from :func:`token_logprobs`).
        rollout_logprobs: the log-probs the inference engine recorded for the same tokens, same
            shape, ``<= 0`` at trainable positions. Never differentiated.
        advantages: ``[B]`` (one per rollout, from :func:`group_advantages`) or per token (same
            shape as ``logprobs``). A ``[B]`` tensor is always read as per rollout (this matters
            only for a packed batch with as many tokens as rollouts). Never differentiated.
        loss_mask: bool (or 0/1), same shape; True on generated (trainable) tokens, False on
            prompt, tool-observation and padding tokens. Values elsewhere may be anything.
        config: objective and ablation switches (:class:`LossConfig`).
        normalizer: the **global** denominator — trainable tokens (``token_mean``) or rollouts
            with a trainable token (``rollout_mean``) summed over every micro-batch and every
            data-parallel rank of the optimiser step (see :func:`default_normalizer`). ``None``
            uses this call's own count (single micro-batch, single rank).
        cu_seqlens: ``[B + 1]`` integer offsets of the rollouts packed into ``[N]`` tensors.
        ref_logprobs: reference-policy log-probs, needed when ``config.kl_coef > 0``; when given
            the k3 KL is also reported.
        entropy: per-token entropy from :func:`token_logprobs`; needed when
            ``config.entropy_coef != 0``; when given its mean is reported.
        metrics: ``"full"`` (default: every metric of the README's table), ``"basic"`` (all
            but ω's quantiles, which need a sort) or ``"none"`` (an empty mapping; nothing
            computed). Values are computed on the device and copied to the host in one
            transfer when first read (:class:`LossMetrics`); ω's quantiles are sorted only when
            an ``omega_p*`` key is first read.

    Returns:
        :class:`LossOutput` with the 0-d loss (dtype ``float32``, or ``float64`` for float64
        inputs) and the metrics. A batch without trainable tokens gives loss 0 and zero
        gradients, never NaN.

    Raises:
        InputError: (a ``ValueError``) naming the tensor: mismatched shapes or devices, an empty
            batch, NaN/inf at trainable positions, a rollout log-prob above
            ``config.rollout_logprob_tol``, a bad ``cu_seqlens``, an unknown ``metrics`` level.

    Device syncs: with ``config.check_inputs=False``, a bool ``loss_mask``, a float or on-device
    ``normalizer`` (or none) and ``metrics="none"`` (or metrics never read), the call never waits
    for the device. Each input check, and the first read of the metrics, is one sync.
    """
    require_tensor("logprobs", logprobs)
    require_tensor("rollout_logprobs", rollout_logprobs)
    require_tensor("loss_mask", loss_mask)
    check_level(metrics)
    layout = resolve_layout(logprobs, cu_seqlens, check=config.check_inputs)
    if config.kl_coef > 0 and ref_logprobs is None:
        raise InputError("ref_logprobs", "required when config.kl_coef > 0")
    if config.entropy_coef != 0 and entropy is None:
        raise InputError("entropy", "required when config.entropy_coef != 0")
    tok = _sanitise(
        logprobs, rollout_logprobs, advantages, loss_mask, ref_logprobs, entropy, layout, config
    )
    denom = _resolve_normalizer(normalizer, tok, layout, config)
    policy, below, above = _policy_term(tok, config)
    policy_loss = _aggregate(policy, tok, layout, config) / denom
    loss = policy_loss
    named: dict[str, torch.Tensor] = {"policy_loss": policy_loss}
    if tok.ref_logprobs is not None:
        kl_loss = _aggregate(_k3_kl(tok), tok, layout, config) / denom
        named["kl_loss"] = kl_loss
        if config.kl_coef > 0:
            loss = loss + config.kl_coef * kl_loss
    if tok.entropy is not None:
        entropy_term = _aggregate(tok.entropy, tok, layout, config) / denom
        named["entropy_loss"] = -entropy_term
        if config.entropy_coef != 0:
            loss = loss - config.entropy_coef * entropy_term
    named["loss"] = loss
    inputs = MetricInputs(
        mask=tok.mask,
        log_ratio=tok.log_ratio,
        token_advantages=tok.advantages,
        advantages=advantages,
        per_token_advantages=tuple(advantages.shape) != (layout.num_rollouts,),
        entropy=tok.entropy,
        below=below,
        above=above,
        num_rollouts=layout.num_rollouts,
        normalizer=denom,
    )
    return LossOutput(loss, loss_metrics(metrics, named, inputs, config.omega_quantiles))
