"""Keep ``transformers``' kernel-fallback notice off the terminal where it is noise.

With hybrid-numerics patched in, the Gated DeltaNet layers run the project's own FP32-state
kernels (Arctic-SWE §3.3); only their short causal convolution goes through ``transformers``'
``causal_conv1d_fn``, whose PyTorch reference is exactly what a CPU run needs (the
``causal_conv1d`` package is CUDA-only). Its "falling back ... install causal_conv1d" notice
would print on every run, so this one message, on the one logger that emits it, is dropped;
every other warning still shows.
"""

from __future__ import annotations

import logging

#: The logger ``transformers`` reports hub-kernel fallbacks on.
KERNELS_LOGGER = "transformers.integrations.hub_kernels"


class ConvFallbackNoticeFilter(logging.Filter):
    """Drops the ``causal_conv1d`` fallback notice; passes every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("causal_conv1d" in message and "falling back" in message)


def silence_conv_fallback_notice() -> None:
    """Install :class:`ConvFallbackNoticeFilter` on the kernels logger (idempotent)."""
    logger = logging.getLogger(KERNELS_LOGGER)
    if not any(isinstance(f, ConvFallbackNoticeFilter) for f in logger.filters):
        logger.addFilter(ConvFallbackNoticeFilter())
