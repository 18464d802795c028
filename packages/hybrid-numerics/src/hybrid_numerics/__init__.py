"""FP32-state Gated DeltaNet kernels, a precision policy and a Qwen3.5 patch for aligned train/inference numerics."""

from hybrid_numerics._version import __version__

__all__ = ["__version__"]
