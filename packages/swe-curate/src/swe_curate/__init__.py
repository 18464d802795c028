"""Execution audits, counterfactual judging, test strengthening and deck building for SWE RL tasks."""

from swe_curate._version import __version__

__all__ = ["__version__"]
