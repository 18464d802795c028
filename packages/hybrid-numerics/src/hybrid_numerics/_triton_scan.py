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
    chunk_offsets: torch.Tensor | None = None,
    HV: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(entering [R, NC, K, V], finals [N * HV, K, V])`` (FP32) of the chunk scan over ``R``
    data rows; differentiable in every input. Dense: ``N * HV = R``, row ``r`` is one
    sequence. Packed (``chunk_offsets [N + 1]``, int32): ``R = HV`` rows of one chunk-aligned
    batch, sequence ``n`` owning chunks ``chunk_offsets[n] ..< chunk_offsets[n + 1]`` (its
    state restarts from ``h0[n * HV + hv]``). ``h0 = None`` starts from zeros."""
    out: tuple[torch.Tensor, torch.Tensor] = _TritonScan.apply(
        w, u, kd, decay, h0, chunk_offsets, HV
    )
    return out


def _rows(w: torch.Tensor, chunk_offsets: torch.Tensor | None, HV: int) -> int:
    """Program rows (sequences x value heads)."""
    return w.shape[0] if chunk_offsets is None else (chunk_offsets.numel() - 1) * HV


def _launch_forward(
    w: torch.Tensor, u: torch.Tensor, kd: torch.Tensor, decay: torch.Tensor,
    h0: torch.Tensor | None, chunk_offsets: torch.Tensor | None, HV: int,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    R, NC, C, K = w.shape
    V = u.shape[-1]
    rows = _rows(w, chunk_offsets, HV)
    entering = torch.empty(R, NC, K, V, dtype=torch.float32, device=w.device)
    finals = torch.empty(rows, K, V, dtype=torch.float32, device=w.device)

    def grid(meta: dict[str, int]) -> tuple[int, int]:
        return (rows, triton.cdiv(V, meta["BV"]))

    chunk_state_kernel[grid](
        w, u, kd, decay, h0 if h0 is not None else finals, entering, finals,
        chunk_offsets if chunk_offsets is not None else finals, NC,
        K=K, V=V, BK=max(16, triton.next_power_of_2(K)), BC=C, HV=HV,
        USE_INITIAL=h0 is not None, VARLEN=chunk_offsets is not None,
    )  # fmt: skip
    return entering, finals


def _launch_backward(
    w: torch.Tensor, u: torch.Tensor, kd: torch.Tensor, decay: torch.Tensor,
    entering: torch.Tensor, d_entering: torch.Tensor, d_finals: torch.Tensor,
    chunk_offsets: torch.Tensor | None, HV: int,
) -> tuple[torch.Tensor, ...]:  # fmt: skip
    """``(d_h0 [N*HV, K, V], du [R, NC, C, V], d_decay [R, NC], dW, dKd [R, NC, C, K])``."""
    R, NC, C, K = w.shape
    V = u.shape[-1]
    rows = _rows(w, chunk_offsets, HV)
    # One fixed block size (no autotuner): the partial sums below are laid out per V block.
    BV = 16 if INTERPRET else min(64, max(16, triton.next_power_of_2(V)))
    n_vb = triton.cdiv(V, BV)
    f32 = torch.float32
    d_h0 = torch.empty(rows, K, V, dtype=f32, device=w.device)
    d_fresh = torch.empty(R, NC, C, V, dtype=f32, device=w.device)
    d_decay_cols = torch.empty(R, NC, V, dtype=f32, device=w.device)
    d_w_part = torch.empty(n_vb, R, NC, C, K, dtype=f32, device=w.device)
    d_kd_part = torch.empty(n_vb, R, NC, C, K, dtype=f32, device=w.device)
    chunk_state_grad_kernel[(rows, n_vb)](
        w, u, kd, decay, entering, d_entering, d_finals, d_h0, d_fresh, d_decay_cols,
        d_w_part, d_kd_part, chunk_offsets if chunk_offsets is not None else d_h0, NC, R,
        K=K, V=V, BK=max(16, triton.next_power_of_2(K)), BC=C, BV=BV, HV=HV,
        VARLEN=chunk_offsets is not None, num_warps=1 if INTERPRET else 4,
    )  # fmt: skip
    return d_h0, d_fresh, d_decay_cols.sum(-1), d_w_part.sum(0), d_kd_part.sum(0)


class _TritonScan(torch.autograd.Function):
    """See the module docstring. Saves ``W, u, Kd, a`` and the entering states (FP32)."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        w: torch.Tensor,
        u: torch.Tensor,
        kd: torch.Tensor,
        decay: torch.Tensor,
        h0: torch.Tensor | None,
        chunk_offsets: torch.Tensor | None,
        HV: int,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        entering, finals = _launch_forward(w, u, kd, decay, h0, chunk_offsets, HV)
        ctx.save_for_backward(w, u, kd, decay, entering)
        ctx.chunk_offsets = chunk_offsets  # type: ignore[attr-defined]
        ctx.HV = HV  # type: ignore[attr-defined]
        return entering, finals

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx, d_entering: torch.Tensor, d_finals: torch.Tensor
    ) -> tuple[torch.Tensor | None, ...]:
        """Every gradient from the reverse-scan kernel (the weight gradients' sums over V
        blocks are the only torch ops, and touch no state)."""
        w, u, kd, decay, entering = ctx.saved_tensors  # type: ignore[attr-defined]
        need_w, need_u, need_kd, need_decay, need_h0 = ctx.needs_input_grad[:5]  # type: ignore[attr-defined]
        d_h0, d_fresh, d_decay, d_w, d_kd = _launch_backward(
            w, u, kd, decay, entering, d_entering.float().contiguous(),
            d_finals.float().contiguous(), ctx.chunk_offsets, ctx.HV,  # type: ignore[attr-defined]
        )  # fmt: skip
        return (
            d_w if need_w else None,
            d_fresh if need_u else None,
            d_kd if need_kd else None,
            d_decay if need_decay else None,
            d_h0 if need_h0 else None,
            None,
            None,
        )
