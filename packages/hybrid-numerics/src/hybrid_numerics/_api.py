"""Public Gated DeltaNet entry points: fla 0.6's call surface, validation, the fused gate, state
caches, dispatch.

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

from hybrid_numerics import _fla_surface as fla
from hybrid_numerics._chunk_torch import chunk_torch, compute_dtype
from hybrid_numerics._decode_torch import decode_torch
from hybrid_numerics._errors import GDNInputError
from hybrid_numerics._gate import gdn_gate
from hybrid_numerics._precision_flags import ieee_fp32
from hybrid_numerics._recurrent_torch import recurrent_torch
from hybrid_numerics._validate import GDNShapes, validate_gdn_inputs, validate_state_cache

Backend = Literal["auto", "torch", "triton"]
_BACKENDS = ("auto", "torch", "triton")


def chunk_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    use_beta_sigmoid_in_kernel: bool = False,
    allow_neg_eigval: bool = False,
    state_v_first: bool = False,
    cu_seqlens: torch.Tensor | None = None,
    cu_seqlens_cpu: torch.Tensor | None = None,
    chunk_indices: torch.Tensor | None = None,
    cp_context: object = None,
    *,
    use_gate_in_kernel: bool = False,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    chunk_size: int | None = None,
    use_qk_l2norm: bool = False,
    state_cache: torch.Tensor | None = None,
    state_indices: torch.Tensor | None = None,
    backend: Backend = "auto",
    validate: bool | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Chunked gated delta rule (training, prefill) with the recurrent state in FP32.

    fla 0.6's signature: the sixteen positional parameters in fla's order, then fla's keyword
    arguments (``use_gate_in_kernel``, ``A_log``, ``dt_bias``, ``chunk_size``), then this
    package's own (keyword-only). Layout (fla's): ``q, k: [B, T, H, K]``; ``v: [B, T, HV, V]``,
    ``HV % H == 0`` (value head ``j`` reads q/k head ``j // (HV // H)``); ``g, beta: [B, T,
    HV]``; states ``[N, HV, K, V]`` float32, ``N = B`` or ``len(cu_seqlens) - 1`` for packed
    input (``B == 1``). q, k, v of different dtypes are cast to the widest of them.

    * ``g`` is the log-space decay (``<= 0``). With ``use_gate_in_kernel=True`` (which needs
      ``A_log: [HV]``, optionally ``dt_bias: [HV]``), ``g`` is instead the raw gate input ``a``
      and the decay ``-exp(A_log) * softplus(a + dt_bias)`` is computed in FP32 here, with
      gradients for ``a``, ``A_log`` and ``dt_bias``. ``A_log`` / ``dt_bias`` without the flag
      raise (fla ignores them then).
    * ``use_beta_sigmoid_in_kernel``: ``beta`` holds logits; ``sigmoid`` is applied in FP32,
      times 2 with ``allow_neg_eigval`` (which needs the sigmoid, as in fla).
    * ``scale`` defaults to ``K ** -0.5``; ``use_qk_l2norm_in_kernel`` (alias
      ``use_qk_l2norm``) L2-normalises q and k (eps 1e-6) in FP32.
    * ``initial_state`` FP32 (fp16 is upcast; bf16 is refused), ``[N, HV, V, K]`` with
      ``state_v_first`` (the final state then too).
    * ``cu_seqlens_cpu``: a host copy of ``cu_seqlens`` (the chunk plan is read from it: no
      device sync); ``chunk_indices`` is accepted and not used (derived from ``cu_seqlens``);
      ``chunk_size``: 16, 32 or 64 on the torch path, 64 on Triton, ``None`` = the path's own;
      ``cp_context`` (context parallelism) is refused.
    * ``state_cache: [S, HV, K, V]`` float32 with ``state_indices: [N]`` int: sequence ``n``
      starts from ``state_cache[state_indices[n]]`` and its final state is written back there
      **in place** (a negative index means: start from zeros, write nothing). Exclusive with
      ``initial_state``. The slot's content is the initial state: zero a slot before handing it
      to a new sequence.
    * ``validate``: check the *values* of ``state_indices`` (in range, distinct) and
      ``cu_seqlens`` on the host. ``None`` (default): when that costs no device sync (CPU
      tensors) and always on the chunk path (it plans its chunks from ``cu_seqlens``).

    Returns ``(o, final_state)``: ``o: [B, T, HV, V]`` in ``q.dtype`` (fla's choice);
    ``final_state`` float32 contiguous ``[N, HV, K, V]`` when ``output_final_state`` (also with
    a state cache) else ``None``. Differentiable in every input, including ``initial_state``.
    Bad input raises :class:`GDNInputError` (a ``ValueError``) before any computation.
    """
    return _run("chunk", **locals())


def fused_recurrent_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    *,
    gk: torch.Tensor | None = None,
    gv: torch.Tensor | None = None,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    use_gate_in_kernel: bool = False,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    use_beta_sigmoid_in_kernel: bool = False,
    allow_neg_eigval: bool = False,
    state_v_first: bool = False,
    cu_seqlens: torch.Tensor | None = None,
    use_qk_l2norm: bool = False,
    state_cache: torch.Tensor | None = None,
    state_indices: torch.Tensor | None = None,
    backend: Backend = "auto",
    validate: bool | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Token-by-token gated delta rule (decode); the arguments and results of
    :func:`chunk_gated_delta_rule` for any ``T`` (``o`` in ``v.dtype``, fla's choice here).

    Everything after ``beta`` is keyword-only: fla 0.6's positional order is
    ``q, k, v, g, gk, gv, beta, ...``, so a positional call written for fla binds differently
    here and fails loudly (too many positional arguments, or a rank-4 ``gk`` where ``beta`` is
    expected) instead. As in fla, ``g=None`` means no decay and ``beta=None`` means
    ``beta = 1``; ``gk`` / ``gv`` (per-key / per-value decay) are refused.

    The engine's use: ``T = 1`` per step, ``B`` running sequences, ``state_cache`` the engine's
    FP32 recurrent-state pool for this layer and ``state_indices[b]`` the slot of sequence ``b``;
    the cache is updated in place (the Triton kernel reads and writes the slots directly). On
    CUDA the default ``validate=None`` reads nothing back to the host (no sync per step).
    """
    return _run("recurrent", **locals())


def _run(
    mode: Literal["chunk", "recurrent"],
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None,
    beta: torch.Tensor | None,
    scale: float | None,
    initial_state: torch.Tensor | None,
    output_final_state: bool,
    use_qk_l2norm_in_kernel: bool,
    use_beta_sigmoid_in_kernel: bool,
    allow_neg_eigval: bool,
    state_v_first: bool,
    cu_seqlens: torch.Tensor | None,
    use_gate_in_kernel: bool,
    A_log: torch.Tensor | None,
    dt_bias: torch.Tensor | None,
    use_qk_l2norm: bool,
    state_cache: torch.Tensor | None,
    state_indices: torch.Tensor | None,
    backend: Backend,
    validate: bool | None,
    cu_seqlens_cpu: torch.Tensor | None = None,
    chunk_indices: torch.Tensor | None = None,
    cp_context: object = None,
    chunk_size: int | None = None,
    gk: torch.Tensor | None = None,
    gv: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    if backend not in _BACKENDS:
        raise GDNInputError(f"backend must be one of {_BACKENDS}, got {backend!r}")
    fla.check_gate_flags(g, A_log, dt_bias, use_gate_in_kernel)
    fla.check_beta_flags(use_beta_sigmoid_in_kernel, allow_neg_eigval)
    if mode == "recurrent":
        g, beta = fla.recurrent_defaults(v, g, beta, gk, gv)
    elif g is None or beta is None:
        raise GDNInputError("chunk_gated_delta_rule needs g and beta (tensors [B, T, HV])")
    else:
        fla.check_chunk_options(chunk_size, cu_seqlens, cu_seqlens_cpu, chunk_indices, cp_context)
        if backend == "triton" or (backend == "auto" and q.is_cuda):  # the chunk kernels run
            fla.check_triton_chunk_size(chunk_size)
    out_like = q if mode == "chunk" else v  # fla: the chunk output in q's dtype, decode in v's
    common = fla.common_dtype(q, k, v)
    if common is not None:
        q, k, v = q.to(common), k.to(common), v.to(common)
    initial_state = fla.state_in(initial_state, state_v_first, state_cache is not None)
    use_qk_l2norm = use_qk_l2norm or use_qk_l2norm_in_kernel
    host_checks = validate if validate is not None else (mode == "chunk" or not q.is_cuda)
    shapes = validate_gdn_inputs(
        q,
        k,
        v,
        g,
        beta,
        scale=scale,
        initial_state=initial_state,
        cu_seqlens=cu_seqlens,
        gate_params=(A_log, dt_bias) if A_log is not None else None,
        host_checks=host_checks,
        cu_seqlens_host=cu_seqlens_cpu,
    )
    all_live = validate_state_cache(
        state_cache, state_indices, shapes, initial_state, q.device, host_checks
    )
    with ieee_fp32(q.is_cuda):  # the torch ops below that touch the state: never TF32
        if A_log is not None:
            g = gdn_gate(g, A_log, dt_bias)
        if use_beta_sigmoid_in_kernel:
            beta = fla.beta_from_logits(beta, allow_neg_eigval, compute_dtype(beta))
        o, final = _dispatch(
            mode, q, k, v, g, beta, shapes, scale, initial_state, output_final_state,
            cu_seqlens, use_qk_l2norm, state_cache, state_indices, backend, all_live, chunk_size,
        )  # fmt: skip
    return o.to(out_like.dtype), fla.state_out(final, state_v_first)


def _dispatch(
    mode: Literal["chunk", "recurrent"],
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    shapes: GDNShapes,
    scale: float | None,
    initial_state: torch.Tensor | None,
    output_final_state: bool,
    cu_seqlens: torch.Tensor | None,
    use_qk_l2norm: bool,
    state_cache: torch.Tensor | None,
    state_indices: torch.Tensor | None,
    backend: Backend,
    all_live: bool,
    chunk_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    scale_value = shapes.K**-0.5 if scale is None else float(scale)
    use_cache = state_cache is not None and state_indices is not None
    chosen, needs_grad = _choose_backend(backend, mode, q, k, v, g, beta, initial_state)
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
            offsets=None if shapes.offsets is None else list(shapes.offsets),
            use_qk_l2norm=use_qk_l2norm,
            state_cache=state_cache,
            state_indices=state_indices,
            needs_grad=needs_grad,
        )
    if mode == "recurrent" and shapes.T == 1 and cu_seqlens is None and not needs_grad:
        # The engine's decode step: its own few-pass path, cache slots updated in place.
        o, final = decode_torch(
            q, k, v, g, beta, shapes, scale=scale_value, initial_state=initial_state,
            state_cache=state_cache, state_indices=state_indices, all_live=all_live,
            output_final_state=output_final_state, use_qk_l2norm=use_qk_l2norm,
        )  # fmt: skip
        return o.to(v.dtype), final
    if use_cache:
        assert state_cache is not None
        assert state_indices is not None
        initial_state = gather_states(state_cache, state_indices, compute_dtype(q), all_live)
    keep_final = output_final_state or use_cache
    if mode == "chunk":
        o, final = chunk_torch(
            q, k, v, g, beta, shapes, scale=scale_value, initial_state=initial_state,
            output_final_state=keep_final, cu_seqlens=cu_seqlens, use_qk_l2norm=use_qk_l2norm,
            chunk_size=chunk_size,
        )  # fmt: skip
    else:
        o, final = recurrent_torch(
            q, k, v, g, beta, shapes, scale=scale_value, initial_state=initial_state,
            output_final_state=keep_final, cu_seqlens=cu_seqlens, use_qk_l2norm=use_qk_l2norm,
        )  # fmt: skip
    if use_cache:
        assert final is not None
        assert state_cache is not None
        assert state_indices is not None
        scatter_states(state_cache, state_indices, final, all_live)
    if final is not None and output_final_state and not final.is_contiguous():
        final = final.contiguous()
    return o.to(v.dtype), (final if output_final_state else None)


def _choose_backend(
    backend: Backend, mode: Literal["chunk", "recurrent"], *tensors: torch.Tensor | None
) -> tuple[Literal["torch", "triton"], bool]:
    """``(backend, needs_grad)``. ``auto``: Triton for CUDA tensors, except a recurrent call
    that needs a gradient (the recurrent kernel has no backward): that one, and CPU tensors,
    take the torch path."""
    present = [t for t in tensors if t is not None]
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in present)
    if backend == "triton" and mode == "recurrent" and needs_grad:
        # Running it would return an output detached from its inputs: silently no gradient.
        raise GDNInputError(
            "the Triton recurrent kernel has no backward; use backend='auto' or 'torch' when "
            "an input requires grad (or call it under torch.no_grad())"
        )
    if backend != "auto":
        return backend, needs_grad
    if not present[0].is_cuda:
        return "torch", needs_grad
    return ("torch" if mode == "recurrent" and needs_grad else "triton"), needs_grad


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
