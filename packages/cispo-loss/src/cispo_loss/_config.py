"""Frozen configuration records for the loss and for reward shaping.

The defaults are the paper's final recipe (Arctic-SWE §3.4 and §5): MiniMax-M1's CISPO
coefficient ``sg(ω)`` with IcePop masking on ``[0, 2.0]`` instead of MiniMax-M1's truncation,
token mean over the whole batch, no reference KL, no entropy bonus. Every other value is one of
the Table 9 ablations, or MiniMax-M1's own form (:meth:`LossConfig.minimax_m1_cispo`).
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

    ``LossConfig()`` is Arctic-SWE §5's objective: MiniMax-M1's CISPO coefficient (a detached
    importance weight on ``A·log π``) with IcePop's token mask on ``[0, 2]`` — tokens outside the
    band are dropped, not truncated. MiniMax-M1's own form (upper-only truncation of the weight,
    no lower bound, no mask) is :meth:`minimax_m1_cispo`.

    Attributes:
        ratio_control: what to do with the importance weight ``ω = π_train/π_rollout``.
            ``"mask"`` (default; Arctic-SWE §5, CISPO + IcePop): ``-sg(ω)·A·log π``; tokens whose
            ω leaves ``[mask_low, mask_high]`` contribute nothing. ``"cispo_clip"``:
            ``-sg(clip(ω, 1-clip_low, 1+clip_high))·A·log π``, the coefficient truncated instead
            of the token dropped; MiniMax-M1's form when ``clip_low`` is ``None`` (no lower bound).
            ``"ppo_clip"`` (ablation): the PPO surrogate ``-min(r·A, clip(r, 1-clip_low,
            1+clip_high)·A)`` with ``r = exp(clamp(log ω, -20, 20))`` carrying gradient — zero
            gradient wherever the clip, the ``e^±20`` cap or the dual clip is the active branch,
            as in verl.
        mask_low, mask_high: the IcePop range for ``"mask"`` (paper: 0.0 and 2.0).
        clip_low, clip_high: ε of the two clip modes; the range is ``[1-clip_low, 1+clip_high]``.
            ``clip_low=None`` removes the lower bound (MiniMax-M1 sets ε_low^IS "to a large value").
        clip_ratio_c: dual-clip constant of ``"ppo_clip"`` (verl's ``clip_ratio_c``, e.g. 3.0):
            for ``A < 0`` the loss is ``min(max(-A·r, -A·clip(r)), -A·clip_ratio_c)``, so a huge
            ratio cannot make a negative-advantage token's loss unbounded. ``None`` (default): off.
        aggregation: ``"token_mean"`` (default: sum over every trainable token of the batch
            divided by the global token count) or ``"rollout_mean"`` (ablation: mean over
            rollouts of each rollout's own token mean, so short and long rollouts weigh the same).
        kl_coef: weight of the k3 estimator of KL(π_train ‖ π_ref) per token (paper: 0, off).
            Needs ``ref_logprobs``.
        entropy_coef: weight of an entropy bonus ``-entropy_coef·H_t`` (paper: 0, off). Needs
            ``entropy`` with gradient (from :func:`token_logprobs`).
        omega_quantiles: the quantiles of ω over trainable tokens reported by ``metrics="full"``.
        rollout_logprob_tol: rollout log-probs in ``(0, tol]`` are rounding artefacts of a
            near-certain token and are clamped to 0; above ``tol`` they are an error (when
            ``check_inputs``). The default 1e-6 is about 8 float32 ulps at 1.0 and moves ω by a
            factor of at most ``e^1e-6``; ``0.0`` rejects every positive value.
        check_inputs: validate tensors (finite values, rollout log-probs <= tol, mask values,
            packed offsets, the normalizer). Each check is one device sync; turn off only once a
            pipeline is known good.
    """

    ratio_control: RatioControl = "mask"
    mask_low: float = 0.0
    mask_high: float = 2.0
    clip_low: float | None = 0.2
    clip_high: float = 0.28
    clip_ratio_c: float | None = None
    aggregation: Aggregation = "token_mean"
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    omega_quantiles: tuple[float, ...] = field(default=(0.01, 0.1, 0.5, 0.9, 0.99))
    rollout_logprob_tol: float = 1e-6
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
        self._check_clip()
        _require_non_negative("kl_coef", self.kl_coef)
        _require_finite("entropy_coef", self.entropy_coef)
        _require_non_negative("rollout_logprob_tol", self.rollout_logprob_tol)
        for q in self.omega_quantiles:
            if not 0.0 <= q <= 1.0:
                raise ConfigError("omega_quantiles", f"each quantile must lie in [0, 1], got {q!r}")

    def _check_clip(self) -> None:
        if self.clip_low is not None:
            _require_non_negative("clip_low", self.clip_low)
            if self.clip_low >= 1.0:
                raise ConfigError(
                    "clip_low",
                    f"must be < 1 (the range is [1 - clip_low, …]) or None, got {self.clip_low}",
                )
        _require_non_negative("clip_high", self.clip_high)
        if self.clip_ratio_c is not None:
            _require_finite("clip_ratio_c", self.clip_ratio_c)
            if self.clip_ratio_c <= 1.0:
                raise ConfigError("clip_ratio_c", f"must be > 1, got {self.clip_ratio_c}")
            if self.ratio_control != "ppo_clip":
                raise ConfigError(
                    "clip_ratio_c",
                    f"applies to ratio_control='ppo_clip' only, not {self.ratio_control!r}",
                )

    @classmethod
    def arctic_swe(cls) -> LossConfig:
        """Arctic-SWE §5's objective: CISPO's detached ω with IcePop's mask on ``[0, 2]``
        (the same as ``LossConfig()``)."""
        return cls()

    @classmethod
    def minimax_m1_cispo(cls, *, clip_high: float) -> LossConfig:
        """MiniMax-M1's CISPO: ``-sg(min(ω, 1 + clip_high))·A·log π``, no lower bound, no mask.

        MiniMax-M1 truncates the importance weight from above only (ε_low^IS set "to a large
        value", ε_high^IS tuned); it publishes no ε_high^IS, so ``clip_high`` has no default.
        """
        return cls(ratio_control="cispo_clip", clip_low=None, clip_high=clip_high)

    @property
    def ratio_range(self) -> tuple[float, float]:
        """The ω interval outside which ``ratio_control`` intervenes (``clip_low=None`` → 0)."""
        if self.ratio_control == "mask":
            return (self.mask_low, self.mask_high)
        low = 0.0 if self.clip_low is None else 1.0 - self.clip_low
        return (low, 1.0 + self.clip_high)


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
