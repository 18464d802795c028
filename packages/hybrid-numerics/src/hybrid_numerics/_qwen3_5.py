"""Install the FP32-state kernels into Hugging Face ``transformers`` Qwen3.5 / Qwen3-Next models.

:func:`patch_qwen3_5` replaces, per instance, the ``forward`` of every Gated DeltaNet layer
(``Qwen3_5GatedDeltaNet``, ``Qwen3_5MoeGatedDeltaNet``, ``Qwen3NextGatedDeltaNet``: anything with
``A_log``, ``dt_bias``, ``conv1d``, ``norm``, ``out_proj`` and either projection layout). The new
forward is the layer's own computation with three changes (Arctic-SWE §3.3):

* the decay ``g = -exp(A_log) * softplus(a + dt_bias)`` is computed in FP32 inside the kernel call
  (and ``A_log`` / ``dt_bias`` may themselves be FP32 under :func:`apply_precision_policy`);
* full forward / prefill (also a multi-token continuation from a cache) uses
  :func:`chunk_gated_delta_rule`, single-token cached decode uses
  :func:`fused_recurrent_gated_delta_rule`, both with the state in FP32;
* the cache's recurrent state is FP32 and a decode step updates it **in place** (the
  ``state_cache`` / ``state_indices`` path), so no copy and no rounding happens between steps.

The convolution, projections, gated norm and output projection are the layer's own (the same
functions of the layer's ``transformers`` module), so an FP32 patched model matches the
unpatched one up to FP32 rounding. Only this model's layers change: no module global is touched.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import torch
from torch import nn

from hybrid_numerics import _qwen3_5_compat as compat
from hybrid_numerics._api import Backend, chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
from hybrid_numerics._errors import PatchError

#: ``"auto"``: the engine/trainer behaviour. ``"recurrent"``: a multi-token forward (full
#: forward or prefill) runs the decode recurrence token by token (the audit's "GDN through the decode path").
#: ``"prefix_chunk"``: a cached decode step recomputes the chunk path over the whole prefix (the
#: audit's "GDN through the trainer path while attention decodes").
GDNMode = Literal["auto", "recurrent", "prefix_chunk"]
_GDNResult = tuple[torch.Tensor, torch.Tensor | None]

_PATCH_ATTR = "_hybrid_numerics_patch"
_ORIGINAL_ATTR = "_hybrid_numerics_original_forward"


@dataclass(frozen=True)
class GDNPatchConfig:
    """How a patched layer computes. ``cache_state_dtype`` other than FP32 rounds the cached
    recurrent state to that dtype after every write - an emulation of a bf16 engine cache, used
    by the mismatch audit to measure what FP32 buys."""

    backend: Backend = "auto"
    cache_state_dtype: torch.dtype = torch.float32
    mode: GDNMode = "auto"


@dataclass
class _LayerState:
    config: GDNPatchConfig
    prefix: list[tuple[torch.Tensor, ...]] = field(default_factory=list)


def gdn_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """``(name, module)`` of every Gated DeltaNet layer in ``model`` (duck-typed)."""
    return [(name, m) for name, m in model.named_modules() if _is_gdn_layer(m)]


def _is_gdn_layer(m: nn.Module) -> bool:
    common = all(hasattr(m, a) for a in ("A_log", "dt_bias", "conv1d", "norm", "out_proj"))
    qwen3_5 = all(hasattr(m, a) for a in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"))
    qwen3_next = hasattr(m, "in_proj_qkvz") and hasattr(m, "fix_query_key_value_ordering")
    return common and (qwen3_5 or qwen3_next)


def _checked_gdn_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The layers to patch; :class:`PatchError` when a layer would silently stay unpatched
    (a Gated DeltaNet class whose attributes or module this patch does not recognise, or fewer
    recognised layers than the config's ``linear_attention`` entries)."""
    unknown = [
        f"{name} ({type(m).__name__})"
        for name, m in model.named_modules()
        if type(m).__name__.endswith("GatedDeltaNet") and not _is_gdn_layer(m)
    ]
    if unknown:
        raise PatchError(
            f"unrecognised Gated DeltaNet layout (attributes changed?): {', '.join(unknown)}"
        )
    layers = gdn_layers(model)
    if not layers:
        raise PatchError(f"{type(model).__name__} has no Gated DeltaNet layer to patch")
    for _, layer in layers:
        compat.check_supported(layer)
    expected = _configured_linear_layers(model)
    if expected is not None and expected != len(layers):
        raise PatchError(
            f"the config declares {expected} linear_attention layers, {len(layers)} were found"
        )
    return layers


def _configured_linear_layers(model: nn.Module) -> int | None:
    """How many Gated DeltaNet layers the model's (text) config declares, if it says."""
    config = getattr(model, "config", None)
    config = getattr(config, "text_config", None) or config
    layer_types = getattr(config, "layer_types", None)
    if not isinstance(layer_types, list | tuple):
        return None
    return sum(1 for kind in layer_types if kind == "linear_attention")


def patch_qwen3_5(
    model: nn.Module,
    *,
    backend: Backend = "auto",
    cache_state_dtype: torch.dtype = torch.float32,
) -> int:
    """Install the FP32-state kernels into every Gated DeltaNet layer of ``model``; return how
    many layers were patched. Idempotent (a second call only updates the configuration).

    Works on ``Qwen3_5ForCausalLM`` / ``Qwen3_5TextModel`` / ``Qwen3_5ForConditionalGeneration``,
    the MoE variant and ``Qwen3Next*`` of ``transformers`` 5.15 - 5.25; raises
    :class:`PatchError` if ``model`` has no such layer, or a layer or ``transformers`` layout
    it does not recognise (rather than leaving a layer silently unpatched).
    Undo with :func:`unpatch_qwen3_5`.
    """
    layers = _checked_gdn_layers(model)
    config = GDNPatchConfig(backend=backend, cache_state_dtype=cache_state_dtype)
    for _, layer in layers:
        if not hasattr(layer, _ORIGINAL_ATTR):
            # None when forward is the class's: unpatching then just drops the instance override.
            setattr(layer, _ORIGINAL_ATTR, vars(layer).get("forward"))
            layer.forward = types.MethodType(_patched_forward, layer)
        setattr(layer, _PATCH_ATTR, _LayerState(config))
    return len(layers)


def unpatch_qwen3_5(model: nn.Module) -> int:
    """Restore the original ``forward`` of every patched layer; return how many were restored."""
    restored = 0
    for _, layer in gdn_layers(model):
        if hasattr(layer, _ORIGINAL_ATTR):
            original = getattr(layer, _ORIGINAL_ATTR)
            if original is None:
                del layer.forward
            else:
                layer.forward = original
            delattr(layer, _ORIGINAL_ATTR)
            delattr(layer, _PATCH_ATTR)
            restored += 1
    return restored


def is_patched(model: nn.Module) -> bool:
    """Whether every Gated DeltaNet layer of ``model`` runs the patched forward."""
    layers = gdn_layers(model)
    return bool(layers) and all(hasattr(layer, _PATCH_ATTR) for _, layer in layers)


@contextmanager
def patched_config(model: nn.Module, **changes: Any) -> Iterator[None]:
    """Temporarily change the patch configuration (``mode``, ``cache_state_dtype``, ``backend``)
    of every patched layer; restores it (and clears recorded prefixes) on exit."""
    layers = [layer for _, layer in gdn_layers(model) if hasattr(layer, _PATCH_ATTR)]
    if not layers:
        raise PatchError("patched_config needs a model patched with patch_qwen3_5")
    saved = [getattr(layer, _PATCH_ATTR) for layer in layers]
    for layer, state in zip(layers, saved, strict=True):
        setattr(layer, _PATCH_ATTR, _LayerState(replace(state.config, **changes)))
    try:
        yield
    finally:
        for layer, state in zip(layers, saved, strict=True):
            setattr(layer, _PATCH_ATTR, _LayerState(state.config))


def _patched_forward(
    self: Any,
    hidden_states: torch.Tensor,
    cache: Any = None,
    attention_mask: torch.Tensor | None = None,
    **kwargs: Any,
) -> torch.Tensor:
    state: _LayerState = getattr(self, _PATCH_ATTR)
    if cache is None:  # ``cache_params`` before transformers 5.24
        cache = kwargs.pop("cache_params", None)
    kwargs.pop("cache_params", None)
    hidden_states = compat.layer_module(self).apply_mask_to_padding_states(
        hidden_states, attention_mask
    )
    B, T, _ = hidden_states.shape
    compat.check_no_intermediate_states(cache, int(self.layer_idx))
    conv_state, recurrent_state = compat.cached_states(cache, int(self.layer_idx))
    mixed_qkv, z, b, a = _project(self, hidden_states, B, T)
    mixed_qkv = compat.convolve(self, mixed_qkv.transpose(1, 2), cache, conv_state, kwargs)
    q, k, v = torch.split(
        mixed_qkv.transpose(1, 2), [self.key_dim, self.key_dim, self.value_dim], -1
    )
    q = q.reshape(B, T, -1, self.head_k_dim).contiguous()
    k = k.reshape(B, T, -1, self.head_k_dim).contiguous()
    v = v.reshape(B, T, -1, self.head_v_dim).contiguous()
    inputs = (q, k, v, a.contiguous(), b.sigmoid().contiguous())
    decode = recurrent_state is not None and T == 1
    o = _mix(self, state, inputs, cache, recurrent_state, decode, kwargs.get("cu_seq_lens_q"))
    o = self.norm(o.reshape(-1, self.head_v_dim), z.reshape(-1, self.head_v_dim))
    out: torch.Tensor = self.out_proj(o.reshape(B, T, -1))
    return out


def _project(
    self: Any, h: torch.Tensor, B: int, T: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(mixed_qkv [B, T, 2*key_dim + value_dim], z [B, T, HV, V], b, a [B, T, HV])``."""
    if hasattr(self, "in_proj_qkvz"):  # Qwen3-Next: interleaved per-k-head projections
        q, k, v, z, b, a = self.fix_query_key_value_ordering(
            self.in_proj_qkvz(h), self.in_proj_ba(h)
        )
        mixed = torch.cat([x.reshape(B, T, -1) for x in (q, k, v)], dim=-1)
        return mixed, z, b, a
    z = self.in_proj_z(h).reshape(B, T, -1, self.head_v_dim)
    return self.in_proj_qkv(h), z, self.in_proj_b(h), self.in_proj_a(h)


def _mix(
    self: Any,
    state: _LayerState,
    inputs: tuple[torch.Tensor, ...],
    cache: Any,
    recurrent_state: torch.Tensor | None,
    decode: bool,
    cu_seqlens: torch.Tensor | None,
) -> torch.Tensor:
    """The gated delta rule with the FP32 gate; updates the cache's FP32 state."""
    cfg = state.config
    gate = _GateArgs(self.A_log, self.dt_bias, cfg.backend)
    if cfg.mode == "prefix_chunk" and cache is not None:
        return _mix_prefix_chunk(self, state, inputs, cache, recurrent_state, gate)
    if cfg.mode == "recurrent" and not decode:
        initial = None if recurrent_state is None else recurrent_state.float()
        o, carried = _mix_token_by_token(inputs, cfg, gate, initial)
        if cache is not None:
            cache.update_recurrent_state(carried, self.layer_idx)
        return o
    if decode and recurrent_state is not None and recurrent_state.dtype == torch.float32:
        slots = torch.arange(inputs[0].shape[0], device=recurrent_state.device)
        # In place: the cache tensor itself is the kernel's state.
        o, _ = gate.call(
            fused_recurrent_gated_delta_rule, inputs, state_cache=recurrent_state,
            state_indices=slots,
        )  # fmt: skip
        _round_in_place(recurrent_state, cfg.cache_state_dtype)
        return o
    initial = None if recurrent_state is None else recurrent_state.float()
    fn = fused_recurrent_gated_delta_rule if decode else chunk_gated_delta_rule
    o, final = gate.call(
        fn, inputs, initial_state=initial, output_final_state=cache is not None,
        cu_seqlens=cu_seqlens,
    )  # fmt: skip
    if cache is not None and final is not None:
        stored = cache.update_recurrent_state(final, self.layer_idx)
        _round_in_place(stored, cfg.cache_state_dtype)
    return o


@dataclass(frozen=True)
class _GateArgs:
    """The per-layer arguments every kernel call of a patched layer shares."""

    A_log: torch.Tensor
    dt_bias: torch.Tensor
    backend: Backend

    def call(
        self, fn: Callable[..., _GDNResult], inputs: tuple[torch.Tensor, ...], **extra: Any
    ) -> _GDNResult:
        q, k, v, a, beta = inputs
        return fn(
            q, k, v, a, beta, A_log=self.A_log, dt_bias=self.dt_bias, use_gate_in_kernel=True,
            use_qk_l2norm=True, backend=self.backend, **extra,
        )  # fmt: skip


def _round_in_place(state: torch.Tensor, dtype: torch.dtype) -> None:
    if dtype != state.dtype:
        with torch.no_grad():
            state.copy_(state.to(dtype))


def _mix_token_by_token(
    inputs: tuple[torch.Tensor, ...],
    cfg: GDNPatchConfig,
    gate: _GateArgs,
    carried: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decode recurrence over a whole sequence, one token per call, state rounded as the
    engine's cache would round it between steps."""
    outputs = []
    for t in range(inputs[0].shape[1]):
        step = [x[:, t : t + 1].contiguous() for x in inputs]
        o, carried = gate.call(
            fused_recurrent_gated_delta_rule, tuple(step), initial_state=carried,
            output_final_state=True,
        )  # fmt: skip
        assert carried is not None
        if cfg.cache_state_dtype != torch.float32:
            carried = carried.to(cfg.cache_state_dtype).float()
        outputs.append(o)
    assert carried is not None
    return torch.cat(outputs, dim=1), carried


def _mix_prefix_chunk(
    self: Any,
    state: _LayerState,
    inputs: tuple[torch.Tensor, ...],
    cache: Any,
    recurrent_state: torch.Tensor | None,
    gate: _GateArgs,
) -> torch.Tensor:
    """Trainer-path numbers inside a decode loop: rerun the chunk path over the whole prefix."""
    if recurrent_state is None:  # a new sequence (prefill): forget older prefixes
        state.prefix.clear()
    state.prefix.append(tuple(x.detach() for x in inputs))
    whole = [torch.cat(parts, dim=1) for parts in zip(*state.prefix, strict=True)]
    o, final = gate.call(chunk_gated_delta_rule, tuple(whole), output_final_state=True)
    assert final is not None
    cache.update_recurrent_state(final, self.layer_idx)
    return o[:, -inputs[0].shape[1] :]
