"""Every ```python and ```bash block of every README (and of an app's docs/ and results/ pages) runs
as written, or says why it does not.

A block may be marked by an HTML comment on the line right before its fence:

* ``<!-- illustration -->`` — a sketch, a usage synopsis, or a command that needs what a test
  cannot have (a package index, a GPU, the outputs of an earlier hours-long run); never run;
* ``<!-- slow -->`` — minutes long (a training run, a full benchmark): run by the ``slow`` test;
* ``<!-- test-command: … -->`` — the suite's own command, which ``.ci/run`` executes.

Everything else runs in the ordinary suite. Python blocks run in a fresh interpreter in an
empty directory. Bash blocks run with ``bash -eo pipefail`` from the repository root, with this
environment's scripts first on ``PATH``; ``uv run <options> CMD`` runs ``CMD`` directly — the
environment is already the synced one, and re-syncing a shared environment from inside a test
would change it under other processes — and the options are checked on their own.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
READMES = sorted(
    [ROOT / "README.md", *ROOT.glob("packages/*/README.md"), *ROOT.glob("apps/*/README.md")]
)
#: The application's reference pages and measurement record: their blocks are held to the same rules.
PAGES = sorted([*ROOT.glob("apps/*/docs/*.md"), *ROOT.glob("apps/*/results/*.md")])
MARKERS = ("illustration", "slow", "test-command")
FENCE = re.compile(r"^```(python|bash)\n(.*?)^```", re.DOTALL | re.MULTILINE)
#: ``uv run`` options that take a value (the others used in READMEs are flags).
UV_VALUE_OPTIONS = {
    "--package",
    "--extra",
    "--no-extra",
    "--group",
    "--no-group",
    "--python",
    "--with",
}


class Block(NamedTuple):
    readme: Path
    line: int
    language: str
    code: str
    marker: str | None

    @property
    def id(self) -> str:
        folder = self.readme.parent.name if self.readme.parent != ROOT else "root"
        page = "" if self.readme.name == "README.md" else f"/{self.readme.stem}"
        return f"{folder}{page}:{self.line}"


def _marker(before: str) -> str | None:
    lines = before.rstrip("\n").splitlines()
    last = lines[-1].strip() if lines else ""
    found = re.fullmatch(r"<!--\s*([\w-]+)\b.*-->", last)
    if found is None:
        return None
    if found.group(1) not in MARKERS:
        raise ValueError(f"unknown README block marker {last!r}; use one of {MARKERS}")
    return found.group(1)


def readme_blocks(path: Path) -> list[Block]:
    """The python and bash blocks of one README, each with the marker right above it."""
    text = path.read_text()
    return [
        Block(
            path,
            text.count("\n", 0, m.start()) + 1,
            m.group(1),
            m.group(2),
            _marker(text[: m.start()]),
        )
        for m in FENCE.finditer(text)
    ]


BLOCKS = [block for readme in [*READMES, *PAGES] for block in readme_blocks(readme)]


def _select(marker: str | None) -> list[pytest.param]:  # type: ignore[valid-type]
    return [pytest.param(b, id=b.id) for b in BLOCKS if b.marker == marker]


def _direct_line(line: str) -> str:
    words = line.split(" ")
    for start in range(len(words) - 1):
        if words[start : start + 2] == ["uv", "run"]:
            rest = start + 2
            while rest < len(words) and (words[rest] == "" or words[rest].startswith("--")):
                takes_value = words[rest] in UV_VALUE_OPTIONS
                rest += 2 if takes_value else 1
            return " ".join([*words[:start], *words[rest:]])
    return line


def direct_command(script: str) -> str:
    """``script`` with every ``uv run <options>`` prefix removed."""
    return "\n".join(_direct_line(line) for line in script.splitlines())


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)  # the block sees the installed packages, as a user would
    return env


def run_block(block: Block, tmp_path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    if block.language == "python":
        script = tmp_path / "example.py"
        script.write_text(block.code)
        argv, cwd = [sys.executable, str(script)], tmp_path
    else:
        argv, cwd = ["bash", "-eo", "pipefail", "-c", direct_command(block.code)], ROOT
    return subprocess.run(
        argv,
        cwd=cwd,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _check(done: subprocess.CompletedProcess[str], block: Block) -> None:
    where = f"{block.readme.relative_to(ROOT)}:{block.line}"
    assert done.returncode == 0, f"{where} exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, f"{where}:\n{done.stderr[-3000:]}"


def test_every_readme_has_blocks_and_every_marker_is_known() -> None:
    # Building BLOCKS already rejected unknown markers; an empty harvest would pass vacuously.
    assert len(READMES) >= 9
    assert len([b for b in BLOCKS if b.marker is None]) >= 15
    for readme in READMES:
        assert readme_blocks(readme), f"{readme} has no python or bash example"


@pytest.mark.parametrize(
    ("script", "direct"),
    [
        (
            "uv run --locked --all-packages arctic-swe overfit --run-dir r",
            "arctic-swe overfit --run-dir r",
        ),
        (
            "uv run --frozen --all-packages --all-extras --no-extra vllm python b.py --smoke",
            "python b.py --smoke",
        ),
        ("X=1 uv run --package swe-sandbox swe-sandbox janitor", "X=1 swe-sandbox janitor"),
        ("arctic-swe rollout --tasks 16", "arctic-swe rollout --tasks 16"),
    ],
)
def test_uv_run_prefixes_are_reduced_to_the_command(script: str, direct: str) -> None:
    assert direct_command(script) == direct


@pytest.mark.parametrize(
    "block", [pytest.param(b, id=b.id) for b in BLOCKS if b.language == "bash"]
)
def test_uv_commands_select_an_environment_uv_can_resolve(block: Block) -> None:
    # The `vllm` extra is locked in a fork that conflicts with the dev tools: `--all-extras`
    # without `--no-extra vllm` is refused by uv before anything runs.
    for line in block.code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True) if "uv " in line else []
        selects_the_app = "--all-packages" in words or "arctic-swe" in words
        if "uv" in words and "--all-extras" in words and selects_the_app:
            excluded = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--no-extra"]
            assert "vllm" in excluded, f"{block.id}: {line.strip()}"


@pytest.mark.parametrize("block", _select(None))
def test_readme_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    _check(run_block(block, tmp_path, timeout=600), block)


@pytest.mark.parametrize("block", [b for b in _select("slow") if b.values[0].language == "bash"])
def test_slow_bash_blocks_parse_and_name_installed_programs(block: Block) -> None:
    # The ordinary suite cannot afford to run them; it can still catch a typo or a renamed
    # script the day it happens rather than at the next nightly run.
    script = direct_command(block.code)
    done = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    for line in script.replace("\\\n", " ").splitlines():
        words = [w for w in shlex.split(line, comments=True) if "=" not in w.split("/")[0]]
        if not words:
            continue
        program = words[0]
        assert shutil.which(program, path=_environment()["PATH"]), f"{block.id}: {program}"
        if program == "python" and words[1].endswith(".py"):
            assert (ROOT / words[1]).is_file(), f"{block.id}: {words[1]}"


@pytest.mark.slow
@pytest.mark.parametrize("block", _select("slow"))
def test_slow_readme_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    _check(run_block(block, tmp_path, timeout=3 * 3600), block)
