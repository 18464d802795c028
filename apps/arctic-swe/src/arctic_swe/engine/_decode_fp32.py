"""The FP32 decode step on a :class:`~arctic_swe.engine._plan.DecodePlan`.

The same computation as the model's full forward for one new token per sequence (same
weights, the delta rule through hybrid-numerics with the FP32 state), written for the fewest
torch calls a one-token step allows — at the small policy's sizes a call costs more than its
arithmetic (Arctic-SWE §3.3 runs thousands of decode steps per update):

* every residual add is folded into its output projection (``addmm``);
* q and k of the attention layer are normalised and rotated as one ``[B, Hq + Hkv, D]`` tensor
  (per-head gains; RoPE as ``x * cos + x[swap] * sin`` from precomputed rows);
* the Gated DeltaNet recurrence is hybrid-numerics' ``gated_delta_decode_step_`` on the
  state pool's rows, in place (a view when the slots are consecutive);
* when every sequence sits at the same position, RoPE rows and the key/value writes are one
  slice each, and attention needs no mask.

Numerics: FP32 throughout, as the full forward; the differences are summation orders (fused
matmuls, ``addmm``'s residual, the four-term convolution), i.e. FP32 rounding.
"""

from __future__ import annotations

import torch
from torch.nn import functional

from arctic_swe.engine._plan import AttnLayer, DecodePlan, GdnLayer, Mlp, Norm
from arctic_swe.engine._pools import CachePools
from arctic_swe.engine._step import Step
from hybrid_numerics import gated_delta_decode_step_


def decode_fp32(plan: DecodePlan, pools: CachePools, step: Step) -> torch.Tensor:
    """Logits ``[B, V]`` (FP32) of each sequence's next token; every cache updated in place."""
    hidden = plan.embed.index_select(0, step.ids)  # [B, H]
    rope = _rope_rows(plan, step)
    for layer in plan.layers:
        if isinstance(layer, GdnLayer):
            hidden = _gated_delta_net(layer, hidden, step, pools)
        else:
            assert rope is not None
            hidden = _attention(layer, hidden, rope, step, pools)
        hidden = _mlp(layer.mlp, hidden)
    return functional.linear(_rms_norm(plan.final, hidden), plan.lm_head)


def _rms_norm(norm: Norm, x: torch.Tensor) -> torch.Tensor:
    """``x * rsqrt(mean(x^2) + eps)`` over the last dim, the gain left to the next matrix
    (five calls; ``functional.rms_norm`` costs about 1.6x as much at these widths)."""
    squares = (x * x).sum(-1, keepdim=True)
    return x * torch.rsqrt(torch.add(norm.eps, squares, alpha=norm.inv_dim))


def _mlp(mlp: Mlp, hidden: torch.Tensor) -> torch.Tensor:
    gate_up = functional.linear(_rms_norm(mlp.norm, hidden), mlp.gate_up)  # [B, 2I]
    act = functional.silu(gate_up[:, : mlp.inter]) * gate_up[:, mlp.inter :]
    return torch.addmm(hidden, act, mlp.down_t)  # hidden + down(act)


def _gated_delta_net(
    layer: GdnLayer, hidden: torch.Tensor, step: Step, pools: CachePools
) -> torch.Tensor:
    n_seq = hidden.shape[0]
    heads_k, heads_v, dim_k, dim_v = layer.heads
    proj = functional.linear(_rms_norm(layer.norm, hidden), layer.in_proj)
    z_end = layer.conv_dim + layer.z_dim
    mixed = _conv_step(layer, proj[:, : layer.conv_dim], step, pools.conv[layer.index])
    key_dim = layer.key_dim
    q = mixed[:, :key_dim].view(n_seq, heads_k, dim_k)
    k = mixed[:, key_dim : 2 * key_dim].view(n_seq, heads_k, dim_k)
    v = mixed[:, 2 * key_dim :].view(n_seq, heads_v, dim_v)
    beta = proj[:, z_end : z_end + heads_v].sigmoid()
    pool = pools.recurrent[layer.index]
    state = step.read(pool)  # [B, HV, K, V]: a view of the pool for consecutive slots
    o = gated_delta_decode_step_(
        q, k, v, proj[:, z_end + heads_v :], beta, state, use_qk_l2norm=True,
        A_log=layer.A_log, dt_bias=layer.dt_bias,
    )  # fmt: skip
    if step.rows is None:  # a gathered copy: store it (a view was updated in place)
        step.write(pool, state)
    if pools.state_dtype != torch.float32:  # the bf16-state ablation rounds every stored state
        pools.round_states(layer.index, step.slots)
    z = proj[:, layer.conv_dim : z_end].reshape(-1, dim_v)
    # Qwen3.5's gated norm norm(o) * w * silu(z), its weight w folded into out_t.
    o = _rms_norm(layer.out_norm, o.view(-1, dim_v)) * functional.silu(z)
    return torch.addmm(hidden, o.view(n_seq, -1), layer.out_t)


def _conv_step(layer: GdnLayer, x: torch.Tensor, step: Step, history: torch.Tensor) -> torch.Tensor:
    """One token of the depthwise causal conv: ``x [B, C]`` after each slot's last ``K - 1``
    inputs (``history [S, K-1, C]``, which then keeps the newest ``K - 1``)."""
    window = torch.cat([step.read(history), x[:, None, :]], dim=1)  # [B, K, C]
    step.write(history, window[:, 1:])
    return layer.activation((window * layer.taps).sum(1))


_RopeRows = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _rope_rows(plan: DecodePlan, step: Step) -> _RopeRows | None:
    """``(cos, sin, swap)``: rows ``[B or 1, 1, dim]`` at each sequence's position."""
    rope = plan.rope
    if rope is None:
        return None
    if step.same_position:  # one row, broadcast over the batch
        return rope.cos[step.start][None, None], rope.sin[step.start][None, None], rope.swap
    cos, sin = rope.cos[step.positions][:, None], rope.sin[step.positions][:, None]
    return cos, sin, rope.swap


def _attention(
    layer: AttnLayer,
    hidden: torch.Tensor,
    rope: _RopeRows,
    step: Step,
    pools: CachePools,
) -> torch.Tensor:
    n_seq = hidden.shape[0]
    heads_q, heads_kv, dim = layer.heads
    proj = functional.linear(_rms_norm(layer.norm, hidden), layer.qkgv)
    qk_end, gate_end = (heads_q + heads_kv) * dim, (2 * heads_q + heads_kv) * dim
    qk = proj[:, :qk_end].view(n_seq, heads_q + heads_kv, dim)
    qk = _rms_norm(layer.qk_norm, qk) * layer.qk_gain
    _rotate(qk, rope)
    q, k = qk[:, :heads_q, None], qk[:, heads_q:]  # [B, Hq, 1, D], [B, Hkv, D]
    v = proj[:, gate_end:].view(n_seq, heads_kv, dim)
    keys, values = pools.keys[layer.index], pools.values[layer.index]
    _write_kv(keys, values, k, v, step)
    span = step.context
    past_k = step.read(keys[:, :, :span])  # [B, Hkv, L, D]
    past_v = step.read(values[:, :, :span])
    mask = None
    if not step.same_position:  # else every cached position is visible to every query
        visible = torch.arange(span, device=hidden.device)[None, :] <= step.positions[:, None]
        mask = visible[:, None, None, :]
    out = functional.scaled_dot_product_attention(
        q, past_k, past_v, attn_mask=mask, scale=layer.scaling, enable_gqa=True
    )  # [B, Hq, 1, D]
    out = out.view(n_seq, heads_q * dim) * torch.sigmoid(proj[:, qk_end:gate_end])
    return torch.addmm(hidden, out, layer.o_t)


def _rotate(qk: torch.Tensor, rope: _RopeRows) -> None:
    """Partial RoPE in place on the first ``dim`` features of every head:
    ``x * cos + rotate_half(x) * sin``, with ``rotate_half(x) * sin == x[swap] * sin_signed``."""
    cos, sin, swap = rope
    part = qk[..., : cos.shape[-1]]
    part.copy_(torch.addcmul(part * cos, part.index_select(-1, swap), sin))


def _write_kv(
    keys: torch.Tensor, values: torch.Tensor, k: torch.Tensor, v: torch.Tensor, step: Step
) -> None:
    """Store this step's keys/values ``[B, Hkv, D]`` at each sequence's position."""
    if step.rows is not None and step.same_position:
        keys[step.rows, :, step.start].copy_(k)
        values[step.rows, :, step.start].copy_(v)
        return
    keys[step.slots, :, step.positions] = k
    values[step.slots, :, step.positions] = v
