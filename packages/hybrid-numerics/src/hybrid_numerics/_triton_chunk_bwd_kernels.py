# Triton kernel parameters are pointers/ints whose annotations would change how Triton
# specialises them, so the kernels stay unannotated (mypy: only for this module).
# mypy: disable-error-code="untyped-decorator,no-untyped-def"
"""The fused chunk backward of the gated delta rule: four Triton kernels, FP32 throughout.

Notation of :mod:`hybrid_numerics._triton_chunk_kernels` (per chunk ``c`` of ``BT`` tokens, value
head ``hv``): ``Q``/``K`` the (l2-normalised; ``Q`` scaled) rows, ``gamma`` the in-chunk
cumulative log decay, ``S_c`` the entering state, ``F = u - w S_c`` the corrected values,
``P = Q Kᵀ ⊙ D`` (causal, diagonal included) and ``O = (Q ⊙ e^gamma) S_c + P F``. Given ``dO``
and the final states' cotangent, in launch order (fla's counterparts in brackets):

1. :func:`chunk_bwd_dv_local_kernel` (chunks x heads x V blocks) - ``dF_out = Pᵀ dO``, the
   output's part of the corrected values' gradient [``chunk_bwd_dv_local``].
2. :func:`chunk_state_bwd_kernel` (sequences·heads x V blocks) - the reverse scan, FP32: stores
   ``dh[c] = dL/dS_{c+1}``, the full ``dF = dF_out + Kd dS_{c+1}`` (``Kd = K ⊙ e^{gamma_last -
   gamma}``) and carries ``dS_c = e^{gamma_last} dS_{c+1} + (Q ⊙ e^gamma)ᵀ dO - wᵀ dF``; the
   last one is the initial state's gradient [``chunk_gated_delta_rule_bwd_dhu``].
3. :func:`chunk_bwd_dqkwg_kernel` (chunks x heads) - everything that touches a state:
   ``dQ = (dO S_cᵀ) ⊙ e^gamma + (dP ⊙ D) K``, ``dK += (dP ⊙ D)ᵀ Q + (F dS_{c+1}ᵀ) ⊙
   e^{gamma_last - gamma}``, ``dw = -dF S_cᵀ`` and these terms' log-decay gradient, with the
   state decay's ``e^{gamma_last} <S_c, dS_{c+1}>`` [``chunk_bwd_dqkwg``].
4. :func:`chunk_wy_bwd_kernel` (chunks x heads) - through ``w = X diag(β)(K ⊙ e^gamma)``,
   ``u = X diag(β) V``, ``X = (I + A)⁻¹`` (``dA = -Xᵀ dX Xᵀ``) and ``A = strict_lower(diag(β) K
   Kᵀ ⊙ D)`` into ``dk, dv, dβ``; the reverse cumulative sum of the log-decay gradient (float64)
   gives ``dg``; the l2norm backward of ``k`` [``prepare_wy_repr_bwd``, ``chunk_local_cumsum``].

Every ``tl.dot`` takes FP32 operands with ``input_precision="ieee"``. The log-decay gradient of
a pairwise factor ``D_ij`` is ``+m_ij`` on row ``i`` and ``-m_ij`` on column ``j``; only ``i > j``
enters (``D_ii = 1`` has none), so the diagonal never adds and cancels. Gradients of ``q``/``k``
are written per value head (``[B·T, HV, K]``); the launcher sums a group of value heads.
"""

from __future__ import annotations

import triton
import triton.language as tl

from hybrid_numerics._triton_chunk_kernels import (
    _chunk_rows,
    _load_rows,
    _log_decay,
    _pairwise_decay,
    _scan_program,
    _state_tile,
)
from hybrid_numerics._triton_config import autotune_configs


@triton.jit
def _l2norm_bwd(b_x, b_dy):
    """Gradient w.r.t. raw rows ``x`` of ``y = x / sqrt(Σx² + 1e-6)`` given ``dy`` (both FP32)."""
    r = 1.0 / tl.sqrt(tl.sum(b_x * b_x, axis=1) + 1e-6)
    b_y = b_x * r[:, None]
    return r[:, None] * (b_dy - b_y * tl.sum(b_y * b_dy, axis=1)[:, None])


@triton.jit
def _pairwise_grad(b_m, o_t):
    """Log-decay gradient of factors ``D_ij = exp(gamma_i - gamma_j)`` with ``m = dD ⊙ D``:
    ``+Σ_j m_ij`` on row ``i``, ``-Σ_i m_ij`` on column ``j``, over ``i > j`` only, summed in
    float64 - the two sums cancel in the reverse cumulative sum that follows (under strong
    decay by orders of magnitude), so they must not be rounded to FP32 first."""
    b_m = tl.where(o_t[:, None] > o_t[None, :], b_m, 0.0).to(tl.float64)
    return tl.sum(b_m, axis=1) - tl.sum(b_m, axis=0)


@triton.jit
def _reverse_cumsum(x):
    """``y_j = Σ_{i >= j} x_i`` (``gamma = cumsum(g)`` backwards), float64 in and out."""
    return tl.sum(x) - tl.cumsum(x, axis=0) + x


@triton.jit
def _store_rows(x, b_x, rows, mask_t, n_heads, i_head, D, o_d, mask_d):
    ptr = x + (rows[:, None] * n_heads + i_head) * D + o_d[None, :]
    tl.store(ptr, b_x, mask=mask_t[:, None] & mask_d[None, :])


@triton.autotune(configs=autotune_configs(), key=["K", "V", "BT"])
@triton.jit
def chunk_bwd_dv_local_kernel(
    q, k, g, do, dv, cu_seqlens, chunk_index, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
    BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_L2NORM: tl.constexpr, IS_VARLEN: tl.constexpr,
):  # fmt: skip
    """``dv [B·T, HV, V]`` FP32 = ``Pᵀ dO`` of one (chunk, value head, V block)."""
    i_c = tl.program_id(0).to(tl.int64)
    i_hv = tl.program_id(1)
    i_v = tl.program_id(2)
    i_h = i_hv // (HV // H)
    rows, mask_t = _chunk_rows(cu_seqlens, chunk_index, i_c, T, BT, IS_VARLEN)
    o_t = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    mask_k = o_k < K
    o_v = i_v * BV + tl.arange(0, BV)
    mask_v = o_v < V
    b_q = _load_rows(q, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM) * scale
    b_k = _load_rows(k, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM)
    gamma = _log_decay(g, rows, mask_t, HV, i_hv)
    b_p = tl.dot(b_q, tl.trans(b_k), input_precision="ieee")
    b_p = b_p * _pairwise_decay(gamma, o_t, INCLUSIVE=True)
    b_do = _load_rows(do, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
    b_dv = tl.dot(tl.trans(b_p), b_do, input_precision="ieee")
    _store_rows(dv, b_dv, rows, mask_t, HV, i_hv, V, o_v, mask_v)


@triton.autotune(configs=autotune_configs(), key=["K", "V", "BT"])
@triton.jit
def chunk_state_bwd_kernel(
    q, k, g, w, do, dv_local, dht, dh, dv, dh0, cu_seqlens, chunk_offsets, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
    BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_FINAL_GRAD: tl.constexpr, STORE_INITIAL_GRAD: tl.constexpr,
    USE_L2NORM: tl.constexpr, IS_VARLEN: tl.constexpr,
):  # fmt: skip
    """Reverse scan of one (sequence, value head, V block): ``dh [NT, HV, K, V]`` (the gradient
    of the state leaving each chunk), ``dv [B·T, HV, V]`` (of ``F``), ``dh0 [N, HV, K, V]``."""
    i_n, i_hv, i_h, bos, eos, first = _scan_program(cu_seqlens, chunk_offsets, T, H, HV, BT,
                                                    IS_VARLEN)  # fmt: skip
    o_t = tl.arange(0, BT)
    o_k, o_v, mask_k, mask_v, mask_h, kv = _state_tile(tl.program_id(1), K, V, BK, BV)
    b_dh = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_FINAL_GRAD:
        b_dh += tl.load(dht + (i_n * HV + i_hv) * K * V + kv, mask=mask_h, other=0.0)
    n_chunks = tl.cdiv(eos - bos, BT)
    for i in range(n_chunks):
        c = n_chunks - 1 - i
        tl.store(dh + ((first + c) * HV + i_hv) * K * V + kv, b_dh, mask=mask_h)
        rows = bos + c * BT + o_t
        mask_t = rows < eos
        gamma = _log_decay(g, rows, mask_t, HV, i_hv)
        gamma_last = tl.sum(tl.where(o_t == BT - 1, gamma, 0.0))
        b_k = _load_rows(k, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM)
        b_kd = b_k * tl.exp((gamma_last - gamma).to(tl.float32))[:, None]
        b_dv = _load_rows(dv_local, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
        b_dv += tl.dot(b_kd, b_dh, input_precision="ieee")
        _store_rows(dv, b_dv, rows, mask_t, HV, i_hv, V, o_v, mask_v)
        b_q = _load_rows(q, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM) * scale
        b_qg = b_q * tl.exp(gamma.to(tl.float32))[:, None]
        b_do = _load_rows(do, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
        b_w = _load_rows(w, rows, mask_t, HV, i_hv, K, o_k, mask_k, False)
        b_dh = b_dh * tl.exp(gamma_last.to(tl.float32))
        b_dh += tl.dot(tl.trans(b_qg), b_do, input_precision="ieee")
        b_dh -= tl.dot(tl.trans(b_w), b_dv, input_precision="ieee")
    if STORE_INITIAL_GRAD:
        tl.store(dh0 + (i_n * HV + i_hv) * K * V + kv, b_dh, mask=mask_h)


@triton.autotune(configs=autotune_configs(), key=["K", "V", "BT"])
@triton.jit
def chunk_bwd_dqkwg_kernel(
    q, k, g, h, dh, fresh, do, dv, dq, dk, dw, dg, cu_seqlens, chunk_index, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
    BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_L2NORM: tl.constexpr, IS_VARLEN: tl.constexpr,
):  # fmt: skip
    """One (chunk, value head), looping over V blocks: ``dq`` (final, per value head), the
    output/state part of ``dk`` (w.r.t. the normalised keys), ``dw``, and these terms' part of
    ``dg``, all ``[B·T, HV, ·]`` FP32."""
    i_c = tl.program_id(0).to(tl.int64)
    i_hv = tl.program_id(1)
    i_h = i_hv // (HV // H)
    rows, mask_t = _chunk_rows(cu_seqlens, chunk_index, i_c, T, BT, IS_VARLEN)
    o_t = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    mask_k = o_k < K
    b_q = _load_rows(q, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM) * scale
    b_k = _load_rows(k, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM)
    gamma = _log_decay(g, rows, mask_t, HV, i_hv)
    gamma_last = tl.sum(tl.where(o_t == BT - 1, gamma, 0.0))
    e_g = tl.exp(gamma.to(tl.float32))
    e_kd = tl.exp((gamma_last - gamma).to(tl.float32))
    b_dqg = tl.zeros([BT, BK], dtype=tl.float32)  # dL/d(Q ⊙ e^gamma) = dO S_cᵀ
    b_dp = tl.zeros([BT, BT], dtype=tl.float32)  # dL/dP = dO Fᵀ
    b_dkd = tl.zeros([BT, BK], dtype=tl.float32)  # dL/dKd = F dS_{c+1}ᵀ
    b_dw = tl.zeros([BT, BK], dtype=tl.float32)
    b_sds = tl.zeros([BK], dtype=tl.float32)  # rows of <S_c, dS_{c+1}>
    state = i_c * HV * K * V + i_hv * K * V + o_k[:, None] * V
    for i_v in range(tl.cdiv(V, BV)):
        o_v = i_v * BV + tl.arange(0, BV)
        mask_v = o_v < V
        mask_h = mask_k[:, None] & mask_v[None, :]
        b_s = tl.load(h + state + o_v[None, :], mask=mask_h, other=0.0)
        b_ds = tl.load(dh + state + o_v[None, :], mask=mask_h, other=0.0)
        b_f = _load_rows(fresh, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
        b_do = _load_rows(do, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
        b_dv = _load_rows(dv, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
        b_dqg += tl.dot(b_do, tl.trans(b_s), input_precision="ieee")
        b_dp += tl.dot(b_do, tl.trans(b_f), input_precision="ieee")
        b_dkd += tl.dot(b_f, tl.trans(b_ds), input_precision="ieee")
        b_dw -= tl.dot(b_dv, tl.trans(b_s), input_precision="ieee")
        b_sds += tl.sum(b_s * b_ds, axis=1)
    _store_rows(dw, b_dw, rows, mask_t, HV, i_hv, K, o_k, mask_k)
    b_dpd = b_dp * _pairwise_decay(gamma, o_t, INCLUSIVE=True)
    b_dq = b_dqg * e_g[:, None] + tl.dot(b_dpd, b_k, input_precision="ieee")
    b_dk = tl.dot(tl.trans(b_dpd), b_q, input_precision="ieee") + b_dkd * e_kd[:, None]
    b_m = b_dpd * tl.dot(b_q, tl.trans(b_k), input_precision="ieee")
    f64 = tl.float64
    b_kdg = tl.sum((b_dkd * b_k * e_kd[:, None]).to(f64), axis=1)  # dKd_i/dgamma_i = -Kd_i
    b_dgam = tl.sum((b_dqg * b_q * e_g[:, None]).to(f64), axis=1) - b_kdg
    b_dgam += _pairwise_grad(b_m, o_t)
    last = tl.sum(b_kdg) + tl.exp(gamma_last.to(tl.float32)).to(f64) * tl.sum(b_sds.to(f64))
    # gamma_last is gamma of the chunk's last real row (padded rows add g = 0): that row's
    # cumulative sum reaches every earlier g of the chunk.
    b_dgam += tl.where(o_t == tl.sum(mask_t.to(tl.int32)) - 1, last, 0.0)
    tl.store(dg + rows * HV + i_hv, _reverse_cumsum(b_dgam).to(tl.float32), mask=mask_t)
    b_dq = b_dq * scale
    if USE_L2NORM:
        b_dq = _l2norm_bwd(_load_rows(q, rows, mask_t, H, i_h, K, o_k, mask_k, False), b_dq)
    _store_rows(dq, b_dq, rows, mask_t, HV, i_hv, K, o_k, mask_k)
    _store_rows(dk, b_dk, rows, mask_t, HV, i_hv, K, o_k, mask_k)


@triton.autotune(configs=autotune_configs(), key=["K", "V", "BT"])
@triton.jit
def chunk_wy_bwd_kernel(
    k, v, g, beta, xs, dw, du, dk_part, dg_part, dk, dv, dbeta, dg, cu_seqlens, chunk_index, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
    BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_L2NORM: tl.constexpr, IS_VARLEN: tl.constexpr,
):  # fmt: skip
    """One (chunk, value head): the WY/UT backward, then ``dk`` (raw keys, per value head),
    ``dv``, ``dbeta`` and ``dg`` (FP32), given ``dw``, ``du`` (= the corrected values'
    gradient) and the partial ``dk``/``dg`` of :func:`chunk_bwd_dqkwg_kernel`."""
    i_c = tl.program_id(0).to(tl.int64)
    i_hv = tl.program_id(1)
    i_h = i_hv // (HV // H)
    rows, mask_t = _chunk_rows(cu_seqlens, chunk_index, i_c, T, BT, IS_VARLEN)
    o_t = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    mask_k = o_k < K
    b_k = _load_rows(k, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM)
    b_beta = tl.load(beta + rows * HV + i_hv, mask=mask_t, other=0.0).to(tl.float32)
    gamma = _log_decay(g, rows, mask_t, HV, i_hv)
    e_g = tl.exp(gamma.to(tl.float32))
    b_x = _load_rows(xs, rows, mask_t, HV, i_hv, BT, o_t, o_t < BT, False)
    b_kg = b_k * e_g[:, None]
    b_dw = _load_rows(dw, rows, mask_t, HV, i_hv, K, o_k, mask_k, False)
    b_xdw = tl.dot(tl.trans(b_x), b_dw, input_precision="ieee")  # dL/d(diag(β) K ⊙ e^gamma)
    b_dbeta = tl.sum(b_xdw * b_kg, axis=1)
    b_dkg = b_xdw * b_beta[:, None]  # dL/d(K ⊙ e^gamma)
    b_dx = tl.dot(b_dw, tl.trans(b_kg), input_precision="ieee")  # dX (before diag(β))
    for i_v in range(tl.cdiv(V, BV)):
        o_v = i_v * BV + tl.arange(0, BV)
        mask_v = o_v < V
        b_du = _load_rows(du, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
        b_v = _load_rows(v, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
        b_xdu = tl.dot(tl.trans(b_x), b_du, input_precision="ieee")
        _store_rows(dv, b_xdu * b_beta[:, None], rows, mask_t, HV, i_hv, V, o_v, mask_v)
        b_dbeta += tl.sum(b_xdu * b_v, axis=1)
        b_dx += tl.dot(b_du, tl.trans(b_v), input_precision="ieee")
    b_dx = b_dx * b_beta[None, :]
    b_da = tl.dot(tl.dot(tl.trans(b_x), b_dx, input_precision="ieee"), tl.trans(b_x),
                  input_precision="ieee")  # fmt: skip
    b_da = tl.where(o_t[:, None] > o_t[None, :], -b_da, 0.0)
    b_kkd = tl.dot(b_k, tl.trans(b_k), input_precision="ieee")
    b_kkd = b_kkd * _pairwise_decay(gamma, o_t, INCLUSIVE=False)
    b_dbeta += tl.sum(b_da * b_kkd, axis=1)
    b_z = b_da * b_beta[:, None] * _pairwise_decay(gamma, o_t, INCLUSIVE=False)
    b_dk = tl.dot(b_z, b_k, input_precision="ieee") + tl.dot(
        tl.trans(b_z), b_k, input_precision="ieee"
    )
    b_dk += b_dkg * e_g[:, None] + _load_rows(
        dk_part, rows, mask_t, HV, i_hv, K, o_k, mask_k, False
    )
    b_m = b_da * b_kkd * b_beta[:, None]  # dA ⊙ A, strictly lower
    b_dgam = tl.sum((b_dkg * b_kg).to(tl.float64), axis=1) + _pairwise_grad(b_m, o_t)
    b_dg = _reverse_cumsum(b_dgam) + tl.load(dg_part + rows * HV + i_hv, mask=mask_t, other=0.0)
    tl.store(dg + rows * HV + i_hv, b_dg.to(tl.float32), mask=mask_t)
    tl.store(dbeta + rows * HV + i_hv, b_dbeta, mask=mask_t)
    if USE_L2NORM:
        b_dk = _l2norm_bwd(_load_rows(k, rows, mask_t, H, i_h, K, o_k, mask_k, False), b_dk)
    _store_rows(dk, b_dk, rows, mask_t, HV, i_hv, K, o_k, mask_k)
