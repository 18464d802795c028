"""Statistics behind the diagnostics of a loss call, computed on the tensors' device.

Everything except :func:`quantiles` and :func:`to_floats` works on a full-length tensor plus a
boolean mask (``where``, ``sort``, ``gather``, reductions) rather than on ``values[mask]``:
boolean indexing has a data-dependent size and so waits for the device, these do not.

Definitions follow Arctic-SWE §3.1: the rollout-trainer mismatch KL is the mean over trainable
tokens of ``ω - log ω - 1`` (ω = π_train/π_rollout of the sampled token), which is the k3
estimator of KL(π_rollout ‖ π_train) under the rollout distribution. Statistics of an empty set
(no trainable token) are NaN rather than a made-up 0.
"""

from __future__ import annotations

import math

import torch

_NAN = float("nan")


def _nan_like(values: torch.Tensor) -> torch.Tensor:
    # torch.full is a fill kernel on the device; new_tensor(nan) would be a blocking host copy.
    return torch.full((), _NAN, dtype=values.dtype, device=values.device)


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


def masked_quantiles(
    values: torch.Tensor, mask: torch.Tensor, qs: tuple[float, ...]
) -> list[torch.Tensor]:
    """``quantiles(values[mask], qs)``, bit for bit, without a device sync.

    Masked-out entries sort to the end as +inf; the interpolation positions come from the
    on-device count, so nothing needs the count on the host.
    """
    if values.numel() == 0:
        return [values.new_tensor(_NAN) for _ in qs]
    count = mask.sum()
    last = (count - 1).clamp(min=0)
    ordered = torch.where(mask, values, torch.full_like(values, math.inf)).sort().values
    nan = _nan_like(values)
    out = []
    for q in qs:
        pos = last.to(values.dtype) * q  # the same product as the eager ``q * last``
        lo = pos.floor()
        lo_index = lo.to(torch.int64).reshape(1)
        hi_index = torch.minimum(lo_index + 1, last.reshape(1))
        below, above = ordered.gather(0, lo_index), ordered.gather(0, hi_index)
        value = (below + (above - below) * (pos - lo)).reshape(())
        out.append(torch.where(count > 0, value, nan))
    return out


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` where ``mask`` is True; NaN when it is nowhere True."""
    count = mask.sum()
    total = torch.where(mask, values, torch.zeros_like(values)).sum()
    return torch.where(count > 0, total / count.clamp(min=1), _nan_like(total))


def fraction(flags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Share of the masked positions whose flag is set (float64); NaN when the mask is empty."""
    count = mask.sum()
    hits = (flags & mask).sum().to(torch.float64)
    return torch.where(count > 0, hits / count.clamp(min=1), _nan_like(hits))


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


def masked_summary(
    values: torch.Tensor, mask: torch.Tensor, prefix: str
) -> dict[str, torch.Tensor]:
    """:func:`summary` of ``values[mask]`` without a device sync (NaN when the mask is empty)."""
    if values.numel() == 0:
        return summary(values, prefix)
    count = mask.sum()
    nan = _nan_like(values)
    mean = masked_mean(values, mask)
    spread = masked_mean((values - mean) ** 2, mask).sqrt()
    lowest = torch.where(mask, values, torch.full_like(values, math.inf)).min()
    highest = torch.where(mask, values, torch.full_like(values, -math.inf)).max()
    return {
        f"{prefix}_mean": mean,
        f"{prefix}_std": spread,
        f"{prefix}_min": torch.where(count > 0, lowest, nan),
        f"{prefix}_max": torch.where(count > 0, highest, nan),
    }


def to_floats(named: dict[str, torch.Tensor]) -> dict[str, float]:
    """Detach and move every scalar to the host in a single transfer."""
    if not named:
        return {}
    stacked = torch.stack([v.detach().to(torch.float64).reshape(()) for v in named.values()])
    return dict(zip(named.keys(), stacked.cpu().tolist(), strict=True))
