"""Errors of the distributed trainer and of its client."""

from __future__ import annotations

from arctic_swe.trainer import TrainerError


class DistributedTrainerError(TrainerError):
    """Base class of the distributed trainer's errors (a :class:`TrainerError`, so commands
    that turn trainer errors into one ``error:`` line treat these the same)."""


class TrainerCheckpointError(DistributedTrainerError):
    """A sharded checkpoint that is missing or incomplete."""


class TrainerUnavailableError(DistributedTrainerError):
    """The trainer service did not answer (not started, crashed, or past the timeout); the run
    cannot continue without it."""


class TrainerRequestError(DistributedTrainerError):
    """The trainer service refused a request (4xx: a bad batch) or failed it (5xx)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"trainer answered {status}: {message}")
        self.status = status
