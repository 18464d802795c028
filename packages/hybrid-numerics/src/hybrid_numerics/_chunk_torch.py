"""Vectorised PyTorch chunk path (training / prefill) with the state in FP32.

The WY / UT-transform form of the gated delta rule (Yang et al., "Gated Delta Networks" §3;
fla's ``chunk_gated_delta_rule``). Within a chunk of ``C`` tokens with in-chunk cumulative decay
``c_i = sum_{j<=i} g_j`` and lower-triangular ``D_ij = exp(c_i - c_j)`` (i >= j):

    A  = strict_lower(diag(β) K K^T ⊙ D)               # the UT system, [C, C]
    u  = (I + A)^-1 diag(β) V                          # pseudo values,  [C, V]
    w  = (I + A)^-1 diag(β) (K ⊙ exp(c))               # decayed keys,   [C, K]
    O  = (Q K^T ⊙ D) (u - w S) + (Q ⊙ exp(c)) S         # S: state entering the chunk
    S' = exp(c_C) S + (K ⊙ exp(c_C - c))^T (u - w S)

Everything that does not depend on ``S`` is computed for all chunks at once. The Python loop
runs over chunks (never over tokens) and does only the two state products per chunk,
``fresh = u - w S`` and ``S' = exp(c_C) S + Kd^T fresh``; the per-chunk states are kept in FP32
and the outputs ``attn fresh + (Q ⊙ exp(c)) S`` are again one batched product. q/k-side
products (``K K^T``, ``Q K^T``) are formed once per q/k head and shared by its value heads.

Backward is autograd through these tensor ops (``solve_triangular``, ``cumsum`` and matmuls are
all differentiable), which yields dq, dk, dv, dg, dbeta and d initial_state.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hybrid_numerics._validate import GDNShapes
from hybrid_numerics._varlen import pad_packed, seq_bounds, unpad_packed
from hybrid_numerics.reference import l2norm

CHUNK_SIZE = 64


def compute_dtype(x: torch.Tensor) -> torch.dtype:
    """FP32 arithmetic for every activation dtype; FP64 only for FP64 input (oracle runs)."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def chunk_torch(
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
    chunk_size: int = CHUNK_SIZE,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Chunked gated delta rule; returns ``o: [B, T, HV, V]`` and ``final: [N, HV, K, V]`` in
    the compute dtype (FP32, or FP64 for FP64 input). Inputs are already validated."""
    if cu_seqlens is not None:
        bounds = seq_bounds(cu_seqlens)
        q, k, v, g, beta = (pad_packed(x, bounds) for x in (q, k, v, g, beta))
    o, final = _chunk_batched(
        q, k, v, g, beta, shapes, scale, initial_state, use_qk_l2norm, chunk_size
    )
    if cu_seqlens is not None:
        o = unpad_packed(o, bounds)
    return o, (final if output_final_state else None)


@dataclass(frozen=True)
class ChunkTerms:
    """Everything of the chunk form that does not depend on the state (``[B, H, G, NC, ...]``).

    ``u [C, V]`` pseudo values, ``w [C, K]`` decayed keys of the UT transform, ``kd [C, K]`` keys
    decayed to the chunk end, ``chunk_decay [1]`` = exp(total log decay of the chunk),
    ``attn [C, C]`` the decayed causal q.k scores, ``qd [C, K]`` queries decayed from the chunk
    start. Shared by the torch scan and the Triton state kernel.
    """

    u: torch.Tensor
    w: torch.Tensor
    kd: torch.Tensor
    chunk_decay: torch.Tensor
    attn: torch.Tensor
    qd: torch.Tensor

    def outputs(self, states: torch.Tensor, T: int) -> torch.Tensor:
        """``O = attn u + (qd - attn w) S_c`` for states ``[B, H, G, NC(+1), K, V]`` -> ``[B, T, HV, V]``."""
        B, H, G, NC, C, V = self.u.shape
        o = self.attn @ self.u + (self.qd - self.attn @ self.w) @ states[:, :, :, :NC]
        return o.reshape(B, H * G, NC * C, V)[:, :, :T].transpose(1, 2)


def prepare_chunks(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    shapes: GDNShapes,
    scale: float,
    use_qk_l2norm: bool,
    C: int = CHUNK_SIZE,
) -> ChunkTerms:
    """The state-independent chunk terms, batched over all chunks, in the compute dtype."""
    cd = compute_dtype(q)
    B, T = q.shape[0], q.shape[1]
    H, G, V = shapes.H, shapes.group, shapes.V
    NC = -(-T // C)
    pad = NC * C - T
    q, k, v, g, beta = (x.to(cd) for x in (q, k, v, g, beta))
    if use_qk_l2norm:
        q, k = l2norm(q), l2norm(k)
    q = q * scale
    # [B, T, H, K] -> [B, H, 1, NC, C, K]; [B, T, HV, V] -> [B, H, G, NC, C, V]; the singleton
    # axis lets one q/k head's products broadcast over its G value heads.
    qc, kc = (_to_chunks(x, pad, NC, C).unsqueeze(2) for x in (q, k))
    vc = _to_chunks(v, pad, NC, C).reshape(B, H, G, NC, C, V)
    gc = _to_chunks(g.unsqueeze(-1), pad, NC, C).reshape(B, H, G, NC, C)
    bc = _to_chunks(beta.unsqueeze(-1), pad, NC, C).reshape(B, H, G, NC, C)

    # The in-chunk cumulative log decay and every difference of it in float64: in FP32 a cumsum
    # of ~64 terms of size ~1 carries an absolute error of ~1e-6, which exp() turns into a
    # relative error of the decay factors - the largest error term of the FP32 chunk path. These
    # tensors are small ([.., C] and [.., C, C]); the heavy products stay in FP32.
    gamma = gc.double().cumsum(-1)
    lower = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    # Mask before exp: entries above the diagonal would be exp(positive) and may overflow.
    decay = torch.exp(
        (gamma[..., :, None] - gamma[..., None, :]).masked_fill(~lower, float("-inf"))
    ).to(cd)
    gamma_last = gamma[..., -1:]
    exp_gamma = gamma.exp().to(cd)[..., None]
    kk = kc @ kc.transpose(-1, -2)  # [B, H, 1, NC, C, C], shared by the G value heads
    system = (bc[..., :, None] * kk * decay).tril(-1)
    # (I + A)^-1 once per chunk (unitriangular: the unit diagonal is implied), then two
    # products: cheaper than one triangular solve with a [C, V + K] right-hand side.
    eye = torch.eye(C, dtype=cd, device=q.device)
    inverse = torch.linalg.solve_triangular(system, eye, upper=False, unitriangular=True)
    inverse = inverse * bc[..., None, :]  # fold diag(beta) into the inverse's columns
    return ChunkTerms(
        u=inverse @ vc,
        w=inverse @ (kc * exp_gamma),
        kd=kc * torch.exp(gamma_last - gamma).to(cd)[..., None],
        chunk_decay=gamma_last.exp().to(cd),
        attn=(qc @ kc.transpose(-1, -2)) * decay,  # incl. the diagonal
        qd=qc * exp_gamma,
    )


def _chunk_batched(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    shapes: GDNShapes,
    scale: float,
    initial_state: torch.Tensor | None,
    use_qk_l2norm: bool,
    C: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    terms = prepare_chunks(q, k, v, g, beta, shapes, scale, use_qk_l2norm, C)
    B, H, G, NC, C, V = terms.u.shape
    K = shapes.K
    states, fresh = _scan_states(terms, initial_state, shapes)
    # O = attn (u - w S) + qd S, batched over all chunks once the states are known.
    o = terms.attn @ fresh + terms.qd @ states[:, :, :, :NC]
    o = o.reshape(B, H * G, NC * C, V)[:, :, : q.shape[1]].transpose(1, 2)
    return o, states[:, :, :, NC].reshape(B, H * G, K, V)


def _to_chunks(x: torch.Tensor, pad: int, NC: int, C: int) -> torch.Tensor:
    """``[B, T, heads, D]`` -> ``[B, heads, NC, C, D]`` (zero-padded at the end)."""
    x = x.transpose(1, 2)
    if pad:
        x = torch.nn.functional.pad(x, (0, 0, 0, pad))
    return x.reshape(x.shape[0], x.shape[1], NC, C, x.shape[-1])


def _scan_states(
    terms: ChunkTerms, initial_state: torch.Tensor | None, shapes: GDNShapes
) -> tuple[torch.Tensor, torch.Tensor]:
    """The only sequential part: per chunk ``fresh = u - w S`` then
    ``S <- exp(c_C) S + Kd^T fresh``. Returns the ``NC + 1`` states ``[B, H, G, NC + 1, K, V]``
    (FP32) and the corrections ``fresh: [B, H, G, NC, C, V]``."""
    B, H, G, NC, C, V = terms.u.shape
    K = shapes.K
    if initial_state is None:
        state = terms.u.new_zeros(B * H * G, K, V)
    else:
        state = initial_state.to(terms.u.dtype).reshape(B * H * G, K, V)
    u = terms.u.reshape(B * H * G, NC, C, V)
    w = terms.w.expand(B, H, G, NC, C, K).reshape(B * H * G, NC, C, K)
    kd_t = terms.kd.expand(B, H, G, NC, C, K).reshape(B * H * G, NC, C, K).transpose(-1, -2)
    decay = terms.chunk_decay.reshape(B * H * G, NC, 1, 1)
    states, fresh = [state], []
    # unbind, not u[:, c]: the backward of NC selects would build NC full-size gradients
    # (quadratic in T); unbind's backward stacks them once.
    per_chunk = zip(u.unbind(1), w.unbind(1), kd_t.unbind(1), decay.unbind(1), strict=True)
    for u_c, w_c, kd_t_c, decay_c in per_chunk:
        fresh_c = torch.baddbmm(u_c, w_c, state, alpha=-1.0)
        state = torch.baddbmm(state * decay_c, kd_t_c, fresh_c)
        states.append(state)
        fresh.append(fresh_c)
    return (
        torch.stack(states, dim=1).reshape(B, H, G, NC + 1, K, V),
        torch.stack(fresh, dim=1).reshape(B, H, G, NC, C, V),
    )
