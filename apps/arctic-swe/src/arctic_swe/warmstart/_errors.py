"""Typed errors of the warm start."""

from __future__ import annotations


class WarmStartError(ValueError):
    """Base class: expert data or the SFT configuration is unusable."""
