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
    # Flatten (batch, q/k head, group) into one batch axis of N = B*H*G state matrices. Decode
    # is bound by the memory traffic of the [K, V] states, so each step touches them three
    # times, the fewest plain torch ops allow: one read for both k^T S and q^T S (one bmm with
    # the two rows stacked), then the decayed copy and the rank-1 write in place on it. The
    # output needs no read of the new state: with S' = a S + k c^T (c the scaled correction),
    # q^T S' = a q^T S + (q . k) c.
    N = B * H * G
    q, k = (x[:, :, :, None, :].expand(B, T, H, G, K).reshape(B, T, H * G, K) for x in (q, k))
    kq = _per_matrix(torch.stack((k, q), dim=3))  # [N, T, 2, K]: rows k_t, q_t per matrix
    qk = _per_matrix((q * k).sum(-1, keepdim=True))  # [N, T, 1]
    decay = _per_matrix(g.exp().unsqueeze(-1))
    beta, v = _per_matrix(beta.unsqueeze(-1)), _per_matrix(v)
    state = q.new_zeros(N, K, V) if initial_state is None else initial_state.to(cd).reshape(N, K, V)
    outputs = []
    for t in range(T):
        a_t = decay[:, t]  # [N, 1]
        read = torch.bmm(kq[:, t], state)  # [N, 2, V]: k^T S and q^T S
        correction = beta[:, t] * (v[:, t] - a_t * read[:, 0])
        outputs.append(a_t * read[:, 1] + qk[:, t] * correction)
        state = torch.mul(state, a_t[:, :, None])
        state.baddbmm_(kq[:, t, 0, :, None], correction[:, None, :])
    o = torch.stack(outputs, dim=1).reshape(B, H * G, T, V).transpose(1, 2)
    return o, state.reshape(B, H * G, K, V)


def _per_matrix(x: torch.Tensor) -> torch.Tensor:
    """``[B, T, HV, ...]`` -> ``[B * HV, T, ...]`` (one row per state matrix)."""
    return x.transpose(1, 2).reshape(x.shape[0] * x.shape[2], x.shape[1], *x.shape[3:])
