"""The tiny Qwen3.5-architecture preset (ARCHITECTURE.md §4, embedded topology).

The embedded stress test needs a model that has *both* Qwen3.5 token mixers (Gated DeltaNet and
gated full attention, in the real 3:1 pattern) so every numerics and cache issue of the paper
(Arctic-SWE §3.3) exists in miniature, yet trains on two CPU cores in minutes. The vocabulary size
is a parameter because the tokenizer is trained locally on the deck corpus.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from transformers import Qwen3_5TextConfig

from arctic_swe.model._errors import PolicyConfigError

LINEAR = "linear_attention"
FULL = "full_attention"


@dataclass(frozen=True)
class PolicyPreset:
    """Shape of a Qwen3.5 text policy, independent of the vocabulary.

    ``layer_types`` follows ``transformers``: ``"linear_attention"`` (Gated DeltaNet) or
    ``"full_attention"`` (gated softmax attention with partial RoPE).
    """

    hidden_size: int = 128
    intermediate_size: int = 384
    layer_types: tuple[str, ...] = (LINEAR, LINEAR, LINEAR, FULL)
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32
    linear_num_key_heads: int = 2
    linear_num_value_heads: int = 4
    linear_key_head_dim: int = 32
    linear_value_head_dim: int = 32
    linear_conv_kernel_dim: int = 4
    max_position_embeddings: int = 32768
    rope_theta: float = 1_000_000.0
    partial_rotary_factor: float = 0.25
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True
    initializer_range: float = 0.02

    def __post_init__(self) -> None:
        positive = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name, value in positive.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
                raise PolicyConfigError(f"{name} must be positive, got {value}")
        unknown = sorted(set(self.layer_types) - {LINEAR, FULL})
        if not self.layer_types or unknown:
            raise PolicyConfigError(f"layer_types must be non-empty, of {LINEAR!r}/{FULL!r}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise PolicyConfigError("num_attention_heads must be a multiple of num_key_value_heads")
        if self.linear_num_value_heads % self.linear_num_key_heads:
            raise PolicyConfigError(
                "linear_num_value_heads must be a multiple of linear_num_key_heads"
            )
        if int(self.head_dim * self.partial_rotary_factor) % 2:
            raise PolicyConfigError("head_dim * partial_rotary_factor must be even (RoPE pairs)")


#: The default embedded policy: 4 layers (3 Gated DeltaNet, 1 full attention, as Qwen3.5's
#: 3:1 pattern), hidden 128, ~1M parameters at a 4k vocabulary.
TINY_PRESET = PolicyPreset()


def policy_config(
    vocab_size: int,
    preset: PolicyPreset = TINY_PRESET,
    *,
    pad_token_id: int | None = None,
    eos_token_id: int | list[int] | None = None,
    **overrides: Any,
) -> Qwen3_5TextConfig:
    """A ``Qwen3_5TextConfig`` for ``preset`` with the given vocabulary.

    ``overrides`` are extra ``Qwen3_5TextConfig`` fields (they win over the preset).
    Raises :class:`PolicyConfigError` on a non-positive vocabulary or special ids outside it.
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
        raise PolicyConfigError(f"vocab_size must be an int >= 2, got {vocab_size!r}")
    eos_ids = [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id or [])
    for name, token in [("pad_token_id", pad_token_id), *(("eos_token_id", e) for e in eos_ids)]:
        if token is not None and not 0 <= token < vocab_size:
            raise PolicyConfigError(f"{name} {token} outside the vocabulary of {vocab_size}")
    fields: dict[str, Any] = {
        f.name: getattr(preset, f.name)
        for f in dataclasses.fields(preset)
        if f.name not in ("rope_theta", "partial_rotary_factor", "layer_types")
    }
    fields.update(
        vocab_size=vocab_size,
        num_hidden_layers=len(preset.layer_types),
        layer_types=list(preset.layer_types),
        rope_parameters={
            "rope_type": "default",
            "rope_theta": preset.rope_theta,
            "partial_rotary_factor": preset.partial_rotary_factor,
        },
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
    )
    fields.update(overrides)
    try:
        return Qwen3_5TextConfig(**fields)
    except Exception as exc:  # ValueError/TypeError, or huggingface_hub's StrictDataclassError
        raise PolicyConfigError(f"invalid Qwen3.5 config: {exc}") from exc
