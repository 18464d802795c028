"""Elementwise and small-matrix building blocks of the torch chunk path (see :mod:`._chunk_torch`).

The pairwise in-chunk decay with its cancellation-free backward, the unit-lower-triangular
inverse of the UT transform, the flushed ``exp`` and the l2norm factor. Accuracy notes (why the
cumulative log decay and its differences are float64, why the decay gradient is formed from
block sums) are in the package README, "Accuracy".
"""

from __future__ import annotations

import functools
import math

import torch

from hybrid_numerics._constants import constant_cache

#: Log decay factors below this are flushed to exactly 0 (FP32; ``-600`` for float64).
FLUSH_LOG = -60.0


def _flush_log(dtype: torch.dtype) -> float:
    return -600.0 if dtype == torch.float64 else FLUSH_LOG


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
        decay = _pairwise_decay(gamma, dtype)
        ctx.save_for_backward(decay)
        return decay

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx, d_decay: torch.Tensor
    ) -> tuple[torch.Tensor, None]:
        (decay,) = ctx.saved_tensors  # type: ignore[attr-defined]
        return _pairwise_decay_grad(d_decay * decay), None


def _pairwise_decay(gamma: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The forward of :class:`_PairwiseDecay` in five passes over ``[.., C, C]``: the float64
    difference rounded straight into ``dtype`` (one op), ``-inf`` added above the diagonal,
    clamped to ``[floor, 0]`` (so the exp never sees ``-inf`` or an underflowing argument),
    ``exp``, and everything at ``exp(floor)`` or below set to 0 (the clamped entries: the upper
    triangle and the negligible ones). Measured on 64 x 4 blocks of 32 x 32: 0.47-0.55 ms
    instead of 0.92-1.0 ms for the masked version (difference, cast, compare, triangle,
    or, clamp, exp, masked fill), bit-identical."""
    C = gamma.shape[-1]
    floor = _flush_log(dtype)
    decay = torch.empty((*gamma.shape, C), dtype=dtype, device=gamma.device)
    torch.sub(gamma[..., :, None], gamma[..., None, :], out=decay)
    decay.add_(_upper_minus_inf(C, dtype, gamma.device)).clamp_(floor, 0.0).exp_()
    return torch.nn.functional.threshold(decay, _exp_floor(dtype), 0.0, inplace=True)


@constant_cache(maxsize=16)
def _upper_minus_inf(C: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``[C, C]``: ``-inf`` above the diagonal, 0 on and below it (read-only, cached)."""
    upper = torch.ones(C, C, dtype=torch.bool, device=device).triu(1)
    return torch.zeros(C, C, dtype=dtype, device=device).masked_fill_(upper, -math.inf)


@functools.lru_cache(maxsize=4)
def _exp_floor(dtype: torch.dtype) -> float:
    """``exp(floor)`` as ``dtype`` rounds it: the value every clamped entry takes."""
    return float(torch.tensor(_flush_log(dtype), dtype=dtype).exp())


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


@constant_cache(maxsize=8)
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


def _unit_lower_inverse(a: torch.Tensor) -> torch.Tensor:
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    x: torch.Tensor = torch.linalg.solve_triangular(a, eye, upper=False, unitriangular=True)
    return x


def _exp_flushed(log_x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``exp(log_x)`` in ``dtype`` with factors below ``exp(-60)`` (``exp(-600)`` in float64)
    set to exactly 0, as in :class:`_PairwiseDecay`. Strong decays otherwise leave FP32
    denormals in the decayed keys / queries and the chunk decay, and every product that touches
    a denormal on a CPU is an order of magnitude slower (measured: the scan's state decay and the
    key/query scaling took 4-10x longer at the app's gate parameters). The exp runs in the
    dtype of ``log_x`` (float64 for the cumulative decay: see the README on accuracy)."""
    # Out of place: under autograd (float64 runs) ``to`` may return exp's own output.
    return torch.nn.functional.threshold(log_x.exp().to(dtype), _exp_floor(dtype), 0.0)


def _inv_norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``rsqrt(sum(x**2) + eps)`` over the last dim (the factor of :func:`l2norm`)."""
    # vector_norm reads x once (no [.., D] temporary of squares, unlike (x * x).sum()).
    return torch.rsqrt(torch.linalg.vector_norm(x, dim=-1, keepdim=True).square() + eps)
