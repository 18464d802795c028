"""The metrics of one :func:`cispo_loss` call: which are computed, and when they reach the host.

``metrics="none"`` computes nothing. ``"basic"`` and ``"full"`` compute their scalars on the
loss's device with sync-free ops (masked reductions, no boolean indexing), and :class:`LossMetrics`
copies them to the host — all of them, in one transfer — only when a value is first read.
``"full"`` adds ω's quantiles, and even those wait: the sort runs on the first read of an
``omega_p*`` key (or the first :meth:`LossMetrics.tensors` call), so a caller that never looks at
them never pays for them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

import torch

from cispo_loss import _metrics as m
from cispo_loss._errors import InputError

MetricsLevel = Literal["none", "basic", "full"]

_LEVELS: tuple[str, ...] = ("none", "basic", "full")


def check_level(level: object) -> None:
    """Reject anything but the three metric levels with an :class:`InputError`."""
    if level not in _LEVELS:
        raise InputError("metrics", f"must be one of {_LEVELS}, got {level!r}")


@dataclass(frozen=True, slots=True)
class _PendingQuantiles:
    """ω of every position (float64), the trainable mask, and the requested levels."""

    omega: torch.Tensor
    mask: torch.Tensor
    levels: tuple[float, ...]

    def compute(self) -> dict[str, torch.Tensor]:
        values = m.masked_quantiles(self.omega, self.mask, self.levels)
        return {m.quantile_key(q): v for q, v in zip(self.levels, values, strict=True)}


class LossMetrics(Mapping[str, float]):
    """The diagnostics of one loss call: a read-only ``Mapping[str, float]``, filled lazily.

    Reading a value (``metrics["loss"]``, ``dict(metrics)``, ``metrics.get(...)``) copies the
    scalars to the host in one transfer — one device sync — the first time, and serves floats
    from then on; ω's quantiles (``"full"``) are sorted and copied, in a second transfer, on the
    first read of an ``omega_p*`` key. Keys, ``len`` and ``in`` never touch the device.
    :meth:`tensors` gives every value as a detached 0-d tensor on the loss's device without any
    copy (for an on-device ``all_reduce``, say). Until its quantiles are computed a ``"full"``
    mapping holds the call's ω (one float64 per token); drop it, or read them, to free that.
    """

    __slots__ = ("_floats", "_keys", "_pending", "_tensors")

    def __init__(
        self, tensors: dict[str, torch.Tensor], pending: _PendingQuantiles | None = None
    ) -> None:
        self._tensors = {k: v.detach() for k, v in tensors.items()}
        self._pending = pending
        later = [] if pending is None else [m.quantile_key(q) for q in pending.levels]
        self._keys = tuple(dict.fromkeys([*self._tensors, *later]))
        self._floats: dict[str, float] | None = None

    @property
    def on_host(self) -> bool:
        """Whether the values have been copied to the host (by a read) yet."""
        return self._floats is not None

    def _take_quantiles(self) -> dict[str, torch.Tensor]:
        """Sort for the pending quantiles (once) and return them; ``{}`` when none are pending."""
        if self._pending is None:
            return {}
        computed = self._pending.compute()
        self._pending = None  # the sort has run: ω is no longer needed
        self._tensors.update(computed)
        return computed

    def tensors(self) -> dict[str, torch.Tensor]:
        """Every metric as a detached 0-d tensor on the loss's device; no host copy."""
        self._take_quantiles()
        return dict(self._tensors)

    def _host(self, key: str) -> dict[str, float]:
        if self._floats is None:
            self._floats = m.to_floats(self._tensors)
        if key not in self._floats:  # a quantile, not computed yet
            self._floats.update(m.to_floats(self._take_quantiles()))
        return self._floats

    def __getitem__(self, key: str) -> float:
        if key not in self._keys:
            raise KeyError(key)
        return self._host(key)[key]

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"LossMetrics({dict(self)!r})"


@dataclass(frozen=True, slots=True)
class MetricInputs:
    """What the loss computed that the metrics describe (flat, non-trainable positions = 0)."""

    mask: torch.Tensor
    log_ratio: torch.Tensor  # detached log ω
    token_advantages: torch.Tensor
    advantages: torch.Tensor  # as the caller passed them
    per_token_advantages: bool
    entropy: torch.Tensor | None
    below: torch.Tensor  # tokens the ratio control acted on, below / above its range
    above: torch.Tensor
    num_rollouts: int
    normalizer: float | torch.Tensor


def loss_metrics(
    level: MetricsLevel,
    named: Mapping[str, torch.Tensor],
    inputs: MetricInputs,
    omega_quantiles: tuple[float, ...],
) -> LossMetrics:
    """The :class:`LossMetrics` of one call at ``level`` (see the README's metric table)."""
    if level == "none":
        return LossMetrics({})
    with torch.no_grad():
        mask = inputs.mask
        d = inputs.log_ratio.to(torch.float64)
        omega = d.exp()
        out: dict[str, torch.Tensor] = dict(named)
        out["mismatch_kl"] = m.masked_mean(omega - d - 1.0, mask)
        out["masked_frac_low"] = m.fraction(inputs.below, mask)
        out["masked_frac_high"] = m.fraction(inputs.above, mask)
        out["masked_frac"] = m.fraction(inputs.below | inputs.above, mask)
        omega_stats = m.masked_summary(omega, mask, "omega")
        del omega_stats["omega_std"]
        out.update(omega_stats)
        if inputs.entropy is not None:
            out["entropy_mean"] = m.masked_mean(inputs.entropy.detach().to(torch.float64), mask)
        out.update(_advantage_stats(inputs))
        out["trainable_tokens"] = mask.sum().to(torch.float64)
        out["rollouts"] = _scalar(inputs.num_rollouts, d)
        out["normalizer"] = _scalar(inputs.normalizer, d)
    pending = _PendingQuantiles(omega, mask, omega_quantiles) if level == "full" else None
    return LossMetrics(out, pending)


def _advantage_stats(inputs: MetricInputs) -> dict[str, torch.Tensor]:
    """Over trainable tokens for per-token advantages, over rollouts for per-rollout ones."""
    if inputs.per_token_advantages:
        adv = inputs.token_advantages.to(torch.float64)
        stats = m.masked_summary(adv, inputs.mask, "adv")
        stats["adv_zero_frac"] = m.fraction(adv == 0, inputs.mask)
        return stats
    adv = inputs.advantages.detach().to(torch.float64)
    stats = m.summary(adv, "adv")
    stats["adv_zero_frac"] = (adv == 0).to(torch.float64).mean()
    return stats


def _scalar(value: float | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if (
        isinstance(value, torch.Tensor)
        and value.device != like.device
        and value.device.type == "cpu"
    ):
        value = float(value)  # a host tensor: reading it is free, copying it over would block
    if isinstance(value, torch.Tensor):
        return value.detach().to(dtype=like.dtype, device=like.device).reshape(())
    return torch.full((), float(value), dtype=like.dtype, device=like.device)
