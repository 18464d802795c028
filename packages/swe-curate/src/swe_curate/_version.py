"""The distribution version, kept static (workspace policy: one place, no VCS lookup)."""

__version__ = "0.1.1"
