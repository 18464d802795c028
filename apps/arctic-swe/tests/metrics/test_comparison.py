"""Tests for ``arctic_swe.metrics._comparison``: one row per run, the measured pool success
where a log has it (and "not measured" where it does not), the same cells in rich and markdown."""

from __future__ import annotations

from rich.console import Console

from arctic_swe.metrics import comparison_markdown, comparison_row, comparison_table

from .conftest import record


def _rows(**pool: object) -> list:  # type: ignore[type-arg]
    climbs = [record(step, 0.1 * step, **(pool if step == 10 else {})) for step in range(1, 11)]
    collapses = [record(step, 0.8 if step < 6 else 0.1) for step in range(1, 11)]
    return [comparison_row("full", climbs), comparison_row("clip", collapses)]


def _cells(markdown: str) -> tuple[list[str], list[str], list[str]]:
    header, _, full, clip = markdown.splitlines()
    return (header.strip("| ").split(" | "), full.strip("| ").split(" | "),
            clip.strip("| ").split(" | "))  # fmt: skip


def test_without_measured_fields_the_pool_columns_say_not_measured() -> None:
    header, full, clip = _cells(comparison_markdown(_rows()))
    assert (full[0], clip[0]) == ("full", "clip")
    column = dict(zip(header, zip(full, clip, strict=True), strict=True))
    for name in (
        "pool success first → final (peak), 95 % CI",
        "held (final >= 0.9 x peak)",
    ):
        assert column[name] == ("not measured", "not measured")
    # windows of 2 of 10 updates; the imputed (eviction-adjusted) reward is the batch's + 0.1,
    # and its old criterion is labelled as imputed, never as the verdict
    assert column["imputed pool reward first → last 2 (peak)"] == (
        "0.250 → 1.000 (1.000)", "0.900 → 0.200 (0.900)")  # fmt: skip
    assert column["imputed held"] == ("yes", "NO")
    assert column["batch reward first → last"] == ("0.150 → 0.950", "0.800 → 0.100")


def test_measured_pool_success_is_a_column_with_its_interval() -> None:
    measured = {"pool_success": 0.5, "pool_success_low": 0.38, "pool_success_high": 0.62,
                "pool_eval_step": 10, "pool_eval_version": 10, "pool_eval_solved": 16,
                "pool_eval_rollouts": 32, "replay_adjusted": 0.7}  # fmt: skip
    header, full, clip = _cells(comparison_markdown(_rows(**measured)))
    column = dict(zip(header, zip(full, clip, strict=True), strict=True))
    # one evaluation: first = peak = final = 16 / 32 with its Wilson interval; held (1 >= 0.9)
    one = "0.500 [0.34-0.66]"
    assert column["pool success first → final (peak), 95 % CI"][0] == f"{one} → {one} ({one})"
    assert column["held (final >= 0.9 x peak)"] == ("yes", "not measured")
    assert column["replay-adjusted, last window"] == ("0.700", "not measured")


def test_the_rich_table_holds_the_markdown_cells() -> None:
    rows = _rows()
    console = Console(width=300, record=True)
    console.print(comparison_table(rows, title="t"))
    text = console.export_text()
    for line in comparison_markdown(rows).splitlines()[2:]:
        for cell in line.strip("| ").split(" | "):
            assert cell in text
