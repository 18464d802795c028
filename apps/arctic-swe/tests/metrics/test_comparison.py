"""Tests for ``arctic_swe.metrics._comparison``: one row per run, the measured pool success
where a log has it (and "not measured" where it does not), the same cells in rich and markdown."""

from __future__ import annotations

from rich.console import Console

from arctic_swe.metrics import comparison_markdown, comparison_row, comparison_table, last_measured

from .conftest import record


def _rows(measured: dict[str, float] | None = None) -> list:  # type: ignore[type-arg]
    climbs = [record(step, 0.1 * step) for step in range(1, 11)]
    collapses = [record(step, 0.8 if step < 6 else 0.1) for step in range(1, 11)]
    return [comparison_row("full", climbs, measured), comparison_row("clip", collapses)]


def test_last_measured_reads_the_newest_numeric_fields_only() -> None:
    rows = [
        {"pool_success": 0.25, "pool_success_low": 0.1, "pool_success_high": 0.4},
        {"pool_success": 0.5, "replay_adjusted": 0.75},
        {"pool_success": None, "pool_success_low": True, "step": 3},
    ]
    assert last_measured(rows) == {
        "pool_success": 0.5,
        "pool_success_low": 0.1,
        "pool_success_high": 0.4,
        "replay_adjusted": 0.75,
    }
    assert last_measured([{"reward": 1.0}]) == {}


def test_without_measured_fields_the_table_shows_the_reward_windows() -> None:
    markdown = comparison_markdown(_rows())
    lines = markdown.splitlines()
    assert len(lines) == 4  # header, rule, two runs
    assert "pool success" not in lines[0]
    assert "pool reward first → last 2 (peak)" in lines[0]
    full, clip = lines[2].split(" | "), lines[3].split(" | ")
    assert (full[0], clip[0]) == ("| full", "| clip")
    # windows of 2 of 10 updates; the pool (eviction-adjusted) reward is the batch's + 0.1
    assert full[2:5] == ["0.250 → 1.000 (1.000)", "yes", "0.150 → 0.950"]
    assert clip[2:5] == ["0.900 → 0.200 (0.900)", "NO", "0.800 → 0.100"]


def test_measured_pool_success_is_a_column_with_its_interval() -> None:
    measured = {"pool_success": 0.5, "pool_success_low": 0.38, "pool_success_high": 0.62}
    markdown = comparison_markdown(_rows({**measured, "replay_adjusted": 0.7}))
    header, _, full, clip = markdown.splitlines()
    assert "pool success (95 % CI)" in header
    assert "0.500 [0.380, 0.620]" in full
    assert "0.700" in full
    assert clip.count("not measured") == 2  # pool success and replay-adjusted


def test_the_rich_table_holds_the_markdown_cells() -> None:
    rows = _rows()
    console = Console(width=300, record=True)
    console.print(comparison_table(rows, title="t"))
    text = console.export_text()
    for line in comparison_markdown(rows).splitlines()[2:]:
        for cell in line.strip("| ").split(" | "):
            assert cell in text
