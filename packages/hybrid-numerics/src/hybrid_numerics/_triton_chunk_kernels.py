# Triton kernel parameters are pointers/ints whose annotations would change how Triton
# specialises them, so the kernels stay unannotated (mypy: only for this module).
# mypy: disable-error-code="untyped-decorator,no-untyped-def"
"""The fused chunk forward of the gated delta rule: three Triton kernels, FP32 throughout.

The WY / UT form (Yang et al., "Gated Delta Networks" §3), per chunk of ``BT`` tokens with the
in-chunk cumulative log decay ``gamma_i = Σ_{j<=i} g_j`` (accumulated in float64: an FP32 sum of 64
terms of size ~1 is off by ~1e-6, which ``exp`` turns into a relative error of every decay
factor) and ``D_ij = exp(gamma_i - gamma_j)`` for ``i >= j``:

1. :func:`chunk_wy_fwd_kernel` (grid: chunks x value heads) - the intra-chunk part:
   ``A = strict_lower(diag(β) K Kᵀ ⊙ D)``, ``X = (I + A)⁻¹`` by forward substitution in
   registers, then ``w = X diag(β) (K ⊙ e^{gamma})`` and ``u = X diag(β) V`` (FP32 in memory).
2. :func:`chunk_state_fwd_kernel` (grid: sequences·value heads on axis 0, V blocks) - the
   sequential scan: stores each chunk's entering state ``S_c`` (FP32), the corrected values
   ``fresh = u - w S_c`` and ``S_{c+1} = e^{gamma_last} S_c + (K ⊙ e^{gamma_last - gamma})ᵀ fresh``; the
   final state goes to its own contiguous buffer and/or an FP32 state-cache slot.
3. :func:`chunk_o_fwd_kernel` (grid: chunks x value heads x V blocks) - the output
   ``O = (Q ⊙ e^{gamma}) S_c + (Q Kᵀ ⊙ D) fresh`` (causal, diagonal included).

Every ``tl.dot`` takes FP32 operands with ``input_precision="ieee"`` (no TF32, no bf16 rounding
of the state). Inputs are read in their own dtype (bf16/fp16/fp32) in fla's layout
``[B·T, heads, dim]``; L2 normalisation of q and k happens in-kernel on the full key row
(``BK >= K``). Sequences are ``(bos, eos)`` token ranges: ``n·T`` for dense batches, from
``cu_seqlens`` for packed ones - no padding to the longest sequence.
"""

from __future__ import annotations

import triton
import triton.language as tl

from hybrid_numerics._triton_config import autotune_configs


@triton.jit
def _seq_range(cu_seqlens, i_n, T, IS_VARLEN: tl.constexpr):
    if IS_VARLEN:
        bos = tl.load(cu_seqlens + i_n).to(tl.int64)
        eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    else:
        bos = i_n.to(tl.int64) * T
        eos = bos + T
    return bos, eos


@triton.jit
def _chunk_rows(cu_seqlens, chunk_index, i_c, T, BT: tl.constexpr, IS_VARLEN: tl.constexpr):
    """``(rows, mask_t)`` of chunk-table row ``i_c``: token rows of the chunk, and which are real."""
    i_n = tl.load(chunk_index + i_c * 2)
    c = tl.load(chunk_index + i_c * 2 + 1).to(tl.int64)
    bos, eos = _seq_range(cu_seqlens, i_n, T, IS_VARLEN)
    rows = bos + c * BT + tl.arange(0, BT)
    return rows, rows < eos


@triton.jit
def _first_chunk(chunk_offsets, i_n, T, BT: tl.constexpr, IS_VARLEN: tl.constexpr):
    """Chunk-table row of sequence ``i_n``'s first chunk (the scans' per-chunk state rows)."""
    if IS_VARLEN:
        first = tl.load(chunk_offsets + i_n).to(tl.int64)
    else:
        first = i_n.to(tl.int64) * tl.cdiv(T, BT)
    return first


@triton.jit
def _scan_program(cu_seqlens, chunk_offsets, T, H: tl.constexpr, HV: tl.constexpr,
                  BT: tl.constexpr, IS_VARLEN: tl.constexpr):  # fmt: skip
    """A scan program's ``(sequence, value head, q/k head, bos, eos, first chunk row)``: grid
    axis 0 is sequences x value heads (the large axis; axis 1 is the V blocks)."""
    i_nh = tl.program_id(0)
    i_n = i_nh // HV
    i_hv = i_nh % HV
    bos, eos = _seq_range(cu_seqlens, i_n, T, IS_VARLEN)
    first = _first_chunk(chunk_offsets, i_n, T, BT, IS_VARLEN)
    return i_n, i_hv, i_hv // (HV // H), bos, eos, first


@triton.jit
def _state_tile(i_v, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr):
    """Offsets and masks of V block ``i_v`` of a ``[K, V]`` state: ``(o_k, o_v, mask_k,
    mask_v, mask_h, kv)`` with ``kv`` the row-major offsets of the ``[BK, BV]`` tile."""
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    mask_k = o_k < K
    mask_v = o_v < V
    return (
        o_k,
        o_v,
        mask_k,
        mask_v,
        mask_k[:, None] & mask_v[None, :],
        o_k[:, None] * V + o_v[None, :],
    )


@triton.jit
def _load_rows(x, rows, mask_t, n_heads, i_head, D, o_d, mask_d, USE_L2NORM: tl.constexpr):
    """``[BT, BD]`` FP32 rows of ``x[rows, i_head, :]`` (zeros outside), L2-normalised if asked."""
    ptr = x + (rows[:, None] * n_heads + i_head) * D + o_d[None, :]
    b_x = tl.load(ptr, mask=mask_t[:, None] & mask_d[None, :], other=0.0).to(tl.float32)
    if USE_L2NORM:
        b_x = b_x / tl.sqrt(tl.sum(b_x * b_x, axis=1) + 1e-6)[:, None]
    return b_x


@triton.jit
def _log_decay(g, rows, mask_t, HV, i_hv):
    """In-chunk cumulative log decay ``gamma`` in float64 (``g = 0`` on rows past the sequence)."""
    b_g = tl.load(g + rows * HV + i_hv, mask=mask_t, other=0.0).to(tl.float64)
    return tl.cumsum(b_g, axis=0)


@triton.jit
def _pairwise_decay(gamma, o_t, INCLUSIVE: tl.constexpr):
    """``exp(gamma_i - gamma_j)`` on ``i > j`` (``i >= j`` if inclusive), 0 elsewhere; the difference
    in float64, masked before ``exp`` (above the diagonal it would be ``exp(positive)``)."""
    keep = o_t[:, None] >= o_t[None, :] if INCLUSIVE else o_t[:, None] > o_t[None, :]
    diff = gamma[:, None] - gamma[None, :]
    return tl.exp(tl.where(keep, diff, float("-inf")).to(tl.float32))


@triton.jit
def chunk_wy_fwd_kernel(
    k, v, g, beta, w, u, xs, cu_seqlens, chunk_index, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
    BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_L2NORM: tl.constexpr, IS_VARLEN: tl.constexpr, STORE_X: tl.constexpr,
    LOAD_X: tl.constexpr,
):  # fmt: skip
    """``w [B·T, HV, K]`` and ``u [B·T, HV, V]`` (FP32) of every chunk; see the module docstring.

    ``STORE_X``: also ``X = (I + A)⁻¹`` into ``xs [B·T, HV, BT]`` (row ``i`` of a chunk holds row
    ``i`` of its ``X``; a forward that will be differentiated). ``LOAD_X``: read ``X`` from
    there instead of forming ``A`` and substituting (the backward's recompute of ``w``, ``u``)."""
    i_c = tl.program_id(0)
    i_hv = tl.program_id(1)
    i_h = i_hv // (HV // H)
    rows, mask_t = _chunk_rows(cu_seqlens, chunk_index, i_c, T, BT, IS_VARLEN)
    o_t = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    mask_k = o_k < K
    b_k = _load_rows(k, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM)
    b_beta = tl.load(beta + rows * HV + i_hv, mask=mask_t, other=0.0).to(tl.float32)
    gamma = _log_decay(g, rows, mask_t, HV, i_hv)
    x_ptr = xs + (rows[:, None] * HV + i_hv) * BT + o_t[None, :]
    if LOAD_X:  # the backward's recompute: X saved by the forward, no substitution
        b_x = tl.load(x_ptr, mask=mask_t[:, None], other=0.0)
    else:
        b_kk = tl.dot(b_k, tl.trans(b_k), input_precision="ieee")
        b_a = b_beta[:, None] * b_kk * _pairwise_decay(gamma, o_t, INCLUSIVE=False)
        # (I + A)^-1 by forward substitution, one row at a time: X_i = e_i - A_i X (A strictly
        # lower, so only the finished rows j < i of X enter). Rows are picked with masks:
        # register tensors cannot be indexed.
        b_x = tl.where(o_t[:, None] == o_t[None, :], 1.0, 0.0)
        for i in range(1, BT):
            pick = o_t[:, None] == i
            a_i = tl.sum(tl.where(pick, b_a, 0.0), axis=0)
            x_i = tl.sum(tl.where(pick, b_x, 0.0), axis=0) - tl.sum(a_i[:, None] * b_x, axis=0)
            b_x = tl.where(pick, x_i[None, :], b_x)
        if STORE_X:
            tl.store(x_ptr, b_x, mask=mask_t[:, None])
    b_x = b_x * b_beta[None, :]  # fold diag(beta) into the columns
    b_kg = b_k * tl.exp(gamma.to(tl.float32))[:, None]
    b_w = tl.dot(b_x, b_kg, input_precision="ieee")
    tl.store(w + (rows[:, None] * HV + i_hv) * K + o_k[None, :], b_w,
             mask=mask_t[:, None] & mask_k[None, :])  # fmt: skip
    for i_v in range(tl.cdiv(V, BV)):
        o_v = i_v * BV + tl.arange(0, BV)
        mask_v = o_v < V
        b_v = _load_rows(v, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
        b_u = tl.dot(b_x, b_v, input_precision="ieee")
        tl.store(u + (rows[:, None] * HV + i_hv) * V + o_v[None, :], b_u,
                 mask=mask_t[:, None] & mask_v[None, :])  # fmt: skip


@triton.autotune(configs=autotune_configs(), key=["K", "V", "BT"], restore_value=["cache"])
@triton.jit
def chunk_state_fwd_kernel(
    k, w, u, g, h0, h, fresh, ht, cache, slots, cu_seqlens, chunk_offsets, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
    BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_INITIAL: tl.constexpr, STORE_FINAL: tl.constexpr, USE_SLOTS: tl.constexpr,
    USE_L2NORM: tl.constexpr, IS_VARLEN: tl.constexpr,
):  # fmt: skip
    """The chunk scan of one (sequence, value head, V block); states ``[NT, HV, K, V]`` FP32.

    ``USE_SLOTS``: the initial state is ``cache[slots[n]]`` and the final one is written back
    there in place (a negative slot: zeros, nothing written); ``restore_value`` makes the
    autotuner's trial runs leave the cache as it was. ``STORE_FINAL``: also into ``ht [N, HV,
    K, V]`` (contiguous, its own buffer). ``USE_INITIAL``: start from ``h0 [N, HV, K, V]``.
    """
    i_n, i_hv, i_h, bos, eos, first = _scan_program(cu_seqlens, chunk_offsets, T, H, HV, BT,
                                                    IS_VARLEN)  # fmt: skip
    o_t = tl.arange(0, BT)
    o_k, o_v, mask_k, mask_v, mask_h, kv = _state_tile(tl.program_id(1), K, V, BK, BV)
    state = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_SLOTS:
        slot = tl.load(slots + i_n).to(tl.int64)
        # A full-shape mask from the block offsets, so compiled and interpreted code agree.
        mask_s = mask_h & ((o_k[:, None] * 0 + slot) >= 0)
        state += tl.load(cache + (slot * HV + i_hv) * K * V + kv, mask=mask_s, other=0.0)
    elif USE_INITIAL:
        state += tl.load(h0 + (i_n * HV + i_hv) * K * V + kv, mask=mask_h, other=0.0)
    for c in range(tl.cdiv(eos - bos, BT)):
        tl.store(h + ((first + c) * HV + i_hv) * K * V + kv, state, mask=mask_h)
        rows = bos + c * BT + o_t
        mask_t = rows < eos
        b_w = _load_rows(w, rows, mask_t, HV, i_hv, K, o_k, mask_k, False)
        b_u = _load_rows(u, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
        b_fresh = b_u - tl.dot(b_w, state, input_precision="ieee")
        tl.store(fresh + (rows[:, None] * HV + i_hv) * V + o_v[None, :], b_fresh,
                 mask=mask_t[:, None] & mask_v[None, :])  # fmt: skip
        gamma = _log_decay(g, rows, mask_t, HV, i_hv)
        gamma_last = tl.sum(tl.where(o_t == BT - 1, gamma, 0.0))  # padded rows add g = 0
        b_k = _load_rows(k, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM)
        b_kd = b_k * tl.exp((gamma_last - gamma).to(tl.float32))[:, None]
        state = state * tl.exp(gamma_last.to(tl.float32))
        state += tl.dot(tl.trans(b_kd), b_fresh, input_precision="ieee")
    if STORE_FINAL:
        tl.store(ht + (i_n * HV + i_hv) * K * V + kv, state, mask=mask_h)
    if USE_SLOTS:
        tl.store(cache + (slot * HV + i_hv) * K * V + kv, state, mask=mask_s)


@triton.autotune(configs=autotune_configs(), key=["K", "V", "BT"])
@triton.jit
def chunk_o_fwd_kernel(
    q, k, fresh, h, g, o, cu_seqlens, chunk_index, scale, T,
    H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
    BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_L2NORM: tl.constexpr, IS_VARLEN: tl.constexpr, OUT_F32: tl.constexpr,
):  # fmt: skip
    """``o [B·T, HV, V]`` (the output dtype) of one (chunk, value head, V block)."""
    i_c = tl.program_id(0).to(tl.int64)
    i_hv = tl.program_id(1)
    i_v = tl.program_id(2)
    i_h = i_hv // (HV // H)
    rows, mask_t = _chunk_rows(cu_seqlens, chunk_index, i_c, T, BT, IS_VARLEN)
    o_t = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    mask_k = o_k < K
    mask_v = o_v < V
    b_q = _load_rows(q, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM) * scale
    b_k = _load_rows(k, rows, mask_t, H, i_h, K, o_k, mask_k, USE_L2NORM)
    gamma = _log_decay(g, rows, mask_t, HV, i_hv)
    b_s = tl.load(h + (i_c * HV + i_hv) * K * V + o_k[:, None] * V + o_v[None, :],
                  mask=mask_k[:, None] & mask_v[None, :], other=0.0)  # fmt: skip
    b_o = tl.dot(b_q * tl.exp(gamma.to(tl.float32))[:, None], b_s, input_precision="ieee")
    b_attn = tl.dot(b_q, tl.trans(b_k), input_precision="ieee")
    b_attn = b_attn * _pairwise_decay(gamma, o_t, INCLUSIVE=True)
    b_f = _load_rows(fresh, rows, mask_t, HV, i_hv, V, o_v, mask_v, False)
    b_o += tl.dot(b_attn, b_f, input_precision="ieee")
    if not OUT_F32:  # round to nearest even, as torch's .to() does
        b_o = b_o.to(o.dtype.element_ty, fp_downcast_rounding="rtne")
    tl.store(o + (rows[:, None] * HV + i_hv) * V + o_v[None, :], b_o,
             mask=mask_t[:, None] & mask_v[None, :])  # fmt: skip
