"""fla 0.6's extra arguments, mapped onto this package's computation or refused by name.

fla's ``chunk_gated_delta_rule`` / ``fused_recurrent_gated_delta_rule`` take flags this package
implements differently (the gate and the beta sigmoid as FP32 torch ops before the kernels; the
state FP32 wherever it lives) or not at all (context parallelism, per-key/per-value decay). Each
helper here either turns one of them into the plain call the kernels run, or raises
:class:`GDNInputError` (a ``ValueError``, as fla's own refusals are) naming the argument — never
a silently different result.
"""

from __future__ import annotations

import torch

from hybrid_numerics._errors import GDNInputError
from hybrid_numerics._validate import ACTIVATION_DTYPES

#: Chunk lengths fla 0.6 accepts (``chunk_size``); the Triton kernels here run 64 only.
FLA_CHUNK_SIZES = (16, 32, 64)
TRITON_CHUNK_SIZE = 64


def check_gate_flags(
    g: torch.Tensor | None,
    A_log: torch.Tensor | None,
    dt_bias: torch.Tensor | None,
    use_gate_in_kernel: bool,
) -> None:
    """The fused gate runs only when asked for by name, as in fla.

    fla 0.6 *ignores* ``A_log`` / ``dt_bias`` unless ``use_gate_in_kernel=True`` (``g`` is then
    taken as the log decay). Applying the gate here instead would give a different result for
    the same call, and ignoring an argument the caller bothered to pass hides a mistake, so the
    combination is refused: ``g`` means one thing per call, and the call says which.
    """
    if use_gate_in_kernel:
        if A_log is None:
            raise GDNInputError("use_gate_in_kernel=True needs A_log (and optionally dt_bias)")
        if g is None:
            raise GDNInputError("use_gate_in_kernel=True needs g (the raw gate input a)")
        return
    if A_log is not None or dt_bias is not None:
        given = " and ".join(
            n for n, x in (("A_log", A_log), ("dt_bias", dt_bias)) if x is not None
        )
        raise GDNInputError(
            f"{given} given without use_gate_in_kernel=True: fla ignores them then and reads g "
            "as the log decay. Pass use_gate_in_kernel=True if g is the raw gate input a (the "
            "decay -exp(A_log) * softplus(a + dt_bias) is then computed in FP32), or drop them"
        )


def check_beta_flags(use_beta_sigmoid_in_kernel: bool, allow_neg_eigval: bool) -> None:
    """``allow_neg_eigval`` scales the sigmoid of the beta logits, so it needs them (fla's rule)."""
    if allow_neg_eigval and not use_beta_sigmoid_in_kernel:
        raise GDNInputError("allow_neg_eigval=True requires use_beta_sigmoid_in_kernel=True")


def beta_from_logits(
    beta: torch.Tensor, allow_neg_eigval: bool, dtype: torch.dtype
) -> torch.Tensor:
    """``sigmoid(beta)`` in ``dtype`` (FP32), times 2 with ``allow_neg_eigval``: beta in
    ``(0, 2)``, so the transition ``I - beta k kᵀ`` (unit ``k``) can have the eigenvalue
    ``1 - beta < 0`` (fla's ``fused_beta_sigmoid(..., scale=2.0)``)."""
    b = torch.sigmoid(beta.to(dtype))
    return 2.0 * b if allow_neg_eigval else b


def recurrent_defaults(
    v: torch.Tensor,
    g: torch.Tensor | None,
    beta: torch.Tensor | None,
    gk: torch.Tensor | None,
    gv: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """fla's recurrent defaults: no ``g`` is no decay (``g = 0``), no ``beta`` is ``beta = 1``.

    ``gk`` / ``gv`` (per-key / per-value decay) are not implemented. A rank-4 ``beta`` is what
    an fla-ordered positional call ``(q, k, v, g, gk, ...)`` puts there; the message says so.
    """
    if gk is not None or gv is not None:
        raise GDNInputError("gk / gv (per-key or per-value decay) are not supported; use g")
    if isinstance(beta, torch.Tensor) and beta.dim() == 4:
        raise GDNInputError(
            f"beta must have rank 3 [B, T, HV], got shape {tuple(beta.shape)}: fla's fifth "
            "positional parameter is gk, here it is beta; pass beta (and the rest) by keyword"
        )
    if g is not None and beta is not None:
        return g, beta
    if not isinstance(v, torch.Tensor) or v.dim() != 4:
        raise GDNInputError(f"v must be a rank-4 torch.Tensor [B, T, HV, V], got {v!r:.80}")
    shape = tuple(v.shape[:3])  # [B, T, HV]; 0 and 1 are exact in every dtype
    if g is None:
        g = torch.zeros(shape, dtype=v.dtype, device=v.device)
    if beta is None:
        beta = torch.ones(shape, dtype=v.dtype, device=v.device)
    return g, beta


def common_dtype(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.dtype | None:
    """The dtype mixed ``q, k, v`` are cast to (the widest: lossless; the arithmetic is FP32
    either way), or ``None`` when they already agree (or are not all tensors)."""
    dtypes = [getattr(x, "dtype", None) for x in (q, k, v)]  # a non-tensor: validation names it
    if dtypes[0] == dtypes[1] == dtypes[2]:  # the common case first: runs every decode step
        return None
    if not all(d in ACTIVATION_DTYPES for d in dtypes):
        return None  # validation names it (an int tensor is not promoted)
    return torch.promote_types(torch.promote_types(q.dtype, k.dtype), v.dtype)


def state_in(
    initial_state: torch.Tensor | None, state_v_first: bool, has_cache: bool
) -> torch.Tensor | None:
    """The initial state as the kernels take it: FP32 ``[N, HV, K, V]``.

    An fp16 state is upcast (11 significant bits, exactly representable in FP32). A bf16 one is
    left to validation, which refuses it: a bf16 state is what Arctic-SWE §3.3 removes, and a
    bf16 initial state means a bf16 cache upstream. ``state_v_first``: fla's ``[N, HV, V, K]``
    layout, transposed in (and out, :func:`state_out`); not with an in-place ``state_cache``.
    """
    if state_v_first and has_cache:
        raise GDNInputError(
            "state_v_first=True is not supported with state_cache (the cache is [S, HV, K, V])"
        )
    if not isinstance(initial_state, torch.Tensor):
        return initial_state
    if initial_state.dtype == torch.float16:
        initial_state = initial_state.float()
    if state_v_first:
        if initial_state.dim() != 4:
            raise GDNInputError(
                f"initial_state must be [N, HV, V, K] with state_v_first, got {tuple(initial_state.shape)}"
            )
        initial_state = initial_state.transpose(-1, -2)
    return initial_state.contiguous()


def state_out(final: torch.Tensor | None, state_v_first: bool) -> torch.Tensor | None:
    """The final state in the caller's layout (``[N, HV, V, K]`` with ``state_v_first``)."""
    if final is None or not state_v_first:
        return final
    return final.transpose(-1, -2).contiguous()


def check_chunk_options(
    chunk_size: int | None,
    cu_seqlens: torch.Tensor | None,
    cu_seqlens_cpu: torch.Tensor | None,
    chunk_indices: torch.Tensor | None,
    cp_context: object,
) -> None:
    """fla's chunk-only options: ``chunk_size`` one of 16/32/64 (or ``None``: the path's own),
    ``cu_seqlens_cpu`` / ``chunk_indices`` only as hints about ``cu_seqlens``, no context
    parallelism."""
    if cp_context is not None:
        raise GDNInputError("cp_context (context parallelism) is not supported")
    if chunk_size is not None and chunk_size not in FLA_CHUNK_SIZES:
        raise GDNInputError(
            f"chunk_size must be one of {FLA_CHUNK_SIZES} (or None), got {chunk_size!r}"
        )
    if cu_seqlens is None and (cu_seqlens_cpu is not None or chunk_indices is not None):
        raise GDNInputError("cu_seqlens_cpu / chunk_indices describe cu_seqlens; pass cu_seqlens")
    if chunk_indices is not None and not isinstance(chunk_indices, torch.Tensor):
        raise GDNInputError(
            f"chunk_indices must be a torch.Tensor, got {type(chunk_indices).__name__}"
        )


def check_triton_chunk_size(chunk_size: int | None) -> None:
    """The Triton kernels are compiled for 64-token chunks."""
    if chunk_size is not None and chunk_size != TRITON_CHUNK_SIZE:
        raise GDNInputError(
            f"the Triton chunk kernels run chunk_size={TRITON_CHUNK_SIZE} only, got {chunk_size} "
            "(the result does not depend on it beyond rounding; pass None or 64, or "
            "backend='torch')"
        )
