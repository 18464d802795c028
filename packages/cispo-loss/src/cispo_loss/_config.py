"""Frozen configuration records for the loss and for reward shaping.

The defaults are the paper's final recipe (Arctic-SWE §3.4 and §5): CISPO with
IcePop masking on ``[0, 2.0]``, token mean over the whole batch, no reference KL, no entropy
bonus. Every other value is one of the Table 9 ablations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from cispo_loss._errors import ConfigError

RatioControl = Literal["mask", "ppo_clip", "cispo_clip"]
Aggregation = Literal["token_mean", "rollout_mean"]

_RATIO_CONTROLS: tuple[str, ...] = ("mask", "ppo_clip", "cispo_clip")
_AGGREGATIONS: tuple[str, ...] = ("token_mean", "rollout_mean")


def _require_finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ConfigError(name, f"must be finite, got {value!r}")


def _require_non_negative(name: str, value: float) -> None:
    _require_finite(name, value)
    if value < 0:
        raise ConfigError(name, f"must be >= 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class LossConfig:
    """How :func:`cispo_loss` turns per-token log-probs into one scalar.

    Attributes:
        ratio_control: what to do with the importance weight ``ω = π_train/π_rollout``.
            ``"mask"`` (default, IcePop): CISPO objective ``-sg(ω)·A·log π``; tokens whose ω
            leaves ``[mask_low, mask_high]`` contribute nothing. ``"ppo_clip"`` (ablation):
            the PPO surrogate ``-min(ω·A, clip(ω, 1-clip_low, 1+clip_high)·A)`` with ω carrying
            gradient. ``"cispo_clip"`` (MiniMax-M1's original CISPO): ``-sg(clip(ω, …))·A·log π``,
            the coefficient truncated instead of the token dropped.
        mask_low, mask_high: the IcePop range for ``"mask"`` (paper: 0.0 and 2.0).
        clip_low, clip_high: ε of the two clip modes; the range is ``[1-clip_low, 1+clip_high]``.
        aggregation: ``"token_mean"`` (default: sum over every trainable token of the batch
            divided by the global token count) or ``"rollout_mean"`` (ablation: mean over
            rollouts of each rollout's own token mean, so short and long rollouts weigh the same).
        kl_coef: weight of the k3 estimator of KL(π_train ‖ π_ref) per token (paper: 0, off).
            Needs ``ref_logprobs``.
        entropy_coef: weight of an entropy bonus ``-entropy_coef·H_t`` (paper: 0, off). Needs
            ``entropy`` with gradient (from :func:`token_logprobs`).
        omega_quantiles: the quantiles of ω over trainable tokens reported in the metrics.
        check_inputs: validate tensors (finite values, rollout log-probs <= 0, mask values).
            Each check is one device sync; turn off only once a pipeline is known good.
    """

    ratio_control: RatioControl = "mask"
    mask_low: float = 0.0
    mask_high: float = 2.0
    clip_low: float = 0.2
    clip_high: float = 0.28
    aggregation: Aggregation = "token_mean"
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    omega_quantiles: tuple[float, ...] = field(default=(0.01, 0.1, 0.5, 0.9, 0.99))
    check_inputs: bool = True

    def __post_init__(self) -> None:
        if self.ratio_control not in _RATIO_CONTROLS:
            raise ConfigError(
                "ratio_control", f"must be one of {_RATIO_CONTROLS}, got {self.ratio_control!r}"
            )
        if self.aggregation not in _AGGREGATIONS:
            raise ConfigError(
                "aggregation", f"must be one of {_AGGREGATIONS}, got {self.aggregation!r}"
            )
        _require_non_negative("mask_low", self.mask_low)
        _require_finite("mask_high", self.mask_high)
        if self.mask_high <= self.mask_low:
            raise ConfigError(
                "mask_high", f"must exceed mask_low={self.mask_low}, got {self.mask_high}"
            )
        _require_non_negative("clip_low", self.clip_low)
        if self.clip_low >= 1.0:
            raise ConfigError(
                "clip_low", f"must be < 1 (the range is [1 - clip_low, …]), got {self.clip_low}"
            )
        _require_non_negative("clip_high", self.clip_high)
        _require_non_negative("kl_coef", self.kl_coef)
        _require_finite("entropy_coef", self.entropy_coef)
        for q in self.omega_quantiles:
            if not 0.0 <= q <= 1.0:
                raise ConfigError("omega_quantiles", f"each quantile must lie in [0, 1], got {q!r}")

    @property
    def ratio_range(self) -> tuple[float, float]:
        """The ω interval outside which ``ratio_control`` intervenes."""
        if self.ratio_control == "mask":
            return (self.mask_low, self.mask_high)
        return (1.0 - self.clip_low, 1.0 + self.clip_high)


@dataclass(frozen=True, slots=True)
class LengthPenalty:
    """DAPO's soft over-long punishment (the DAPO paper's overlong reward shaping), added to a rollout's reward.

    A rollout of ``L`` tokens gets ``0`` when ``L <= max_length - buffer``, a linear ramp down to
    ``-coef`` over the last ``buffer`` tokens, and ``-coef`` beyond ``max_length``.
    """

    max_length: int
    buffer: int
    coef: float = 1.0

    def __post_init__(self) -> None:
        if self.max_length <= 0:
            raise ConfigError("max_length", f"must be > 0, got {self.max_length}")
        if not 0 < self.buffer <= self.max_length:
            raise ConfigError(
                "buffer", f"must lie in (0, max_length={self.max_length}], got {self.buffer}"
            )
        _require_non_negative("coef", self.coef)


@dataclass(frozen=True, slots=True)
class RewardShaping:
    """Reward-side switches of Table 9, applied by :func:`shape_rewards` before advantages.

    Attributes:
        invalid_reward: reward that replaces the reward of every invalid trajectory (gated:
            no submit, bad format, duplicate call, exhausted budget). ``None`` leaves rewards as
            given; the paper's final recipe uses ``-1.0`` (Arctic-SWE §5).
        length_penalty: the DAPO soft over-long penalty, or ``None`` (paper: off).
    """

    invalid_reward: float | None = None
    length_penalty: LengthPenalty | None = None

    def __post_init__(self) -> None:
        if self.invalid_reward is not None:
            _require_finite("invalid_reward", self.invalid_reward)
