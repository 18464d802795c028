"""The table ``cluster up`` ends with: how long the cluster ran, how far the loop got, the
run's declared verdict, and where the metrics, plots and logs are.

Everything but the wall time is read back from the run directory (``metrics.jsonl``,
``evaluations.jsonl``, ``config.toml`` and ``plots/``, as the loop child wrote them), so the table says what the run left behind, not
what the launcher believes happened. ``arctic_swe.metrics`` (and with it matplotlib) is
imported only when a summary is built, at the end of a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from arctic_swe.metrics import RunVerdict


@dataclass(frozen=True)
class ClusterSummary:
    """What a ``cluster up`` run left in its directory.

    ``updates``: updates logged in ``metrics.jsonl`` (a resumed run counts its earlier ones),
    of ``planned`` (``run.updates``); ``verdict``: the run's declared verdict over its
    evaluations ("not measured" without them); ``unreadable``: why ``metrics.jsonl`` (or the
    verdict's inputs) could not be read, if they could not; ``plots``: the PNGs under
    ``plots/``.
    """

    outcome: str
    wall_seconds: float
    updates: int
    planned: int
    verdict: RunVerdict
    metrics: Path
    plots: tuple[Path, ...]
    logs: Path
    unreadable: str = ""


def cluster_summary(
    run_dir: Path, *, outcome: str, wall_seconds: float, planned: int
) -> ClusterSummary:
    """Read ``run_dir``'s metrics and plots into a :class:`ClusterSummary`."""
    from arctic_swe.config import RunConfigError, RunDirError
    from arctic_swe.metrics import (
        EVALUATIONS,
        EvaluationLog,
        MetricsError,
        MetricsLog,
        VerdictRule,
        read_verdict_rule,
        run_verdict,
    )

    metrics = run_dir / "metrics.jsonl"
    records, evaluations, rule, unreadable = [], [], None, ""
    try:  # the table must still print; say why not
        if metrics.is_file():
            records = MetricsLog(metrics).read()
        evaluations = EvaluationLog(run_dir / EVALUATIONS).read()
        rule = read_verdict_rule(run_dir)
    except (MetricsError, RunConfigError, RunDirError, OSError) as exc:
        unreadable = " ".join(str(exc).split())
    return ClusterSummary(
        outcome=outcome,
        wall_seconds=wall_seconds,
        updates=len(records),
        planned=planned,
        verdict=run_verdict(evaluations, rule or VerdictRule(updates=max(1, planned))),
        metrics=metrics,
        plots=tuple(sorted((run_dir / "plots").glob("*.png"))),
        logs=run_dir / "logs",
        unreadable=unreadable,
    )


def cluster_summary_table(summary: ClusterSummary, title: str = "arctic-swe cluster up") -> Table:
    """A two-column rich table of :class:`ClusterSummary` (the shape of ``overfit``'s)."""
    table = Table(title=title, show_header=True)
    table.add_column("figure")
    table.add_column("value", overflow="fold")
    for name, value in _rows(summary):
        table.add_row(name, value)
    return table


def _rows(summary: ClusterSummary) -> list[tuple[str, str]]:
    metrics = str(summary.metrics) if summary.metrics.is_file() else "none written"
    if summary.unreadable:
        metrics = f"{summary.metrics} (unreadable: {summary.unreadable})"
    return [
        ("result", summary.outcome),
        ("wall time", _duration(summary.wall_seconds)),
        ("updates completed", f"{summary.updates} of {summary.planned}"),
        *_verdict_rows(summary.verdict),
        ("metrics", metrics),
        ("plots", "\n".join(map(str, summary.plots)) or "none written"),
        ("logs", str(summary.logs)),
    ]


def _verdict_rows(verdict: RunVerdict) -> list[tuple[str, str]]:
    label = verdict.label + (f" ({verdict.reason})" if verdict.reason else "")
    return [
        ("pool success, final window", verdict.final_text()),
        ("pool success, update 0 → final", verdict.climb_text()),
        ("pool success, reference → final", verdict.hold_text()),
        ("verdict (declared before the run)", label),
        ("held-out success, update 0 → final", verdict.heldout_text()),
    ]


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min {rest:02d} s"
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"
