"""The torch decode step (``T = 1``, no autograd): the engine's per-token call, in few passes.

One token for ``N = B * HV`` state matrices ``S: [K, V]`` (FP32), with ``a = exp(g)`` and the
scaled query ``q``:

    read = [k; q]^T S                    # one batched matmul reads the old state for both rows
    c    = beta (v - a k^T S)            # the delta-rule correction
    o    = a q^T S + (q . k) c           # = q^T S' without reading the new state
    S'   = a S + k c^T                   # decay, then the rank-1 write, in place where allowed

so the state is touched three times (the read, the decay, the rank-1 update), the fewest plain
torch ops allow (``S' = a S + k c^T`` in one pass needs a fused kernel: ``baddbmm`` takes only a
scalar ``beta``). The ``G = HV / H`` value heads that share a q/k head are one group
``[B * H, G, K, V]``: each k/q row is normalised once per q/k head and reaches its ``G`` states
by broadcasting, never copied ``G`` times (at the engine's small heads a decode step costs
torch calls, not FLOPs). Where the state lives decides what is written:

* ``state_cache`` whose slots are live and consecutive (``[s, s + N)``, the engine's usual
  layout, and the transformers cache's ``arange(B)``): the slots are updated **in place**
  through a view (no gather, no scatter, no new ``[N, K, V]`` buffer);
* other slots (negative = padding row, or scattered): gathered once, updated in place in that
  copy, written back (negative slots start from zeros and are not written);
* ``initial_state``: read, and the new state written into one fresh buffer (the input is never
  modified).

:func:`gated_delta_decode_step_` is the same arithmetic without the public entry point's
validation and dispatch, for a caller that already holds the decoding sequences' states as one
contiguous FP32 tensor (the engine's slice of its state pool).

A fresh multi-MiB buffer costs a page fault per 4 KiB on its first touch on a CPU (see the
README's Benchmarks section), so not allocating one is most of what the in-place path saves.
"""

from __future__ import annotations

import torch

from hybrid_numerics._chunk_torch import compute_dtype
from hybrid_numerics._errors import GDNInputError
from hybrid_numerics._gate import gdn_gate
from hybrid_numerics._recurrent_torch import _inv_norm, _row_scale
from hybrid_numerics._validate import GDNShapes


def decode_torch(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    shapes: GDNShapes,
    *,
    scale: float,
    initial_state: torch.Tensor | None,
    state_cache: torch.Tensor | None,
    state_indices: torch.Tensor | None,
    all_live: bool,
    output_final_state: bool,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One decode token: ``q, k: [B, 1, H, K]``, ``v: [B, 1, HV, V]``, ``g, beta: [B, 1, HV]``
    (validated; ``g`` the log decay) -> ``o: [B, 1, HV, V]`` in the compute dtype and the final
    state ``[B, HV, K, V]`` (its own contiguous tensor) if ``output_final_state``. A cache
    (``state_cache``/``state_indices``, exclusive with ``initial_state``) is updated in place;
    ``all_live``: validation saw every slot ``>= 0``."""
    cd = compute_dtype(q)
    B, H, G, K, V = shapes.B, shapes.H, shapes.group, shapes.K, shapes.V
    M = B * H  # q/k heads; each owns G state matrices
    view = _cache_view(state_cache, state_indices, all_live, cd)
    if view is not None:  # in place on the cache's own slots
        state = new = view.view(M, G, K, V)
    elif state_cache is not None:
        from hybrid_numerics._api import gather_states  # lazy: _api imports this module

        assert state_indices is not None
        state = new = gather_states(state_cache, state_indices, cd, all_live).view(M, G, K, V)
    elif initial_state is not None:
        state = initial_state.to(cd).view(M, G, K, V)
        new = torch.empty_like(state)
    else:
        state = new = q.new_zeros(M, G, K, V, dtype=cd)
    o = _grouped_step(q, k, v, g, beta, state, new, scale, use_qk_l2norm)
    if view is None and state_cache is not None:
        from hybrid_numerics._api import scatter_states

        assert state_indices is not None
        scatter_states(state_cache, state_indices, new.view(B, H * G, K, V), all_live)
    final = None
    if output_final_state:
        final = new.view(B, H * G, K, V)
        if view is not None:
            final = final.clone()  # the caller's tensor, not a view of the cache
    return o.view(B, 1, H * G, V), final


def gated_delta_decode_step_(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    state: torch.Tensor,
    *,
    scale: float | None = None,
    use_qk_l2norm: bool = False,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """One decode token for ``B`` sequences whose FP32 states are ``state`` (updated in place).

    Shapes: ``q, k: [B, H, K]``, ``v: [B, HV, V]``, ``g, beta: [B, HV]`` (``HV`` a multiple of
    ``H``; value head ``j`` reads q/k head ``j // (HV / H)``), ``state: [B, HV, K, V]`` float32
    and contiguous — typically ``pool[s : s + B]``, the cache rows of sequences that sit in
    consecutive slots. Returns ``o: [B, HV, V]`` float32.

    ``g`` is the log decay, or with ``A_log`` (and ``dt_bias``) the raw gate input whose decay
    ``-exp(A_log) * softplus(g + dt_bias)`` is computed here in FP32 (:func:`gdn_gate`,
    Arctic-SWE §3.3). ``scale`` defaults to ``K ** -0.5``; ``use_qk_l2norm`` normalises q and k.

    This is :func:`fused_recurrent_gated_delta_rule`'s ``T = 1`` cached decode without its
    per-call validation of values and its dispatch (the same arithmetic, bit for bit, on CPU;
    CUDA tensors go through the Triton kernel). Only the shapes are checked, in O(1) host work:
    a caller that runs one call per layer per decoded token should not pay for more.
    Raises :class:`GDNInputError` on inconsistent shapes or a state that is not FP32 contiguous.
    """
    _check_step_shapes(q, k, v, g, beta, state)
    K = q.shape[2]
    scale_value = K**-0.5 if scale is None else float(scale)
    if q.is_cuda:
        from hybrid_numerics._api import fused_recurrent_gated_delta_rule

        slots = torch.arange(q.shape[0], device=q.device)
        o, _ = fused_recurrent_gated_delta_rule(
            q[:, None], k[:, None], v[:, None], g[:, None], beta[:, None], scale=scale_value,
            use_qk_l2norm=use_qk_l2norm, use_gate_in_kernel=A_log is not None, A_log=A_log,
            dt_bias=dt_bias, state_cache=state,
            state_indices=slots, validate=False,
        )  # fmt: skip
        return o[:, 0]
    if A_log is not None:
        g = gdn_gate(g, A_log, dt_bias)
    B, H, HV, V = q.shape[0], q.shape[1], v.shape[1], v.shape[2]
    grouped = state.view(B * H, HV // H, K, V)
    o = _grouped_step(q, k, v, g, beta, grouped, grouped, scale_value, use_qk_l2norm)
    return o.view(B, HV, V)


def _check_step_shapes(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    state: torch.Tensor,
) -> None:
    if q.dim() != 3 or k.shape != q.shape or v.dim() != 3 or state.dim() != 4:
        raise GDNInputError(
            f"expected q, k [B, H, K], v [B, HV, V], state [B, HV, K, V]; got q "
            f"{tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, state {tuple(state.shape)}"
        )
    B, H, K = q.shape
    HV, V = v.shape[1], v.shape[2]
    if v.shape[0] != B or HV % H or g.shape != (B, HV) or beta.shape != (B, HV):
        raise GDNInputError(
            f"v {tuple(v.shape)}, g {tuple(g.shape)}, beta {tuple(beta.shape)} do not fit "
            f"q {tuple(q.shape)} (need v [B, HV, V] and g, beta [B, HV] with HV a multiple of H)"
        )
    if state.shape != (B, HV, K, V) or state.dtype != torch.float32 or not state.is_contiguous():
        raise GDNInputError(
            f"state must be a contiguous float32 [B, HV, K, V] = {(B, HV, K, V)}, got "
            f"{state.dtype} {tuple(state.shape)} (contiguous: {state.is_contiguous()})"
        )


def _grouped_step(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    state: torch.Tensor,
    new: torch.Tensor,
    scale: float,
    use_qk_l2norm: bool,
) -> torch.Tensor:
    """The step on ``state [M, G, K, V]`` (``M = B * H``) into ``new`` (``state`` itself: in
    place, the read comes first); ``q, k`` hold ``M`` rows of ``K`` in (batch, head) order,
    ``v`` ``M * G`` rows of ``V`` and ``g, beta`` ``M * G`` values. Returns ``o [M, G, V]``."""
    M, G, K, V = state.shape
    cd = state.dtype
    kq, qk = _keys_and_queries(q, k, scale, use_qk_l2norm, cd, M, K)
    a = g.reshape(M, G, 1).to(cd).exp()
    correction_scale = beta.reshape(M, G, 1).to(cd)
    # [M, 1, 2, K] @ [M, G, K, V]: each q/k pair meets its G states by broadcasting.
    read = torch.matmul(kq[:, None], state)  # [M, G, 2, V]: k^T S and q^T S, old state read once
    correction = torch.addcmul(v.reshape(M, G, V).to(cd), a, read[:, :, 0], value=-1.0)
    correction.mul_(correction_scale)
    out = torch.addcmul(read[:, :, 1].mul_(a), qk, correction)
    torch.mul(state, a[..., None], out=new)
    # The rank-1 write as a broadcast multiply-add: one pass like baddbmm_, 0.24 vs 0.28 ms on
    # 256 states of 64 x 64 in isolation (within the noise of a whole decode step).
    new.addcmul_(kq[:, None, 0, :, None], correction[:, :, None, :])
    return out


def _keys_and_queries(
    q: torch.Tensor,
    k: torch.Tensor,
    scale: float,
    use_qk_l2norm: bool,
    cd: torch.dtype,
    M: int,
    K: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``[M, 2, K]`` (k, scaled q; l2-normalised if asked) per q/k head and ``q . k``
    ``[M, 1, 1]``: stacked once, normalised and scaled in one multiply."""
    kq = torch.stack((k.reshape(M, K), q.reshape(M, K)), dim=1).to(cd)
    factor = _row_scale(scale, cd, q.device)
    kq = kq * (_inv_norm(kq) * factor if use_qk_l2norm else factor)
    qk = torch.linalg.vecdot(kq[:, 0], kq[:, 1])[:, None, None]
    return kq, qk


def _cache_view(
    state_cache: torch.Tensor | None,
    state_indices: torch.Tensor | None,
    all_live: bool,
    cd: torch.dtype,
) -> torch.Tensor | None:
    """``state_cache[s : s + N]`` when the slots are exactly ``s, s + 1, ..., s + N - 1`` (and
    the arithmetic is the cache's FP32), else ``None``. Reads the slots on the host only for
    CPU tensors (``all_live`` is known only when validation read them)."""
    if state_cache is None or state_indices is None or not all_live:
        return None
    if state_cache.dtype != cd or state_indices.is_cuda:
        return None
    slots = state_indices.tolist()
    first = slots[0]
    if slots != list(range(first, first + len(slots))):
        return None
    return state_cache[first : first + len(slots)]
