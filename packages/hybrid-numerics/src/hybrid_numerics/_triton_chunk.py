"""Launcher of the fused Triton chunk forward (:mod:`hybrid_numerics._triton_chunk_kernels`).

Three launches, no torch arithmetic in between: the intra-chunk WY kernel, the state scan, the
output kernel. Intermediates (``w``, ``u``, the per-chunk states ``h``, the corrected values)
are FP32. Packed input is processed natively: the chunk table gives each sequence
``ceil(len / 64)`` chunks (a batch of one 4096-token and 63 16-token sequences is 127 chunks,
not 64 sequences padded to 4096).
"""

from __future__ import annotations

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
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(o [B, T, HV, V] in v.dtype, final [N, HV, K, V] FP32 contiguous or None)``.

    Inputs are validated; ``offsets`` is the host copy of ``cu_seqlens`` (packed input). With
    ``state_cache``/``state_indices`` the scan starts from the cache slots and writes the final
    states back in place (negative slot: zeros, no write), inside the kernel.
    """
    B, T, H, K = q.shape
    HV, V, N = shapes.HV, shapes.V, shapes.N
    device = q.device
    chunk_index, chunk_offsets, NT = chunk_tables(offsets, B, T, BT, device)
    BK = max(16, triton.next_power_of_2(K))
    f32 = torch.float32
    w = torch.empty(B * T, HV, K, dtype=f32, device=device)
    u = torch.empty(B * T, HV, V, dtype=f32, device=device)
    fresh = torch.empty(B * T, HV, V, dtype=f32, device=device)
    h = torch.empty(NT, HV, K, V, dtype=f32, device=device)
    o = torch.empty(B, T, HV, V, dtype=v.dtype, device=device)
    ht = torch.empty(N, HV, K, V, dtype=f32, device=device) if output_final_state else None
    dummy = torch.empty(1, dtype=f32, device=device)  # for pointers a specialisation never reads
    h0 = initial_state.float().contiguous() if initial_state is not None else None
    use_slots = state_cache is not None and state_indices is not None
    varlen = cu_seqlens is not None
    cu = cu_seqlens if cu_seqlens is not None else chunk_offsets

    chunk_wy_fwd_kernel[(NT, HV)](
        k, v, g, beta, w, u, cu, chunk_index, T,
        H=H, HV=HV, K=K, V=V, BT=BT, BK=BK, BV=16 if INTERPRET else min(64, max(16, triton.next_power_of_2(V))),
        USE_L2NORM=use_qk_l2norm, IS_VARLEN=varlen,
        num_warps=1 if INTERPRET else 4,
    )  # fmt: skip

    def state_grid(meta: dict[str, int]) -> tuple[int, int]:
        return (N * HV, triton.cdiv(V, meta["BV"]))

    chunk_state_fwd_kernel[state_grid](
        k, w, u, g, h0 if h0 is not None else dummy, h, fresh,
        ht if ht is not None else dummy,
        state_cache if use_slots else dummy, state_indices if use_slots else chunk_offsets,
        cu, chunk_offsets, T,
        H=H, HV=HV, K=K, V=V, BT=BT, BK=BK,
        USE_INITIAL=h0 is not None, STORE_FINAL=ht is not None, USE_SLOTS=use_slots,
        USE_L2NORM=use_qk_l2norm, IS_VARLEN=varlen,
    )  # fmt: skip

    def o_grid(meta: dict[str, int]) -> tuple[int, int, int]:
        return (NT, HV, triton.cdiv(V, meta["BV"]))

    chunk_o_fwd_kernel[o_grid](
        q, k, fresh, h, g, o, cu, chunk_index, scale, T,
        H=H, HV=HV, K=K, V=V, BT=BT, BK=BK, USE_L2NORM=use_qk_l2norm, IS_VARLEN=varlen,
        OUT_F32=v.dtype == torch.float32,
    )  # fmt: skip
    return o, ht
