"""The Triton chunk state scan as an autograd Function: FP32 forward and backward kernels.

Forward (:func:`chunk_state_kernel`): ``S_{c+1} = a_c S_c + Kd_c^T (u_c - W_c S_c)`` for every
chunk ``c``, every ``S_c`` stored in FP32. Backward mirrors the torch path's ``_Scan``: only the
state gradient is sequential (:func:`chunk_state_grad_kernel`, FP32, reverse over chunks),

    dfresh_c = Kd_c dS_{c+1}
    dS_c     = dS_c(ext) + a_c dS_{c+1} - W_c^T dfresh_c
    da_c     = <S_c, dS_{c+1}>

and the weight gradients are batched FP32 products after it: ``du = dfresh``,
``dW = -dfresh S_c^T``, ``dKd = fresh dS_{c+1}^T`` with ``fresh = u - W S_c`` recomputed from
the saved states (one batched product; cheaper in memory than saving ``fresh`` from the forward,
which the Triton forward never materialises). Unlike ``_Scan``, ``fresh`` is not an output
here: the Triton path's outputs read ``u``, ``W`` and the states directly
(:meth:`ChunkTerms.outputs`), so ``dfresh`` has no external part.

Layout (value-head-major, as the kernels want it): ``N = B * HV`` rows, ``W, Kd: [N, NC, C,
K]``, ``u: [N, NC, C, V]``, ``a: [N, NC]``, ``h0: [N, K, V]``, states ``[N, NC + 1, K, V]``
(entering states of the ``NC`` chunks, then the final state). Everything FP32 and contiguous.
"""

from __future__ import annotations

import torch
import triton

from hybrid_numerics._precision_flags import ieee_fp32
from hybrid_numerics._triton_kernels import chunk_state_grad_kernel, chunk_state_kernel


def scan_states(
    w: torch.Tensor,
    u: torch.Tensor,
    kd: torch.Tensor,
    decay: torch.Tensor,
    h0: torch.Tensor | None,
) -> torch.Tensor:
    """States ``[N, NC + 1, K, V]`` (FP32) of the chunk scan; differentiable in every input.

    ``h0 = None`` starts from zeros (and has no gradient)."""
    states: torch.Tensor = _TritonScan.apply(w, u, kd, decay, h0)
    return states


def _launch_forward(
    w: torch.Tensor, u: torch.Tensor, kd: torch.Tensor, decay: torch.Tensor, h0: torch.Tensor | None
) -> torch.Tensor:
    N, NC, C, K = w.shape
    V = u.shape[-1]
    states = torch.empty(N, NC + 1, K, V, dtype=torch.float32, device=w.device)

    def grid(meta: dict[str, int]) -> tuple[int, int]:
        return (N, triton.cdiv(V, meta["BV"]))

    chunk_state_kernel[grid](
        w, u, kd, decay, h0 if h0 is not None else states, states, NC,
        K=K, V=V, BK=triton.next_power_of_2(K), BC=C, USE_INITIAL=h0 is not None,
    )  # fmt: skip
    return states


def _launch_backward(
    w: torch.Tensor, kd: torch.Tensor, decay: torch.Tensor, states: torch.Tensor,
    d_states: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """``(d_s [N, NC+1, K, V], d_fresh [N, NC, C, V], d_decay [N, NC])``."""
    N, NC, C, K = w.shape
    V = states.shape[-1]
    d_s = torch.empty_like(states)
    d_fresh = torch.empty(N, NC, C, V, dtype=torch.float32, device=w.device)
    # Per-column partial sums of <S_c, dS_{c+1}>: their layout does not depend on the block
    # size, so an autotuner rerun with another BV overwrites every entry (see the kernel).
    d_decay_cols = torch.empty(N, NC, V, dtype=torch.float32, device=w.device)

    def grid(meta: dict[str, int]) -> tuple[int, int]:
        return (N, triton.cdiv(V, meta["BV"]))

    chunk_state_grad_kernel[grid](
        w, kd, decay, states, d_states, d_s, d_fresh, d_decay_cols, NC,
        K=K, V=V, BK=triton.next_power_of_2(K), BC=C,
    )  # fmt: skip
    return d_s, d_fresh, d_decay_cols.sum(-1)


class _TritonScan(torch.autograd.Function):
    """See the module docstring. Saves ``W, u, Kd, a`` and the states (FP32)."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        w: torch.Tensor,
        u: torch.Tensor,
        kd: torch.Tensor,
        decay: torch.Tensor,
        h0: torch.Tensor | None,
    ) -> torch.Tensor:
        states = _launch_forward(w, u, kd, decay, h0)
        ctx.save_for_backward(w, u, kd, decay, states)
        return states

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx, d_states: torch.Tensor
    ) -> tuple[torch.Tensor | None, ...]:
        with ieee_fp32(d_states.is_cuda):  # the torch products below touch the states
            return _scan_grads(ctx, d_states)


def _scan_grads(
    ctx: torch.autograd.function.FunctionCtx, d_states: torch.Tensor
) -> tuple[torch.Tensor | None, ...]:
    """The body of :meth:`_TritonScan.backward`."""
    w, u, kd, decay, states = ctx.saved_tensors  # type: ignore[attr-defined]
    need_w, need_u, need_kd, need_decay, need_h0 = ctx.needs_input_grad  # type: ignore[attr-defined]
    d_s, d_fresh, d_decay = _launch_backward(w, kd, decay, states, d_states.float().contiguous())
    NC = w.shape[1]
    entering = states[:, :NC]  # [N, NC, K, V], a strided view; matmul batches over it
    d_w = d_kd = None
    if need_w:
        d_w = torch.matmul(d_fresh, entering.transpose(-1, -2)).neg_()
    if need_kd:
        fresh = u - torch.matmul(w, entering)
        d_kd = torch.matmul(fresh, d_s[:, 1:].transpose(-1, -2))
    return (
        d_w,
        d_fresh if need_u else None,
        d_kd,
        d_decay if need_decay else None,
        d_s[:, 0].clone() if need_h0 else None,  # not a view pinning all of d_s
    )
