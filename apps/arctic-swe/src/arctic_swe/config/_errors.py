"""Errors of the run configuration and the run directory."""

from __future__ import annotations


class RunConfigError(ValueError):
    """A broken configuration: unknown key, wrong type, impossible size, bad override.

    Raised before any work starts; ``key`` names the offending ``section.field`` (or section),
    ``detail`` says what is wrong with it and ``source`` is the file it came from (``""``: not
    from a file, e.g. a ``--set`` override), shown first in the message.
    """

    def __init__(self, key: str, message: str, *, source: str = "") -> None:
        super().__init__(f"{source}: {key}: {message}" if source else f"{key}: {message}")
        self.key = key
        self.detail = message
        self.source = source


class RunDirError(OSError):
    """The run directory cannot be used (unwritable, not a directory, foreign contents)."""
