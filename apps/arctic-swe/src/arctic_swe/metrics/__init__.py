"""Metrics of the RL loop: per-update JSON lines, PNG curves, a live display, a summary."""

from arctic_swe.metrics._labels import run_labels
from arctic_swe.metrics._live import LiveDisplay, TensorBoardSink, describe
from arctic_swe.metrics._plots import PANELS, plot_compare, plot_numerics, plot_run
from arctic_swe.metrics._record import MetricsError, MetricsLog, UpdateMetrics
from arctic_swe.metrics._summary import RunSummary, summarize, summary_table

__all__ = [
    "PANELS",
    "LiveDisplay",
    "MetricsError",
    "MetricsLog",
    "RunSummary",
    "TensorBoardSink",
    "UpdateMetrics",
    "describe",
    "plot_compare",
    "plot_numerics",
    "plot_run",
    "run_labels",
    "summarize",
    "summary_table",
]
