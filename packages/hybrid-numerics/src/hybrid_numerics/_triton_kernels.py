# Triton kernel parameters are pointers/ints whose annotations would change how Triton
# specialises them, so the kernels stay unannotated (mypy: only for this module).
# mypy: disable-error-code="untyped-decorator,no-untyped-def"
"""Triton kernels with the recurrent state in FP32 wherever it lives.

* :func:`recurrent_kernel` - decode. One program per (sequence, value head, V block) keeps its
  ``[K, BV]`` state slice in FP32 registers for the whole sequence, reads it from and writes it
  back to an FP32 state cache **in place** (``state_indices`` picks the slot).

The chunk path's kernels are :mod:`hybrid_numerics._triton_chunk_kernels` (forward) and
:mod:`hybrid_numerics._triton_chunk_bwd_kernels` (backward). Runs under ``TRITON_INTERPRET=1``
on CPU tensors (loop indices are used as plain integers, never ``.to()``-cast).
"""

from __future__ import annotations

import triton
import triton.language as tl


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
