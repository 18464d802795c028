"""The Gated DeltaNet decay gate in FP32: ``g = -exp(A_log) * softplus(a + dt_bias)``.

Qwen3.5 stores ``A_log`` (per value head, log of the decay rate) and ``dt_bias``; ``a`` is the
per-token gate projection. In bf16, ``exp(A_log)`` and the softplus lose ~3 significant digits,
and the decay compounds over thousands of tokens (Arctic-SWE §3.3: keep gate arithmetic and
``A_log`` in FP32). Here every operand is promoted to FP32 first; gradients reach ``a``,
``A_log`` and ``dt_bias`` through autograd and come back in each parameter's own dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["gdn_gate"]


def gdn_gate(
    a: torch.Tensor, A_log: torch.Tensor, dt_bias: torch.Tensor | None = None
) -> torch.Tensor:
    """Return the log-space decay ``g = -exp(A_log) * softplus(a + dt_bias)`` in FP32.

    Shapes: ``a: [..., HV]``, ``A_log: [HV]``, ``dt_bias: [HV]`` (optional); result ``[..., HV]``
    float32 (float64 if ``a`` is float64, for oracles).
    """
    compute = torch.float64 if a.dtype == torch.float64 else torch.float32
    x = a.to(compute)
    if dt_bias is not None:
        x = x + dt_bias.to(compute)
    return -torch.exp(A_log.to(compute)) * F.softplus(x)
