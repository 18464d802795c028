"""Least-loaded group placement, resident caps, policy-version bookkeeping and the weight-refresh protocol."""

from load_router._version import __version__

__all__ = ["__version__"]
