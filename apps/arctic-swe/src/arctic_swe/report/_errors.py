"""The typed errors of ``arctic-swe report``: a source or a results folder it cannot use, and a
committed page that no longer matches its data."""

from __future__ import annotations


class ReportError(ValueError):
    """Bad input: a source that is not a run or ablation directory, a results folder without
    collected data, data that cannot be read. Nothing is written."""


class ReportOutOfDateError(Exception):
    """``--check``: the committed ``README.md`` (or a figure it shows) is not what the committed
    data regenerates."""
