"""The decode step: one new token for each of ``B`` cached sequences, with as few torch calls
as the model allows.

An all-FP32 model (the recipe) is decoded from its prepared plan
(:mod:`arctic_swe.engine._plan`, :mod:`arctic_swe.engine._decode_fp32`); this module's generic
step serves every other dtype (the bf16-compute ablation), calling the model's norm modules
where their casts are part of the numerics.

The generic step computes what :func:`arctic_swe.engine._forward.batched_forward` computes for chunks of one
token (same modules, same weights, the delta rule through hybrid-numerics with the FP32 state),
but a decode step of the small policy is bound by the number of operator calls, not by FLOPs, so
it takes the shortcuts that only a one-token step allows:

* the projections that read the same input run as one matmul over their concatenated weights
  (Gated DeltaNet: qkv, z, b, a; attention: q+gate, k, v; MLP: gate, up), re-concatenated
  whenever a weight is written, replaced or re-stored (``weights_key``, checked every step);
* the RMS norms of FP32 activations are one fused ``rms_norm`` call each;
* the short causal convolution of one token is a multiply-add over the slot's last ``K - 1``
  inputs, not a ``conv1d`` call;
* when the sequences sit in consecutive slots (the usual case: a batch admitted together) every
  cache is read and written through a slice view instead of a gather and a scatter;
* attention skips the mask when every sequence is at the same position (it would be all true).

Numerics: FP32 everywhere the prefill path has it; the only differences to the prefill path are
the summation orders of the fused matmuls and of the four-term convolution (FP32 rounding).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional
from transformers.activations import ACT2FN
from transformers.models.qwen3_5 import modeling_qwen3_5

from arctic_swe.engine._decode_fp32 import decode_fp32
from arctic_swe.engine._plan import WeightsKey, decode_plan, weights_key
from arctic_swe.engine._pools import CachePools
from arctic_swe.engine._step import Step
from hybrid_numerics import fused_recurrent_gated_delta_rule

#: The model's own partial-RoPE application (untyped upstream).
_apply_rope: Any = modeling_qwen3_5.apply_rotary_pos_emb

#: Tensors derived from weights (concatenated projections, norm gains) per owning module: (the
#: weights' :func:`weights_key`, the derived tensor). Weak keys: a dropped model frees them.
_DERIVED: weakref.WeakKeyDictionary[nn.Module, tuple[WeightsKey, torch.Tensor]]
_DERIVED = weakref.WeakKeyDictionary()


@torch.no_grad()
def decode_forward(
    model: nn.Module,
    pools: CachePools,
    slots: Sequence[int],
    tokens: Sequence[int],
    starts: Sequence[int],
) -> torch.Tensor:
    """Feed ``tokens[b]`` at position ``starts[b]`` to the sequence in ``slots[b]``; update
    every cache in place; return FP32 logits ``[B, V]`` (same contract as ``batched_forward``
    with one-token chunks: ``starts[b]`` tokens already cached, slots distinct).

    An all-FP32 model takes the prepared path (:mod:`arctic_swe.engine._decode_fp32`); other
    dtypes :func:`decode_generic`, which calls the modules where their casts matter."""
    plan = decode_plan(model, max(starts) + 1)
    if plan is None:
        return decode_generic(model, pools, slots, tokens, starts)
    pools.ensure_length(max(starts) + 1)
    device = plan.embed.device
    return decode_fp32(plan, pools, Step(slots, tokens, starts, device))


@torch.no_grad()
def decode_generic(
    model: nn.Module,
    pools: CachePools,
    slots: Sequence[int],
    tokens: Sequence[int],
    starts: Sequence[int],
) -> torch.Tensor:
    """:func:`decode_forward` for any dtype: the model's own norm modules (and their casts)
    wherever the tensors are not all FP32, the projections fused where dtypes agree."""
    core: Any = model.get_submodule("model")
    device = core.embed_tokens.weight.device
    step = Step(slots, tokens, starts, device)
    pools.ensure_length(step.context)
    hidden = core.embed_tokens(step.ids[:, None])  # [B, 1, H]
    rope = core.rotary_emb(hidden, step.positions[:, None])
    for index, layer in enumerate(core.layers):
        mixed = _rms_norm(layer.input_layernorm, hidden)
        if pools.layer_types[index] == "linear_attention":
            mixed = _gated_delta_net(layer.linear_attn, mixed, step, pools, index)
        else:
            mixed = _attention(layer.self_attn, mixed, rope, step, pools, index)
        hidden = hidden + mixed
        hidden = hidden + _mlp(layer.mlp, _rms_norm(layer.post_attention_layernorm, hidden))
    logits: torch.Tensor = model.get_submodule("lm_head")(_rms_norm(core.norm, hidden[:, 0]))
    return logits.float()


def _derived(owner: nn.Module, weights: Sequence[torch.Tensor], build: Any) -> torch.Tensor:
    """``build(weights)``, cached on ``owner`` until :func:`weights_key` of ``weights`` changes
    (written in place, replaced, or re-stored by a dtype cast)."""
    key = weights_key(weights)
    cached = _DERIVED.get(owner)
    if cached is None or cached[0] != key:
        cached = (key, build([w.detach() for w in weights]))
        _DERIVED[owner] = cached
    return cached[1]


def _project(owner: nn.Module, parts: Sequence[nn.Linear], x: torch.Tensor) -> list[torch.Tensor]:
    """``[part(x) for part in parts]``, as one matmul over the concatenated weights when they
    share a dtype and have no bias (else one call each)."""
    weights = [p.weight for p in parts]
    if any(p.bias is not None for p in parts) or len({w.dtype for w in weights}) > 1:
        return [part(x) for part in parts]
    fused = functional.linear(x, _derived(owner, weights, torch.cat))
    return list(torch.split(fused, [w.shape[0] for w in weights], dim=-1))


def _rms_norm(mod: Any, x: torch.Tensor) -> torch.Tensor:
    """Qwen3.5's ``RMSNorm`` (gain ``1 + weight``) as one fused call for FP32 tensors (the
    module itself otherwise: its casts are part of the mixed-precision numerics)."""
    weight = mod.weight
    if x.dtype != torch.float32 or weight.dtype != torch.float32:
        out: torch.Tensor = mod(x)
        return out
    gain = _derived(mod, [weight], lambda w: 1.0 + w[0])
    return functional.rms_norm(x, (x.shape[-1],), gain, mod.eps)


def _gated_norm(mod: Any, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """Qwen3.5's gated ``RMSNorm`` ``norm(x) * weight * silu(gate)``, fused for FP32."""
    if x.dtype != torch.float32 or mod.weight.dtype != torch.float32 or gate.dtype != x.dtype:
        out: torch.Tensor = mod(x, gate)
        return out
    normed = functional.rms_norm(x, (x.shape[-1],), mod.weight, mod.variance_epsilon)
    return normed * functional.silu(gate)


def _mlp(mod: Any, x: torch.Tensor) -> torch.Tensor:
    gate, up = _project(mod, [mod.gate_proj, mod.up_proj], x)
    out: torch.Tensor = mod.down_proj(mod.act_fn(gate) * up)
    return out


def _gated_delta_net(
    mod: Any, x: torch.Tensor, step: Step, pools: CachePools, index: int
) -> torch.Tensor:
    n_seq = x.shape[0]
    parts = [mod.in_proj_qkv, mod.in_proj_z, mod.in_proj_b, mod.in_proj_a]
    mixed_qkv, z, b, a = _project(mod, parts, x[:, 0])  # [B, C], [B, HV*Dv], [B, HV], [B, HV]
    mixed_qkv = _conv_step(mod, mixed_qkv, step, pools.conv[index])
    q, k, v = torch.split(mixed_qkv, [mod.key_dim, mod.key_dim, mod.value_dim], -1)
    q = q.reshape(n_seq, 1, -1, mod.head_k_dim).contiguous()
    k = k.reshape(n_seq, 1, -1, mod.head_k_dim).contiguous()
    v = v.reshape(n_seq, 1, -1, mod.head_v_dim).contiguous()
    beta = b.sigmoid()[:, None]  # [B, 1, HV], a fresh contiguous tensor
    gate = {
        "use_gate_in_kernel": True,
        "A_log": mod.A_log,
        "dt_bias": mod.dt_bias,
        "use_qk_l2norm": True,
    }
    # The pool itself: hybrid-numerics updates consecutive slots in place through a view and
    # gathers/scatters only scattered ones (no fresh state buffer, no copy back).
    o, _ = fused_recurrent_gated_delta_rule(
        q, k, v, a[:, None].contiguous(), beta, state_cache=pools.recurrent[index],
        state_indices=step.slots, **gate,
    )  # fmt: skip
    pools.round_states(index, step.slots)
    o = _gated_norm(mod.norm, o.reshape(-1, mod.head_v_dim), z.reshape(-1, mod.head_v_dim))
    out: torch.Tensor = mod.out_proj(o.reshape(n_seq, 1, -1))
    return out


def _conv_step(mod: Any, x: torch.Tensor, step: Step, history: torch.Tensor) -> torch.Tensor:
    """One token of the depthwise causal conv: ``x [B, C]`` after each slot's last ``K - 1``
    inputs (``history [S, K-1, C]``, which then keeps the newest ``K - 1``).

    Channels last: the window ``[B, K, C]`` is summed over its ``K`` contiguous rows of ``C``
    (a vectorised add per tap), not over a last axis of 4 (one short reduction per channel:
    about 4x slower for the tiny policy's 256 channels on one thread)."""
    weight = _derived(mod.conv1d, [mod.conv1d.weight], _taps_first)  # [K, C]
    window = torch.cat([step.read(history), x.to(history.dtype)[:, None, :]], dim=1)  # [B, K, C]
    out = (window * weight).sum(1)  # [B, C]
    if mod.conv1d.bias is not None:
        out = out + mod.conv1d.bias
    step.write(history, window[:, 1:])
    activated: torch.Tensor = ACT2FN[mod.activation](out)
    return activated.to(x.dtype)


def _taps_first(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """The depthwise conv weight ``[C, 1, K]`` as ``[K, C]`` (contiguous)."""
    return weights[0][:, 0, :].t().contiguous()


def _attention(
    mod: Any,
    x: torch.Tensor,
    rope: tuple[torch.Tensor, torch.Tensor],
    step: Step,
    pools: CachePools,
    index: int,
) -> torch.Tensor:
    n_seq, head_dim = x.shape[0], mod.head_dim
    query, key, value = _project(mod, [mod.q_proj, mod.k_proj, mod.v_proj], x)
    q, gate = torch.chunk(query.view(n_seq, 1, -1, 2 * head_dim), 2, dim=-1)
    gate = gate.reshape(n_seq, 1, -1)
    q = _rms_norm(mod.q_norm, q).transpose(1, 2)  # [B, Hq, 1, D]
    k = _rms_norm(mod.k_norm, key.view(n_seq, 1, -1, head_dim)).transpose(1, 2)  # [B, Hkv, 1, D]
    v = value.view(n_seq, 1, -1, head_dim).transpose(1, 2)
    q, k = _apply_rope(q, k, *rope)
    keys, values = pools.keys[index], pools.values[index]
    keys[step.slots, :, step.positions] = k[:, :, 0].to(keys.dtype)
    values[step.slots, :, step.positions] = v[:, :, 0].to(values.dtype)
    span = step.context
    past_k = step.read(keys[:, :, :span])  # [B, Hkv, L, D]
    past_v = step.read(values[:, :, :span])
    mask = None
    if not step.same_position:  # else every cached position is visible to every query
        visible = torch.arange(span, device=x.device)[None, :] <= step.positions[:, None]
        mask = visible[:, None, None, :]
    out = functional.scaled_dot_product_attention(
        q, past_k, past_v, attn_mask=mask, scale=mod.scaling, enable_gqa=True
    )  # [B, Hq, 1, D]
    out = out.transpose(1, 2).reshape(n_seq, 1, -1) * torch.sigmoid(gate)
    result: torch.Tensor = mod.o_proj(out)
    return result
