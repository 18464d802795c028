"""Public Gated DeltaNet entry points: validation, the fused gate, state caches, dispatch.

Dispatch (``backend="auto"``): Triton kernels for CUDA tensors, the vectorised PyTorch path on
CPU. The Triton chunk path is differentiable (its state scan has a Triton backward); the
recurrent kernel is forward-only, so ``auto`` runs a recurrent call that needs a gradient on the
torch path, and ``backend="triton"`` refuses one. ``backend="triton"`` forces the kernels, which
also run on CPU tensors under ``TRITON_INTERPRET=1`` (how CI tests them); ``backend="torch"``
forces the torch path.
"""

from __future__ import annotations

from typing import Literal

import torch

from hybrid_numerics._chunk_torch import chunk_torch, compute_dtype
from hybrid_numerics._errors import GDNInputError
from hybrid_numerics._gate import gdn_gate
from hybrid_numerics._recurrent_torch import recurrent_torch
from hybrid_numerics._validate import validate_gdn_inputs, validate_state_cache

Backend = Literal["auto", "torch", "triton"]
_BACKENDS = ("auto", "torch", "triton")


def chunk_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    cu_seqlens: torch.Tensor | None = None,
    use_qk_l2norm: bool = False,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    state_cache: torch.Tensor | None = None,
    state_indices: torch.Tensor | None = None,
    backend: Backend = "auto",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Chunked gated delta rule (training, prefill) with the recurrent state in FP32.

    Layout (fla's): ``q, k: [B, T, H, K]``; ``v: [B, T, HV, V]``, ``HV % H == 0`` (value head
    ``j`` reads q/k head ``j // (HV // H)``); ``g, beta: [B, T, HV]``; states ``[N, HV, K, V]``
    float32, ``N = B`` or ``len(cu_seqlens) - 1`` for packed input (``B == 1``).

    * ``g`` is the log-space decay (``<= 0``). If ``A_log: [HV]`` is given, ``g`` is instead the
      raw gate input ``a`` and the decay ``-exp(A_log) * softplus(a + dt_bias)`` is computed in
      FP32 here, with gradients for ``a``, ``A_log`` and ``dt_bias``.
    * ``scale`` defaults to ``K ** -0.5``; ``use_qk_l2norm`` L2-normalises q and k (eps 1e-6) in FP32.
    * ``state_cache: [S, HV, K, V]`` float32 with ``state_indices: [N]`` int: sequence ``n``
      starts from ``state_cache[state_indices[n]]`` and its final state is written back there
      **in place** (a negative index means: start from zeros, write nothing). Exclusive with
      ``initial_state``. The slot's content is the initial state: zero a slot before handing it
      to a new sequence.

    Returns ``(o, final_state)``: ``o: [B, T, HV, V]`` in ``v.dtype``; ``final_state`` float32
    ``[N, HV, K, V]`` when ``output_final_state`` else ``None``. Differentiable in every input,
    including ``initial_state``. Bad input raises :class:`GDNInputError` (a ``ValueError``)
    before any computation.
    """
    return _run("chunk", **locals())


def fused_recurrent_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    cu_seqlens: torch.Tensor | None = None,
    use_qk_l2norm: bool = False,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    state_cache: torch.Tensor | None = None,
    state_indices: torch.Tensor | None = None,
    backend: Backend = "auto",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Token-by-token gated delta rule (decode); same signature and results as
    :func:`chunk_gated_delta_rule` for any ``T``.

    The engine's use: ``T = 1`` per step, ``B`` running sequences, ``state_cache`` the engine's
    FP32 recurrent-state pool for this layer and ``state_indices[b]`` the slot of sequence ``b``;
    the cache is updated in place (the Triton kernel reads and writes the slots directly).
    """
    return _run("recurrent", **locals())


def _run(
    mode: Literal["chunk", "recurrent"],
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None,
    initial_state: torch.Tensor | None,
    output_final_state: bool,
    cu_seqlens: torch.Tensor | None,
    use_qk_l2norm: bool,
    A_log: torch.Tensor | None,
    dt_bias: torch.Tensor | None,
    state_cache: torch.Tensor | None,
    state_indices: torch.Tensor | None,
    backend: Backend,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    if backend not in _BACKENDS:
        raise GDNInputError(f"backend must be one of {_BACKENDS}, got {backend!r}")
    if dt_bias is not None and A_log is None:
        raise GDNInputError("dt_bias needs A_log (the fused gate); pass the decay as g otherwise")
    gate_params = None if A_log is None else (A_log, dt_bias)
    shapes = validate_gdn_inputs(
        q,
        k,
        v,
        g,
        beta,
        scale=scale,
        initial_state=initial_state,
        cu_seqlens=cu_seqlens,
        gate_params=gate_params,
    )
    all_live = validate_state_cache(state_cache, state_indices, shapes, initial_state, q.device)
    if A_log is not None:
        g = gdn_gate(g, A_log, dt_bias)
    scale_value = shapes.K**-0.5 if scale is None else float(scale)
    use_cache = state_cache is not None and state_indices is not None
    chosen = _choose_backend(backend, mode, q, k, v, g, beta, initial_state)
    if chosen == "triton":
        from hybrid_numerics._triton_api import run_triton  # lazy: keeps triton off the CPU path

        return run_triton(
            mode,
            q,
            k,
            v,
            g,
            beta,
            shapes,
            scale=scale_value,
            initial_state=initial_state,
            output_final_state=output_final_state,
            cu_seqlens=cu_seqlens,
            use_qk_l2norm=use_qk_l2norm,
            state_cache=state_cache,
            state_indices=state_indices,
        )
    if use_cache:
        assert state_cache is not None
        assert state_indices is not None
        initial_state = gather_states(state_cache, state_indices, compute_dtype(q), all_live)
    fn = chunk_torch if mode == "chunk" else recurrent_torch
    o, final = fn(
        q,
        k,
        v,
        g,
        beta,
        shapes,
        scale=scale_value,
        initial_state=initial_state,
        output_final_state=output_final_state or use_cache,
        cu_seqlens=cu_seqlens,
        use_qk_l2norm=use_qk_l2norm,
    )
    if use_cache:
        assert final is not None
        assert state_cache is not None
        assert state_indices is not None
        scatter_states(state_cache, state_indices, final, all_live)
    return o.to(v.dtype), (final if output_final_state else None)


def _choose_backend(
    backend: Backend, mode: Literal["chunk", "recurrent"], *tensors: torch.Tensor | None
) -> Literal["torch", "triton"]:
    """``auto``: Triton for CUDA tensors, except a recurrent call that needs a gradient (the
    recurrent kernel has no backward): that one, and CPU tensors, take the torch path."""
    present = [t for t in tensors if t is not None]
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in present)
    if backend == "triton" and mode == "recurrent" and needs_grad:
        # Running it would return an output detached from its inputs: silently no gradient.
        raise GDNInputError(
            "the Triton recurrent kernel has no backward; use backend='auto' or 'torch' when "
            "an input requires grad (or call it under torch.no_grad())"
        )
    if backend != "auto":
        return backend
    if not present[0].is_cuda:
        return "torch"
    return "torch" if mode == "recurrent" and needs_grad else "triton"


def gather_states(
    state_cache: torch.Tensor,
    state_indices: torch.Tensor,
    dtype: torch.dtype,
    all_live: bool = False,
) -> torch.Tensor:
    """Initial states ``[N, HV, K, V]`` from cache slots (negative slot -> zeros).
    ``all_live``: the caller knows every slot is ``>= 0`` (one gather, no masking)."""
    idx = state_indices.long()
    if all_live:
        return state_cache.index_select(0, idx).to(dtype)
    live = idx >= 0
    states = state_cache.index_select(0, idx.clamp(min=0)).to(dtype)
    # where(), not a multiply: an unused slot may hold anything, including NaN.
    return torch.where(live[:, None, None, None], states, torch.zeros_like(states))


@torch.no_grad()
def scatter_states(
    state_cache: torch.Tensor,
    state_indices: torch.Tensor,
    final: torch.Tensor,
    all_live: bool = False,
) -> None:
    """Write final states back into their slots in place (negative slots are skipped)."""
    idx = state_indices.long()
    if all_live:
        state_cache.index_copy_(0, idx, final.detach().to(state_cache.dtype))
        return
    live = (idx >= 0).nonzero().squeeze(1)
    state_cache.index_copy_(0, idx[live], final.detach()[live].to(state_cache.dtype))
