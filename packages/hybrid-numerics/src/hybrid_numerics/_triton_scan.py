"""The Triton chunk state scan as an autograd Function: FP32 forward and backward kernels.

Forward (:func:`chunk_state_kernel`): ``S_{c+1} = a_c S_c + Kd_c^T (u_c - W_c S_c)`` for every
chunk ``c``, every ``S_c`` stored in FP32. Backward mirrors the torch path's ``_Scan``: only the
state gradient is sequential (:func:`chunk_state_grad_kernel`, FP32, reverse over chunks),

    dfresh_c = Kd_c dS_{c+1}
    dS_c     = dS_c(ext) + a_c dS_{c+1} - W_c^T dfresh_c
    da_c     = <S_c, dS_{c+1}>

and the weight gradients ``du = dfresh``, ``dW = -dfresh S_c^T``, ``dKd = fresh dS_{c+1}^T``
come out of the same kernel (``fresh = u - W S_c`` recomputed there from the saved state:
cheaper in memory than saving it), as per-V-block partial sums the launcher adds up. Every
product that touches a state is an FP32 ``ieee`` dot. Unlike ``_Scan``, ``fresh`` is not an output
here: the Triton path's outputs read ``u``, ``W`` and the states directly
(:meth:`ChunkTerms.outputs`), so ``dfresh`` has no external part.

Layout (value-head-major, as the kernels want it): ``N = B * HV`` rows, ``W, Kd: [N, NC, C,
K]``, ``u: [N, NC, C, V]``, ``a: [N, NC]``, ``h0: [N, K, V]``, states ``[N, NC + 1, K, V]``
(entering states of the ``NC`` chunks, then the final state). Everything FP32 and contiguous.
"""

from __future__ import annotations

import torch
import triton

from hybrid_numerics._triton_config import INTERPRET
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
    w: torch.Tensor, u: torch.Tensor, kd: torch.Tensor, decay: torch.Tensor,
    states: torch.Tensor, d_states: torch.Tensor,
) -> tuple[torch.Tensor, ...]:  # fmt: skip
    """``(d_s [N, NC+1, K, V], d_fresh = du [N, NC, C, V], d_decay [N, NC], dW, dKd [N, NC, C, K])``."""
    N, NC, C, K = w.shape
    V = states.shape[-1]
    # One fixed block size (no autotuner): the partial sums below are laid out per V block.
    BV = 16 if INTERPRET else min(64, max(16, triton.next_power_of_2(V)))
    n_vb = triton.cdiv(V, BV)
    f32 = torch.float32
    d_s = torch.empty_like(states)
    d_fresh = torch.empty(N, NC, C, V, dtype=f32, device=w.device)
    d_decay_cols = torch.empty(N, NC, V, dtype=f32, device=w.device)
    d_w_part = torch.empty(n_vb, N, NC, C, K, dtype=f32, device=w.device)
    d_kd_part = torch.empty(n_vb, N, NC, C, K, dtype=f32, device=w.device)
    chunk_state_grad_kernel[(N, n_vb)](
        w, u, kd, decay, states, d_states, d_s, d_fresh, d_decay_cols, d_w_part, d_kd_part, NC,
        K=K, V=V, BK=max(16, triton.next_power_of_2(K)), BC=C, BV=BV,
        num_warps=1 if INTERPRET else 4,
    )  # fmt: skip
    return d_s, d_fresh, d_decay_cols.sum(-1), d_w_part.sum(0), d_kd_part.sum(0)


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
        return _scan_grads(ctx, d_states)


def _scan_grads(
    ctx: torch.autograd.function.FunctionCtx, d_states: torch.Tensor
) -> tuple[torch.Tensor | None, ...]:
    """The body of :meth:`_TritonScan.backward`: every gradient from the reverse-scan kernel
    (the weight gradients' sums over V blocks are the only torch ops, and touch no state)."""
    w, u, kd, decay, states = ctx.saved_tensors  # type: ignore[attr-defined]
    need_w, need_u, need_kd, need_decay, need_h0 = ctx.needs_input_grad  # type: ignore[attr-defined]
    d_s, d_fresh, d_decay, d_w, d_kd = _launch_backward(
        w, u, kd, decay, states, d_states.float().contiguous()
    )
    return (
        d_w if need_w else None,
        d_fresh if need_u else None,
        d_kd if need_kd else None,
        d_decay if need_decay else None,
        d_s[:, 0].clone() if need_h0 else None,  # not a view pinning all of d_s
    )
