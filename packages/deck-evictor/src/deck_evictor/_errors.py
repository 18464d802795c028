"""Typed errors: every bad input the deck can see maps to one of these, and none loses data.

All derive from :class:`DeckError`, so a caller can catch the whole family in one place; each
also derives from the builtin a generic caller would expect (``LookupError`` for an unknown id,
``ValueError`` for a malformed argument, ``OSError`` stays ``OSError``).
"""

from __future__ import annotations


class DeckError(Exception):
    """Base class of every error raised by ``deck_evictor``."""


class InvalidConfigError(DeckError, ValueError):
    """A rule, policy or filter was configured with values outside its domain."""


class DuplicateTaskError(DeckError, ValueError):
    """The same task id was given twice when building a deck."""


class UnknownTaskError(DeckError, LookupError):
    """A task id that the deck does not hold."""

    def __init__(self, task_id: object) -> None:
        super().__init__(f"unknown task id {task_id!r}: it is not in this deck")
        self.task_id = task_id

    def __str__(self) -> str:  # LookupError/KeyError would repr() the message; keep it readable
        return str(self.args[0])


class InvalidResultError(DeckError, ValueError):
    """A group result that cannot be true: ``successes > n``, negative counts, ``n < 1``."""


class UpdateOrderError(DeckError, ValueError):
    """The update clock was asked to move backwards."""


class NotRetiredError(DeckError, ValueError):
    """A replay probe was recorded for a task that is not currently retired."""


class EstimationError(DeckError, ValueError):
    """The histories hold too few transitions to estimate a rate (the MLE is undefined)."""


class StateFileError(DeckError):
    """A deck state file could not be used; the file on disk is left untouched."""


class CorruptStateError(StateFileError):
    """The file is a deck state file but damaged: truncated, bad checksum, malformed payload."""


class ForeignStateError(StateFileError):
    """The file is not a deck state file (or one of an unsupported format version)."""
