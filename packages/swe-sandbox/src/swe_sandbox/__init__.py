"""Isolated SWE task environments (Docker and namespace backends), the agent tools and unspoofable grading."""

from swe_sandbox._version import __version__

__all__ = ["__version__"]
