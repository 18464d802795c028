"""Every results table, in one list: what ``arctic-swe ablate`` prints and writes to
``OUT/comparison.md`` and what ``arctic-swe report`` writes into a results folder's README
(Arctic-SWE §3.1, the stress test's figures).

Both commands build their tables through :func:`result_sections`, so the two cannot drift. A new
table is one more :class:`ResultTable` in :data:`RESULT_TABLES`: a title and two builders over
the comparison rows (markdown, and the rich table the console prints), each returning ``None``
when the table does not apply to these rows (the per-seed table of an ablation without seeds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.table import Table

from arctic_swe.metrics import (
    ComparisonRow,
    RunHealth,
    comparison_markdown,
    comparison_table,
    health_markdown,
    health_table,
    mechanism_markdown,
    mechanism_rows,
    mechanism_table,
    paired_markdown,
    paired_rows,
    paired_table,
    reading_markdown,
    reading_rows,
    reading_table,
    run_health,
)

Rows = Sequence[ComparisonRow]


@dataclass(frozen=True)
class ResultTable:
    """One table over the comparison rows: ``markdown(rows)`` and ``rich(rows, title)``, both
    ``None`` when the table does not apply."""

    title: str
    markdown: Callable[[Rows], str | None]
    rich: Callable[[Rows, str], Table | None]


@dataclass(frozen=True)
class Section:
    """One built table: its title, its markdown (ending in a newline) and its rich table."""

    title: str
    markdown: str
    table: Table


def _health(rows: Rows) -> list[RunHealth]:
    return [run_health(row.label, row.records) for row in rows]


def _paired_markdown(rows: Rows) -> str | None:
    paired = paired_rows(rows)
    return paired_markdown(paired) if len(paired) > 1 else None


def _paired_rich(rows: Rows, title: str) -> Table | None:
    paired = paired_rows(rows)  # full and at least one variant: each against full, seed by seed
    return paired_table(paired, title=title) if len(paired) > 1 else None


def _reading_markdown(rows: Rows) -> str | None:
    readings = reading_rows(rows)
    return reading_markdown(readings) if readings else None


def _reading_rich(rows: Rows, title: str) -> Table | None:
    readings = reading_rows(rows)  # as the paired table: only beside full
    return reading_table(readings, title=title) if readings else None


#: The results tables, in the order they are printed and written.
RESULT_TABLES: tuple[ResultTable, ...] = (
    ResultTable("comparison", comparison_markdown, lambda r, t: comparison_table(r, title=t)),
    ResultTable(
        "training health",
        lambda rows: health_markdown(_health(rows)),
        lambda rows, title: health_table(_health(rows), title=title),
    ),
    ResultTable("paired with full, seed by seed", _paired_markdown, _paired_rich),
    ResultTable(
        "what each ablation can act through",
        lambda rows: mechanism_markdown(mechanism_rows(rows)),
        lambda rows, title: mechanism_table(mechanism_rows(rows), title=title),
    ),
    ResultTable("each variant against full", _reading_markdown, _reading_rich),
)


def result_sections(rows: Rows, tables: Sequence[ResultTable] = RESULT_TABLES) -> list[Section]:
    """The ``tables`` that apply to ``rows``, built, in order."""
    sections = []
    for spec in tables:
        markdown, table = spec.markdown(rows), spec.rich(rows, spec.title)
        if markdown is not None and table is not None:
            sections.append(Section(spec.title, markdown, table))
    return sections


def sections_markdown(sections: Sequence[Section]) -> str:
    """The tables one after the other, a blank line between them, without titles (what
    ``arctic-swe ablate`` writes to ``OUT/comparison.md``)."""
    return "\n".join(section.markdown for section in sections)
