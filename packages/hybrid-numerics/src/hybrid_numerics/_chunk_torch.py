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

Backward: the sequential scan has a hand-written backward (:class:`_Scan`: one short loop for
the state gradient, every weight gradient batched after it); the state-independent terms go
through autograd (``solve_triangular``, ``cumsum`` and matmuls are all differentiable). Together
they yield dq, dk, dv, dg, dbeta and d initial_state. The torch path's chunk length depends on
the head dim (:func:`torch_chunk_size`): ``[C, C]`` work dominates at small heads.

The building blocks (pairwise decay, UT inverse, flushed exp) live in :mod:`._chunk_torch_ops`,
the scan and its backward in :mod:`._chunk_torch_scan`; the decode step (``T = 1``) in
:mod:`._decode_torch`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hybrid_numerics._chunk_torch_ops import (
    _exp_flushed,
    _inv_norm,
    _PairwiseDecay,
    _UnitLowerInverse,
)
from hybrid_numerics._chunk_torch_scan import _Scan, _scan_states  # noqa: F401 (_Scan: imported from here)
from hybrid_numerics._constants import constant_cache
from hybrid_numerics._precision_flags import state_bmm
from hybrid_numerics._validate import GDNShapes
from hybrid_numerics._varlen import run_grouped, seq_bounds
from hybrid_numerics.reference import l2norm

CHUNK_SIZE = 64
# Inputs per block of the no-grad chunk forward, in elements of q, k, v (see _chunk_batched).
BLOCK_ELEMENTS = 1 << 18


def torch_chunk_size(head_dim: int) -> int:
    """The torch path's chunk length for key head dim ``K``: ``K / 2`` within ``[16, 64]``.

    On a CPU the chunk form costs ~``C (K + V)`` per token in ``[C, C]``-shaped work (scores,
    UT system and inverse, their gradients) against ~``K V / C`` in the scan, and the ``[C, C]``
    intermediates are memory-bound at small head dims. Measured (1 thread, T = 4096, fwd+bwd):
    K = 32 is fastest at C = 16 (41 ms vs 98 ms at C = 64), K = 64 at C = 32, K = 128 at C = 64.
    Accuracy does not depend on it (same oracle tolerance). The Triton path keeps :data:`CHUNK_SIZE`.
    """
    return max(16, min(CHUNK_SIZE, 1 << max(head_dim // 2, 1).bit_length() - 1))


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
    chunk_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Chunked gated delta rule; returns ``o: [B, T, HV, V]`` and ``final: [N, HV, K, V]`` in
    the compute dtype (FP32, or FP64 for FP64 input). Inputs are already validated.
    ``chunk_size`` defaults to :func:`torch_chunk_size` of the key head dim."""
    if chunk_size is None:
        chunk_size = torch_chunk_size(shapes.K)
    C = chunk_size

    def batched(*x: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        q, k, v, g, beta, h0 = x
        assert q is not None
        assert k is not None
        assert v is not None
        assert g is not None
        assert beta is not None
        return _chunk_batched(q, k, v, g, beta, shapes, scale, h0, use_qk_l2norm, C)

    if cu_seqlens is None:
        o, final = batched(q, k, v, g, beta, initial_state)
    else:  # packed: batched in groups of similar length (padding <= 2x the real tokens)
        o, final = run_grouped(batched, (q, k, v, g, beta), seq_bounds(cu_seqlens), initial_state)
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
        o = self.attn @ self.u + state_bmm(self.qd - self.attn @ self.w, states[:, :, :, :NC])
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
    """Without autograd, long inputs go through :func:`_chunk_block` in blocks of whole chunks
    holding ~:data:`BLOCK_ELEMENTS` input elements, the state carried from block to block (the
    same products in the same order: identical results). The working set then stays a few MiB
    instead of growing with T, so each block reuses the memory the previous one freed: fresh
    memory costs a page fault per 4 KiB on its first touch, and glibc hands freed heap back to
    the OS between calls. Measured (one core, median of 7): T = 4096, K = 128: 85 ms and
    ~13 000 faults per forward unblocked, 67 ms and < 1 000 faults in blocks (256 tokens);
    the app's B = 8, T = 800, K = 32: 31 ms -> 18 ms (blocks of 128 tokens).
    """
    B, T = q.shape[0], q.shape[1]
    needs_grad = torch.is_grad_enabled() and any(
        x is not None and x.requires_grad for x in (q, k, v, g, beta, initial_state)
    )
    per_token = B * (2 * shapes.H * shapes.K + shapes.HV * shapes.V)
    # Blocks of equal length (whole chunks, at most the budget): 2048 tokens at 672 per block
    # would leave a last block of 32, whose fixed per-block cost buys almost nothing.
    NC = -(-T // C)
    per_block = max(1, BLOCK_ELEMENTS // (per_token * C))
    step = -(-NC // -(-NC // per_block)) * C
    if needs_grad or step >= T:
        o, final = _chunk_block(q, k, v, g, beta, shapes, scale, initial_state, use_qk_l2norm, C)
        return o.reshape(B, -1, shapes.HV, shapes.V)[:, :T], final
    out = torch.empty(B, T, shapes.HV, shapes.V, dtype=compute_dtype(q), device=q.device)
    state = initial_state
    for t0 in range(0, T, step):
        t1 = min(T, t0 + step)
        qb, kb, vb, gb, bb = (x[:, t0:t1] for x in (q, k, v, g, beta))
        o, state = _chunk_block(qb, kb, vb, gb, bb, shapes, scale, state, use_qk_l2norm, C)
        if (t1 - t0) % C == 0:
            out[:, t0:t1].view(o.shape).copy_(o)
        else:
            out[:, t0:t1] = o.reshape(B, -1, shapes.HV, shapes.V)[:, : t1 - t0]
    assert state is not None
    return out, state


def _chunk_block(
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
    """The torch chunk path in a chunk-major layout ``[NC, B*H, G, C, D]``; returns the output
    as a ``[B, NC, C, HV, V]`` view (zero-padded chunks included) and the final state.

    Chunk-major because the scan walks the chunk axis: every per-chunk slice is then one
    contiguous block (no copies when the loop reads it), the stacked states come out contiguous,
    and the final output products batch over (chunk, head) without re-laying-out the states.
    """
    cd = compute_dtype(q)
    B, T = q.shape[0], q.shape[1]
    H, G, K, V = shapes.H, shapes.group, shapes.K, shapes.V
    NC = -(-T // C)
    q, k, v, g, beta = (x.to(cd) for x in (q, k, v, g, beta))
    # The temporaries live only inside _state_free_terms (its locals die when it returns) and u,
    # w, kd are dropped after the scan: the peak working set matters on a CPU, where glibc
    # returns freed heap to the OS and every page of the next call's fresh memory costs a fault.
    u, w, kd, chunk_decay, attn, qd = _state_free_terms(
        q, k, v, g, beta, shapes, scale, use_qk_l2norm, C
    )
    entering, final, fresh = _scan_states(u, w, kd, chunk_decay, initial_state, K)
    del u, w, kd
    # O = attn (u - w S) + qd S, one batched product over every (chunk, head) pair.
    o = torch.bmm(attn.reshape(-1, C, C), fresh.reshape(-1, C, V))
    if entering.requires_grad:  # the state product's backward with TF32 off, too
        o = o + state_bmm(qd.reshape(-1, C, K), entering.reshape(-1, K, V))
    else:
        o.baddbmm_(qd.reshape(-1, C, K), entering.reshape(-1, K, V))  # in place: no copy of o
    del entering, fresh, attn, qd
    return o.reshape(NC, B, H * G, C, V).permute(1, 0, 3, 2, 4), final.reshape(B, H * G, K, V)


def _state_free_terms(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    shapes: GDNShapes,
    scale: float,
    use_qk_l2norm: bool,
    C: int,
) -> tuple[torch.Tensor, ...]:
    """``u, w, kd, chunk_decay, attn, qd`` in the chunk-major layout (compute-dtype inputs).

    k and q are stacked per chunk (``[NC, B*H, 2, C, K]``, rows k then q): one re-layout copy,
    one norm, one scaling pass, and one product ``[K; Q] K^T`` for the UT system's scores and
    the output's, multiplied by the decay in one pass (the q rows are ``attn``, a view)."""
    cd = q.dtype
    B, T = q.shape[0], q.shape[1]
    H, G, K = shapes.H, shapes.group, shapes.K
    NC = -(-T // C)
    BH = B * H
    kq = torch.stack((_chunk_view(k, NC, C), _chunk_view(q, NC, C)), dim=3).view(NC, BH, 2, C, K)
    factor = _row_scale(scale, cd, q.device)  # [2, 1, 1]: 1 for the k rows, scale for the q rows
    if use_qk_l2norm:  # the scale rides on the l2norm's per-row factor: one pass, not two
        factor = _inv_norm(kq) * factor
    kq = kq * factor if kq.requires_grad and torch.is_grad_enabled() else kq.mul_(factor)
    kq3 = kq.view(NC * BH, 2 * C, K)
    # unbind, not slices: its backward is one stack, where every slice's backward is a
    # zero-filled full-size buffer that autograd then adds up (measured 8 % of a fwd+bwd).
    k_part, q_part = kq.unbind(2)  # [NC, BH, C, K] each
    k3 = k_part.view(NC * BH, C, K)
    gc = _chunk_major(g.unsqueeze(-1), NC, C, G).squeeze(-1)  # [NC, BH, G, C]
    bc = _chunk_major(beta.unsqueeze(-1), NC, C, G).squeeze(-1)
    # In-chunk cumulative log decay and its pairwise differences in float64 (see prepare_chunks:
    # the FP32 cumsum was the largest error term); the heavy products below stay FP32.
    gamma = gc.double().cumsum(-1)
    decay = _PairwiseDecay.apply(gamma, cd)  # [NC, BH, G, C, C], zero above the diagonal
    exp_gamma = _exp_flushed(gamma, cd)
    # [NC, BH, G, 2, C, C]: K K^T * D and the decayed causal scores Q K^T * D (incl. diagonal)
    scores = torch.bmm(kq3, k3.transpose(1, 2)).view(NC, BH, 1, 2, C, C) * decay.unsqueeze(3)
    kk_decayed, attn = scores.unbind(3)
    # The inverse reads only the strict lower triangle, so the UT system needs no tril(): the
    # diagonal of beta*KK^T*D is never referenced.
    inverse = _UnitLowerInverse.apply(kk_decayed * bc[..., :, None])
    inverse = inverse * bc[..., None, :]  # (I + A)^-1 diag(beta)
    u = inverse @ _chunk_major(v, NC, C, G)  # [NC, BH, G, C, V]
    # w = inverse diag(exp(gamma)) K: the decay scales the [C, C] inverse's columns (cheaper than
    # the [C, K] keys), and the G value heads stack as rows over their shared key block.
    w = torch.bmm((inverse * exp_gamma[..., None, :]).reshape(NC * BH, G * C, C), k3)
    del inverse
    w = w.reshape(NC, BH, G, C, K)
    gamma_last = gamma[..., -1:]
    kd = k_part.unsqueeze(2) * _exp_flushed(gamma_last - gamma, cd)[..., None]  # to chunk end
    qd = q_part.unsqueeze(2) * exp_gamma[..., None]
    return u, w, kd, _exp_flushed(gamma_last, cd), attn, qd


@constant_cache(maxsize=64)
def _row_scale(scale: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``[[[1]], [[scale]]]``: multiplies the stacked (k, q) rows (read-only, cached)."""
    return torch.tensor([[[1.0]], [[scale]]], dtype=dtype, device=device)


def _chunk_view(x: torch.Tensor, NC: int, C: int) -> torch.Tensor:
    """``[B, T, heads, D]`` -> a ``[NC, B, heads, C, D]`` view (zero-padded at the end: a copy)."""
    B, T, heads, D = x.shape
    if NC * C != T:
        x = torch.nn.functional.pad(x, (0, 0, 0, 0, 0, NC * C - T))
    return x.reshape(B, NC, C, heads, D).permute(1, 0, 3, 2, 4)


def _chunk_major(x: torch.Tensor, NC: int, C: int, G: int) -> torch.Tensor:
    """``[B, T, heads, D]`` -> ``[NC, B * heads / G, G, C, D]`` (zero-padded at the end)."""
    B, T, heads, D = x.shape
    if NC * C != T:
        x = torch.nn.functional.pad(x, (0, 0, 0, 0, 0, NC * C - T))
    x = x.reshape(B, NC, C, heads, D).permute(1, 0, 3, 2, 4)
    return x.reshape(NC, B * heads // G, G, C, D)


def _to_chunks(x: torch.Tensor, pad: int, NC: int, C: int) -> torch.Tensor:
    """``[B, T, heads, D]`` -> ``[B, heads, NC, C, D]`` (zero-padded at the end)."""
    x = x.transpose(1, 2)
    if pad:
        x = torch.nn.functional.pad(x, (0, 0, 0, pad))
    return x.reshape(x.shape[0], x.shape[1], NC, C, x.shape[-1])
