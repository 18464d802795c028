"""One batched forward of a Qwen3.5 hybrid model over many cached sequences.

The engine does not call the model's ``forward``: it runs the model's **own modules and
weights** (embedding, norms, projections, MLPs, RoPE, LM head) in a loop written for a batch of
sequences that each have their own cache slot, their own length and their own position. The
token mixers are the only custom part:

* Gated DeltaNet: the short convolution continues from the slot's conv history; the delta rule
  runs through hybrid-numerics with the FP32 state cache updated **in place**
  (``fused_recurrent_gated_delta_rule`` for a one-token decode step, ``chunk_gated_delta_rule``
  over packed variable-length chunks for prefill) — the same kernels the trainer's patched
  model uses, so engine and trainer assign the same probabilities.
* Gated attention: new keys/values are written at each sequence's positions, then every query
  attends over its own slot's prefix (a per-row causal mask over a padded gather).

A decode step is the special case "one new token per sequence"; prefill, chunked prefill and the
re-prefill after a weight refresh are "many new tokens per sequence". Padding rows never touch a
cache: only real tokens are written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional
from transformers.activations import ACT2FN
from transformers.models.qwen3_5 import modeling_qwen3_5

from arctic_swe.engine._decode import decode_forward
from arctic_swe.engine._pools import CachePools
from hybrid_numerics import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule

#: The model's own partial-RoPE application (untyped upstream).
_apply_rope: Any = modeling_qwen3_5.apply_rotary_pos_emb


class _Batch:
    """Index tensors of one forward: ``B`` rows, each a chunk of new tokens at a position."""

    def __init__(
        self,
        slots: Sequence[int],
        chunks: Sequence[Sequence[int]],
        starts: Sequence[int],
        device: torch.device,
    ) -> None:
        self.size = len(chunks)
        self.lengths = torch.tensor([len(c) for c in chunks], dtype=torch.long, device=device)
        self.width = int(self.lengths.max())
        padded = [list(c) + [0] * (self.width - len(c)) for c in chunks]
        self.ids = torch.tensor(padded, dtype=torch.long, device=device)
        steps = torch.arange(self.width, device=device)
        self.valid = steps[None, :] < self.lengths[:, None]  # [B, T]
        start = torch.tensor(list(starts), dtype=torch.long, device=device)
        self.positions = start[:, None] + steps[None, :]  # [B, T] absolute positions
        self.slots = torch.tensor(list(slots), dtype=torch.long, device=device)
        self.context = int((start + self.lengths).max())  # longest prefix after this forward
        self.decode = self.width == 1
        #: Every chunk has ``width`` tokens: no padding, so no packing for the delta rule.
        self.uniform = all(len(c) == self.width for c in chunks)
        rows, cols = self.valid.nonzero(as_tuple=True)
        self.real_rows, self.real_cols = rows, cols  # coordinates of the real tokens
        cu = torch.zeros(self.size + 1, dtype=torch.long, device=device)
        cu[1:] = torch.cumsum(self.lengths, 0)
        self.cu_seqlens = cu


@torch.no_grad()
def batched_forward(
    model: nn.Module,
    pools: CachePools,
    slots: Sequence[int],
    chunks: Sequence[Sequence[int]],
    starts: Sequence[int],
) -> torch.Tensor:
    """Feed ``chunks[b]`` (token ids at positions ``starts[b]…``) to the sequence cached in
    ``slots[b]``; update every cache in place; return FP32 logits ``[B, V]`` of each chunk's
    last token (the next-token distribution of that sequence).

    ``starts[b]`` must equal the number of tokens already in slot ``slots[b]`` (0 for a reset
    slot); slots must be distinct. A step of one-token chunks (decode) takes
    :func:`~arctic_swe.engine._decode.decode_forward`.
    """
    if all(len(chunk) == 1 for chunk in chunks):
        return decode_forward(model, pools, slots, [chunk[0] for chunk in chunks], starts)
    core: Any = model.get_submodule("model")  # the HF text model: modules, not a typed API
    device = core.embed_tokens.weight.device
    batch = _Batch(slots, chunks, starts, device)
    pools.ensure_length(batch.context)
    hidden = core.embed_tokens(batch.ids)  # [B, T, H]
    cos, sin = core.rotary_emb(hidden, batch.positions)
    for index, layer in enumerate(core.layers):
        mixed = layer.input_layernorm(hidden)
        if pools.layer_types[index] == "linear_attention":
            mixed = _gated_delta_net(layer.linear_attn, mixed, batch, pools, index)
        else:
            mixed = _attention(layer.self_attn, mixed, (cos, sin), batch, pools, index)
        hidden = hidden + mixed
        hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
    rows = torch.arange(batch.size, device=device)
    last = core.norm(hidden[rows, batch.lengths - 1])  # [B, H]
    logits: torch.Tensor = model.get_submodule("lm_head")(last)
    return logits.float()


def _gated_delta_net(
    mod: Any, x: torch.Tensor, batch: _Batch, pools: CachePools, index: int
) -> torch.Tensor:
    n_seq, width, _ = x.shape
    mixed_qkv = mod.in_proj_qkv(x)  # [B, T, C]
    z = mod.in_proj_z(x).reshape(n_seq, width, -1, mod.head_v_dim)
    beta = mod.in_proj_b(x).sigmoid()
    a = mod.in_proj_a(x)
    mixed_qkv = _causal_conv(mod, mixed_qkv.transpose(1, 2), batch, pools.conv[index])
    q, k, v = torch.split(mixed_qkv.transpose(1, 2), [mod.key_dim, mod.key_dim, mod.value_dim], -1)
    q = q.reshape(n_seq, width, -1, mod.head_k_dim)
    k = k.reshape(n_seq, width, -1, mod.head_k_dim)
    v = v.reshape(n_seq, width, -1, mod.head_v_dim)
    gate = {
        "use_gate_in_kernel": True,
        "A_log": mod.A_log,
        "dt_bias": mod.dt_bias,
        "use_qk_l2norm": True,
    }
    state = pools.recurrent[index]
    if batch.decode:
        o, _ = fused_recurrent_gated_delta_rule(
            q.contiguous(), k.contiguous(), v.contiguous(), a.contiguous(), beta.contiguous(),
            state_cache=state, state_indices=batch.slots, **gate,
        )  # fmt: skip
    elif batch.uniform:  # no padding: the [B, T] batch as it is, each row its own slot
        o, _ = chunk_gated_delta_rule(
            q.contiguous(), k.contiguous(), v.contiguous(), a.contiguous(), beta.contiguous(),
            state_cache=state, state_indices=batch.slots, **gate,
        )  # fmt: skip
    else:  # pack the real tokens: padding must never reach a recurrent state
        pq, pk, pv, pa, pb = (t[batch.valid][None].contiguous() for t in (q, k, v, a, beta))
        o_packed, _ = chunk_gated_delta_rule(
            pq, pk, pv, pa, pb, cu_seqlens=batch.cu_seqlens, state_cache=state,
            state_indices=batch.slots, **gate,
        )  # fmt: skip
        o = o_packed.new_zeros(n_seq, width, *o_packed.shape[2:])
        o[batch.valid] = o_packed[0]
    pools.round_states(index, batch.slots)
    o = mod.norm(o.reshape(-1, mod.head_v_dim), z.reshape(-1, mod.head_v_dim))
    out: torch.Tensor = mod.out_proj(o.reshape(n_seq, width, -1))
    return out


def _causal_conv(
    mod: Any, inputs: torch.Tensor, batch: _Batch, history: torch.Tensor
) -> torch.Tensor:
    """Depthwise causal conv continuing from each slot's last ``K - 1`` inputs.

    ``inputs: [B, C, T]``; ``history: [S, K-1, C]`` (the pools' channels-last layout). A reset
    slot holds zeros, which is exactly the zero left-padding of the model's full-sequence
    convolution. The slot keeps the last ``K - 1`` *real* inputs.
    """
    n_seq, channels, _ = inputs.shape
    keep = history.shape[1]
    past = history.index_select(0, batch.slots).transpose(1, 2)  # [B, C, K-1]
    window = torch.cat([past, inputs.to(history.dtype)], dim=2)
    out = functional.conv1d(
        window, mod.conv1d.weight, mod.conv1d.bias, groups=channels
    )  # [B, C, T]
    tail = batch.lengths[:, None] + torch.arange(keep, device=inputs.device)[None, :]
    kept = window.gather(2, tail[:, None, :].expand(n_seq, channels, keep))  # [B, C, K-1]
    history.index_copy_(0, batch.slots, kept.transpose(1, 2))
    activated: torch.Tensor = ACT2FN[mod.activation](out)
    return activated.to(inputs.dtype)


def _attention(
    mod: Any,
    x: torch.Tensor,
    rope: tuple[torch.Tensor, torch.Tensor],
    batch: _Batch,
    pools: CachePools,
    index: int,
) -> torch.Tensor:
    n_seq, width, _ = x.shape
    head_dim = mod.head_dim
    q, gate = torch.chunk(mod.q_proj(x).view(n_seq, width, -1, 2 * head_dim), 2, dim=-1)
    gate = gate.reshape(n_seq, width, -1)
    q = mod.q_norm(q).transpose(1, 2)  # [B, Hq, T, D]
    k = mod.k_norm(mod.k_proj(x).view(n_seq, width, -1, head_dim)).transpose(1, 2)  # [B, Hkv, T, D]
    v = mod.v_proj(x).view(n_seq, width, -1, head_dim).transpose(1, 2)
    q, k = _apply_rope(q, k, *rope)
    keys, values = pools.keys[index], pools.values[index]
    rows, cols = batch.real_rows, batch.real_cols
    where = (batch.slots[rows], slice(None), batch.positions[rows, cols])
    keys[where] = k[rows, :, cols].to(keys.dtype)
    values[where] = v[rows, :, cols].to(values.dtype)
    span = batch.context
    past_k = keys[:, :, :span].index_select(0, batch.slots)  # [B, Hkv, L, D]
    past_v = values[:, :, :span].index_select(0, batch.slots)
    visible = torch.arange(span, device=x.device)[None, None, :] <= batch.positions[:, :, None]
    out = functional.scaled_dot_product_attention(
        q, past_k, past_v, attn_mask=visible[:, None], scale=mod.scaling, enable_gqa=True
    )  # [B, Hq, T, D]
    out = out.transpose(1, 2).reshape(n_seq, width, -1) * torch.sigmoid(gate)
    result: torch.Tensor = mod.o_proj(out)
    return result
