"""Build a random-initialised policy with the trainer/engine numerics installed (seed 000 §3.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import hybrid_numerics
import torch
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

from arctic_swe.model._errors import PolicyConfigError, PolicyError


def build_policy(
    config: Qwen3_5TextConfig,
    seed: int,
    *,
    device: str | torch.device = "cpu",
    patch_numerics: bool = True,
) -> Qwen3_5ForCausalLM:
    """A ``Qwen3_5ForCausalLM`` with seeded random weights, FP32, in eval mode.

    The global torch RNG is left untouched (initialisation runs under a forked RNG), so the same
    ``(config, seed)`` always yields the same weights. With ``patch_numerics`` (the default) the
    hybrid-numerics precision policy is applied and its FP32-state Gated DeltaNet kernels are
    patched in (:func:`install_numerics`); ``patch_numerics=False`` gives the stock
    ``transformers`` model (the baseline of the numerics ablation and of the benchmarks).
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
        install_numerics(model)
    return model


def _construct(config: Qwen3_5TextConfig) -> Qwen3_5ForCausalLM:
    factory: Any = Qwen3_5ForCausalLM  # transformers' decorated __init__ is opaque to mypy
    model: Qwen3_5ForCausalLM = factory(config)
    return model


def _hybrid_numerics_function(name: str) -> Callable[..., Any]:
    function = getattr(hybrid_numerics, name, None)
    if function is None:
        raise PolicyError(
            f"hybrid-numerics {hybrid_numerics.__version__} does not export {name} (issue #5); "
            "pass patch_numerics=False to run the stock transformers numerics"
        )
    return cast(Callable[..., Any], function)


def install_numerics(model: torch.nn.Module) -> None:
    """Apply hybrid-numerics' precision policy (``A_log``, ``dt_bias`` and norms stay FP32)
    and patch its FP32-state Gated DeltaNet kernels into every linear-attention layer."""
    _hybrid_numerics_function("apply_precision_policy")(model)
    _hybrid_numerics_function("patch_qwen3_5")(model)


def numerics_installed(model: torch.nn.Module) -> bool:
    """Whether ``model`` runs the hybrid-numerics kernels (every GDN layer patched)."""
    is_patched = getattr(hybrid_numerics, "is_patched", None)
    return bool(is_patched(model)) if is_patched is not None else False
