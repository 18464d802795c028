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


@triton.autotune(configs=_STATE_CONFIGS, key=["K", "V", "BC"])
@triton.jit
def chunk_state_kernel(
    w, u, kd, decay, h0, states, NC,
    K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BC: tl.constexpr,
    BV: tl.constexpr, USE_INITIAL: tl.constexpr,
):  # fmt: skip
    """``S_{c+1} = decay_c S_c + kd_c^T (u_c - w_c S_c)`` with every ``S_c`` stored in FP32.

    ``w, kd: [B*HV, NC, BC, K]``, ``u: [B*HV, NC, BC, V]``, ``decay: [B*HV, NC]``,
    ``h0: [B*HV, K, V]``, ``states: [B*HV, NC + 1, K, V]`` (all FP32, contiguous). Launched by
    :mod:`hybrid_numerics._triton_scan` (with its backward, :func:`chunk_state_grad_kernel`).
    """
    i_bh = tl.program_id(0).to(tl.int64)
    i_v = tl.program_id(1)
    o_k = tl.arange(0, BK)
    o_c = tl.arange(0, BC)
    o_v = i_v * BV + tl.arange(0, BV)
    mask_k = o_k < K
    mask_v = o_v < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    hv_off = o_k[:, None] * V + o_v[None, :]
    state = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL:
        state += tl.load(h0 + i_bh * K * V + hv_off, mask=mask_h, other=0.0)
    for c in range(NC):
        base = i_bh * NC + c
        tl.store(states + (i_bh * (NC + 1) + c) * K * V + hv_off, state, mask=mask_h)
        ck = base * BC * K + o_c[:, None] * K + o_k[None, :]
        b_w = tl.load(w + ck, mask=mask_k[None, :], other=0.0)
        b_kd = tl.load(kd + ck, mask=mask_k[None, :], other=0.0)
        b_u = tl.load(
            u + base * BC * V + o_c[:, None] * V + o_v[None, :], mask=mask_v[None, :], other=0.0
        )
        fresh = b_u - tl.dot(b_w, state, input_precision="ieee")  # [BC, BV], FP32 dot
        state = state * tl.load(decay + base)
        state += tl.dot(tl.trans(b_kd), fresh, input_precision="ieee")
    tl.store(states + (i_bh * (NC + 1) + NC) * K * V + hv_off, state, mask=mask_h)


@triton.jit
def chunk_state_grad_kernel(
    w, u, kd, decay, states, d_states, d_s, d_fresh, d_decay_cols, d_w_part, d_kd_part, NC,
    K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BC: tl.constexpr, BV: tl.constexpr,
):  # fmt: skip
    """Reverse scan of :func:`chunk_state_kernel` with the weight gradients. Walking
    ``c = NC-1 .. 0``:

        dfresh_c = kd_c dS_{c+1}
        dW_c     = -dfresh_c S_c^T
        dKd_c    = (u_c - w_c S_c) dS_{c+1}^T
        da_c     = <S_c, dS_{c+1}>
        dS_c     = d_states_c + decay_c dS_{c+1} - w_c^T dfresh_c

    with ``dS_NC = d_states_NC`` (the final state's gradient); every product an FP32 ``ieee``
    dot. Inputs: ``w, kd: [N, NC, BC, K]``, ``u: [N, NC, BC, V]``, ``decay: [N, NC]``,
    ``states, d_states: [N, NC + 1, K, V]``. Outputs: ``d_s: [N, NC + 1, K, V]`` (every total
    state gradient; ``d_s[:, 0]`` is the initial state's), ``d_fresh: [N, NC, BC, V]``, and
    the partial sums over this program's V block of the three reductions over V:
    ``d_decay_cols: [N, NC, V]`` (per column), ``d_w_part, d_kd_part: [NVB, N, NC, BC, K]``
    (per V block). The caller adds them up - no atomics, deterministic. Not autotuned: the
    partials' layout depends on ``BV``.
    """
    i_bh = tl.program_id(0).to(tl.int64)
    i_v = tl.program_id(1)
    n_rows = tl.num_programs(0).to(tl.int64)
    o_k = tl.arange(0, BK)
    o_c = tl.arange(0, BC)
    o_v = i_v * BV + tl.arange(0, BV)
    mask_k = o_k < K
    mask_v = o_v < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    hv_off = o_k[:, None] * V + o_v[None, :]
    s_base = i_bh * (NC + 1) * K * V
    d_state = tl.load(d_states + s_base + NC * K * V + hv_off, mask=mask_h, other=0.0)
    tl.store(d_s + s_base + NC * K * V + hv_off, d_state, mask=mask_h)
    for i in range(NC):
        c = NC - 1 - i  # a plain integer (the interpreter cannot .to()-cast loop indices)
        base = i_bh * NC + c
        b_s = tl.load(states + s_base + c * K * V + hv_off, mask=mask_h, other=0.0)
        tl.store(d_decay_cols + base * V + o_v, tl.sum(b_s * d_state, axis=0), mask=mask_v)
        ck = base * BC * K + o_c[:, None] * K + o_k[None, :]
        b_w = tl.load(w + ck, mask=mask_k[None, :], other=0.0)
        b_kd = tl.load(kd + ck, mask=mask_k[None, :], other=0.0)
        cv = base * BC * V + o_c[:, None] * V + o_v[None, :]
        b_u = tl.load(u + cv, mask=mask_v[None, :], other=0.0)
        b_df = tl.dot(b_kd, d_state, input_precision="ieee")  # [BC, BV], FP32 dot
        tl.store(d_fresh + cv, b_df, mask=mask_v[None, :])
        b_fresh = b_u - tl.dot(b_w, b_s, input_precision="ieee")
        part = ((i_v * n_rows + i_bh) * NC + c) * BC * K + o_c[:, None] * K + o_k[None, :]
        b_dw = -tl.dot(b_df, tl.trans(b_s), input_precision="ieee")  # [BC, BK]
        tl.store(d_w_part + part, b_dw, mask=mask_k[None, :])
        b_dkd = tl.dot(b_fresh, tl.trans(d_state), input_precision="ieee")
        tl.store(d_kd_part + part, b_dkd, mask=mask_k[None, :])
        d_state = d_state * tl.load(decay + base)
        d_state -= tl.dot(tl.trans(b_w), b_df, input_precision="ieee")
        d_state += tl.load(d_states + s_base + c * K * V + hv_off, mask=mask_h, other=0.0)
        tl.store(d_s + s_base + c * K * V + hv_off, d_state, mask=mask_h)
