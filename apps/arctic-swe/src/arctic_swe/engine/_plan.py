"""The FP32 decode plan: a Qwen3.5 model's weights laid out once for the one-token step.

A decode step of the small policy costs torch calls, not FLOPs (Arctic-SWE §3.3's engine runs
thousands of them per update), so everything that depends only on the weights is computed here
once and reused until a weight changes:

* the projections that read one input are one matrix: Gated DeltaNet ``[qkv; z; b; a]``,
  attention ``[q; k; gate; v]`` (the query and gate rows that ``q_proj`` interleaves per head
  are separated, so q and k come out adjacent and are normalised and rotated as one tensor),
  MLP ``[gate; up]``;
* each RMS norm's gain (``1 + w``, Qwen3.5's parameterisation; the gated norm's ``w``) is folded
  into the columns of the matrix that reads the normalised vector, so a norm is its scale
  factor only; the q/k norm gains, which RoPE follows, are stacked per head;
* the depthwise convolution as taps ``[K, C]``;
* RoPE ``cos``/``sin`` per position, from the model's own rotary module (so each entry is
  exactly what the full forward computes), the rotate-half sign folded into ``sin``.

A plan is valid for one set of weight tensors at one version: :func:`decode_plan` rebuilds it
when any source tensor is written in place (a refresh, an optimizer step), replaced, or given
new storage (a dtype cast). Only an
all-FP32 model gets a plan (``None`` otherwise: the generic step keeps the modules' own
mixed-precision casts).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn
from torch.nn import functional
from transformers.activations import ACT2FN

#: Per model: the parameters its plan reads, their :func:`weights_key`, and the plan (``None``
#: for a model that is not all FP32). Weak keys: a dropped model frees its plan.
_PLANS: weakref.WeakKeyDictionary[nn.Module, _Cached] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Norm:
    """The scale of an RMS norm over ``d`` features: ``x * rsqrt(sum(x^2) / d + eps)`` (the
    gain lives in the next matrix)."""

    eps: torch.Tensor  # 0-d
    inv_dim: float  # 1 / d (exact for the power-of-two widths of Qwen3.5: sum / d == mean)


@dataclass(frozen=True)
class Mlp:
    """SwiGLU MLP: ``down(silu(gate(x)) * up(x))`` with ``gate_up = [gate; up]``."""

    norm: Norm  # the post-attention norm that feeds it
    gate_up: torch.Tensor  # [2 I, H], the norm's gain folded in
    down_t: torch.Tensor  # [I, H]: down_proj.weight transposed (a view), for addmm
    inter: int


@dataclass(frozen=True)
class GdnLayer:
    """One Gated DeltaNet layer (pool index ``index``)."""

    index: int
    norm: Norm
    in_proj: torch.Tensor  # [C + HV*V + 2 HV, H]: qkv (conv channels), z, b, a; gain folded
    conv_dim: int  # C = 2 H_k K + HV V
    z_dim: int
    key_dim: int  # H_k K
    heads: tuple[int, int, int, int]  # H_k, HV, K, V
    taps: torch.Tensor  # [conv kernel, C]
    activation: Callable[[torch.Tensor], torch.Tensor]  # after the convolution
    A_log: torch.Tensor
    dt_bias: torch.Tensor
    out_norm: Norm  # the gated norm over V (its weight folded into out_t)
    out_t: torch.Tensor  # [HV V, H]
    mlp: Mlp


@dataclass(frozen=True)
class AttnLayer:
    """One gated full-attention layer (pool index ``index``)."""

    index: int
    norm: Norm
    qkgv: torch.Tensor  # [(2 Hq + 2 Hkv) D, H]: q, k, gate, v rows; the norm's gain folded
    heads: tuple[int, int, int]  # Hq, Hkv, D
    qk_norm: Norm
    qk_gain: torch.Tensor  # [Hq + Hkv, D]
    scaling: float
    o_t: torch.Tensor  # [Hq D, H]
    mlp: Mlp


@dataclass(frozen=True)
class Rope:
    """Per-position RoPE rows for the first ``dim`` features of each head."""

    cos: torch.Tensor  # [L, dim]
    sin: torch.Tensor  # [L, dim]: rotate-half sign folded in (first half negated)
    swap: torch.Tensor  # [dim] index: (second half, first half)

    @property
    def dim(self) -> int:
        """Rotated features per head."""
        return int(self.cos.shape[1])

    @property
    def length(self) -> int:
        """Positions the tables hold."""
        return int(self.cos.shape[0])


@dataclass(frozen=True)
class DecodePlan:
    """Everything a decode step reads, derived from one version of the weights."""

    embed: torch.Tensor  # [vocab, H]
    layers: tuple[GdnLayer | AttnLayer, ...]
    final: Norm
    lm_head: torch.Tensor  # [vocab, H], the final norm's gain folded in
    rope: Rope | None


#: Where a parameter lives: its owner's parameter dict and its name there (a dict lookup per
#: check, not ``nn.Module.__getattr__``).
_Ref = tuple[dict[str, Any], str]


@dataclass(frozen=True)
class _Cached:
    refs: tuple[_Ref, ...]
    key: WeightsKey
    plan: DecodePlan | None


def decode_plan(model: nn.Module, context: int) -> DecodePlan | None:
    """The model's current plan, with RoPE rows for positions ``< context``; ``None`` if the
    model is not all FP32. Rebuilt when a weight tensor was written, replaced or given new
    storage since.

    The check costs one attribute read per parameter (no module walk): a decode step runs it."""
    cached = _PLANS.get(model)
    if cached is not None and _key(cached.refs) == cached.key:
        plan = cached.plan
        if plan is not None and plan.rope is not None and plan.rope.length < context:
            with torch.inference_mode(False), torch.no_grad():
                plan = replace(plan, rope=_rope(model, context))
            _PLANS[model] = replace(cached, plan=plan)
        return plan
    refs = _refs(model)
    key = _key(refs)
    fp32 = all(params[name].dtype == torch.float32 for params, name in refs)
    # Normal tensors even when the engine steps under inference mode: a plan outlives the call.
    with torch.inference_mode(False), torch.no_grad():
        plan = _build(model, context) if fp32 else None
    _PLANS[model] = _Cached(refs, key, plan)
    return plan


#: What a copy derived from some weights was built from: per weight its identity, version and
#: storage. Any change means the copy is stale.
WeightsKey = tuple[tuple[int, int, int], ...]


def weights_key(tensors: Sequence[torch.Tensor]) -> WeightsKey:
    """Identity (a replaced parameter), version (an in-place write: a refresh, an optimizer
    step) and storage (a ``.data`` swap, as ``module.to(dtype)`` does, keeps the first and may
    keep the second) of each tensor — shared by the plan and the generic step's fused copies."""
    return tuple([(id(t), t._version, t.data_ptr()) for t in tensors])


def _key(refs: tuple[_Ref, ...]) -> WeightsKey:
    return weights_key([params[name] for params, name in refs])


def _refs(model: nn.Module) -> tuple[_Ref, ...]:
    """Every parameter a plan is derived from, as (owning module, attribute name)."""
    core: Any = model.get_submodule("model")
    modules: list[nn.Module] = [core.embed_tokens, core.norm, model.get_submodule("lm_head")]
    for layer in core.layers:
        mixer = layer.linear_attn if hasattr(layer, "linear_attn") else layer.self_attn
        modules += [layer.input_layernorm, layer.post_attention_layernorm, layer.mlp, mixer]
    return tuple(
        (owner._parameters, name)
        for module in modules
        for owner in module.modules()
        for name, value in owner._parameters.items()
        if value is not None
    )


def _build(model: nn.Module, context: int) -> DecodePlan:
    core: Any = model.get_submodule("model")
    layers: list[GdnLayer | AttnLayer] = []
    for index, layer in enumerate(core.layers):
        mlp = _mlp(layer.mlp, layer.post_attention_layernorm)
        if hasattr(layer, "linear_attn"):
            layers.append(_gdn(index, layer.linear_attn, layer.input_layernorm, mlp))
        else:
            layers.append(_attention(index, layer.self_attn, layer.input_layernorm, mlp))
    uses_rope = any(isinstance(layer, AttnLayer) for layer in layers)
    lm_head: Any = model.get_submodule("lm_head")
    return DecodePlan(
        embed=core.embed_tokens.weight.detach(),
        layers=tuple(layers),
        final=_norm(core.norm.eps, core.norm.weight.shape[0]),
        lm_head=_folded(lm_head.weight, _gain(core.norm)),
        rope=_rope(model, context) if uses_rope else None,
    )


def _norm(eps: float, width: int) -> Norm:
    return Norm(eps=torch.tensor(float(eps)), inv_dim=1.0 / width)


def _gain(module: Any) -> torch.Tensor:
    """A Qwen3.5 ``RMSNorm``'s multiplier ``1 + weight``."""
    weight: torch.Tensor = module.weight.detach()
    return 1.0 + weight


def _folded(weight: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
    """``weight [out, in]`` with input column ``j`` scaled by ``gain[j]``: ``W (g * x)``."""
    return weight.detach() * gain


def _mlp(module: Any, norm: Any) -> Mlp:
    gate, up = module.gate_proj.weight, module.up_proj.weight
    gate_up = _folded(torch.cat([gate, up]), _gain(norm))
    down_t = module.down_proj.weight.detach().t()
    return Mlp(_norm(norm.eps, gate.shape[1]), gate_up, down_t, gate.shape[0])


def _gdn(index: int, mod: Any, norm: Any, mlp: Mlp) -> GdnLayer:
    parts = [mod.in_proj_qkv, mod.in_proj_z, mod.in_proj_b, mod.in_proj_a]
    heads = (mod.num_k_heads, mod.num_v_heads, mod.head_k_dim, mod.head_v_dim)
    per_value = mod.norm.weight.detach().repeat(mod.num_v_heads)  # gated-norm weight per column
    return GdnLayer(
        index=index,
        norm=_norm(norm.eps, mod.hidden_size),
        in_proj=_folded(torch.cat([p.weight for p in parts]), _gain(norm)),
        conv_dim=mod.in_proj_qkv.weight.shape[0],
        z_dim=mod.in_proj_z.weight.shape[0],
        key_dim=mod.key_dim,
        heads=heads,
        taps=mod.conv1d.weight.detach()[:, 0, :].t().contiguous(),
        activation=_activation(mod.activation),
        A_log=mod.A_log.detach(),
        dt_bias=mod.dt_bias.detach(),
        out_norm=_norm(mod.norm.variance_epsilon, mod.head_v_dim),
        out_t=_folded(mod.out_proj.weight, per_value).t(),
        mlp=mlp,
    )


def _attention(index: int, mod: Any, norm: Any, mlp: Mlp) -> AttnLayer:
    q_heads = mod.config.num_attention_heads
    kv_heads = mod.config.num_key_value_heads
    dim = mod.head_dim
    hidden = mod.q_proj.weight.shape[1]
    per_head = mod.q_proj.weight.detach().view(q_heads, 2, dim, hidden)  # [q rows; gate rows]
    query, gate = per_head[:, 0].reshape(-1, hidden), per_head[:, 1].reshape(-1, hidden)
    rows = torch.cat([query, mod.k_proj.weight.detach(), gate, mod.v_proj.weight.detach()])
    q_gain = _gain(mod.q_norm).expand(q_heads, dim)
    k_gain = _gain(mod.k_norm).expand(kv_heads, dim)
    return AttnLayer(
        index=index,
        norm=_norm(norm.eps, hidden),
        qkgv=_folded(rows, _gain(norm)),
        heads=(q_heads, kv_heads, dim),
        qk_norm=_norm(mod.q_norm.eps, dim),
        qk_gain=torch.cat([q_gain, k_gain]),
        scaling=float(mod.scaling),
        o_t=mod.o_proj.weight.detach().t(),
        mlp=mlp,
    )


def _activation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The conv activation as a function (transformers' ``ACT2FN[name]`` builds a new module
    on every lookup: resolved once here, not per step)."""
    if name in ("silu", "swish"):
        return functional.silu
    module: Callable[[torch.Tensor], torch.Tensor] = ACT2FN[name]
    return module


def _rope(model: nn.Module, context: int) -> Rope:
    """Tables for at least ``context`` positions (a power of two, >= 256)."""
    length = 256
    while length < context:
        length *= 2
    rotary: Any = model.get_submodule("model.rotary_emb")
    probe = torch.zeros(1, dtype=torch.float32, device=rotary.inv_freq.device)
    positions = torch.arange(length, device=probe.device)[None]
    cos, sin = rotary(probe, positions)  # [1, L, dim]: what the full forward uses
    cos, sin = cos[0].float().contiguous(), sin[0].float().clone()
    half = cos.shape[1] // 2
    sin[:, :half].neg_()  # rotate_half(x) * sin == x[swap] * sin_signed, exactly
    swap = torch.cat([torch.arange(half, 2 * half), torch.arange(half)]).to(cos.device)
    return Rope(cos=cos, sin=sin, swap=swap)
