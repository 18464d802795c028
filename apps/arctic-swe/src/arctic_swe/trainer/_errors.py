"""Errors of the trainer and its checkpoints."""

from __future__ import annotations


class TrainerError(Exception):
    """Base class of trainer errors."""


class BatchError(TrainerError, ValueError):
    """A training batch that cannot be used (ragged fields, bad ids, no samples)."""


class ResumeError(TrainerError):
    """A checkpoint that is missing, incomplete or does not fit the run."""
