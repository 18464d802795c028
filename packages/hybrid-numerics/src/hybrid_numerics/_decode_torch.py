"""The torch decode step (``T = 1``, no autograd): the engine's per-token call, in few passes.

One token for ``N = B * HV`` state matrices ``S: [K, V]`` (FP32), with ``a = exp(g)`` and the
scaled query ``q``:

    read = [k; q]^T S                    # one bmm reads the old state once for both rows
    c    = beta (v - a k^T S)            # the delta-rule correction
    o    = a q^T S + (q . k) c           # = q^T S' without reading the new state
    S'   = a S + k c^T                   # decay, then the rank-1 write, in place where allowed

so the state is touched three times (the read, the decay, the rank-1 update), the fewest plain
torch ops allow (``S' = a S + k c^T`` in one pass needs a fused kernel: ``baddbmm`` takes only a
scalar ``beta``). Where the state lives decides what is written:

* ``state_cache`` whose slots are live and consecutive (``[s, s + N)``, the engine's usual
  layout, and the transformers cache's ``arange(B)``): the slots are updated **in place**
  through a view (no gather, no scatter, no new ``[N, K, V]`` buffer);
* other slots (negative = padding row, or scattered): gathered once, updated in place in that
  copy, written back (negative slots start from zeros and are not written);
* ``initial_state``: read, and the new state written into one fresh buffer (the input is never
  modified).

A fresh multi-MiB buffer costs a page fault per 4 KiB on its first touch on a CPU (see the
README's Benchmarks section), so not allocating one is most of what the in-place path saves.
"""

from __future__ import annotations

import torch

from hybrid_numerics._chunk_torch import compute_dtype
from hybrid_numerics._recurrent_torch import _inv_norm, _row_scale, _step
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
    N = B * H * G
    kq, qk = _keys_and_queries(q, k, scale, use_qk_l2norm, cd, B, H, G, K)
    a = g.reshape(N, 1).to(cd).exp()
    v_n, beta_n = v.reshape(N, V).to(cd), beta.reshape(N, 1).to(cd)
    view = _cache_view(state_cache, state_indices, all_live, cd)
    if view is not None:  # in place on the cache's own slots
        state = new = view.view(N, K, V)
    elif state_cache is not None:
        from hybrid_numerics._api import gather_states  # lazy: _api imports this module

        assert state_indices is not None
        state = new = gather_states(state_cache, state_indices, cd, all_live).view(N, K, V)
    elif initial_state is not None:
        state = initial_state.to(cd).view(N, K, V)
        new = torch.empty_like(state)
    else:
        state = new = kq.new_zeros(N, K, V)
    o, _ = _step(kq, qk, a, beta_n, v_n, state, new)
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


def _keys_and_queries(
    q: torch.Tensor,
    k: torch.Tensor,
    scale: float,
    use_qk_l2norm: bool,
    cd: torch.dtype,
    B: int,
    H: int,
    G: int,
    K: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``[N, 2, K]`` (k, scaled q; l2-normalised if asked) per state matrix and ``q . k``
    ``[N, 1]``: stacked once, normalised and scaled in one multiply, broadcast to the ``G``
    value heads of each q/k head only after that (a copy only when ``G > 1``)."""
    kq = torch.stack((k, q), dim=3).reshape(B * H, 2, K).to(cd)
    factor = _row_scale(scale, cd, q.device)
    kq = kq * (_inv_norm(kq) * factor if use_qk_l2norm else factor)
    qk = torch.linalg.vecdot(kq[:, 0], kq[:, 1]).unsqueeze(-1)  # [B*H, 1]
    if G > 1:
        kq = kq.unsqueeze(1).expand(B * H, G, 2, K).reshape(B * H * G, 2, K)
        qk = qk.expand(B * H, G).reshape(B * H * G, 1)
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
