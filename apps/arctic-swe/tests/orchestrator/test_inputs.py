"""Tests for ``arctic_swe.orchestrator._inputs``: a missing deck is built in the configured
issue style; an existing one is used as it is, with a note when its style is not the config's."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from arctic_swe.config import RunConfig, apply_overrides
from arctic_swe.deck import DeckConfig, load_deck, write_deck
from arctic_swe.orchestrator import ensure_deck


def _console() -> Console:
    return Console(record=True, width=300)


def _behaviour() -> RunConfig:
    return apply_overrides(RunConfig(), ['deck.issue_style="behaviour"'])


def test_a_missing_deck_is_built_in_the_configured_issue_style(tmp_path: Path) -> None:
    # the full-size deck (400 tasks) and its tokenizer: a few seconds
    deck_dir = ensure_deck(tmp_path / "deck", _behaviour(), _console())
    deck = load_deck(deck_dir)
    assert deck.config.issue_style == "behaviour"
    assert all(task.new_line not in task.spec.problem_statement for task in deck)


@pytest.mark.parametrize(
    ("built", "config", "noted"),
    [
        ("behaviour", RunConfig(), True),
        ("line", _behaviour(), True),
        ("behaviour", _behaviour(), False),
        ("line", RunConfig(), False),
    ],
)
def test_an_existing_deck_is_reused_in_its_own_style(
    tmp_path: Path, built: str, config: RunConfig, noted: bool
) -> None:
    deck_dir = tmp_path / "deck"
    config_of_deck = DeckConfig(1, pool_size=2, heldout_size=0, warmstart_size=0, issue_style=built)
    write_deck(deck_dir, config_of_deck)
    (deck_dir / "tokenizer").mkdir()
    (deck_dir / "tokenizer" / "tokenizer.json").write_text("{}")
    before = (deck_dir / "deck.json").read_bytes()
    console = _console()
    assert ensure_deck(deck_dir, config, console) == deck_dir
    assert (deck_dir / "deck.json").read_bytes() == before
    text = " ".join(console.export_text().split())
    assert (f"has {built}-style issues" in text) == noted
