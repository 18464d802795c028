# Triton kernel parameters are pointers/ints whose annotations would change how Triton
# specialises them, so the kernels stay unannotated (mypy: only for this module).
# mypy: disable-error-code="untyped-decorator,no-untyped-def"
"""Triton kernels with the recurrent state in FP32 wherever it lives.

* :func:`recurrent_kernel` - decode. One program per (sequence, value head, V block) keeps its
  ``[K, BV]`` state slice in FP32 registers for the whole sequence, reads it from and writes it
  back to an FP32 state cache **in place** (``state_indices`` picks the slot).
* :func:`chunk_state_kernel` - the sequential part of the chunk path. One program per
  (batch, value head, V block) walks the chunks, stores every per-chunk state in FP32 (fla stores
  them in bf16) and multiplies by the state with FP32 dots (``input_precision="ieee"``: no TF32
  and no bf16 rounding of the state inside ``tl.dot``).
* :func:`chunk_state_grad_kernel` - the backward of that scan: the same grid walks the chunks in
  reverse and carries the FP32 state gradient ``dS`` (never rounded either).

Both run under ``TRITON_INTERPRET=1`` on CPU tensors: loop indices are used as plain integers
(never ``.to()``-cast), and the autotuner has a single configuration in interpreter mode.
"""

from __future__ import annotations

import triton
import triton.language as tl

from hybrid_numerics._triton_config import autotune_configs

# The pruned autotune set (<= 4 configs, env override): see hybrid_numerics._triton_config.
_STATE_CONFIGS = autotune_configs()


@triton.jit
def recurrent_kernel(
    q, k, v, g, beta, o, h0, ht, h_out, slots, cu_seqlens, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
    BK: tl.constexpr, BV: tl.constexpr,
    USE_INITIAL: tl.constexpr, STORE_FINAL: tl.constexpr, USE_SLOTS: tl.constexpr,
    STORE_OUT: tl.constexpr, IS_VARLEN: tl.constexpr, USE_L2NORM: tl.constexpr,
):  # fmt: skip
    """Gated delta rule token by token; ``o`` is ``[B*T, HV, V]``; states ``[*, HV, K, V]``.

    Grid: ``(N * HV, V blocks)`` - sequences x value heads on axis 0, whose limit is 2^31 - 1
    (axes 1 and 2 stop at 65,535: 4,096 sequences x 32 heads would not launch there).
    ``STORE_OUT``: also write the final state to ``h_out [N, HV, K, V]`` (row ``n``, whatever
    the slot), so a cached call can return the final states like every other path.
    """
    i_nh = tl.program_id(0)
    i_v = tl.program_id(1)
    i_n = i_nh // HV
    i_hv = i_nh % HV
    i_h = i_hv // (HV // H)
    if IS_VARLEN:
        bos = tl.load(cu_seqlens + i_n).to(tl.int64)
        eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    else:
        bos = i_n.to(tl.int64) * T
        eos = bos + T
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    mask_k = o_k < K
    mask_v = o_v < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    state_row = tl.load(slots + i_n).to(tl.int64) if USE_SLOTS else i_n.to(tl.int64)
    # A negative slot: start from zeros and write nothing back (a full-shape mask, built from
    # the block offsets, so the same code runs compiled and interpreted).
    mask_s = mask_h & ((o_k[:, None] * 0 + state_row) >= 0)
    h_off = (state_row * HV + i_hv) * K * V + o_k[:, None] * V + o_v[None, :]
    state = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL:
        state += tl.load(h0 + h_off, mask=mask_s, other=0.0).to(tl.float32)
    for t in range(bos, eos):
        qk_off = (t * H + i_h) * K + o_k
        b_q = tl.load(q + qk_off, mask=mask_k, other=0.0).to(tl.float32)
        b_k = tl.load(k + qk_off, mask=mask_k, other=0.0).to(tl.float32)
        b_v = tl.load(v + (t * HV + i_hv) * V + o_v, mask=mask_v, other=0.0).to(tl.float32)
        b_g = tl.load(g + t * HV + i_hv).to(tl.float32)
        b_beta = tl.load(beta + t * HV + i_hv).to(tl.float32)
        if USE_L2NORM:
            b_q = b_q / tl.sqrt(tl.sum(b_q * b_q) + 1e-6)
            b_k = b_k / tl.sqrt(tl.sum(b_k * b_k) + 1e-6)
        b_q = b_q * scale
        state = state * tl.exp(b_g)
        predicted = tl.sum(state * b_k[:, None], axis=0)
        correction = (b_v - predicted) * b_beta
        state += b_k[:, None] * correction[None, :]
        b_o = tl.sum(state * b_q[:, None], axis=0)
        tl.store(o + (t * HV + i_hv) * V + o_v, b_o, mask=mask_v)
    if STORE_FINAL:
        tl.store(ht + h_off, state, mask=mask_s)
    if STORE_OUT:
        out_off = (i_n.to(tl.int64) * HV + i_hv) * K * V + o_k[:, None] * V + o_v[None, :]
        tl.store(h_out + out_off, state, mask=mask_h)


@triton.jit
def _scan_rows(chunk_offsets, i_r, NC, HV: tl.constexpr, VARLEN: tl.constexpr):
    """``(data row, first chunk, end chunk)`` of program row ``i_r = n * HV + hv``: dense, row
    ``i_r`` holds its own ``NC`` chunks; packed (``B = 1``), the chunks of sequence ``n`` are
    ``chunk_offsets[n] .. chunk_offsets[n + 1]`` of data row ``hv``."""
    if VARLEN:
        i_n = i_r // HV
        r_data = i_r % HV
        c0 = tl.load(chunk_offsets + i_n).to(tl.int64)
        c1 = tl.load(chunk_offsets + i_n + 1).to(tl.int64)
    else:
        r_data = i_r
        c0 = i_r * 0
        c1 = c0 + NC
    return r_data, c0, c1


@triton.autotune(configs=_STATE_CONFIGS, key=["K", "V", "BC"])
@triton.jit
def chunk_state_kernel(
    w, u, kd, decay, h0, entering, finals, chunk_offsets, NC,
    K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BC: tl.constexpr,
    BV: tl.constexpr, HV: tl.constexpr, USE_INITIAL: tl.constexpr, VARLEN: tl.constexpr,
):  # fmt: skip
    """``S_{c+1} = decay_c S_c + kd_c^T (u_c - w_c S_c)`` with every ``S_c`` stored in FP32.

    ``w, kd: [R, NC, BC, K]``, ``u: [R, NC, BC, V]``, ``decay: [R, NC]`` (``R`` data rows),
    ``entering: [R, NC, K, V]`` (the state entering each chunk), ``h0, finals: [N * HV, K, V]``
    (per sequence and value head; program row ``n * HV + hv``, see :func:`_scan_rows`). All
    FP32, contiguous. Launched by :mod:`hybrid_numerics._triton_scan`.
    """
    i_r = tl.program_id(0).to(tl.int64)
    i_v = tl.program_id(1)
    r_data, c0, c1 = _scan_rows(chunk_offsets, i_r, NC, HV, VARLEN)
    o_k = tl.arange(0, BK)
    o_c = tl.arange(0, BC)
    o_v = i_v * BV + tl.arange(0, BV)
    mask_k = o_k < K
    mask_v = o_v < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    hv_off = o_k[:, None] * V + o_v[None, :]
    state = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL:
        state += tl.load(h0 + i_r * K * V + hv_off, mask=mask_h, other=0.0)
    for c in range(c0, c1):
        base = r_data * NC + c
        tl.store(entering + base * K * V + hv_off, state, mask=mask_h)
        ck = base * BC * K + o_c[:, None] * K + o_k[None, :]
        b_w = tl.load(w + ck, mask=mask_k[None, :], other=0.0)
        b_kd = tl.load(kd + ck, mask=mask_k[None, :], other=0.0)
        b_u = tl.load(
            u + base * BC * V + o_c[:, None] * V + o_v[None, :], mask=mask_v[None, :], other=0.0
        )
        fresh = b_u - tl.dot(b_w, state, input_precision="ieee")  # [BC, BV], FP32 dot
        state = state * tl.load(decay + base)
        state += tl.dot(tl.trans(b_kd), fresh, input_precision="ieee")
    tl.store(finals + i_r * K * V + hv_off, state, mask=mask_h)


@triton.jit
def chunk_state_grad_kernel(
    w, u, kd, decay, entering, d_entering, d_finals, d_h0, d_fresh, d_decay_cols,
    d_w_part, d_kd_part, chunk_offsets, NC, R,
    K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BC: tl.constexpr, BV: tl.constexpr,
    HV: tl.constexpr, VARLEN: tl.constexpr,
):  # fmt: skip
    """Reverse scan of :func:`chunk_state_kernel` with the weight gradients. Walking the
    program row's chunks backwards from ``dS = d_finals`` (the final state's gradient):

        dfresh_c = kd_c dS_{c+1}
        dW_c     = -dfresh_c S_c^T
        dKd_c    = (u_c - w_c S_c) dS_{c+1}^T
        da_c     = <S_c, dS_{c+1}>
        dS_c     = d_entering_c + decay_c dS_{c+1} - w_c^T dfresh_c

    every product an FP32 ``ieee`` dot. Layouts as in the forward; outputs ``d_h0 [N * HV, K,
    V]``, ``d_fresh [R, NC, BC, V]`` and the partial sums over this program's V block of the
    three reductions over V: ``d_decay_cols [R, NC, V]`` (per column), ``d_w_part, d_kd_part
    [NVB, R, NC, BC, K]`` (per V block). The caller adds them up - no atomics, deterministic.
    Not autotuned: the partials' layout depends on ``BV``.
    """
    i_r = tl.program_id(0).to(tl.int64)
    i_v = tl.program_id(1)
    r_data, c0, c1 = _scan_rows(chunk_offsets, i_r, NC, HV, VARLEN)
    o_k = tl.arange(0, BK)
    o_c = tl.arange(0, BC)
    o_v = i_v * BV + tl.arange(0, BV)
    mask_k = o_k < K
    mask_v = o_v < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    hv_off = o_k[:, None] * V + o_v[None, :]
    d_state = tl.load(d_finals + i_r * K * V + hv_off, mask=mask_h, other=0.0)
    for i in range(c1 - c0):
        c = c1 - 1 - i
        base = r_data * NC + c
        b_s = tl.load(entering + base * K * V + hv_off, mask=mask_h, other=0.0)
        tl.store(d_decay_cols + base * V + o_v, tl.sum(b_s * d_state, axis=0), mask=mask_v)
        ck = base * BC * K + o_c[:, None] * K + o_k[None, :]
        b_w = tl.load(w + ck, mask=mask_k[None, :], other=0.0)
        b_kd = tl.load(kd + ck, mask=mask_k[None, :], other=0.0)
        cv = base * BC * V + o_c[:, None] * V + o_v[None, :]
        b_u = tl.load(u + cv, mask=mask_v[None, :], other=0.0)
        b_df = tl.dot(b_kd, d_state, input_precision="ieee")  # [BC, BV], FP32 dot
        tl.store(d_fresh + cv, b_df, mask=mask_v[None, :])
        b_fresh = b_u - tl.dot(b_w, b_s, input_precision="ieee")
        part = ((i_v * R + r_data) * NC + c) * BC * K + o_c[:, None] * K + o_k[None, :]
        b_dw = -tl.dot(b_df, tl.trans(b_s), input_precision="ieee")  # [BC, BK]
        tl.store(d_w_part + part, b_dw, mask=mask_k[None, :])
        b_dkd = tl.dot(b_fresh, tl.trans(d_state), input_precision="ieee")
        tl.store(d_kd_part + part, b_dkd, mask=mask_k[None, :])
        d_state = d_state * tl.load(decay + base)
        d_state -= tl.dot(tl.trans(b_w), b_df, input_precision="ieee")
        d_state += tl.load(d_entering + base * K * V + hv_off, mask=mask_h, other=0.0)
    tl.store(d_h0 + i_r * K * V + hv_off, d_state, mask=mask_h)
