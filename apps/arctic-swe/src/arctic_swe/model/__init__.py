"""The policy: a Qwen3.5-architecture causal LM (Gated DeltaNet + gated attention), FP32 on CPU,
with hybrid-numerics installed; presets, seeded construction and local checkpoints."""

from arctic_swe.model._build import build_policy, install_numerics, numerics_installed
from arctic_swe.model._checkpoint import assign_weights, load_policy, read_weights, save_policy
from arctic_swe.model._config import TINY_PRESET, PolicyPreset, policy_config
from arctic_swe.model._errors import CheckpointError, PolicyConfigError, PolicyError

__all__ = [
    "TINY_PRESET",
    "CheckpointError",
    "PolicyConfigError",
    "PolicyError",
    "PolicyPreset",
    "assign_weights",
    "build_policy",
    "install_numerics",
    "load_policy",
    "numerics_installed",
    "policy_config",
    "read_weights",
    "save_policy",
]
