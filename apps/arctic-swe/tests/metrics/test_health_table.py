"""Tests for ``arctic_swe.metrics._health_table``: the cells of the training-health and the
per-block tables, the same in rich and in markdown."""

from __future__ import annotations

from rich.console import Console

from arctic_swe.metrics import (
    ending_windows,
    health_markdown,
    health_table,
    run_health,
    windows_table,
)
from arctic_swe.metrics._health_table import _window_columns

from .conftest import record


def _records() -> list:  # type: ignore[type-arg]
    endings = {"submitted": 10, "invalid_format": 4, "turn_budget": 2}
    return [
        record(step, 0.5, terminations=endings, grad_norm=0.0 if step in (2, 3) else 0.4,
               masked_frac=0.001 if step == 4 else 0.0)
        for step in range(1, 6)
    ]  # fmt: skip


def _cells(markdown: str) -> dict[str, list[str]]:
    header, _, *rows = markdown.splitlines()
    names = header.strip("| ").split(" | ")
    values = [row.strip("| ").split(" | ") for row in rows]
    return {name: [row[i] for row in values] for i, name in enumerate(names)}


def test_the_health_row_of_a_run() -> None:
    cells = _cells(health_markdown([run_health("full", _records())]))
    assert cells["run"] == ["full"]
    assert cells["ended invalid or duplicate"] == ["20 / 80 (25 %)"]
    assert cells["ran out of budget"] == ["10 / 80 (12 %)"]
    assert cells["zero-gradient updates"] == ["2 / 5"]
    assert cells["longest zero-gradient streak"] == ["2 (from update 2)"]
    assert cells["masked updates (largest share)"] == ["1 (0.10 %)"]
    assert cells["audit KL, Gated DeltaNet"] == ["not audited"]


def test_the_blocks_of_a_run() -> None:
    cells = dict(_window_columns(ending_windows(_records(), 2)))
    assert cells["updates"] == ["1-2", "3-4", "5-5"]
    assert cells["rollouts"] == ["32", "32", "16"]
    assert cells["ended invalid or duplicate"] == ["8", "8", "4"]
    assert cells["zero-gradient updates"] == ["1", "1", "0"]


def test_the_rich_tables_hold_the_markdown_cells() -> None:
    health = [run_health("full", _records()), run_health("bf16", _records()[:2])]
    windows = ending_windows(_records(), 3)
    console = Console(width=300, record=True)
    console.print(health_table(health))
    console.print(windows_table(windows, title="blocks"))
    text = console.export_text()
    for line in health_markdown(health).splitlines()[2:]:
        for cell in line.strip("| ").split(" | "):
            assert cell in text
    for _name, cells in _window_columns(windows):
        for cell in cells:
            assert cell in text
