"""Launchers for the Triton kernels (imported lazily: only when the Triton backend is chosen).

* Chunk path without a gradient (prefill, scoring): the fused Triton forward
  (:mod:`hybrid_numerics._triton_chunk`) - intra-chunk, scan and output kernels, native varlen,
  the final state written by the kernel into its own buffer and/or the state-cache slots.
* Chunk path with a gradient (training): the same fused forward inside an autograd Function
  whose backward is Triton kernels only (:mod:`hybrid_numerics._triton_chunk_bwd`), native
  varlen in both directions.
* Decode: one fused kernel, forward only, the FP32 cache updated in place.

No torch product touches a state on these paths: every state dot is an FP32 ``ieee`` Triton dot.
"""

from __future__ import annotations

from typing import Literal

import torch
import triton

from hybrid_numerics._chunk_torch import compute_dtype
from hybrid_numerics._errors import GDNInputError
from hybrid_numerics._triton_chunk import chunk_forward
from hybrid_numerics._triton_chunk_bwd import ChunkCall, ChunkGatedDeltaRule
from hybrid_numerics._triton_config import INTERPRET
from hybrid_numerics._triton_kernels import recurrent_kernel
from hybrid_numerics._validate import GDNShapes


def run_triton(
    mode: Literal["chunk", "recurrent"],
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
    state_cache: torch.Tensor | None,
    state_indices: torch.Tensor | None,
    needs_grad: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Dispatch to the Triton kernels; same contract as the torch paths (inputs validated).

    ``offsets``: host copy of ``cu_seqlens`` (the chunk path plans its chunks with it; the
    decode kernel reads ``cu_seqlens`` on the device and never needs it)."""
    if not q.is_cuda and not INTERPRET:
        raise GDNInputError(
            "backend='triton' needs CUDA tensors, or TRITON_INTERPRET=1 set before importing "
            "hybrid_numerics kernels (CPU interpreter)"
        )
    if compute_dtype(q) != torch.float32:
        raise GDNInputError("the Triton kernels compute in FP32; use backend='torch' for float64")
    if mode == "recurrent":
        return _recurrent(q, k, v, g, beta, shapes, scale, initial_state, output_final_state,
                          cu_seqlens, use_qk_l2norm, state_cache, state_indices)  # fmt: skip
    if cu_seqlens is not None and offsets is None:
        offsets = [int(x) for x in cu_seqlens.tolist()]
    if not needs_grad:
        return chunk_forward(
            q, k, v, g, beta, shapes, scale=scale, initial_state=initial_state,
            output_final_state=output_final_state, cu_seqlens=cu_seqlens, offsets=offsets,
            use_qk_l2norm=use_qk_l2norm, state_cache=state_cache, state_indices=state_indices,
        )  # fmt: skip
    from hybrid_numerics._api import gather_states, scatter_states

    use_cache = state_cache is not None and state_indices is not None
    if use_cache:
        assert state_cache is not None
        assert state_indices is not None
        initial_state = gather_states(state_cache, state_indices, torch.float32)
    call = ChunkCall(shapes, scale, use_qk_l2norm, cu_seqlens, offsets)
    o, final = ChunkGatedDeltaRule.apply(q, k, v, g, beta, initial_state, call)
    if use_cache:
        assert state_cache is not None
        assert state_indices is not None
        scatter_states(state_cache, state_indices, final)
    return o, (final if output_final_state else None)


def _recurrent(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    shapes: GDNShapes,
    scale: float,
    initial_state: torch.Tensor | None,
    output_final_state: bool,
    cu_seqlens: torch.Tensor | None,
    use_qk_l2norm: bool,
    state_cache: torch.Tensor | None,
    state_indices: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    HV, K, V, N = shapes.HV, shapes.K, shapes.V, shapes.N
    o = torch.empty(q.shape[0], q.shape[1], HV, V, dtype=v.dtype, device=q.device)
    use_slots = state_cache is not None and state_indices is not None
    final = None
    if output_final_state:
        final = torch.empty(N, HV, K, V, dtype=torch.float32, device=q.device)
    if use_slots:
        h0 = ht = state_cache  # read and written in place, one distinct slot per program
    else:
        h0 = initial_state.float().contiguous() if initial_state is not None else o
        ht = final if final is not None else o
    BK = triton.next_power_of_2(K)
    # No autotuner here: tuning re-runs the kernel, which would apply an in-place update twice.
    BV = min(triton.next_power_of_2(V), 16 if INTERPRET else 32)
    recurrent_kernel[decode_grid(N, HV, V, BV)](
        q, k, v, g, beta, o, h0, ht, final if final is not None else o,
        state_indices if use_slots else o, cu_seqlens if cu_seqlens is not None else o,
        scale, shapes.T,
        H=shapes.H, HV=HV, K=K, V=V, BK=BK, BV=BV,
        USE_INITIAL=use_slots or initial_state is not None,
        STORE_FINAL=use_slots or output_final_state, USE_SLOTS=use_slots,
        STORE_OUT=use_slots and output_final_state,
        IS_VARLEN=cu_seqlens is not None, USE_L2NORM=use_qk_l2norm,
    )  # fmt: skip
    return o, final


#: CUDA's limit on grid axes 1 and 2 (axis 0 allows 2^31 - 1).
GRID_YZ_LIMIT = 65_535


def decode_grid(N: int, HV: int, V: int, BV: int) -> tuple[int, int]:
    """The decode kernel's grid: sequences x value heads on axis 0 (4,096 sequences at HV = 32
    are 131,072 programs, twice what axis 1 would take), V blocks on axis 1."""
    grid = (N * HV, triton.cdiv(V, BV))
    if grid[1] > GRID_YZ_LIMIT:  # pragma: no cover - V would have to exceed 1M
        raise GDNInputError(f"value head dim {V} needs {grid[1]} blocks on grid axis 1")
    return grid
