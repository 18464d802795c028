"""The sequential part of the torch chunk path: the scan over chunks and its backward.

Per chunk ``fresh = u - w S`` and ``S <- exp(c_C) S + Kd^T fresh`` (see :mod:`._chunk_torch`);
without autograd the states and corrections are written into preallocated buffers, with it
:class:`_Scan` has a hand-written backward (only the state gradient is sequential).
"""

from __future__ import annotations

import torch

from hybrid_numerics._precision_flags import ieee_fp32


def _scan_states(
    u: torch.Tensor,
    w: torch.Tensor,
    kd: torch.Tensor,
    chunk_decay: torch.Tensor,
    initial_state: torch.Tensor | None,
    K: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The only sequential part: per chunk ``fresh = u - w S`` then
    ``S <- exp(c_C) S + Kd^T fresh``, on chunk-major ``[NC, N, C, D]`` terms (N = B*HV).
    Returns the states entering each chunk ``[NC, N, K, V]`` (FP32), the final state
    ``[N, K, V]`` (its own tensor) and ``fresh: [NC, N, C, V]``."""
    NC, C, V = u.shape[0], u.shape[-2], u.shape[-1]
    u, w, kd = u.reshape(NC, -1, C, V), w.reshape(NC, -1, C, K), kd.reshape(NC, -1, C, K)
    N = u.shape[1]
    decay = chunk_decay.reshape(NC, N, 1, 1)
    if initial_state is None:
        state = u.new_zeros(N, K, V)
    else:
        state = initial_state.to(u.dtype).reshape(N, K, V)
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (u, w, kd, decay, state))):
        states, fresh = _scan_inplace(u, w, kd, decay, state)
        # A copy, not a view: a view would keep all NC + 1 states alive as long as the caller
        # holds the final state.
        return states[:NC], states[NC].clone(), fresh
    entering, final, fresh = _Scan.apply(u, w, kd, decay, state)
    return entering, final, fresh


class _Scan(torch.autograd.Function):
    """The chunk scan with a hand-written backward.

    Autograd through the per-chunk loop records three ops per chunk and, in backward, computes
    every weight gradient inside the sequential loop (small products, one launch each, plus the
    stack/unbind copies). Only the state gradient is sequential: walking the chunks backwards,

        dfresh_c = dfresh_c(ext) + Kd_c dS_{c+1}
        dS_c     = dS_c(ext) + a_c dS_{c+1} - W_c^T dfresh_c

    and everything else is one batched product after the loop: ``du = dfresh``,
    ``dW = -dfresh S^T``, ``dKd = fresh dS_{+1}^T``, ``da = <S, dS_{+1}>``.
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        u: torch.Tensor,
        w: torch.Tensor,
        kd: torch.Tensor,
        decay: torch.Tensor,
        state: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            states, fresh = _scan_inplace(u, w, kd, decay, state)
        # Entering states and the final state as separate outputs: their gradients then arrive
        # separately, instead of autograd zero-filling an [NC + 1, ...] buffer to sum them into.
        entering, final = states[:-1], states[-1].clone()
        ctx.save_for_backward(w, kd, decay, entering, fresh)
        return entering, final, fresh

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx,
        d_entering: torch.Tensor,
        d_final: torch.Tensor,
        d_fresh: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        with ieee_fp32(d_final.is_cuda):
            return _scan_backward(ctx.saved_tensors, d_entering, d_final, d_fresh)  # type: ignore[attr-defined]


def _scan_backward(
    saved: tuple[torch.Tensor, ...],
    d_entering: torch.Tensor,
    d_final: torch.Tensor,
    d_fresh: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
    """The body of :meth:`_Scan.backward` (see there)."""
    w, kd, decay, states, fresh = saved
    NC, N, C, V = fresh.shape
    K = w.shape[-1]
    # d_s[c]: total gradient of the state entering chunk c (d_s[NC]: of the final state)
    d_s = torch.empty(NC + 1, N, K, V, dtype=fresh.dtype, device=fresh.device)
    d_s[NC].copy_(d_final)
    d_fresh_total = torch.empty_like(fresh)
    # <S_c, dS_{c+1}> per chunk, inside the loop: a batched dot product after it would need
    # an [NC, N, K, V] temporary (fresh memory, i.e. page faults, on a CPU).
    d_decay = fresh.new_empty(NC, N)
    for c in range(NC - 1, -1, -1):
        torch.linalg.vecdot(states[c].reshape(N, K * V), d_s[c + 1].reshape(N, K * V),
                            out=d_decay[c])  # fmt: skip
        torch.baddbmm(d_fresh[c], kd[c], d_s[c + 1], out=d_fresh_total[c])
        torch.mul(d_s[c + 1], decay[c], out=d_s[c])
        d_s[c].add_(d_entering[c])
        d_s[c].baddbmm_(w[c].transpose(1, 2), d_fresh_total[c], alpha=-1.0)
    flat_fresh = d_fresh_total.reshape(NC * N, C, V)
    d_w = torch.bmm(flat_fresh, states.reshape(NC * N, K, V).transpose(1, 2))
    d_kd = torch.bmm(fresh.reshape(NC * N, C, V), d_s[1:].reshape(NC * N, K, V).transpose(1, 2))
    d_decay = d_decay.reshape(NC, N, 1, 1)
    return d_fresh_total, d_w.neg_().reshape(w.shape), d_kd.reshape(kd.shape), d_decay, d_s[0]


def _scan_inplace(
    u: torch.Tensor, w: torch.Tensor, kd: torch.Tensor, decay: torch.Tensor, state: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The scan without autograd: states and corrections written straight into preallocated
    buffers (no per-chunk temporaries, no final stack copy)."""
    NC, N, V = u.shape[0], u.shape[1], u.shape[-1]
    states = u.new_empty(NC + 1, N, state.shape[1], V)
    states[0].copy_(state)
    fresh = torch.empty_like(u)
    for c in range(NC):
        torch.baddbmm(u[c], w[c], states[c], alpha=-1.0, out=fresh[c])
        torch.mul(states[c], decay[c], out=states[c + 1])
        states[c + 1].baddbmm_(kd[c].transpose(1, 2), fresh[c])
    return states, fresh
