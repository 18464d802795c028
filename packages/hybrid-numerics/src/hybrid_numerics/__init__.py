"""FP32-state Gated DeltaNet kernels, a precision policy and a Qwen3.5 patch for aligned train/inference numerics."""

from hybrid_numerics._api import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
from hybrid_numerics._errors import GDNInputError, HybridNumericsError, PatchError
from hybrid_numerics._gate import gdn_gate
from hybrid_numerics._version import __version__
from hybrid_numerics.reference import reference_gated_delta_rule

__all__ = [
    "GDNInputError",
    "HybridNumericsError",
    "PatchError",
    "__version__",
    "chunk_gated_delta_rule",
    "fused_recurrent_gated_delta_rule",
    "gdn_gate",
    "reference_gated_delta_rule",
]
