"""Typed errors of the policy-model layer."""

from __future__ import annotations


class PolicyError(ValueError):
    """Base class: a policy could not be configured, built, saved or loaded."""


class PolicyConfigError(PolicyError):
    """A preset or config field is out of range (vocabulary, layer pattern, head shapes)."""


class CheckpointError(PolicyError):
    """A checkpoint directory or weights file is missing, unreadable or does not fit the model."""
