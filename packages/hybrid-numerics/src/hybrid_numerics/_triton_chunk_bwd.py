"""The Triton chunk path with a gradient: an autograd Function whose forward is the fused
forward (:mod:`hybrid_numerics._triton_chunk`) and whose backward is Triton kernels only
(:mod:`hybrid_numerics._triton_chunk_bwd_kernels`), laid out like fla's
``ops/gated_delta_rule/chunk.py``.

Saved for backward: the inputs ``q, k, v, g, beta``, the initial state and, as fla saves its
``A``, every chunk's ``X = (I + A)⁻¹`` (FP32, ``[B·T, HV, 64]``: 256 bytes per token and value
head). The backward recomputes ``w``, ``u`` from ``X`` (no second forward substitution: under
the interpreter that substitution was 2/3 of a forward + backward) and re-runs the scan for the
FP32 per-chunk states ``h`` and the corrected values, as fla does: saving those instead would
keep ``NT·HV·K·V`` FP32 states per layer alive between forward and backward (2 GiB at
T = 32k, HV = 64, K = V = 128) for a recompute that costs one scan. Packed input runs
natively (the same chunk tables as the forward; no padding). The only torch arithmetic left
is the sum of a group of value heads' ``dq``/``dk`` into their q/k head and the casts to the
inputs' dtypes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import triton

from hybrid_numerics._triton_chunk import BT, ChunkPlan, chunk_forward, make_plan, wy_and_states
from hybrid_numerics._triton_chunk_bwd_kernels import (
    chunk_bwd_dqkwg_kernel,
    chunk_bwd_dv_local_kernel,
    chunk_state_bwd_kernel,
    chunk_wy_bwd_kernel,
)
from hybrid_numerics._validate import GDNShapes


@dataclass(frozen=True)
class ChunkCall:
    """The non-tensor arguments of one differentiable call (``offsets``: host copy of
    ``cu_seqlens``)."""

    shapes: GDNShapes
    scale: float
    use_qk_l2norm: bool
    cu_seqlens: torch.Tensor | None
    offsets: list[int] | None


class ChunkGatedDeltaRule(torch.autograd.Function):
    """``apply(q, k, v, g, beta, h0 or None, ChunkCall) -> (o [B, T, HV, V] in v.dtype,
    final [N, HV, K, V] FP32 contiguous)`` from validated inputs; gradients to q, k, v, g,
    beta (in their dtypes) and the initial state (FP32)."""

    @staticmethod
    def forward(
        ctx: Any,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        g: torch.Tensor,
        beta: torch.Tensor,
        h0: torch.Tensor | None,
        call: ChunkCall,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        s = call.shapes
        xs = torch.empty(s.B * s.T, s.HV, BT, dtype=torch.float32, device=q.device)
        o, final = chunk_forward(
            q, k, v, g, beta, s, scale=call.scale, initial_state=h0,
            output_final_state=True, cu_seqlens=call.cu_seqlens, offsets=call.offsets,
            use_qk_l2norm=call.use_qk_l2norm, xs=xs,
        )  # fmt: skip
        assert final is not None
        ctx.save_for_backward(q, k, v, g, beta, h0, xs)
        ctx.call = call
        return o, final

    @staticmethod
    def backward(ctx: Any, do: torch.Tensor, dht: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        q, k, v, g, beta, h0, xs = ctx.saved_tensors
        call: ChunkCall = ctx.call
        plan = make_plan(call.shapes, call.scale, call.use_qk_l2norm, call.cu_seqlens,
                         call.offsets, q.device)  # fmt: skip
        want_dh0 = h0 is not None and ctx.needs_input_grad[5]
        grads = chunk_backward(plan, q, k, v, g, beta, h0, xs, do.contiguous(),
                               dht.contiguous(), want_dh0)  # fmt: skip
        return (*grads, None)


def chunk_backward(
    plan: ChunkPlan,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    h0: torch.Tensor | None,
    xs: torch.Tensor,
    do: torch.Tensor,
    dht: torch.Tensor,
    want_dh0: bool,
) -> tuple[torch.Tensor | None, ...]:
    """``(dq, dk, dv, dg, dbeta, dh0 or None)`` of ``<o, do> + <final, dht>``; six launches.
    ``xs``: the forward's ``(I + A)⁻¹`` per chunk (``[B·T, HV, 64]`` FP32)."""
    s = plan.shapes
    H, HV, K, V, N = s.H, s.HV, s.K, s.V, s.N
    f32, device = torch.float32, q.device
    h0f = h0.float().contiguous() if h0 is not None else None
    h, fresh, w = wy_and_states(plan, k, v, g, beta, h0f, xs=xs, load_x=True)

    def per_token(D: int) -> torch.Tensor:
        return torch.empty(plan.rows, HV, D, dtype=f32, device=device)

    common = {"H": H, "HV": HV, "K": K, "V": V, "BT": BT, "BK": plan.BK,
              "USE_L2NORM": plan.use_qk_l2norm, "IS_VARLEN": plan.varlen}  # fmt: skip
    dv_local = per_token(V)
    chunk_bwd_dv_local_kernel[lambda m: (plan.NT, HV, triton.cdiv(V, m["BV"]))](
        q, k, g, do, dv_local, plan.cu, plan.chunk_index, plan.scale, s.T, **common
    )
    dh = torch.empty(plan.NT, HV, K, V, dtype=f32, device=device)
    dfresh = per_token(V)
    dh0 = torch.empty(N, HV, K, V, dtype=f32, device=device) if want_dh0 else None
    chunk_state_bwd_kernel[lambda m: (N * HV, triton.cdiv(V, m["BV"]))](
        q, k, g, w, do, dv_local, dht, dh, dfresh, dh0 if dh0 is not None else dh,
        plan.cu, plan.chunk_offsets, plan.scale, s.T,
        USE_FINAL_GRAD=True, STORE_INITIAL_GRAD=dh0 is not None, **common,
    )  # fmt: skip
    dq, dk_part, dw = per_token(K), per_token(K), per_token(K)
    dg_part = torch.empty(plan.rows, HV, dtype=f32, device=device)
    chunk_bwd_dqkwg_kernel[(plan.NT, HV)](
        q, k, g, h, dh, fresh, do, dfresh, dq, dk_part, dw, dg_part,
        plan.cu, plan.chunk_index, plan.scale, s.T, **common,
    )  # fmt: skip
    dk, dv = per_token(K), per_token(V)
    dbeta, dg = torch.empty_like(dg_part), torch.empty_like(dg_part)
    chunk_wy_bwd_kernel[(plan.NT, HV)](
        k, v, g, beta, xs, dw, dfresh, dk_part, dg_part, dk, dv, dbeta, dg,
        plan.cu, plan.chunk_index, s.T, **common,
    )  # fmt: skip
    B, T = s.B, s.T
    return (
        _to_key_heads(dq, B, T, H).to(q.dtype),
        _to_key_heads(dk, B, T, H).to(k.dtype),
        dv.view(B, T, HV, V).to(v.dtype),
        dg.view(B, T, HV).to(g.dtype),
        dbeta.view(B, T, HV).to(beta.dtype),
        dh0,
    )


def _to_key_heads(x: torch.Tensor, B: int, T: int, H: int) -> torch.Tensor:
    """``[B·T, HV, K]`` per value head -> ``[B, T, H, K]``: value head ``j`` read q/k head
    ``j // (HV // H)``, so a group's gradients add up."""
    HV, K = x.shape[1], x.shape[2]
    if HV == H:
        return x.view(B, T, H, K)
    return x.view(B, T, H, HV // H, K).sum(3)
