"""Errors of the run configuration and the run directory."""

from __future__ import annotations


class RunConfigError(ValueError):
    """A broken configuration: unknown key, wrong type, impossible size, bad override.

    Raised before any work starts; ``key`` names the offending ``section.field`` (or section).
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


class RunDirError(OSError):
    """The run directory cannot be used (unwritable, not a directory, foreign contents)."""
