"""Tests for ``arctic_swe._execute``: how every command ends. A table of bad inputs per
sub-command gives one ``arctic-swe: error:`` line and exit 2, with nothing created; a failure
of the work itself gives one such line and exit 1; SIGINT and SIGTERM stop a command with one
line, exit 130 / 143, cleanup run and no traceback."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_swe._cli import main
from arctic_swe._execute import CommandError, CommandFailedError, execute, runtime_errors
from arctic_swe.deck import DeckConfig, write_deck

BAD_TOML = "x = ["
BAD_FIELD_TOML = "[run]\nupdates = 'many'\n"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of good and bad inputs: a real deck, broken decks, broken configs and runs."""
    root = tmp_path_factory.mktemp("inputs")
    write_deck(root / "deck", DeckConfig(seed=1, pool_size=2, heldout_size=0, warmstart_size=1))
    (root / "notjson").mkdir()
    (root / "notjson" / "deck.json").write_text("{oops")
    (root / "nofield").mkdir()
    (root / "nofield" / "deck.json").write_text("{}")
    (root / "afile").write_text("")
    (root / "bad.toml").write_text(BAD_TOML)
    (root / "field.toml").write_text(BAD_FIELD_TOML)
    for run in ("a/overfit", "b/overfit"):
        (root / run).mkdir(parents=True)
    (root / "a/overfit/metrics.jsonl").write_text("garbage\n")
    return root


#: (argv, text the one error line contains); paths are relative to the inputs directory.
BAD_INPUTS: list[tuple[list[str], str]] = [
    (["deck", "build", "--out", "/proc/x", "--validate", "none"], "cannot write the deck"),
    (["deck", "build", "--out", "afile/x", "--validate", "none"], "cannot write the deck"),
    (["warmstart", "--deck", "missing"], "no deck at missing"),
    (["warmstart", "--deck", "notjson"], "unreadable deck manifest"),
    (["warmstart", "--deck", "nofield"], "not a format-1 deck"),
    (["warmstart", "--deck", "afile"], "deck"),
    (["rollout", "--deck", "missing"], "no deck at missing"),
    (["rollout", "--deck", "notjson"], "unreadable deck manifest"),
    (["rollout", "--deck", "deck", "--policy", "missing"], "--policy missing does not exist"),
    (["rollout", "--deck", "deck", "--trajectories", "/proc/x/y"], "cannot write /proc/x/y"),
    (["evaluate", "missing", "--deck", "deck"], "POLICY missing does not exist"),
    (["evaluate", "afile", "--deck", "deck"], "POLICY afile is not a directory"),
    (["evaluate", "deck", "--deck", "missing"], "no deck at missing"),
    (["evaluate", "deck", "--deck", "deck", "--out", "/nonexistent/x.jsonl"], "cannot write"),
    (["overfit", "--config", "missing.toml", "--run-dir", "r"], "cannot read missing.toml"),
    (["overfit", "--config", "bad.toml", "--run-dir", "r"], "not valid TOML"),
    (["overfit", "--config", "field.toml", "--run-dir", "r"], "run.updates: must be int"),
    (["overfit", "--set", "run.updates=ten", "--run-dir", "r"], "run.updates: must be int"),
    (["overfit", "--set", "nope", "--run-dir", "r"], "section.field=value"),
    (["overfit", "--resume", "--run-dir", "r"], "nothing to resume"),
    (["overfit", "--run-dir", "/proc/x"], "cannot create run directory"),
    (["compare", "missing"], "missing has no metrics.jsonl"),
    (["compare", "b/overfit"], "has no metrics.jsonl"),
    (["compare", "a/overfit"], "metrics.jsonl:1"),
    (["compare", "a/overfit", "a/overfit"], "given twice"),
    (["compare", "a/overfit", "--label", "x", "--label", "y"], "2 --label values for 1 runs"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_error_line_and_exit_2(
    argv: list[str],
    message: str,
    inputs: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(inputs)
    before = sorted(p.name for p in inputs.iterdir())
    assert main(argv) == 2  # returns: no exception escapes, so no traceback
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("arctic-swe: error: ")
    assert message in lines[0]
    assert sorted(p.name for p in inputs.iterdir()) == before  # nothing created (no run "r")


@pytest.mark.parametrize(
    "argv",
    [
        ["nope"],
        ["deck"],
        ["deck", "build", "--pool-size", "0"],
        ["warmstart", "--lr", "nan"],
        ["warmstart", "--lr", "-1"],
        ["rollout", "--tasks", "ten"],
        ["evaluate"],
        ["overfit", "--threads", "0"],
        ["compare"],
    ],
)
def test_usage_errors_are_one_line_naming_the_help(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as excinfo:
        main(argv)
    assert excinfo.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert re.match(r"arctic-swe( [a-z-]+)*: error: ", lines[0]), lines[0]  # PROG: error: ...
    assert lines[0].endswith("--help)")


def test_the_console_script_prints_no_traceback_on_bad_input(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "arctic-swe"
    for argv in (["compare", "missing"], ["overfit", "--resume", "--run-dir", "gone"]):
        done = subprocess.run(
            [str(script), *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "gone").exists()


def _raising(exc: BaseException) -> argparse.Namespace:
    """A namespace whose ``run`` raises ``exc`` (how a command's failure reaches ``execute``)."""

    def run(args: argparse.Namespace) -> int:
        raise exc

    return argparse.Namespace(run=run)


#: (what the command raised, exit code): the input's fault is 2, the work's fault is 1.
ENDINGS: list[tuple[BaseException, int]] = [
    (CommandError("no deck at d"), 2),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "x.toml"), 2),
    (NotADirectoryError(errno.ENOTDIR, "Not a directory", "afile/x"), 2),
    (CommandFailedError("engine engine-0 died"), 1),
    (OSError(errno.ENOSPC, "No space left on device", "ckpt"), 1),
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), 1),
]


@pytest.mark.parametrize(("raised", "code"), ENDINGS, ids=[repr(e) for e, _ in ENDINGS])
def test_usage_errors_exit_2_and_runtime_failures_exit_1(
    raised: BaseException, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _raising(raised)
    assert execute(args.run, args) == code
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("arctic-swe: error: ")


def test_runtime_errors_turn_only_the_listed_types_into_failures() -> None:
    with pytest.raises(CommandFailedError, match="trainer died"), runtime_errors(RuntimeError):
        raise RuntimeError("trainer died")
    with (
        pytest.raises(ValueError, match="not listed"),
        runtime_errors(RuntimeError),
    ):  # a bug keeps its traceback
        raise ValueError("not listed")


#: Command paths of the parser; an unknown option anywhere after them is a usage error.
COMMAND_PATHS = [
    [], ["components"], ["deck", "build"], ["deck", "import", "rows.jsonl"], ["model", "init", "d"],
    ["model", "check", "d"], ["warmstart"], ["rollout"], ["overfit"], ["evaluate", "p"],
    ["compare", "r"], ["ablate"], ["serve"], ["cluster", "up", "c.toml"], ["cluster", "check", "c"],
    ["train-worker", "--policy", "p", "--run-dir", "r"],
]  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    path=st.sampled_from(COMMAND_PATHS),
    flag=st.text(alphabet="abcxyz-_=0", min_size=1, max_size=8),
    where=st.integers(min_value=0, max_value=6),
)
def test_a_bad_argv_never_exits_0_nor_shows_a_traceback(
    path: list[str], flag: str, where: int
) -> None:
    argv = [*path]
    argv.insert(min(where, len(argv)), f"--zz{flag}")  # no option of any command starts --zz
    with pytest.raises(SystemExit) as exited, contextlib.redirect_stderr(io.StringIO()) as caught:
        main(argv)
    assert exited.value.code == 2
    err = caught.getvalue()
    assert "Traceback" not in err
    assert re.match(r"arctic-swe( [a-z-]+)*: error: ", err.splitlines()[-1]), err


# A command that holds a resource in an asyncio task, like the sandbox pool of a rollout.
LONG_COMMAND = """
import argparse, asyncio, sys
from pathlib import Path
from arctic_swe._execute import CommandInterruptedError, execute

marks = Path(sys.argv[1])

async def hold() -> None:
    try:
        marks.joinpath("ready").write_text("")
        await asyncio.sleep(600)
    finally:
        marks.joinpath("cleaned").write_text("")

def run(args: argparse.Namespace) -> int:
    try:
        asyncio.run(hold())
    except KeyboardInterrupt:
        raise CommandInterruptedError("at step 3; resume with: again") from None
    return 0

sys.exit(execute(run, argparse.Namespace()))
"""


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_stops_cleanly_with_one_line(
    signum: signal.Signals, code: int, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", LONG_COMMAND, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(process.pid, signum)
    out, err = process.communicate(timeout=60)
    assert process.returncode == code
    assert err == "interrupted at step 3; resume with: again\n"
    assert out == ""
    assert (tmp_path / "cleaned").exists()  # the task's finally ran: resources torn down


def test_in_process_signal_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert main(["components"]) == 0
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
