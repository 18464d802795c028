"""Vectorised PyTorch recurrent path (decode): one token at a time, batched over sequences/heads.

Each step is the gated delta rule exactly as in :mod:`hybrid_numerics.reference`, in FP32, on a
state ``[B, H, G, K, V]`` (G value heads per q/k head, so q/k are broadcast rather than copied).
The loop is over tokens, which is what decode is (T = 1 per engine step); for long T use the
chunk path.
"""

from __future__ import annotations

import torch

from hybrid_numerics._chunk_torch import compute_dtype
from hybrid_numerics._validate import GDNShapes
from hybrid_numerics._varlen import pad_packed, seq_bounds, unpad_packed
from hybrid_numerics.reference import l2norm


def recurrent_torch(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    shapes: GDNShapes,
    *,
    scale: float,
    initial_state: torch.Tensor | None,
    output_final_state: bool,
    cu_seqlens: torch.Tensor | None,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Token-by-token gated delta rule; same contract as :func:`chunk_torch`."""
    if cu_seqlens is not None:
        bounds = seq_bounds(cu_seqlens)
        q, k, v, g, beta = (pad_packed(x, bounds) for x in (q, k, v, g, beta))
    o, final = _recurrent_batched(q, k, v, g, beta, shapes, scale, initial_state, use_qk_l2norm)
    if cu_seqlens is not None:
        o = unpad_packed(o, bounds)
    return o, (final if output_final_state else None)


def _recurrent_batched(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    shapes: GDNShapes,
    scale: float,
    initial_state: torch.Tensor | None,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    cd = compute_dtype(q)
    B, T = q.shape[0], q.shape[1]
    H, G, K, V = shapes.H, shapes.group, shapes.K, shapes.V
    q, k, v, g, beta = (x.to(cd) for x in (q, k, v, g, beta))
    if use_qk_l2norm:
        q, k = l2norm(q), l2norm(k)
    q = q * scale
    # Flatten (batch, q/k head, group) into one batch axis of N = B*H*G state matrices so every
    # step is two small bmm reads and one baddbmm write: no [K, V]-sized temporaries beyond the
    # decayed state itself (the memory traffic is what decode costs).
    N = B * H * G
    q, k = (x[:, :, :, None, :].expand(B, T, H, G, K).reshape(B, T, H * G, K) for x in (q, k))
    state = q.new_zeros(N, K, V) if initial_state is None else initial_state.to(cd).reshape(N, K, V)
    outputs = []
    for t in range(T):
        k_t = k[:, t].reshape(N, 1, K)
        state = state * g[:, t].exp().reshape(N, 1, 1)
        predicted = torch.bmm(k_t, state)  # k^T S: [N, 1, V]
        correction = beta[:, t].reshape(N, 1, 1) * (v[:, t].reshape(N, 1, V) - predicted)
        state = torch.baddbmm(state, k_t.transpose(1, 2), correction)
        outputs.append(torch.bmm(q[:, t].reshape(N, 1, K), state))
    o = torch.stack(outputs, dim=1).reshape(B, H * G, T, V).transpose(1, 2)
    return o, state.reshape(B, H * G, K, V)
