"""What the Qwen3.5 patch needs from ``transformers``, found by feature checks, not versions.

``transformers`` rewrote the Gated DeltaNet layer's cache handling several times within 5.x
(all verified against the installed modeling files, see the README's tested range):

* 5.15 - 5.20: module-level ``causal_conv1d_fn`` / ``causal_conv1d_update``, the cache's
  ``update_conv_state(..., conv_kernel_size=...)``; states read as
  ``cache.layers[i].conv_states[0]`` / ``.recurrent_states[0]`` behind
  ``cache.has_previous_state(i, state_idx=0)``; the layer's cache argument is ``cache_params``.
* 5.21 - 5.24: the same convolution; states read with ``cache.get_conv_state`` /
  ``get_recurrent_state``; 5.24 renames the argument to ``cache``.
* 5.25: the convolution is one module function, ``causal_conv1d_forward``, that also advances
  the linear-attention layers' own token count (``cache.increase_count``), which
  ``cache.get_seq_length()`` - hence the attention layers' rotary positions - now reads.

Older layouts (5.2 - 5.14: a model-specific cache, per-instance kernel attributes) are refused
with :class:`~hybrid_numerics.PatchError` at patch time instead of being half-patched.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

import torch

from hybrid_numerics._errors import PatchError

#: Module-level helpers of the layer's ``transformers`` module the patched forward calls.
_MODULE_HELPERS = ("apply_mask_to_padding_states", "causal_conv1d_fn", "causal_conv1d_update")


def layer_module(layer: Any) -> types.ModuleType:
    """The layer's own ``transformers`` module (its conv / masking helpers live there)."""
    return sys.modules[type(layer).__module__]


def check_supported(layer: Any) -> None:
    """Raise :class:`PatchError` unless ``layer``'s module and the cache have the structure the
    patched forward relies on (see the module docstring)."""
    ns = layer_module(layer)
    missing = [name for name in _MODULE_HELPERS if not callable(getattr(ns, name, None))]
    cache_layer = getattr(sys.modules.get("transformers.cache_utils"), "LinearAttentionLayer", None)
    update = getattr(cache_layer, "update_conv_state", None)
    if update is None or "conv_kernel_size" not in inspect.signature(update).parameters:
        missing.append(
            "transformers.cache_utils.LinearAttentionLayer.update_conv_state(conv_kernel_size=)"
        )
    if missing:
        raise PatchError(
            f"{type(layer).__name__} (module {ns.__name__}) has a layout this patch does not "
            f"recognise - missing {', '.join(missing)}; transformers 5.15 - 5.25 are supported"
        )


def cached_states(cache: Any, layer_idx: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """``(conv_state, recurrent_state)`` of a layer, ``None`` where nothing is cached yet."""
    if cache is None:
        return None, None
    if hasattr(cache, "get_recurrent_state"):  # 5.21+
        conv: torch.Tensor | None = cache.get_conv_state(layer_idx, state_idx=0)
        recurrent: torch.Tensor | None = cache.get_recurrent_state(layer_idx, state_idx=0)
        return conv, recurrent
    if not cache.has_previous_state(layer_idx, state_idx=0):  # 5.15 - 5.20
        return None, None
    layer = cache.layers[layer_idx]
    return layer.conv_states[0], layer.recurrent_states[0]


def is_recording_past(cache: Any, layer_idx: int) -> bool:
    """Whether the cache keeps past conv inputs for a later crop (assisted decoding)."""
    if hasattr(cache, "is_recording_past"):
        return bool(cache.is_recording_past(layer_idx))
    return bool(getattr(cache.layers[layer_idx], "record_past", False))


def check_no_intermediate_states(cache: Any, layer_idx: int) -> None:
    """5.25's assisted decoding asks a multi-token forward for the recurrent state after each
    of its last tokens (to crop back to any of them); the patched layers keep only the last one,
    so refuse rather than hand the cache a history it would crop to wrongly."""
    wanted = getattr(cache, "get_recurrent_states_to_keep", None)
    if cache is not None and wanted is not None and wanted(layer_idx) > 0:
        raise PatchError(
            "the cache records intermediate recurrent states (assisted decoding); patched "
            "Gated DeltaNet layers keep only the final state"
        )


def convolve(
    layer: Any, mixed_qkv: torch.Tensor, cache: Any, conv_state: torch.Tensor | None,
    kwargs: dict[str, Any],
) -> torch.Tensor:  # fmt: skip
    """The layer's short causal convolution of ``mixed_qkv: [B, C, T]``, exactly as the
    unpatched forward runs it, reading and updating the conv state in ``cache``."""
    ns = layer_module(layer)
    conv_kwargs = {k: v for k, v in kwargs.items() if k != "use_cache"}
    conv_forward = getattr(ns, "causal_conv1d_forward", None)
    if conv_forward is not None:  # 5.25+: one function, which also keeps the cache's count
        out: torch.Tensor = conv_forward(
            layer.conv1d, mixed_qkv, cache, layer.layer_idx, activation=layer.activation,
            **conv_kwargs,
        )  # fmt: skip
        return out
    T = mixed_qkv.shape[-1]
    weight = layer.conv1d.weight.squeeze(1)
    if conv_state is not None and T == 1 and not is_recording_past(cache, layer.layer_idx):
        stepped: torch.Tensor = ns.causal_conv1d_update(
            mixed_qkv, conv_state, weight, layer.conv1d.bias, layer.activation
        )
        return stepped
    if cache is not None:
        mixed_qkv = cache.update_conv_state(
            mixed_qkv, layer.layer_idx, conv_kernel_size=layer.conv_kernel_size
        )
    out = ns.causal_conv1d_fn(
        mixed_qkv, weight, layer.conv1d.bias, activation=layer.activation, **conv_kwargs
    )
    return out[:, :, -T:] if cache is not None else out


def cache_keyword(model: Any) -> str:
    """The keyword a model's ``forward`` takes its cache by: ``cache`` (5.24+) or
    ``past_key_values`` (before; 5.24+ still accepts it with a deprecation warning)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"
