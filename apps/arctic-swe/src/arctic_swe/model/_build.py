"""Build a random-initialised policy with the trainer/engine numerics installed (Arctic-SWE §3.3)."""

from __future__ import annotations

from typing import Any

import torch
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

from arctic_swe.model._errors import PolicyConfigError, PolicyError
from arctic_swe.model._quiet import silence_conv_fallback_notice
from hybrid_numerics import (
    HybridNumericsError,
    PrecisionPolicy,
    apply_precision_policy,
    is_patched,
    patch_qwen3_5,
)


def build_policy(
    config: Qwen3_5TextConfig,
    seed: int,
    *,
    device: str | torch.device = "cpu",
    compute_dtype: torch.dtype = torch.float32,
    patch_numerics: bool = True,
) -> Qwen3_5ForCausalLM:
    """A ``Qwen3_5ForCausalLM`` with seeded random weights, FP32, in eval mode.

    The global torch RNG is left untouched (initialisation runs under a forked RNG), so the same
    ``(config, seed)`` always yields the same weights. With ``patch_numerics`` (the default) the
    hybrid-numerics precision policy is applied and its FP32-state Gated DeltaNet kernels are
    patched in (:func:`install_numerics`; ``compute_dtype=torch.bfloat16`` for a GPU policy with
    FP32 masters); ``patch_numerics=False`` gives the stock ``transformers`` FP32 model (the
    baseline of the numerics ablation).
    """
    if not isinstance(config, Qwen3_5TextConfig):
        raise PolicyConfigError(f"config must be a Qwen3_5TextConfig, got {type(config).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise PolicyConfigError(f"seed must be a non-negative int, got {seed!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model: Qwen3_5ForCausalLM = _construct(config)
    torch.nn.Module.to(model, device=device, dtype=torch.float32)  # HF's .to() is untyped
    torch.nn.Module.eval(model)
    if patch_numerics:
        install_numerics(model, compute_dtype=compute_dtype)
    return model


def _construct(config: Qwen3_5TextConfig) -> Qwen3_5ForCausalLM:
    factory: Any = Qwen3_5ForCausalLM  # transformers' decorated __init__ is opaque to mypy
    model: Qwen3_5ForCausalLM = factory(config)
    return model


def install_numerics(
    model: torch.nn.Module, *, compute_dtype: torch.dtype = torch.float32
) -> list[str]:
    """Apply hybrid-numerics' precision policy and patch its FP32-state Gated DeltaNet kernels
    into every linear-attention layer; returns the parameter names kept in FP32.

    With ``compute_dtype=torch.float32`` (CPU, the embedded topology) every weight stays FP32;
    with ``torch.bfloat16`` (GPU) the matmul weights become bf16 while ``A_log``, ``dt_bias``
    and the norm gains stay FP32 masters (Arctic-SWE §3.3).
    """
    policy = PrecisionPolicy(
        compute_dtype=None if compute_dtype == torch.float32 else compute_dtype
    )
    silence_conv_fallback_notice()  # the patched layers' conv fallback is the intended path
    try:
        kept = apply_precision_policy(model, policy)
        patch_qwen3_5(model)
    except HybridNumericsError as exc:
        raise PolicyError(
            f"cannot install hybrid-numerics into {type(model).__name__}: {exc}"
        ) from exc
    return kept


#: Compute dtypes an engine may run in: FP32 (the recipe on CPU) or a 16-bit float.
COMPUTE_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def set_compute_dtype(model: torch.nn.Module, dtype: torch.dtype) -> torch.dtype:
    """Cast ``model`` in place so that its forward computes in ``dtype``; returns the dtype of
    its matmul weights afterwards (the embedding's).

    ``torch.float32`` leaves an FP32 model as it is. A 16-bit ``dtype`` applies hybrid-numerics'
    precision policy: matmul weights and hence activations become ``dtype`` while ``A_log``,
    ``dt_bias`` and the norm gains stay FP32 — an inference engine in the model dtype, the
    engine side of the "FP32 numerics off" ablation (Arctic-SWE §3.3). Apply it to an FP32
    model only (digits lost to a 16-bit cast do not come back).
    """
    if dtype not in COMPUTE_DTYPES:
        raise PolicyConfigError(f"compute dtype must be one of {COMPUTE_DTYPES}, got {dtype}")
    embed: torch.Tensor = model.get_input_embeddings().weight  # type: ignore[operator]
    if embed.dtype == dtype:
        return dtype
    if embed.dtype != torch.float32:
        raise PolicyError(f"cannot cast a {embed.dtype} model to {dtype}: start from FP32")
    if dtype != torch.float32:
        try:
            apply_precision_policy(model, PrecisionPolicy(compute_dtype=dtype))
        except HybridNumericsError as exc:
            raise PolicyError(f"cannot cast {type(model).__name__} to {dtype}: {exc}") from exc
    return dtype


def numerics_installed(model: torch.nn.Module) -> bool:
    """Whether ``model`` runs the hybrid-numerics kernels (every GDN layer patched)."""
    return is_patched(model)
