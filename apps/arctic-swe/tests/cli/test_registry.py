"""Tests for ``arctic_swe.cli._registry`` and the parser it feeds: every command registers, and
building the parser, ``--help``, ``--version`` and usage errors import nothing heavy."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from arctic_swe._cli import build_parser
from arctic_swe.cli._registry import COMMAND_MODULES, commands, load_command
from arctic_swe.deck import DeckConfig, write_deck

#: What must not load before a command's ``run``: torch, transformers, plotting, and the app
#: packages whose ``__init__`` pulls them in.
HEAVY = (
    "torch",
    "transformers",
    "matplotlib",
    "arctic_swe.engine",
    "arctic_swe.orchestrator",
    "arctic_swe.trainer",
    "arctic_swe.warmstart",
    "arctic_swe.evaluate",
    "arctic_swe.metrics",
    "arctic_swe.model",
)

PROBE = """
import json, sys
from arctic_swe._cli import build_parser, main
heavy = {heavy!r}
build_parser()
built = [m for m in heavy if m in sys.modules]
try:
    code = main({argv!r})
except SystemExit as exc:
    code = exc.code
print("MODULES " + json.dumps({{"built": built, "after": [m for m in heavy if m in sys.modules],
                               "code": code}}))
"""


def _probe(argv: list[str], cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY, argv=argv)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert "Traceback" not in done.stderr, done.stderr
    line = done.stdout.splitlines()[-1]
    assert line.startswith("MODULES "), done.stdout
    result: dict[str, object] = json.loads(line.removeprefix("MODULES "))
    return result


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        ([], 0),
        (["--help"], 0),
        (["--version"], 0),
        (["components"], 0),
        (["no-such-command"], 2),
        (["deck"], 2),
        (["deck", "build", "--help"], 0),
        (["warmstart", "--help"], 0),
        (["rollout", "--help"], 0),
        (["overfit", "--help"], 0),
        (["evaluate", "--help"], 0),
        (["compare", "--help"], 0),
        (["ablate", "--help"], 0),
        (["report", "--help"], 0),
        (["report", "results", "--check", "--collect", "ab"], 2),  # before matplotlib
        (["ablate", "--variants", "full,nope", "--out", "ab"], 2),  # before torch, nothing written
        (["rollout", "--tasks", "0"], 2),
        (["overfit", "--threads", "ten"], 2),
        (["overfit", "--set", "nope", "--run-dir", "run"], 2),  # a config error: before torch
        (["overfit", "--resume", "--run-dir", "missing"], 2),
        (["train-worker", "--policy", "missing", "--run-dir", "run"], 2),  # before torch
    ],
)
def test_help_version_and_usage_errors_import_nothing_heavy(
    argv: list[str], code: int, tmp_path: Path
) -> None:
    result = _probe(argv, tmp_path)
    assert result["built"] == []
    assert result["after"] == []
    assert result["code"] == code


def test_the_probe_sees_heavy_imports_when_a_command_needs_them(tmp_path: Path) -> None:
    # The same probe on a command that loads torch reports it: the check above can fail. The
    # paths pass the cheap checks (a real deck, an existing policy directory), so the missing
    # tokenizer is found only by the loader, after torch.
    write_deck(tmp_path / "deck", DeckConfig(seed=1, pool_size=2, heldout_size=0, warmstart_size=1))
    (tmp_path / "policy").mkdir()
    result = _probe(["rollout", "--deck", "deck", "--policy", "policy"], tmp_path)
    assert result["code"] == 2
    assert "torch" in result["after"]  # type: ignore[operator]


def test_every_registered_module_exposes_add_parser_and_run() -> None:
    loaded = commands()
    assert [command.module for command in loaded] == list(COMMAND_MODULES)
    parser = build_parser()
    for command in loaded:
        assert callable(command.run)
    names = parser.parse_args(["components"])
    assert names.run is loaded[0].run  # the sub-parser carries its command's run


def test_a_module_without_run_is_refused_with_its_name() -> None:
    with pytest.raises(TypeError, match="argparse must define add_parser"):
        load_command("argparse")
    assert isinstance(build_parser(), argparse.ArgumentParser)
