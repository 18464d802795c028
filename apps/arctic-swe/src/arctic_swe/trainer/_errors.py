"""Errors of the trainer and its checkpoints."""

from __future__ import annotations


class TrainerError(Exception):
    """Base class of trainer errors."""


class BatchError(TrainerError, ValueError):
    """A training batch that cannot be used (ragged fields, bad ids, no samples)."""


class VersionConflictError(BatchError):
    """A step asked to make a policy version that is not the next one (the remote trainer
    answers it with 409: the batch itself may be fine, the caller is out of step)."""


class ResumeError(TrainerError):
    """A checkpoint that is missing, incomplete or does not fit the run."""
