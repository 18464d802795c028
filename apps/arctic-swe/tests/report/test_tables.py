"""The one list of results tables that ``ablate`` and ``report`` both build."""

from __future__ import annotations

from arctic_swe.metrics import (
    comparison_markdown,
    comparison_row,
    health_markdown,
    run_health,
    seed_label,
)
from arctic_swe.report import RESULT_TABLES, ResultTable, result_sections, sections_markdown

from .conftest import update


def _rows(labels: list[str]) -> list:  # type: ignore[type-arg]
    return [
        comparison_row(label, [update(step, 0.1 * step + index / 10) for step in (1, 2, 3)])
        for index, label in enumerate(labels)
    ]


def test_runs_without_full_get_no_paired_table() -> None:
    rows = _rows(["a", "b"])
    sections = result_sections(rows)
    assert [s.title for s in sections] == [
        "comparison",
        "training health",
        "what each ablation can act through",
    ]
    health = [run_health(row.label, row.records) for row in rows]
    assert sections_markdown(sections).startswith(
        comparison_markdown(rows) + "\n" + health_markdown(health)
    )
    assert sections[0].table.row_count == 2


def test_full_and_a_variant_add_the_paired_table_and_the_reading() -> None:
    for labels in (["full", "clip"], [seed_label(v, s) for v in ("full", "clip") for s in (0, 1)]):
        sections = result_sections(_rows(labels))
        assert [s.title for s in sections] == [spec.title for spec in RESULT_TABLES]
        mechanisms, reading = sections[-2:]
        assert mechanisms.markdown.count("\n") == 2 + 2  # header, rule, a row per variant
        assert reading.markdown.count("\n") == 2 + 1  # header, rule, clip (full is the reference)


def test_a_new_table_is_one_more_entry_and_skipped_where_it_does_not_apply() -> None:
    rows = _rows(["full", "clip"])
    extra = ResultTable(
        "labels",
        lambda rs: "| run |\n|---|\n" + "".join(f"| {r.label} |\n" for r in rs),
        lambda rs, title: result_sections(rs)[0].table,
    )
    never = ResultTable("never", lambda rs: None, lambda rs, title: None)
    sections = result_sections(rows, (*RESULT_TABLES, extra, never))
    titles = [s.title for s in sections]
    assert titles == [*(spec.title for spec in RESULT_TABLES), "labels"]
    assert sections[-1].markdown == "| run |\n|---|\n| full |\n| clip |\n"
