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
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from hybrid_numerics._precision_flags import ieee_fp32, state_bmm
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
    step = max(1, BLOCK_ELEMENTS // (per_token * C)) * C
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
    """``u, w, kd, chunk_decay, attn, qd`` in the chunk-major layout (compute-dtype inputs)."""
    cd = q.dtype
    B, T = q.shape[0], q.shape[1]
    H, G, K = shapes.H, shapes.group, shapes.K
    NC = -(-T // C)
    # The scale rides on the l2norm's per-row factor: one pass over q instead of two.
    qc = _chunk_major(q * (_inv_norm(q) * scale) if use_qk_l2norm else q * scale, NC, C, 1)
    kc = _chunk_major(k * _inv_norm(k) if use_qk_l2norm else k, NC, C, 1)  # [NC, BH, 1, C, K]
    gc = _chunk_major(g.unsqueeze(-1), NC, C, G).squeeze(-1)  # [NC, BH, G, C]
    bc = _chunk_major(beta.unsqueeze(-1), NC, C, G).squeeze(-1)
    # In-chunk cumulative log decay and its pairwise differences in float64 (see prepare_chunks:
    # the FP32 cumsum was the largest error term); the heavy products below stay FP32.
    gamma = gc.double().cumsum(-1)
    decay = _PairwiseDecay.apply(gamma, cd)  # [NC, BH, G, C, C], zero above the diagonal
    exp_gamma = _exp_flushed(gamma, cd)
    k3 = kc.reshape(NC * B * H, C, K)
    kt = k3.transpose(1, 2)
    # The inverse reads only the strict lower triangle, so the UT system needs no tril(): the
    # diagonal of beta*KK^T*D is never referenced.
    system = torch.bmm(k3, kt).reshape(NC, B * H, 1, C, C) * decay * bc[..., :, None]
    inverse = _UnitLowerInverse.apply(system)
    del system
    inverse = inverse * bc[..., None, :]  # (I + A)^-1 diag(beta)
    u = inverse @ _chunk_major(v, NC, C, G)  # [NC, BH, G, C, V]
    # w = inverse diag(exp(gamma)) K: the decay scales the [C, C] inverse's columns (cheaper than
    # the [C, K] keys), and the G value heads stack as rows over their shared key block.
    w = torch.bmm((inverse * exp_gamma[..., None, :]).reshape(NC * B * H, G * C, C), k3)
    del inverse
    w = w.reshape(NC, B * H, G, C, K)
    gamma_last = gamma[..., -1:]
    kd = kc * _exp_flushed(gamma_last - gamma, cd)[..., None]  # keys decayed to the chunk end
    qk = torch.bmm(qc.reshape(NC * B * H, C, K), kt).reshape(NC, B * H, 1, C, C)
    attn = qk * decay  # decayed causal scores incl. the diagonal
    qd = qc * exp_gamma[..., None]
    return u, w, kd, _exp_flushed(gamma_last, cd), attn, qd


class _PairwiseDecay(torch.autograd.Function):
    """``D_ij = exp(gamma_i - gamma_j)`` for ``i >= j``, else 0, from the float64 in-chunk
    cumulative log decay ``gamma: [..., C]``; ``D`` in the compute dtype.

    The differences are rounded to FP32 only after the float64 subtraction (relative error 6e-8
    of the difference itself, unlike the FP32 cumsum's error of the running sum), and the exp
    runs in FP32 (several times cheaper than a float64 exp over ``[.., C, C]``). Differences
    below ``-60`` (``D < 1e-26``; ``-600`` for float64) are set to exactly 0 with the upper
    triangle: far below the rounding of anything they multiply, and a CPU ``exp`` is 3x slower
    on ``-inf`` and 10-30x slower below ``-87`` (FP32 underflow and denormals), which strong
    decays (large ``A_log``) produce for most entries of a chunk. Backward: see
    :func:`_pairwise_decay_grad`.
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx, gamma: torch.Tensor, dtype: torch.dtype
    ) -> torch.Tensor:
        C = gamma.shape[-1]
        floor = -600.0 if dtype == torch.float64 else -60.0
        diff = (gamma[..., :, None] - gamma[..., None, :]).to(dtype)
        dead = diff < floor
        dead |= torch.ones(C, C, dtype=torch.bool, device=gamma.device).triu(1)
        decay = diff.clamp_(floor, 0.0).exp_().masked_fill_(dead, 0.0)
        ctx.save_for_backward(decay)
        return decay

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx, d_decay: torch.Tensor
    ) -> tuple[torch.Tensor, None]:
        (decay,) = ctx.saved_tensors  # type: ignore[attr-defined]
        return _pairwise_decay_grad(d_decay * decay), None


def _pairwise_decay_grad(t: torch.Tensor) -> torch.Tensor:
    """The float64 gradient wrt ``gamma`` of :class:`_PairwiseDecay`, from ``t = dD * D``.

    ``D_ij = exp(sum_{j < l <= i} g_l)`` with ``g`` the per-token log decay (``gamma = cumsum(g)``),
    so ``dD_ij / dg_k = D_ij [j < k <= i]`` and

        dL/dg_k = sum_{i >= k > j} t_ij                  (the block of t straddling k)

    with no cancellation. The textbook ``dgamma_i = sum_j t_ij - sum_j t_ji`` is the same in
    exact arithmetic, but in FP32 it subtracts a row sum from a column sum that both contain the
    diagonal ``t_ii`` (``D_ii = 1``: the largest entries of ``t`` under strong decay) and
    neighbours that cancel again in the cumsum's backward; their rounding (~6e-8 |t_ii|) exceeded
    the gradients of ``A_log`` / ``dt_bias`` in a model training step (5e-6 - 1.5e-1 off float64
    there; this form: <= 2.7e-6, the same as float64 sums of the FP32 ``t``).

    The block sums are one GEMM with the fixed 0/1 matrix of :func:`_straddle_matrix`
    (``[.., C*C] x [C*C, C]``; 2 C^3 flops, but a single contiguous product: measured 1.4 ms vs
    0.9 ms for the two sums on 256 blocks of 64 x 64, 0.41 vs 0.48 ms on 3200 of 16 x 16).
    Since the caller's ``gamma`` is ``cumsum(g)`` (float64 autograd), the result is returned as
    ``dgamma_i = dg_i - dg_{i+1}`` (``dg_C = 0``): exact in float64 for FP32 ``dg``, and the
    cumsum's backward telescopes it back to ``dg``.
    """
    C = t.shape[-1]
    flat = t.reshape(-1, C * C) @ _straddle_matrix(C, t.dtype, t.device)
    dg = flat.reshape(t.shape[:-1]).double()
    return torch.cat((dg[..., :-1] - dg[..., 1:], dg[..., -1:]), dim=-1)


@functools.lru_cache(maxsize=8)
def _straddle_matrix(C: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``M[i * C + j, k] = [j < k <= i]``, ``[C * C, C]``: ``t.flatten() @ M`` sums, for each
    ``k``, the entries of ``t`` whose decay ``D_ij`` contains ``g_k``."""
    r = torch.arange(C, device=device)
    i, j, k = r[:, None, None], r[None, :, None], r[None, None, :]
    return ((j < k) & (k <= i)).to(dtype).reshape(C * C, C)


class _UnitLowerInverse(torch.autograd.Function):
    """``(I + A)^-1`` for the strict lower triangle of ``A: [..., n, n]`` (the rest is ignored).

    Forward: blocked, ``[[X11, 0], [-X22 A21 X11, X22]]`` with the diagonal halves of every
    level inverted in one batched call, down to 8 x 8 blocks solved by ``solve_triangular``.
    Batched triangular solves of many small matrices are slow on a CPU (one LAPACK call per
    matrix): at 256 blocks of 64 x 64 this is ~2x faster, and the backward is two batched
    products, ``dA = -strict_lower(X^T dX X^T)``, instead of autograd's solve-based formula.
    """

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, a: torch.Tensor) -> torch.Tensor:
        x = _unit_lower_inverse(a.detach())
        ctx.save_for_backward(x)
        return x

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: torch.autograd.function.FunctionCtx, dx: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors  # type: ignore[attr-defined]
        xt = x.transpose(-1, -2)
        da: torch.Tensor = (xt @ dx @ xt).neg_().tril_(-1)
        return da


def _unit_lower_inverse(a: torch.Tensor, base: int = 8) -> torch.Tensor:
    n = a.shape[-1]
    if n <= base or n % 2:
        eye = torch.eye(n, dtype=a.dtype, device=a.device)
        x: torch.Tensor = torch.linalg.solve_triangular(a, eye, upper=False, unitriangular=True)
        return x
    m = n // 2
    halves = _unit_lower_inverse(torch.stack((a[..., :m, :m], a[..., m:, m:])), base)
    x = a.new_zeros(a.shape)
    x[..., :m, :m] = halves[0]
    x[..., m:, m:] = halves[1]
    torch.matmul(-(halves[1] @ a[..., m:, :m]), halves[0], out=x[..., m:, :m])
    return x


def _exp_flushed(log_x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``exp(log_x)`` in ``dtype`` with factors below ``exp(-60)`` (``exp(-600)`` in float64)
    set to exactly 0, as in :class:`_PairwiseDecay`. Strong decays otherwise leave FP32
    denormals in the decayed keys / queries and the chunk decay, and every product that touches
    a denormal on a CPU is an order of magnitude slower (measured: the scan's state decay and the
    key/query scaling took 4-10x longer at the app's gate parameters)."""
    floor = -600.0 if dtype == torch.float64 else -60.0
    return log_x.exp().to(dtype).masked_fill(log_x < floor, 0.0)


def _inv_norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``rsqrt(sum(x**2) + eps)`` over the last dim (the factor of :func:`l2norm`)."""
    # vector_norm reads x once (no [.., D] temporary of squares, unlike (x * x).sum()).
    return torch.rsqrt(torch.linalg.vector_norm(x, dim=-1, keepdim=True).square() + eps)


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


def _scan_states(
    u: torch.Tensor,
    w: torch.Tensor,
    kd: torch.Tensor,
    chunk_decay: torch.Tensor,
    initial_state: torch.Tensor | None,
    K: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The only sequential part: per chunk ``fresh = u - w S`` then
    ``S <- exp(c_C) S + Kd^T fresh``, on chunk-major ``[NC, N, C, D]`` terms (N = B*HV).
    Returns the states entering each chunk ``[NC, N, K, V]`` (FP32), the final state
    ``[N, K, V]`` (its own tensor) and ``fresh: [NC, N, C, V]``."""
    NC, C, V = u.shape[0], u.shape[-2], u.shape[-1]
    u, w, kd = u.reshape(NC, -1, C, V), w.reshape(NC, -1, C, K), kd.reshape(NC, -1, C, K)
    N = u.shape[1]
    decay = chunk_decay.reshape(NC, N, 1, 1)
    if initial_state is None:
        state = u.new_zeros(N, K, V)
    else:
        state = initial_state.to(u.dtype).reshape(N, K, V)
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (u, w, kd, decay, state))):
        states, fresh = _scan_inplace(u, w, kd, decay, state)
        # A copy, not a view: a view would keep all NC + 1 states alive as long as the caller
        # holds the final state.
        return states[:NC], states[NC].clone(), fresh
    entering, final, fresh = _Scan.apply(u, w, kd, decay, state)
    return entering, final, fresh


class _Scan(torch.autograd.Function):
    """The chunk scan with a hand-written backward.

    Autograd through the per-chunk loop records three ops per chunk and, in backward, computes
    every weight gradient inside the sequential loop (small products, one launch each, plus the
    stack/unbind copies). Only the state gradient is sequential: walking the chunks backwards,

        dfresh_c = dfresh_c(ext) + Kd_c dS_{c+1}
        dS_c     = dS_c(ext) + a_c dS_{c+1} - W_c^T dfresh_c

    and everything else is one batched product after the loop: ``du = dfresh``,
    ``dW = -dfresh S^T``, ``dKd = fresh dS_{+1}^T``, ``da = <S, dS_{+1}>``.
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        u: torch.Tensor,
        w: torch.Tensor,
        kd: torch.Tensor,
        decay: torch.Tensor,
        state: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            states, fresh = _scan_inplace(u, w, kd, decay, state)
        # Entering states and the final state as separate outputs: their gradients then arrive
        # separately, instead of autograd zero-filling an [NC + 1, ...] buffer to sum them into.
        entering, final = states[:-1], states[-1].clone()
        ctx.save_for_backward(w, kd, decay, entering, fresh)
        return entering, final, fresh

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx,
        d_entering: torch.Tensor,
        d_final: torch.Tensor,
        d_fresh: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        with ieee_fp32(d_final.is_cuda):
            return _scan_backward(ctx.saved_tensors, d_entering, d_final, d_fresh)  # type: ignore[attr-defined]


def _scan_backward(
    saved: tuple[torch.Tensor, ...],
    d_entering: torch.Tensor,
    d_final: torch.Tensor,
    d_fresh: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
    """The body of :meth:`_Scan.backward` (see there)."""
    w, kd, decay, states, fresh = saved
    NC, N, C, V = fresh.shape
    K = w.shape[-1]
    # d_s[c]: total gradient of the state entering chunk c (d_s[NC]: of the final state)
    d_s = torch.empty(NC + 1, N, K, V, dtype=fresh.dtype, device=fresh.device)
    d_s[NC].copy_(d_final)
    d_fresh_total = torch.empty_like(fresh)
    # <S_c, dS_{c+1}> per chunk, inside the loop: a batched dot product after it would need
    # an [NC, N, K, V] temporary (fresh memory, i.e. page faults, on a CPU).
    d_decay = fresh.new_empty(NC, N)
    for c in range(NC - 1, -1, -1):
        torch.linalg.vecdot(states[c].reshape(N, K * V), d_s[c + 1].reshape(N, K * V),
                            out=d_decay[c])  # fmt: skip
        torch.baddbmm(d_fresh[c], kd[c], d_s[c + 1], out=d_fresh_total[c])
        torch.mul(d_s[c + 1], decay[c], out=d_s[c])
        d_s[c].add_(d_entering[c])
        d_s[c].baddbmm_(w[c].transpose(1, 2), d_fresh_total[c], alpha=-1.0)
    flat_fresh = d_fresh_total.reshape(NC * N, C, V)
    d_w = torch.bmm(flat_fresh, states.reshape(NC * N, K, V).transpose(1, 2))
    d_kd = torch.bmm(fresh.reshape(NC * N, C, V), d_s[1:].reshape(NC * N, K, V).transpose(1, 2))
    d_decay = d_decay.reshape(NC, N, 1, 1)
    return d_fresh_total, d_w.neg_().reshape(w.shape), d_kd.reshape(kd.shape), d_decay, d_s[0]


def _scan_inplace(
    u: torch.Tensor, w: torch.Tensor, kd: torch.Tensor, decay: torch.Tensor, state: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The scan without autograd: states and corrections written straight into preallocated
    buffers (no per-chunk temporaries, no final stack copy)."""
    NC, N, V = u.shape[0], u.shape[1], u.shape[-1]
    states = u.new_empty(NC + 1, N, state.shape[1], V)
    states[0].copy_(state)
    fresh = torch.empty_like(u)
    for c in range(NC):
        torch.baddbmm(u[c], w[c], states[c], alpha=-1.0, out=fresh[c])
        torch.mul(states[c], decay[c], out=states[c + 1])
        states[c + 1].baddbmm_(kd[c].transpose(1, 2), fresh[c])
    return states, fresh
