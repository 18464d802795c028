"""Metrics of the RL loop: per-update JSON lines, PNG curves, a live display, a summary."""

from arctic_swe.metrics._comparison import (
    ComparisonRow,
    comparison_markdown,
    comparison_row,
    comparison_table,
    last_measured,
)
from arctic_swe.metrics._labels import run_labels
from arctic_swe.metrics._live import LiveDisplay, TensorBoardSink, describe
from arctic_swe.metrics._plots import PANELS, plot_compare, plot_run
from arctic_swe.metrics._record import MetricsError, MetricsLog, UpdateMetrics
from arctic_swe.metrics._summary import RunSummary, summarize, summary_table

__all__ = [
    "PANELS",
    "ComparisonRow",
    "LiveDisplay",
    "MetricsError",
    "MetricsLog",
    "RunSummary",
    "TensorBoardSink",
    "UpdateMetrics",
    "comparison_markdown",
    "comparison_row",
    "comparison_table",
    "describe",
    "last_measured",
    "plot_compare",
    "plot_run",
    "run_labels",
    "summarize",
    "summary_table",
]
