"""Strict validation of raw assistant turns and the gated-reward episode gate."""

from swe_formatcheck._version import __version__

__all__ = ["__version__"]
