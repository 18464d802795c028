"""The trainer's precision set-up: FP32 master weights, hybrid-numerics kernels patched in.

``arctic_swe.model.build_policy`` applies hybrid-numerics' *default* precision policy, whose
compute dtype is bf16; an optimizer must own FP32 master weights, and on CPU the whole forward
is FP32. So the trainer (and the engines it feeds) build the stock model and apply
the policy with ``compute_dtype=None`` — every parameter FP32 — then patch the Gated DeltaNet
kernels. On GPU the forward runs under bf16 autocast while ``A_log``/``dt_bias``/norms and the
recurrent state stay FP32 (the policy's patterns). ``fp32_state=False`` is the paper's
"FP32 numerics off" ablation: the recurrent decode state is kept in bf16.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

import hybrid_numerics
from arctic_swe.model import build_policy, load_policy, silence_conv_fallback_notice


def apply_fp32_numerics(model: nn.Module, *, fp32_state: bool = True) -> nn.Module:
    """Make every parameter FP32 (keeping the policy's FP32 names exact) and patch the kernels."""
    silence_conv_fallback_notice()  # the patched layers' conv fallback is the intended path
    hybrid_numerics.apply_precision_policy(
        model, hybrid_numerics.PrecisionPolicy(compute_dtype=None)
    )
    state_dtype = torch.float32 if fp32_state else torch.bfloat16
    hybrid_numerics.patch_qwen3_5(model, cache_state_dtype=state_dtype)
    return model


def build_fp32_policy(
    config: Qwen3_5TextConfig, seed: int, *, fp32_state: bool = True
) -> Qwen3_5ForCausalLM:
    """A seeded random-init policy, FP32 throughout, hybrid-numerics installed."""
    model = build_policy(config, seed, patch_numerics=False)
    apply_fp32_numerics(model, fp32_state=fp32_state)
    return model


def load_fp32_policy(path: str, *, fp32_state: bool = True) -> Qwen3_5ForCausalLM:
    """A local Hugging Face checkpoint loaded FP32 throughout, hybrid-numerics installed."""
    model = load_policy(path, patch_numerics=False)
    apply_fp32_numerics(model, fp32_state=fp32_state)
    return model
