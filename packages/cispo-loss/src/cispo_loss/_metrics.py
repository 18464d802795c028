"""Diagnostics of one loss call, returned as plain Python floats (no graph, one device sync).

Definitions follow Arctic-SWE §3.1: the rollout-trainer mismatch KL is the mean over trainable
tokens of ``ω - log ω - 1`` (ω = π_train/π_rollout of the sampled token), which is the k3
estimator of KL(π_rollout ‖ π_train) under the rollout distribution. Statistics of an empty set
(no trainable token) are NaN rather than a made-up 0.
"""

from __future__ import annotations

import torch

_NAN = float("nan")


def quantiles(values: torch.Tensor, qs: tuple[float, ...]) -> list[torch.Tensor]:
    """Linear-interpolation quantiles (``torch.quantile``'s and numpy's default) of a 1-D
    tensor, without ``torch.quantile``'s input-size limit; NaN for an empty tensor.

    Public so that a trainer that splits a step into micro-batches can take ω's quantiles over
    the whole step (the per-call ``omega_p*`` metrics cannot be combined across calls).

    Args:
        values: ``[N]`` floats (e.g. ω of every trainable token of the step, float64).
        qs: quantile levels in ``[0, 1]``.

    Returns:
        One 0-d tensor per level, in ``values``' dtype.
    """
    if values.numel() == 0:
        return [values.new_tensor(_NAN) for _ in qs]
    ordered = values.sort().values
    last = ordered.numel() - 1
    out = []
    for q in qs:
        pos = q * last
        lo = int(pos)
        hi = min(lo + 1, last)
        frac = pos - lo
        out.append(ordered[lo] + (ordered[hi] - ordered[lo]) * frac)
    return out


def quantile_key(q: float) -> str:
    """Metric name for ω's q-quantile, e.g. 0.5 → ``omega_p50``, 0.01 → ``omega_p1``, 0.999 → ``omega_p99.9``."""
    return f"omega_p{q * 100:g}"


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    count = mask.sum()
    total = torch.where(mask, values, torch.zeros_like(values)).sum()
    return torch.where(count > 0, total / count.clamp(min=1), values.new_tensor(_NAN))


def fraction(flags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    count = mask.sum()
    hits = (flags & mask).sum().to(torch.float64)
    return torch.where(count > 0, hits / count.clamp(min=1), hits.new_tensor(_NAN))


def summary(values: torch.Tensor, prefix: str) -> dict[str, torch.Tensor]:
    """Mean / std (population) / min / max of a 1-D float64 tensor under ``prefix``."""
    if values.numel() == 0:
        nan = values.new_tensor(_NAN)
        return {f"{prefix}_{k}": nan for k in ("mean", "std", "min", "max")}
    return {
        f"{prefix}_mean": values.mean(),
        f"{prefix}_std": values.std(correction=0),
        f"{prefix}_min": values.min(),
        f"{prefix}_max": values.max(),
    }


def to_floats(named: dict[str, torch.Tensor]) -> dict[str, float]:
    """Detach and move every scalar to the host in a single transfer."""
    if not named:
        return {}
    stacked = torch.stack([v.detach().to(torch.float64).reshape(()) for v in named.values()])
    return dict(zip(named.keys(), stacked.cpu().tolist(), strict=True))
