"""Typed errors of the agent harness."""

from __future__ import annotations


class HarnessError(ValueError):
    """Base class: a harness config is invalid or an episode could not run."""
