"""One table comparing several runs (``arctic-swe ablate``, ``arctic-swe compare``): a row per
run with the stress test's verdict figures, as rich and as markdown.

The pool figures are the run's declared verdict (:class:`RunVerdict` of
:func:`summarize`): update 0 → final window and reference → final window, each a paired per-task change with its
t interval over tasks, the label, the held-out split's update 0 → final beside it, and the last
window of ``replay_adjusted``; a run without evaluations (or a log written before them) shows
"not measured" there. The imputed eviction-adjusted reward windows follow, labelled as imputed,
never as the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table

from arctic_swe.metrics._evaluations import EvalRecord
from arctic_swe.metrics._record import UpdateMetrics
from arctic_swe.metrics._summary import RunSummary, summarize
from arctic_swe.metrics._verdict import NOT_MEASURED as NOT_MEASURED  # _seeds reads it here
from arctic_swe.metrics._verdict import VerdictRule


@dataclass(frozen=True)
class ComparisonRow:
    """One run: its summary (with its verdict) and its mean masked fraction."""

    label: str
    summary: RunSummary
    masked_frac: float  # mean IcePop-masked (or clipped) fraction of trained tokens
    # every evaluation of the run (RUN/evaluations.jsonl; empty for a run that predates it)
    evaluations: tuple[EvalRecord, ...] = ()
    records: tuple[UpdateMetrics, ...] = ()


def comparison_row(
    label: str,
    records: Sequence[UpdateMetrics],
    evaluations: Sequence[EvalRecord] = (),
    rule: VerdictRule | None = None,
) -> ComparisonRow:
    """The row of one non-empty run; its verdict under ``rule`` (see :func:`summarize`)."""
    return ComparisonRow(
        label=label,
        summary=summarize(records, evaluations, rule),
        masked_frac=sum(r.masked_frac for r in records) / len(records),
        evaluations=tuple(evaluations),
        records=tuple(records),
    )


def _pool_cells(rows: Sequence[ComparisonRow]) -> list[tuple[str, list[str]]]:
    """The verdict's paired changes (each with what its interval includes), its label, the
    held-out change beside it, the final window's rollouts and the last window of
    replay-adjusted reward."""
    verdicts = [row.summary.verdict for row in rows]
    replay = [
        NOT_MEASURED if r.summary.replay_final_window is None
        else f"{r.summary.replay_final_window:.3f}"
        for r in rows
    ]  # fmt: skip
    return [
        ("pool update 0 → final, paired change [CI]", [v.climb_text() for v in verdicts]),
        ("pool reference → final, paired change [CI]", [v.hold_text() for v in verdicts]),
        ("verdict", [v.label for v in verdicts]),
        ("held-out update 0 → final [CI]", [v.heldout_text() for v in verdicts]),
        ("final window solved / rollouts", [v.final_text() for v in verdicts]),
        ("replay-adjusted, last window", replay),
    ]


def _columns(rows: Sequence[ComparisonRow]) -> list[tuple[str, list[str]]]:
    """(header, one cell per row)."""
    window = rows[0].summary.window if rows else 1
    return [
        ("run", [r.label for r in rows]),
        ("updates", [str(r.summary.updates) for r in rows]),
        *_pool_cells(rows),
        (
            f"imputed pool reward first → last {window}",
            [f"{r.summary.first_window:.3f} → {r.summary.final_window:.3f}" for r in rows],
        ),
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


Columns = Sequence[tuple[str, Sequence[str]]]  # (header, one cell per row)


def columns_table(columns: Columns, title: str) -> Table:
    """Columns as one rich table; the first column (the run's label) is never wrapped."""
    table = Table(title=title, show_header=True)
    for index, (header, _) in enumerate(columns):
        if index == 0:  # the run's label is never wrapped, whatever the terminal's width
            width = max([len(header), *(len(cell) for cell in columns[0][1])])
            table.add_column(header, justify="left", no_wrap=True, min_width=width)
        else:
            table.add_column(header, justify="right")
    for cells in zip(*(cells for _, cells in columns), strict=True):
        table.add_row(*cells)
    return table


def columns_markdown(columns: Columns) -> str:
    """Columns as a GitHub markdown table (first column left-aligned, the others right)."""
    lines = [
        "| " + " | ".join(header for header, _ in columns) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(columns))) + "|",
    ]
    for cells in zip(*(cells for _, cells in columns), strict=True):
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def comparison_table(rows: Sequence[ComparisonRow], title: str = "comparison") -> Table:
    """The rows as one rich table (a row per run)."""
    return columns_table(_columns(rows), title)


def comparison_markdown(rows: Sequence[ComparisonRow]) -> str:
    """The rows as a GitHub markdown table (what ``OUT/comparison.md`` holds)."""
    return columns_markdown(_columns(rows))
