"""Typed errors of the router.

Every error the router raises derives from :class:`RouterError`. Errors that a caller can act on by
trying again (acquiring a fresh lease, possibly on another engine) also derive from
:class:`RetryableError`, so an orchestrator can write ``except RetryableError`` once instead of
enumerating causes. Raising never changes a counter: a rejected call leaves the router exactly as
it found it.
"""

from __future__ import annotations


class RouterError(Exception):
    """Base class of every error raised by ``load_router``."""


class RetryableError(RouterError):
    """The group can be retried: release nothing, acquire a new lease and run it again."""


class InvalidArgumentError(RouterError, ValueError):
    """A constructor or call argument is invalid (zero engines, negative cap, bad size, …)."""


class NoEnginesError(InvalidArgumentError):
    """A router was built from an empty engine list."""


class InvalidCapError(InvalidArgumentError):
    """A resident cap or engine capacity is not a positive integer."""


class DuplicateEngineError(InvalidArgumentError):
    """An engine id is already registered and live."""


class UnknownEngineError(RouterError, KeyError):
    """No engine with this id is registered."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown engine"


class InvalidGroupSizeError(InvalidArgumentError):
    """A group must hold at least one rollout."""


class GroupTooLargeError(InvalidArgumentError):
    """The group holds more rollouts than any live engine may keep resident, so it can never run."""

    def __init__(self, size: int, largest_cap: int) -> None:
        super().__init__(
            f"group of {size} rollouts exceeds the largest resident cap of any live engine "
            f"({largest_cap}); split the group or raise max_resident_per_engine"
        )
        self.size = size
        self.largest_cap = largest_cap


class NoEngineAvailableError(RetryableError):
    """Every registered engine is down or draining; nothing can take the group now."""


class EngineFailedError(RetryableError):
    """The engine serving this lease failed; it was marked down and the lease ended as FAILED."""

    def __init__(self, engine_id: str, reason: str) -> None:
        super().__init__(f"engine {engine_id!r} failed: {reason}")
        self.engine_id = engine_id
        self.reason = reason


class LeaseDrainedError(RetryableError):
    """The lease's engine was force-drained; the lease ended as DRAINED."""


class LeaseClosedError(RouterError):
    """The lease already ended (released, failed or drained); it cannot be used or released again."""


class StaleVersionError(InvalidArgumentError):
    """A refresh named a policy version that is not newer than the current one."""


class RefreshInProgressError(RouterError):
    """A second refresh was requested while one is still running."""
