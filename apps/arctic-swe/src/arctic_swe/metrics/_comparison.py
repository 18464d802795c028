"""One table comparing several runs (``arctic-swe ablate``, ``arctic-swe compare``): a row per
run with the stress test's verdict figures, as rich and as markdown.

The pool figure is the measured pool success (``pool_success`` with its 95 % interval
``pool_success_low`` / ``pool_success_high`` in ``metrics.jsonl``) where a run has it, and the
eviction-adjusted reward windows of :func:`summarize` otherwise; ``replay_adjusted`` is shown
when present. Those fields are read from the raw JSON lines, so logs written before they existed
(and runs of other versions) compare side by side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from arctic_swe.metrics._record import UpdateMetrics
from arctic_swe.metrics._summary import RunSummary, summarize

NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class ComparisonRow:
    """One run: its summary, and the last measured pool success (rate, 95 % low, high) and
    replay-adjusted figure when its log carries them."""

    label: str
    summary: RunSummary
    masked_frac: float  # mean IcePop-masked (or clipped) fraction of trained tokens
    pool_success: tuple[float, float, float] | None = None
    replay_adjusted: float | None = None


def last_measured(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The newest value of each optional measured field in raw ``metrics.jsonl`` rows."""
    found: dict[str, Any] = {}
    for row in rows:
        for key in ("pool_success", "pool_success_low", "pool_success_high", "replay_adjusted"):
            if isinstance(row.get(key), (int, float)) and not isinstance(row.get(key), bool):
                found[key] = float(row[key])
    return found


def comparison_row(
    label: str, records: Sequence[UpdateMetrics], measured: Mapping[str, float] | None = None
) -> ComparisonRow:
    """The row of one non-empty run; ``measured`` is :func:`last_measured` of its raw log."""
    measured = measured or {}
    pool = None
    if "pool_success" in measured:
        rate = measured["pool_success"]
        pool = (
            rate,
            measured.get("pool_success_low", rate),
            measured.get("pool_success_high", rate),
        )
    return ComparisonRow(
        label=label,
        summary=summarize(records),
        masked_frac=sum(r.masked_frac for r in records) / len(records),
        pool_success=pool,
        replay_adjusted=measured.get("replay_adjusted"),
    )


def _columns(rows: Sequence[ComparisonRow]) -> list[tuple[str, list[str]]]:
    """(header, one cell per row), the optional measured columns only if some run has them."""
    window = rows[0].summary.window if rows else 1
    columns = [
        ("run", [r.label for r in rows]),
        ("updates", [str(r.summary.updates) for r in rows]),
    ]
    if any(r.pool_success is not None for r in rows):
        columns.append(("pool success (95 % CI)", [_pool(r) for r in rows]))
    if any(r.replay_adjusted is not None for r in rows):
        cells = [
            NOT_MEASURED if r.replay_adjusted is None else f"{r.replay_adjusted:.3f}" for r in rows
        ]
        columns.append(("replay-adjusted", cells))
    columns += [
        (
            f"pool reward first → last {window} (peak)",
            [
                f"{r.summary.first_window:.3f} → {r.summary.final_window:.3f} "
                f"({r.summary.peak_window:.3f})"
                for r in rows
            ],
        ),
        ("held", ["yes" if r.summary.held else "NO" for r in rows]),
        (
            "batch reward first → last",
            [
                f"{r.summary.batch_first_window:.3f} → {r.summary.batch_final_window:.3f}"
                for r in rows
            ],
        ),
        ("mismatch KL", [f"{r.summary.mean_mismatch_kl:.2e}" for r in rows]),
        ("masked", [f"{100 * r.masked_frac:.2f} %" for r in rows]),
        (
            "stale / lost",
            [f"{r.summary.stale_dropped} / {r.summary.dropped_rollouts}" for r in rows],
        ),
        ("wall", [f"{r.summary.wall_seconds:.0f} s" for r in rows]),
    ]
    return columns


def _pool(row: ComparisonRow) -> str:
    if row.pool_success is None:
        return NOT_MEASURED
    rate, low, high = row.pool_success
    return f"{rate:.3f} [{low:.3f}, {high:.3f}]"


def comparison_table(rows: Sequence[ComparisonRow], title: str = "comparison") -> Table:
    """The rows as one rich table (a row per run)."""
    table = Table(title=title, show_header=True)
    columns = _columns(rows)
    for index, (header, _) in enumerate(columns):
        table.add_column(header, justify="left" if index == 0 else "right")
    for cells in zip(*(cells for _, cells in columns), strict=True):
        table.add_row(*cells)
    return table


def comparison_markdown(rows: Sequence[ComparisonRow]) -> str:
    """The rows as a GitHub markdown table (what ``OUT/comparison.md`` holds)."""
    columns = _columns(rows)
    lines = [
        "| " + " | ".join(header for header, _ in columns) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(columns))) + "|",
    ]
    for cells in zip(*(cells for _, cells in columns), strict=True):
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
