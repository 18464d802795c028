"""The policy: a Qwen3.5-architecture causal LM (Gated DeltaNet + gated attention), FP32 on CPU,
with hybrid-numerics installed; presets, seeded construction and local checkpoints (saved,
loaded, checked, and written whole by ``arctic-swe model init``)."""

from arctic_swe.model._build import (
    COMPUTE_DTYPES,
    build_policy,
    install_numerics,
    numerics_installed,
    set_compute_dtype,
)
from arctic_swe.model._checkpoint import assign_weights, load_policy, read_weights, save_policy
from arctic_swe.model._config import TINY_PRESET, PolicyPreset, policy_config
from arctic_swe.model._errors import CheckpointError, PolicyConfigError, PolicyError
from arctic_swe.model._init import INIT_VOCAB_SIZE, PRESETS, init_checkpoint
from arctic_swe.model._layout import check_checkpoint
from arctic_swe.model._quiet import silence_conv_fallback_notice

__all__ = [
    "COMPUTE_DTYPES",
    "INIT_VOCAB_SIZE",
    "PRESETS",
    "TINY_PRESET",
    "CheckpointError",
    "PolicyConfigError",
    "PolicyError",
    "PolicyPreset",
    "assign_weights",
    "build_policy",
    "check_checkpoint",
    "init_checkpoint",
    "install_numerics",
    "load_policy",
    "numerics_installed",
    "policy_config",
    "read_weights",
    "save_policy",
    "set_compute_dtype",
    "silence_conv_fallback_notice",
]
