"""The Arctic-SWE application: fully asynchronous RL of software-engineering agents, end to end."""

from arctic_swe._version import __version__

__all__ = ["__version__"]
