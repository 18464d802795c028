"""Tests for ``arctic_swe.deck._deck``: splits, determinism per seed, the on-disk format."""

import json
from pathlib import Path

import pytest

from arctic_swe.config import content_digest
from arctic_swe.deck import (
    SPLITS,
    DeckConfig,
    DeckConfigError,
    DeckFormatError,
    generate_tasks,
    load_deck,
    write_deck,
)
from arctic_swe.deck._deck import mark_dropped

SMALL = DeckConfig(seed=3, pool_size=6, heldout_size=3, warmstart_size=4)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_default_sizes_match_the_paper_pool() -> None:
    assert DeckConfig().pool_size == 160


def test_same_seed_writes_byte_identical_decks(tmp_path: Path) -> None:
    first = write_deck(tmp_path / "a", SMALL)
    second = write_deck(tmp_path / "b", SMALL)
    assert _tree(first.root) == _tree(second.root)
    assert [t.spec.gold_patch for t in first] == [t.spec.gold_patch for t in second]


def test_different_seeds_give_different_decks() -> None:
    one = generate_tasks(SMALL)
    other = generate_tasks(DeckConfig(seed=4, pool_size=6, heldout_size=3, warmstart_size=4))
    assert [t.gold_patch for t in one["pool"]] != [t.gold_patch for t in other["pool"]]


def test_growing_one_split_leaves_the_others_unchanged() -> None:
    base = generate_tasks(SMALL)
    grown = generate_tasks(DeckConfig(seed=3, pool_size=6, heldout_size=3, warmstart_size=9))
    assert [t.issue for t in base["pool"]] == [t.issue for t in grown["pool"]]
    assert [t.issue for t in base["heldout"]] == [t.issue for t in grown["heldout"]]


def test_splits_are_disjoint_and_sized(tmp_path: Path) -> None:
    deck = write_deck(tmp_path / "d", SMALL)
    ids = [t.instance_id for t in deck]
    assert len(ids) == len(set(ids)) == 13
    for split in SPLITS:
        assert len(deck.split(split)) == SMALL.size(split)
        assert all(t.split == split and t.instance_id.startswith(split) for t in deck.split(split))
    patches = [t.spec.gold_patch + t.spec.problem_statement for t in deck]
    assert len(set(patches)) == len(patches)


def test_task_spec_fields(tmp_path: Path) -> None:
    deck = write_deck(tmp_path / "d", SMALL)
    task = deck.split("pool")[0]
    assert Path(task.spec.repo.location, task.bug_path).is_file()
    assert task.spec.graded_files == (task.spec.fail_to_pass[0].split("::")[0],)
    assert task.spec.problem_statement.startswith("`")
    assert deck.task(task.instance_id) == task
    with pytest.raises(KeyError):
        deck.task("nope")
    with pytest.raises(DeckConfigError, match="unknown split"):
        deck.split("train")


def test_dropped_tasks_are_hidden_but_kept(tmp_path: Path) -> None:
    deck = write_deck(tmp_path / "d", SMALL)
    victim = deck.split("pool")[1].instance_id
    mark_dropped(deck.root, {victim})
    again = load_deck(deck.root)
    assert victim not in {t.instance_id for t in again}
    assert again.dropped == (victim,)
    assert (deck.root / "repos" / victim).is_dir()


@pytest.mark.parametrize(
    "fields",
    [
        {"seed": -1},
        {"pool_size": 0},
        {"heldout_size": -2},
        {"seed": True},
        {"pool_size": 1.5},
        {"issue_style": "lines"},
        {"issue_style": None},
    ],
)
def test_bad_config_is_rejected(fields: dict[str, object]) -> None:
    with pytest.raises(DeckConfigError):
        DeckConfig(**fields)  # type: ignore[arg-type]


def test_missing_or_broken_deck_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(DeckFormatError, match="missing"):
        load_deck(tmp_path)
    (tmp_path / "deck.json").write_text("{not json")
    with pytest.raises(DeckFormatError, match="unreadable"):
        load_deck(tmp_path)
    (tmp_path / "deck.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(DeckFormatError, match="format-1"):
        load_deck(tmp_path)
    deck = write_deck(tmp_path / "d", SMALL)
    (deck.root / "repos" / "pool-0000" / "README.md").unlink()
    for path in sorted((deck.root / "repos" / "pool-0000").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (deck.root / "repos" / "pool-0000").rmdir()
    with pytest.raises(DeckFormatError, match="repository missing"):
        load_deck(deck.root)


#: ``content_digest`` of decks written before the issue style existed (recorded then). The
#: default style must not change a byte: runs' ``inputs.json`` compare these digests.
LINE_DIGESTS = {
    SMALL: "b2e5c62bbec0833756f16fe063c7962ae16fc96f56fbfd59a8de2e133e9374e5",
    DeckConfig(): "6f3cb6790b3783baaee489bd9e6f7454d887f91cbb0f5b782bc9f34265e08495",
}


@pytest.mark.parametrize("config", list(LINE_DIGESTS))
def test_a_line_style_deck_keeps_its_digest(tmp_path: Path, config: DeckConfig) -> None:
    assert config.issue_style == "line"
    deck = write_deck(tmp_path / "d", config)
    assert "issue_style" not in json.loads((deck.root / "deck.json").read_text())["config"]
    assert content_digest(deck.root) == LINE_DIGESTS[config]


def test_the_issue_style_is_stored_and_changes_only_the_issues(tmp_path: Path) -> None:
    behaviour = DeckConfig(
        seed=3, pool_size=6, heldout_size=3, warmstart_size=4, issue_style="behaviour"
    )
    line = write_deck(tmp_path / "line", SMALL)
    deck = write_deck(tmp_path / "behaviour", behaviour)
    assert json.loads((deck.root / "deck.json").read_text())["config"]["issue_style"] == (
        "behaviour"
    )
    assert load_deck(deck.root).config == behaviour
    assert content_digest(deck.root) != content_digest(line.root)
    for one, other in zip(line, deck, strict=True):
        assert one.spec.problem_statement != other.spec.problem_statement
        assert (one.spec.gold_patch, one.spec.fail_to_pass, one.spec.pass_to_pass) == (
            other.spec.gold_patch,
            other.spec.fail_to_pass,
            other.spec.pass_to_pass,
        )
        assert (one.bug_path, one.old_line, one.new_line) == (
            other.bug_path,
            other.old_line,
            other.new_line,
        )
    assert _tree(line.root / "repos") == _tree(deck.root / "repos")
