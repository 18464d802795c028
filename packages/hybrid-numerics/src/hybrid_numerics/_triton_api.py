"""Launchers for the Triton kernels (imported lazily: only when the Triton backend is chosen).

The chunk path is a hybrid: the state-independent terms (UT transform, decayed keys/queries,
intra-chunk scores) are batched FP32 tensor ops (:func:`prepare_chunks`, shared with the torch
path), the sequential state scan is :func:`chunk_state_kernel` with FP32 states and FP32 dots,
and the outputs are one more batched FP32 product. The chunk path is differentiable: autograd
through the torch parts, and the scan's own backward kernel (:mod:`hybrid_numerics._triton_scan`).
The decode path is one fused kernel, forward only.
"""

from __future__ import annotations

from typing import Literal

import torch
import triton

from hybrid_numerics._chunk_torch import CHUNK_SIZE, compute_dtype, prepare_chunks
from hybrid_numerics._errors import GDNInputError
from hybrid_numerics._triton_kernels import INTERPRET, recurrent_kernel
from hybrid_numerics._triton_scan import scan_states
from hybrid_numerics._validate import GDNShapes
from hybrid_numerics._varlen import pad_packed, seq_bounds, unpad_packed


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
    use_qk_l2norm: bool,
    state_cache: torch.Tensor | None,
    state_indices: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Dispatch to the Triton kernels; same contract as the torch paths (inputs validated)."""
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
    from hybrid_numerics._api import gather_states, scatter_states

    use_cache = state_cache is not None and state_indices is not None
    if use_cache:
        assert state_cache is not None
        assert state_indices is not None
        initial_state = gather_states(state_cache, state_indices, torch.float32)
    o, final = _chunk(q, k, v, g, beta, shapes, scale, initial_state, cu_seqlens, use_qk_l2norm)
    if use_cache:
        assert state_cache is not None
        assert state_indices is not None
        scatter_states(state_cache, state_indices, final)
    return o.to(v.dtype), (final if output_final_state else None)


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
    o = torch.empty(q.shape[0], q.shape[1], HV, V, dtype=torch.float32, device=q.device)
    use_slots = state_cache is not None
    final = None
    if use_slots:
        h0 = ht = state_cache  # read and written in place, one distinct slot per program
    else:
        h0 = initial_state.float().contiguous() if initial_state is not None else o
        final = torch.empty(N, HV, K, V, dtype=torch.float32, device=q.device)
        ht = final
    BK = triton.next_power_of_2(K)
    # No autotuner here: tuning re-runs the kernel, which would apply an in-place update twice.
    BV = min(triton.next_power_of_2(V), 16 if INTERPRET else 32)
    grid = (triton.cdiv(V, BV), N * HV)
    recurrent_kernel[grid](
        q, k, v, g, beta, o, h0, ht,
        state_indices if use_slots else o, cu_seqlens if cu_seqlens is not None else o,
        scale, shapes.T,
        H=shapes.H, HV=HV, K=K, V=V, BK=BK, BV=BV,
        USE_INITIAL=use_slots or initial_state is not None,
        STORE_FINAL=use_slots or output_final_state, USE_SLOTS=use_slots,
        IS_VARLEN=cu_seqlens is not None, USE_L2NORM=use_qk_l2norm,
    )  # fmt: skip
    return o.to(v.dtype), (final if output_final_state and not use_slots else None)


def _chunk(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    shapes: GDNShapes,
    scale: float,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    bounds = None
    if cu_seqlens is not None:
        bounds = seq_bounds(cu_seqlens)
        q, k, v, g, beta = (pad_packed(x, bounds) for x in (q, k, v, g, beta))
    terms = prepare_chunks(q, k, v, g, beta, shapes, scale, use_qk_l2norm, CHUNK_SIZE)
    B, H, G, NC, C, V = terms.u.shape
    HV, K = H * G, shapes.K
    w = terms.w.expand(B, H, G, NC, C, K).reshape(B * HV, NC, C, K).contiguous()
    kd = terms.kd.expand(B, H, G, NC, C, K).reshape(B * HV, NC, C, K).contiguous()
    u = terms.u.reshape(B * HV, NC, C, V).contiguous()
    decay = terms.chunk_decay.reshape(B * HV, NC).contiguous()
    h0 = None
    if initial_state is not None:
        h0 = initial_state.float().reshape(B * HV, K, V).contiguous()
    # Differentiable: the scan's backward is the reverse-scan kernel (see _triton_scan); the
    # state-independent terms above and the outputs below go through autograd.
    states = scan_states(w, u, kd, decay, h0)
    states = states.reshape(B, H, G, NC + 1, K, V)
    o = terms.outputs(states, q.shape[1])
    final = states[:, :, :, NC].reshape(B, HV, K, V)
    if bounds is not None:
        o = unpad_packed(o, bounds)
    return o, final
