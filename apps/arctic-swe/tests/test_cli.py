"""Tests for ``arctic_swe._cli`` (mirrors src/arctic_swe/_cli.py): the parser and the small commands."""

from importlib.metadata import version
from pathlib import Path

import pytest

from arctic_swe._cli import main
from arctic_swe.cli._components import component_versions
from arctic_swe.cli._defaults import COMPONENTS
from arctic_swe.deck import load_deck


def test_every_component_is_installed_with_its_version() -> None:
    found = component_versions()
    assert set(found) == set(COMPONENTS)
    for name, got in found.items():
        assert got == version(name)


def test_components_command_lists_each_package(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["components"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(COMPONENTS)


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "usage: arctic-swe" in capsys.readouterr().out


def test_unknown_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as excinfo:
        main(["no-such-command"])
    assert excinfo.value.code == 2


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        (
            ["deck", "build", "--help"],
            ["--out", "--seed", "--pool-size", "--validate", "--reruns", "--issue-style"],
        ),
        (["warmstart", "--help"], ["--deck", "--out", "--tasks", "--steps", "--lr"]),
        (["rollout", "--help"], ["--deck", "--policy", "--tasks", "--split", "--show"]),
        (["evaluate", "--help"], ["POLICY", "--deck", "--samples", "--split", "--seed", "--json"]),
    ],
)
def test_every_command_documents_its_options(
    argv: list[str], options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as excinfo:
        main(argv)
    assert excinfo.value.code == 0
    out = capsys.readouterr().out
    for option in options:
        assert option in out


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["deck", "build", "--help"], ["(default: 160)", "(default: sample)"]),
        (["warmstart", "--help"], ["(default: 300)", "(default: 0.003)"]),
        (["evaluate", "--help"], ["(default: 4)", "(default: 0)", "stress-test pool"]),
        (["overfit", "--help"], ["(default: runs/overfit)", "(default: tiny)"]),
    ],
)
def test_help_shows_defaults_but_not_empty_ones(
    argv: list[str], shown: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(argv)
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for text in shown:
        assert text in out
    assert "(default: None)" not in out
    assert "(default: False)" not in out
    assert "(default: [])" not in out


@pytest.mark.parametrize(
    "argv",
    [
        ["deck"],
        ["deck", "build", "--pool-size", "0"],
        ["deck", "build", "--validate", "maybe"],
        ["deck", "build", "--issue-style", "lines"],
        ["rollout", "--tasks", "-3"],
        ["evaluate"],
        ["evaluate", "runs/x", "--samples", "0"],
        ["warmstart", "--steps", "ten"],
        ["overfit", "--threads", "0"],
        ["overfit", "--warmstart-threads", "-1"],
    ],
)
def test_bad_arguments_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as excinfo:
        main(argv)
    assert excinfo.value.code == 2


def test_deck_build_writes_the_deck_and_its_tokenizer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "deck"
    argv = ["deck", "build", "--out", str(out), "--pool-size", "3", "--heldout-size", "1"]
    assert main([*argv, "--warmstart-size", "2", "--validate", "none", "--vocab-size", "600"]) == 0
    assert "pool 3, held-out 1, warm-start 2" in " ".join(capsys.readouterr().out.split())
    assert len(load_deck(out).split("pool")) == 3
    assert (out / "tokenizer" / "tokenizer.json").is_file()


def test_deck_build_writes_a_behaviour_style_deck(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "deck"
    argv = ["deck", "build", "--out", str(out), "--pool-size", "3", "--heldout-size", "1"]
    argv += ["--warmstart-size", "2", "--validate", "none", "--vocab-size", "600"]
    assert main([*argv, "--issue-style", "behaviour"]) == 0
    assert "behaviour-style issues" in " ".join(capsys.readouterr().out.split())
    deck = load_deck(out)
    assert deck.config.issue_style == "behaviour"
    for task in deck:
        assert task.old_line not in task.spec.problem_statement
        assert task.new_line not in task.spec.problem_statement


def test_missing_deck_or_policy_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["warmstart", "--deck", str(tmp_path / "none")]) == 2
    assert "no deck" in " ".join(capsys.readouterr().err.split())
    main(["deck", "build", "--out", str(tmp_path / "d"), "--pool-size", "2", "--heldout-size",
          "0", "--warmstart-size", "1", "--validate", "none", "--vocab-size", "600"])  # fmt: skip
    capsys.readouterr()
    code = main(["rollout", "--deck", str(tmp_path / "d"), "--policy", str(tmp_path / "none")])
    assert code == 2
    assert "--policy" in capsys.readouterr().err  # named before anything heavy loads
    (tmp_path / "empty").mkdir()
    code = main(["rollout", "--deck", str(tmp_path / "d"), "--policy", str(tmp_path / "empty")])
    assert code == 2
    assert "tokenizer" in capsys.readouterr().err
