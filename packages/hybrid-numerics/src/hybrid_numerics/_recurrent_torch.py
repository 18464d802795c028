"""Vectorised PyTorch recurrent path (decode): one token at a time, batched over sequences/heads.

Each step is the gated delta rule exactly as in :mod:`hybrid_numerics.reference`, in FP32, on a
state ``[B, H, G, K, V]`` (G value heads per q/k head, so q/k are broadcast rather than copied).
The loop is over tokens, which is what decode is (T = 1 per engine step); for long T use the
chunk path.
"""

from __future__ import annotations

import torch

from hybrid_numerics._chunk_torch import compute_dtype
from hybrid_numerics._constants import constant_cache
from hybrid_numerics._validate import GDNShapes
from hybrid_numerics._varlen import run_grouped, seq_bounds


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

    def batched(*x: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        q, k, v, g, beta, h0 = x
        assert q is not None
        assert k is not None
        assert v is not None
        assert g is not None
        assert beta is not None
        return _recurrent_batched(q, k, v, g, beta, shapes, scale, h0, use_qk_l2norm)

    if cu_seqlens is None:
        o, final = batched(q, k, v, g, beta, initial_state)
    else:  # packed: batched in groups of similar length (padding <= 2x the real tokens)
        o, final = run_grouped(batched, (q, k, v, g, beta), seq_bounds(cu_seqlens), initial_state)
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
    # Flatten (batch, q/k head, group) into one batch axis of N = B*H*G state matrices. Decode
    # is bound by the memory traffic of the [K, V] states, so each step touches them three
    # times, the fewest plain torch ops allow: one read for both k^T S and q^T S (one bmm with
    # the two rows stacked), then the decayed copy and the rank-1 write in place on it. The
    # output needs no read of the new state: with S' = a S + k c^T (c the scaled correction),
    # q^T S' = a q^T S + (q . k) c.
    # At small head dims (the engine's per-token step on a small model) the cost is the number
    # of torch calls instead, so the setup is written with as few as possible: k and q are
    # stacked once and normalised and scaled together (one norm, one multiply).
    N = B * H * G
    kq = torch.stack((k, q), dim=3).to(cd)  # [B, T, H, 2, K]: rows k_t, q_t
    row_scale = _row_scale(scale, cd, q.device)
    kq = kq * (_inv_norm(kq) * row_scale if use_qk_l2norm else row_scale)
    qk = torch.linalg.vecdot(kq[..., 0, :], kq[..., 1, :])  # [B, T, H]
    if initial_state is None:
        state = kq.new_zeros(N, K, V)
    else:
        state = initial_state.to(cd).reshape(N, K, V)
    if T == 1:  # the engine's step: [B, 1, ...] is already in per-matrix order, no re-layout
        kq1 = kq.reshape(B, H, 1, 2, K).expand(B, H, G, 2, K).reshape(N, 2, K)
        qk1 = qk.reshape(B, H, 1).expand(B, H, G).reshape(N, 1)
        o, state = _step(kq1, qk1, g.to(cd).reshape(N, 1).exp(), beta.to(cd).reshape(N, 1),
                         v.to(cd).reshape(N, V), state)  # fmt: skip
        return o.reshape(B, 1, H * G, V), state.reshape(B, H * G, K, V)
    # -> [N, T, 2, K] and [N, T, 1]: each q/k head broadcast to its G value heads.
    kq = kq.permute(0, 2, 1, 3, 4)[:, :, None].expand(B, H, G, T, 2, K).reshape(N, T, 2, K)
    qk = qk.transpose(1, 2)[:, :, None, :].expand(B, H, G, T).reshape(N, T, 1)
    a_n = _per_matrix(g.to(cd)).unsqueeze(-1).exp()  # [N, T, 1]
    beta_n = _per_matrix(beta.to(cd)).unsqueeze(-1)
    v_n = _per_matrix(v.to(cd))  # [N, T, V]
    grad = torch.is_grad_enabled() and any(x.requires_grad for x in (kq, a_n, beta_n, v_n, state))
    # Without autograd the first step writes a new buffer (the caller's state is not modified)
    # and every later one updates that buffer in place.
    new = None if grad else torch.empty_like(state)
    outputs = []
    for t in range(T):
        o_t, state = _step(kq[:, t], qk[:, t], a_n[:, t], beta_n[:, t], v_n[:, t], state, new)
        new = None if grad else state
        outputs.append(o_t)
    o = torch.stack(outputs, dim=1).reshape(B, H * G, T, V).transpose(1, 2)
    return o, state.reshape(B, H * G, K, V)


def _step(
    kq: torch.Tensor,
    qk: torch.Tensor,
    a: torch.Tensor,
    beta: torch.Tensor,
    v: torch.Tensor,
    state: torch.Tensor,
    new: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token for N state matrices: rows ``kq: [N, 2, K]`` (k, scaled q), ``qk`` (q . k),
    ``a`` (the decay ``exp(g)``), ``beta: [N, 1]``, ``v: [N, V]``, ``state: [N, K, V]`` ->
    output ``[N, V]`` and the new state ``a S + k c^T``. ``new``: the buffer that receives the
    new state (``state`` itself: in place; the read comes first); ``None``: out of place, for
    autograd. Both variants do the same arithmetic (decode steps equal one long run bit for bit).
    """
    read = torch.bmm(kq, state)  # [N, 2, V]: k^T S and q^T S, the old state read once
    if new is None:
        correction = torch.addcmul(v, a, read[:, 0], value=-1.0) * beta
        out = torch.addcmul(read[:, 1] * a, qk, correction)
        decayed = state * a[:, :, None]
        return out, torch.addcmul(decayed, kq[:, 0, :, None], correction[:, None, :])
    correction = torch.addcmul(v, a, read[:, 0], value=-1.0).mul_(beta)
    out = torch.addcmul(read[:, 1].mul_(a), qk, correction)
    torch.mul(state, a[:, :, None], out=new)
    # The rank-1 write as a broadcast multiply-add: one pass like baddbmm_, 0.24 vs 0.28 ms on
    # 256 states of 64 x 64 in isolation (within the noise of a whole decode step).
    new.addcmul_(kq[:, 0, :, None], correction[:, None, :])
    return out, new


@constant_cache(maxsize=64)
def _row_scale(scale: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``[[1], [scale]]``: multiplies the stacked (k, q) rows (read-only, cached per call site)."""
    return torch.tensor([[1.0], [scale]], dtype=dtype, device=device)


def _inv_norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``rsqrt(sum(x**2) + eps)`` over the last dim: the factor of :func:`l2norm`."""
    return torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def _per_matrix(x: torch.Tensor) -> torch.Tensor:
    """``[B, T, HV, ...]`` -> ``[B * HV, T, ...]`` (one row per state matrix)."""
    return x.transpose(1, 2).reshape(x.shape[0] * x.shape[2], x.shape[1], *x.shape[3:])
