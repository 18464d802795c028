"""The oracle: the gated delta rule, token by token, in float64.

Gated DeltaNet (Yang et al., "Gated Delta Networks", 2024; the linear-attention layer of
Qwen3.5 / Qwen3-Next) keeps a state ``S_t`` of shape ``[K, V]`` per value head and, per token,

    S_t = exp(g_t) * S_{t-1}                      # gated decay (g_t <= 0, log space)
    S_t = S_t + k_t (beta_t * (v_t - k_t^T S_t))^T  # delta-rule write of the correction
    o_t = S_t^T (scale * q_t)                     # read

This module evaluates exactly that, one token at a time, in float64 (vectorised only over batch
and heads). It is slow on purpose: every fast path in the package is tested against it.
"""

from __future__ import annotations

import torch

from hybrid_numerics._validate import validate_gdn_inputs

__all__ = ["l2norm", "reference_gated_delta_rule"]


def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``x / sqrt(sum(x**2) + eps)`` over the last dim: the normalisation of fla and transformers."""
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def reference_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    cu_seqlens: torch.Tensor | None = None,
    use_qk_l2norm: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Naive token-by-token gated delta rule in float64 (the oracle).

    Shapes (fla layout): ``q, k: [B, T, H, K]``; ``v: [B, T, HV, V]`` with ``HV % H == 0``
    (value head ``j`` reads q/k head ``j // (HV // H)``); ``g, beta: [B, T, HV]``;
    ``initial_state: [N, HV, K, V]`` where ``N = B``, or the number of packed sequences when
    ``cu_seqlens`` (``[N + 1]`` offsets, ``B == 1``) is given. ``scale`` defaults to ``K ** -0.5``.

    Returns ``(o, final_state)``: ``o: [B, T, HV, V]`` in float64 and, if asked,
    ``final_state: [N, HV, K, V]`` in float64. Differentiable (float64 autograd is the gradient
    oracle).
    """
    shapes = validate_gdn_inputs(
        q, k, v, g, beta, scale=scale, initial_state=initial_state, cu_seqlens=cu_seqlens
    )
    scale = shapes.K**-0.5 if scale is None else float(scale)
    f64 = torch.float64
    q, k, v, g, beta = (x.to(f64) for x in (q, k, v, g, beta))
    if use_qk_l2norm:
        q, k = l2norm(q), l2norm(k)
    # Expand q/k to the value heads once: clarity over speed in the oracle.
    q = q.repeat_interleave(shapes.group, dim=2) * scale
    k = k.repeat_interleave(shapes.group, dim=2)
    if cu_seqlens is None:
        bounds = [(b, 0, shapes.T) for b in range(shapes.B)]
    else:
        offsets = cu_seqlens.tolist()
        bounds = [(0, offsets[n], offsets[n + 1]) for n in range(shapes.N)]
    outputs: list[torch.Tensor] = []
    finals: list[torch.Tensor] = []
    for n, (b, start, end) in enumerate(bounds):
        state = (
            torch.zeros(shapes.HV, shapes.K, shapes.V, dtype=f64, device=q.device)
            if initial_state is None
            else initial_state[n].to(f64)
        )
        for t in range(start, end):
            state = state * torch.exp(g[b, t])[:, None, None]
            predicted = torch.einsum("hk,hkv->hv", k[b, t], state)
            correction = beta[b, t][:, None] * (v[b, t] - predicted)
            state = state + k[b, t][:, :, None] * correction[:, None, :]
            outputs.append(torch.einsum("hk,hkv->hv", q[b, t], state))
        finals.append(state)
    o = torch.stack(outputs).reshape(shapes.B, shapes.T, shapes.HV, shapes.V)
    final_state = torch.stack(finals) if output_final_state else None
    return o, final_state
