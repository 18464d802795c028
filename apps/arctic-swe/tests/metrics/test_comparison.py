"""Tests for ``arctic_swe.metrics._comparison``: one row per run, the declared verdict where a
run has evaluations (and "not measured" where it does not), the same cells in rich and
markdown."""

from __future__ import annotations

from rich.console import Console

from arctic_swe.metrics import (
    HELDOUT_SPLIT,
    VerdictRule,
    comparison_markdown,
    comparison_row,
    comparison_table,
)

from .conftest import evaluations, record

POOL_CELLS = {0: ["00", "01", "00", "10"], 3: ["11", "01", "11", "10"], 6: ["11", "11", "11", "11"],
              9: ["11", "11", "11", "11"]}  # fmt: skip


def _rows(**changes: object) -> list:  # type: ignore[type-arg]
    climbs = [record(step, 0.1 * step, **changes) for step in range(1, 11)]
    collapses = [record(step, 0.8 if step < 6 else 0.1) for step in range(1, 11)]
    evals = [*evaluations(POOL_CELLS), *evaluations({0: ["0"] * 3, 9: ["1"] * 3}, HELDOUT_SPLIT)]
    measured = comparison_row("full", climbs, evals, VerdictRule(updates=9, every=3))
    return [
        measured if changes else comparison_row("full", climbs),
        comparison_row("clip", collapses),
    ]


def _cells(markdown: str) -> tuple[list[str], list[str], list[str]]:
    header, _, full, clip = markdown.splitlines()
    return (header.strip("| ").split(" | "), full.strip("| ").split(" | "),
            clip.strip("| ").split(" | "))  # fmt: skip


POOL_COLUMNS = (
    "pool update 0 → final, paired change [CI]",
    "pool reference → final, paired change [CI]",
    "verdict",
    "held-out update 0 → final [CI]",
    "final window solved / rollouts",
)


def test_without_evaluations_the_pool_columns_say_not_measured() -> None:
    header, full, clip = _cells(comparison_markdown(_rows()))
    assert (full[0], clip[0]) == ("full", "clip")
    column = dict(zip(header, zip(full, clip, strict=True), strict=True))
    for name in POOL_COLUMNS:
        assert column[name] == ("not measured", "not measured")
    # windows of 2 of 10 updates; the imputed (eviction-adjusted) reward is the batch's + 0.1,
    # labelled as imputed, never as the verdict
    assert column["imputed pool reward first → last 2"] == ("0.250 → 1.000", "0.900 → 0.200")
    assert column["batch reward first → last"] == ("0.150 → 0.950", "0.800 → 0.100")
    assert not any("held (final" in name or "peak" in name for name in header)


def test_the_verdict_columns_pair_update_0_with_the_final_window() -> None:
    header, full, clip = _cells(comparison_markdown(_rows(replay_adjusted=0.7)))
    column = dict(zip(header, zip(full, clip, strict=True), strict=True))
    # per task, update 0 → the final window (update 9; 6 is the reference): +1, +0.5, +1, +0.5
    climb = column["pool update 0 → final, paired change [CI]"][0]
    assert climb.startswith("0.250 → 1.000: +0.750 [")
    assert climb.endswith("(t over 4 tasks, paired, 95 %)")
    assert column["pool reference → final, paired change [CI]"][0].startswith("1.000 → 1.000")
    assert column["verdict"] == ("climbed and held", "not measured")
    assert column["held-out update 0 → final [CI]"][0].startswith("0.000 → 1.000: +1.000")
    assert column["final window solved / rollouts"][0] == "8 / 8 (update 9)"
    assert column["replay-adjusted, last window"] == ("0.700", "not measured")


def test_the_rich_table_holds_the_markdown_cells() -> None:
    rows = _rows()
    console = Console(width=300, record=True)
    console.print(comparison_table(rows, title="t"))
    text = console.export_text()
    for line in comparison_markdown(rows).splitlines()[2:]:
        for cell in line.strip("| ").split(" | "):
            assert cell in text
