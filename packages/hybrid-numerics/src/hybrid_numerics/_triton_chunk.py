"""Launcher of the fused Triton chunk forward (:mod:`hybrid_numerics._triton_chunk_kernels`).

Three launches, no torch arithmetic in between: the intra-chunk WY kernel, the state scan, the
output kernel. Intermediates (``w``, ``u``, the per-chunk states ``h``, the corrected values)
are FP32. Packed input is processed natively: the chunk table gives each sequence
``ceil(len / 64)`` chunks (a batch of one 4096-token and 63 16-token sequences is 127 chunks,
not 64 sequences padded to 4096). The backward (:mod:`hybrid_numerics._triton_chunk_bwd`)
re-runs the first two launches through :func:`wy_and_states` with the same :class:`ChunkPlan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import triton

from hybrid_numerics._triton_chunk_kernels import (
    chunk_o_fwd_kernel,
    chunk_state_fwd_kernel,
    chunk_wy_fwd_kernel,
)
from hybrid_numerics._triton_config import INTERPRET, chunk_tables
from hybrid_numerics._validate import GDNShapes

BT = 64  # chunk length of the Triton path


@dataclass(frozen=True)
class ChunkPlan:
    """Sizes and chunk tables of one call, shared by the forward and backward launches.

    ``cu`` is ``cu_seqlens`` for packed input (else a placeholder pointer the dense
    specialisation never reads); ``NT`` chunks in all, numbered as in :func:`chunk_tables`."""

    shapes: GDNShapes
    scale: float
    use_qk_l2norm: bool
    varlen: bool
    cu: torch.Tensor
    chunk_index: torch.Tensor
    chunk_offsets: torch.Tensor
    NT: int
    BK: int

    @property
    def rows(self) -> int:
        """Token rows of the ``[B·T, heads, dim]`` layout."""
        return self.shapes.B * self.shapes.T

    @property
    def inner_bv(self) -> int:
        """V block of the kernels that loop over all of V inside one program."""
        return 16 if INTERPRET else min(64, max(16, triton.next_power_of_2(self.shapes.V)))


def make_plan(
    shapes: GDNShapes,
    scale: float,
    use_qk_l2norm: bool,
    cu_seqlens: torch.Tensor | None,
    offsets: list[int] | None,
    device: torch.device,
) -> ChunkPlan:
    """The chunk tables of a call (``offsets``: host copy of ``cu_seqlens``, packed input)."""
    chunk_index, chunk_offsets, NT = chunk_tables(offsets, shapes.B, shapes.T, BT, device)
    return ChunkPlan(
        shapes, scale, use_qk_l2norm, cu_seqlens is not None,
        cu_seqlens if cu_seqlens is not None else chunk_offsets, chunk_index, chunk_offsets,
        NT, max(16, triton.next_power_of_2(shapes.K)),
    )  # fmt: skip


class ChunkStates(NamedTuple):
    """FP32 results of the WY kernel and the scan: ``h [NT, HV, K, V]`` (entering states),
    ``fresh [B·T, HV, V]``, ``w [B·T, HV, K]``."""

    h: torch.Tensor
    fresh: torch.Tensor
    w: torch.Tensor


def wy_and_states(
    plan: ChunkPlan,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    h0: torch.Tensor | None,
    *,
    ht: torch.Tensor | None = None,
    state_cache: torch.Tensor | None = None,
    state_indices: torch.Tensor | None = None,
    xs: torch.Tensor | None = None,
    load_x: bool = False,
) -> ChunkStates:
    """The WY kernel then the state scan. ``xs [B·T, HV, BT]`` FP32: where ``X = (I + A)⁻¹``
    is stored (``load_x=False``, a forward to be differentiated) or read from (``load_x``, the
    backward's recompute); ``ht``: the final states' buffer; ``state_cache``/
    ``state_indices``: start from and write back to cache slots, in place."""
    s = plan.shapes
    H, HV, K, V = s.H, s.HV, s.K, s.V
    f32, device = torch.float32, k.device
    w = torch.empty(plan.rows, HV, K, dtype=f32, device=device)
    u = torch.empty(plan.rows, HV, V, dtype=f32, device=device)
    fresh = torch.empty(plan.rows, HV, V, dtype=f32, device=device)
    h = torch.empty(plan.NT, HV, K, V, dtype=f32, device=device)
    dummy = torch.empty(1, dtype=f32, device=device)  # for pointers a specialisation never reads
    use_slots = state_cache is not None and state_indices is not None
    chunk_wy_fwd_kernel[(plan.NT, HV)](
        k, v, g, beta, w, u, xs if xs is not None else dummy, plan.cu, plan.chunk_index, s.T,
        H=H, HV=HV, K=K, V=V, BT=BT, BK=plan.BK, BV=plan.inner_bv,
        USE_L2NORM=plan.use_qk_l2norm, IS_VARLEN=plan.varlen,
        STORE_X=xs is not None and not load_x, LOAD_X=load_x,
        num_warps=1 if INTERPRET else 4,
    )  # fmt: skip

    def state_grid(meta: dict[str, int]) -> tuple[int, int]:
        return (s.N * HV, triton.cdiv(V, meta["BV"]))

    chunk_state_fwd_kernel[state_grid](
        k, w, u, g, h0 if h0 is not None else dummy, h, fresh,
        ht if ht is not None else dummy,
        state_cache if use_slots else dummy,
        state_indices if use_slots else plan.chunk_offsets,
        plan.cu, plan.chunk_offsets, s.T,
        H=H, HV=HV, K=K, V=V, BT=BT, BK=plan.BK,
        USE_INITIAL=h0 is not None, STORE_FINAL=ht is not None, USE_SLOTS=use_slots,
        USE_L2NORM=plan.use_qk_l2norm, IS_VARLEN=plan.varlen,
    )  # fmt: skip
    return ChunkStates(h, fresh, w)


def chunk_forward(
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
    offsets: list[int] | None,
    use_qk_l2norm: bool,
    state_cache: torch.Tensor | None = None,
    state_indices: torch.Tensor | None = None,
    xs: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(o [B, T, HV, V] in v.dtype, final [N, HV, K, V] FP32 contiguous or None)``.

    Inputs are validated; ``offsets`` is the host copy of ``cu_seqlens`` (packed input). With
    ``state_cache``/``state_indices`` the scan starts from the cache slots and writes the final
    states back in place (negative slot: zeros, no write), inside the kernel. ``xs [B·T, HV,
    64]`` FP32: also store every chunk's ``(I + A)⁻¹`` there (for the backward).
    """
    plan = make_plan(shapes, scale, use_qk_l2norm, cu_seqlens, offsets, q.device)
    HV, K, V, N = shapes.HV, shapes.K, shapes.V, shapes.N
    ht = None
    if output_final_state:
        ht = torch.empty(N, HV, K, V, dtype=torch.float32, device=q.device)
    h0 = initial_state.float().contiguous() if initial_state is not None else None
    h, fresh, _ = wy_and_states(
        plan, k, v, g, beta, h0, ht=ht, state_cache=state_cache, state_indices=state_indices,
        xs=xs,
    )  # fmt: skip
    o = torch.empty(shapes.B, shapes.T, HV, V, dtype=v.dtype, device=q.device)

    def o_grid(meta: dict[str, int]) -> tuple[int, int, int]:
        return (plan.NT, HV, triton.cdiv(V, meta["BV"]))

    chunk_o_fwd_kernel[o_grid](
        q, k, fresh, h, g, o, plan.cu, plan.chunk_index, scale, shapes.T,
        H=shapes.H, HV=HV, K=K, V=V, BT=BT, BK=plan.BK, USE_L2NORM=use_qk_l2norm,
        IS_VARLEN=plan.varlen, OUT_F32=v.dtype == torch.float32,
    )  # fmt: skip
    return o, ht
