"""FP32-state Gated DeltaNet kernels, a precision policy and a Qwen3.5 patch for aligned train/inference numerics."""

from hybrid_numerics._api import Backend, chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
from hybrid_numerics._audit import MismatchReport, k3_mismatch, mismatch_audit
from hybrid_numerics._decode_torch import gated_delta_decode_step_
from hybrid_numerics._errors import GDNInputError, HybridNumericsError, PatchError
from hybrid_numerics._gate import gdn_gate
from hybrid_numerics._precision import (
    DEFAULT_FP32_PATTERNS,
    PrecisionPolicy,
    apply_precision_policy,
    precision_violations,
)
from hybrid_numerics._qwen3_5 import (
    GDNPatchConfig,
    gdn_layers,
    is_patched,
    patch_qwen3_5,
    patched_config,
    unpatch_qwen3_5,
)
from hybrid_numerics._version import __version__
from hybrid_numerics.reference import reference_gated_delta_rule

__all__ = [
    "DEFAULT_FP32_PATTERNS",
    "Backend",
    "GDNInputError",
    "GDNPatchConfig",
    "HybridNumericsError",
    "MismatchReport",
    "PatchError",
    "PrecisionPolicy",
    "__version__",
    "apply_precision_policy",
    "chunk_gated_delta_rule",
    "fused_recurrent_gated_delta_rule",
    "gated_delta_decode_step_",
    "gdn_gate",
    "gdn_layers",
    "is_patched",
    "k3_mismatch",
    "mismatch_audit",
    "patch_qwen3_5",
    "patched_config",
    "precision_violations",
    "reference_gated_delta_rule",
    "unpatch_qwen3_5",
]
