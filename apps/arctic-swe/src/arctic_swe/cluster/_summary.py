"""The table ``cluster up`` ends with: how long the cluster ran, how far the loop got, the
final measured pool success, and where the metrics, plots and logs are.

Everything but the wall time is read back from the run directory (``metrics.jsonl`` and
``plots/``, as the loop child wrote them), so the table says what the run left behind, not
what the launcher believes happened. ``arctic_swe.metrics`` (and with it matplotlib) is
imported only when a summary is built, at the end of a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from arctic_swe.metrics import PoolVerdict


@dataclass(frozen=True)
class ClusterSummary:
    """What a ``cluster up`` run left in its directory.

    ``updates``: updates logged in ``metrics.jsonl`` (a resumed run counts its earlier ones),
    of ``planned`` (``run.updates``); ``pool``: the measured pool verdict (``None`` when the run
    evaluated no update); ``unreadable``: why ``metrics.jsonl`` could not be read, if it
    could not; ``plots``: the PNGs under ``plots/``.
    """

    outcome: str
    wall_seconds: float
    updates: int
    planned: int
    pool: PoolVerdict | None
    metrics: Path
    plots: tuple[Path, ...]
    logs: Path
    unreadable: str = ""


def cluster_summary(
    run_dir: Path, *, outcome: str, wall_seconds: float, planned: int
) -> ClusterSummary:
    """Read ``run_dir``'s metrics and plots into a :class:`ClusterSummary`."""
    from arctic_swe.metrics import MetricsError, MetricsLog, pool_verdict

    metrics = run_dir / "metrics.jsonl"
    records, unreadable = [], ""
    if metrics.is_file():
        try:
            records = MetricsLog(metrics).read()
        except (MetricsError, OSError) as exc:  # the table must still print; say why
            unreadable = " ".join(str(exc).split())
    return ClusterSummary(
        outcome=outcome,
        wall_seconds=wall_seconds,
        updates=len(records),
        planned=planned,
        pool=pool_verdict(records) if records else None,
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
        *_pool_rows(summary.pool),
        ("metrics", metrics),
        ("plots", "\n".join(map(str, summary.plots)) or "none written"),
        ("logs", str(summary.logs)),
    ]


def _pool_rows(pool: PoolVerdict | None) -> list[tuple[str, str]]:
    if pool is None:
        return [("final pool evaluation", "not measured (no update was evaluated)")]
    final = pool.final
    verdict = "held" if pool.held else "NOT held"
    return [
        (f"final pool evaluation ({final.where()})", final.describe()),
        ("pool success, peak", f"{pool.peak.describe()} ({pool.peak.where()})"),
        ("verdict (final >= 0.9 x peak)", f"{verdict} ({pool.evaluations} evaluations)"),
    ]


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min {rest:02d} s"
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"
