"""The CISPO objective with IcePop masking, memory-bounded log-probs and mismatch metrics."""

from cispo_loss._version import __version__

__all__ = ["__version__"]
