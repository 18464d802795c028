"""Metrics of the RL loop: per-update JSON lines, PNG curves, a live display, a summary."""

from arctic_swe.metrics._comparison import (
    ComparisonRow,
    comparison_markdown,
    comparison_row,
    comparison_table,
)
from arctic_swe.metrics._evaluations import (
    EVALUATIONS,
    FINAL_WINDOW,
    HELDOUT_SPLIT,
    POOL_SPLIT,
    REFERENCE_WINDOW,
    EvalRecord,
    EvaluationLog,
    in_window,
    of_split,
)
from arctic_swe.metrics._health import (
    EndingWindow,
    RunHealth,
    Streak,
    ending_windows,
    longest_streak,
    run_health,
    trailing_zero_gradient,
    zero_gradient,
)
from arctic_swe.metrics._health_table import (
    health_markdown,
    health_table,
    windows_table,
)
from arctic_swe.metrics._labels import run_labels
from arctic_swe.metrics._live import LiveDisplay, TensorBoardSink, describe
from arctic_swe.metrics._plots import PANELS, plot_compare, plot_numerics, plot_run
from arctic_swe.metrics._record import MetricsError, MetricsLog, UpdateMetrics
from arctic_swe.metrics._seeds import (
    SeedGroup,
    seed_groups,
    seed_label,
    seeds_markdown,
    seeds_table,
    split_seed_label,
)
from arctic_swe.metrics._summary import (
    PoolFigure,
    PoolVerdict,
    RunSummary,
    pool_points,
    pool_verdict,
    summarize,
    summary_table,
)

__all__ = [
    "EVALUATIONS",
    "FINAL_WINDOW",
    "HELDOUT_SPLIT",
    "PANELS",
    "POOL_SPLIT",
    "REFERENCE_WINDOW",
    "ComparisonRow",
    "EndingWindow",
    "EvalRecord",
    "EvaluationLog",
    "LiveDisplay",
    "MetricsError",
    "MetricsLog",
    "PoolFigure",
    "PoolVerdict",
    "RunHealth",
    "RunSummary",
    "SeedGroup",
    "Streak",
    "TensorBoardSink",
    "UpdateMetrics",
    "comparison_markdown",
    "comparison_row",
    "comparison_table",
    "describe",
    "ending_windows",
    "health_markdown",
    "health_table",
    "in_window",
    "longest_streak",
    "of_split",
    "plot_compare",
    "plot_numerics",
    "plot_run",
    "pool_points",
    "pool_verdict",
    "run_health",
    "run_labels",
    "seed_groups",
    "seed_label",
    "seeds_markdown",
    "seeds_table",
    "split_seed_label",
    "summarize",
    "summary_table",
    "trailing_zero_gradient",
    "windows_table",
    "zero_gradient",
]
