"""Tests for ``arctic_swe.cli._checks``: the common mistakes (a missing deck, policy, run or
config file; a checkpoint directory that is already there) are answered with one usage error
line and exit 2 *before* torch or transformers load, in a fresh interpreter per command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_swe._execute import CommandError
from arctic_swe.cli._checks import require_free_target, require_writable_directory
from arctic_swe.deck import DeckConfig, write_deck

#: main() runs in a fresh interpreter; afterwards we report which heavy modules it loaded.
PROBE = """
import json, sys
from arctic_swe._cli import main
code = main(sys.argv[1:])
heavy = [m for m in ("torch", "transformers", "matplotlib") if m in sys.modules]
print("PROBE " + json.dumps({"code": code, "heavy": heavy}))
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory: a real deck, a non-empty directory, a file, a broken deck."""
    root = tmp_path_factory.mktemp("checks")
    write_deck(root / "deck", DeckConfig(seed=1, pool_size=2, heldout_size=0, warmstart_size=1))
    (root / "busy").mkdir()
    (root / "busy" / "weights").write_text("x")
    (root / "afile").write_text("")
    (root / "broken").mkdir()
    (root / "broken" / "deck.json").write_text("{oops")
    (root / "bad.toml").write_text("x = [")
    return root


#: (argv, text of the one error line); paths are relative to the ``inputs`` directory.
COMMON_MISTAKES: list[tuple[list[str], str]] = [
    (["model", "init", "busy"], "busy exists and is not empty (pass --force"),
    (["model", "init", "afile"], "afile exists and is not empty"),
    (["model", "check", "missing"], "checkpoint directory not found: missing"),
    (["model", "check", "busy"], "busy is not a usable Qwen3.5 checkpoint: no config.json"),
    (["evaluate", "MISSING", "MISSING"], "POLICY MISSING does not exist"),
    (["evaluate", "busy", "--deck", "missing"], "no deck at missing (missing deck.json)"),
    (["evaluate", "busy", "--deck", "broken"], "unreadable deck manifest"),
    (["rollout", "--deck", "missing"], "no deck at missing"),
    (["rollout", "--deck", "deck", "--policy", "missing"], "--policy missing does not exist"),
    (["warmstart", "--deck", "missing"], "no deck at missing"),
    (["compare", "busy"], "busy has no metrics.jsonl"),
    (["cluster", "up", "missing.toml", "--run-dir", "run"], "cannot read missing.toml"),
    (["cluster", "check", "bad.toml"], "bad.toml"),
    (["cluster", "loop", "--run-dir", "run", "--config", "missing.toml"], "--config missing.toml"),
    (["deck", "import", "missing.jsonl", "--out", "d"], "ROWS missing.jsonl: no such file"),
    (["deck", "import", "afile", "--out", "d", "--repo-dir", "nope"], "--repo-dir nope"),
    (["deck", "build", "--out", "afile/deck"], "cannot write the deck to afile/deck"),
    (["overfit", "--config", "missing.toml", "--run-dir", "run"], "cannot read missing.toml"),
    (["ablate", "--config", "bad.toml"], "not valid TOML"),
    (["train-worker", "--policy", "missing", "--run-dir", "run"], "missing is not a checkpoint"),
    (["serve", "--model", "missing"], "missing is not a checkpoint directory"),
]


@pytest.mark.parametrize(
    ("argv", "message"), COMMON_MISTAKES, ids=[" ".join(a) for a, _ in COMMON_MISTAKES]
)
def test_common_mistakes_exit_2_before_torch_loads(
    argv: list[str], message: str, inputs: Path
) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=inputs,
        env=env,
    )
    probe = json.loads(done.stdout.splitlines()[-1].removeprefix("PROBE "))
    assert probe == {"code": 2, "heavy": []}, (probe, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("arctic-swe: error: ")
    assert message in done.stderr
    assert not (inputs / "run").exists()  # nothing written
    assert not (inputs / "d").exists()


names = st.text(alphabet="abcdefghij", min_size=1, max_size=4)


@settings(max_examples=25, deadline=None)
@given(present=st.lists(names, max_size=3, unique=True), force=st.booleans())
def test_a_target_is_free_iff_absent_empty_or_forced(
    tmp_path_factory: pytest.TempPathFactory, present: list[str], force: bool
) -> None:
    target = tmp_path_factory.mktemp("target")
    for name in present:
        (target / name).write_text("")
    if present and not force:
        with pytest.raises(CommandError, match="exists and is not empty"):
            require_free_target(target, force=force)
    else:
        require_free_target(target, force=force)
    require_free_target(target / "absent", force=False)  # an absent target is always free


def test_a_writable_directory_may_be_several_levels_deep(tmp_path: Path) -> None:
    require_writable_directory(tmp_path / "a" / "b" / "c", "the deck")  # created later
    (tmp_path / "file").write_text("")
    with pytest.raises(CommandError, match=r"cannot write the deck to .*file is not a directory"):
        require_writable_directory(tmp_path / "file" / "deck", "the deck")
